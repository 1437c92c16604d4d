//! Why a configuration is Degraded: the reasons of the Degraded condition and of the Warning
//! events, spelled on the wire as the upstream operator spells them, so what watches for them
//! keeps working across the move.

use std::fmt;

/// A reason of the Degraded condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The spec is invalid.
    FailedToValidate,
    /// The spec changes what cannot change in place.
    UnsafeChange,
    /// The previously applied spec could not be read.
    FailedToGetPreviousConfigSpec,
    /// The cluster could not be read, or the objects rendered.
    FailedToRender,
    FailedToApply,
    FailedToDeleteObjects,
    /// A rollout has not changed for the progress timeout.
    RolloutHung,
}

impl Reason {
    /// The reason as the condition and the events carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::FailedToValidate => "FailedToValidate",
            Reason::UnsafeChange => "UnsafeChange",
            Reason::FailedToGetPreviousConfigSpec => "FailedToGetPreviousConfigSpec",
            Reason::FailedToRender => "FailedToRender",
            Reason::FailedToApply => "FailedToApply",
            Reason::FailedToDeleteObjects => "FailedToDeleteObjects",
            Reason::RolloutHung => "RolloutHung",
        }
    }

    /// Whether only a change of the spec resolves it: reported as an invalid configuration that
    /// needs human interaction. Every other failure is retried by the operator.
    pub fn needs_a_spec_change(self) -> bool {
        matches!(self, Reason::FailedToValidate | Reason::UnsafeChange)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
