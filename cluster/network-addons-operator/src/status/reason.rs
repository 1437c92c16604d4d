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
mod tests {
    use super::*;

    #[test]
    fn reasons_are_spelled_as_upstream_spells_them() {
        let all = [
            Reason::FailedToValidate,
            Reason::UnsafeChange,
            Reason::FailedToGetPreviousConfigSpec,
            Reason::FailedToRender,
            Reason::FailedToApply,
            Reason::FailedToDeleteObjects,
            Reason::RolloutHung,
        ];
        let spelled: Vec<String> = all.iter().map(Reason::to_string).collect();
        assert_eq!(spelled, all.map(|r| format!("{r:?}")));
        assert!(all.iter().all(|r| r.to_string() == r.as_str()));
    }

    #[test]
    fn only_an_invalid_spec_or_an_unsafe_change_needs_a_spec_change() {
        let needs: Vec<Reason> = [
            Reason::FailedToValidate,
            Reason::UnsafeChange,
            Reason::FailedToGetPreviousConfigSpec,
            Reason::FailedToRender,
            Reason::FailedToApply,
            Reason::FailedToDeleteObjects,
            Reason::RolloutHung,
        ]
        .into_iter()
        .filter(|r| r.needs_a_spec_change())
        .collect();
        assert_eq!(needs, [Reason::FailedToValidate, Reason::UnsafeChange]);
    }
}
