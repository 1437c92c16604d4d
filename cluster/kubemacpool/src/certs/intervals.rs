//! How long the CA and the serving certificate live, and how long before their end a successor
//! takes over: the four `*_INTERVAL` variables of the cert manager's Deployment.

use std::time::Duration;

use net_types::parse_go_duration;

use crate::error::IntervalsError;

pub const CA_ROTATE_INTERVAL: &str = "CA_ROTATE_INTERVAL";
pub const CA_OVERLAP_INTERVAL: &str = "CA_OVERLAP_INTERVAL";
pub const CERT_ROTATE_INTERVAL: &str = "CERT_ROTATE_INTERVAL";
pub const CERT_OVERLAP_INTERVAL: &str = "CERT_OVERLAP_INTERVAL";

const HOUR: u64 = 3600;

/// A CA lives `ca_rotate` and is replaced `ca_overlap` before it ends; the replaced CA stays in
/// the caBundle until it expires. The serving certificate likewise with `cert_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intervals {
    pub ca_rotate: Duration,
    pub ca_overlap: Duration,
    pub cert_rotate: Duration,
    pub cert_overlap: Duration,
}

impl Default for Intervals {
    /// The values the released manifests set: a one-year CA, a half-year certificate, a day
    /// of overlap for each.
    fn default() -> Self {
        Intervals {
            ca_rotate: Duration::from_secs(8760 * HOUR),
            ca_overlap: Duration::from_secs(24 * HOUR),
            cert_rotate: Duration::from_secs(4380 * HOUR),
            cert_overlap: Duration::from_secs(24 * HOUR),
        }
    }
}

impl Intervals {
    /// Reads the four variables; one that is unset or empty keeps its default.
    pub fn from_env() -> Result<Intervals, IntervalsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Intervals, IntervalsError> {
        let defaults = Intervals::default();
        let read = |name: &'static str, default: Duration| match lookup(name) {
            Some(v) if !v.trim().is_empty() => parse_go_duration(v.trim())
                .map_err(|source| IntervalsError::Unparsable { name, source }),
            _ => Ok(default),
        };
        let intervals = Intervals {
            ca_rotate: read(CA_ROTATE_INTERVAL, defaults.ca_rotate)?,
            ca_overlap: read(CA_OVERLAP_INTERVAL, defaults.ca_overlap)?,
            cert_rotate: read(CERT_ROTATE_INTERVAL, defaults.cert_rotate)?,
            cert_overlap: read(CERT_OVERLAP_INTERVAL, defaults.cert_overlap)?,
        };
        intervals.validate()?;
        Ok(intervals)
    }

    /// An overlap as long as the lifetime would put the rotation point at the start of each
    /// certificate, so every new one would be replaced at once: refused rather than looping.
    pub fn validate(&self) -> Result<(), IntervalsError> {
        if self.ca_rotate.is_zero() {
            return Err(IntervalsError::Zero(CA_ROTATE_INTERVAL));
        }
        if self.cert_rotate.is_zero() {
            return Err(IntervalsError::Zero(CERT_ROTATE_INTERVAL));
        }
        let pairs = [
            (
                CA_OVERLAP_INTERVAL,
                self.ca_overlap,
                CA_ROTATE_INTERVAL,
                self.ca_rotate,
            ),
            (
                CERT_OVERLAP_INTERVAL,
                self.cert_overlap,
                CERT_ROTATE_INTERVAL,
                self.cert_rotate,
            ),
        ];
        for (overlap, overlap_value, rotate, rotate_value) in pairs {
            if overlap_value >= rotate_value {
                return Err(IntervalsError::OverlapTooLong {
                    overlap,
                    overlap_value,
                    rotate,
                    rotate_value,
                });
            }
        }
        if self.cert_rotate > self.ca_rotate {
            return Err(IntervalsError::CertOutlivesCa(
                self.cert_rotate,
                self.ca_rotate,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
