//! The range MACs are handed out from: `RANGE_START`..=`RANGE_END`, both ends included, as
//! upstream reads them from the ConfigMap `kubemacpool-mac-range-config`.

use std::fmt;

use net_types::MacAddr;

/// A validated range of unicast MACs, as 48-bit numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacRange {
    start: u64,
    end: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("{field} {value:?} is not a MAC address")]
    NotAMac { field: &'static str, value: String },
    #[error("{field} {value:?} is a multicast address")]
    Multicast { field: &'static str, value: String },
    #[error("RANGE_START {start} is not below RANGE_END {end}")]
    Order { start: String, end: String },
}

impl MacRange {
    /// Parses both ends. Unlike upstream's byte-wise comparison, the ends compare as numbers,
    /// and a range that would hold a single address is refused as upstream's is.
    pub fn parse(start: &str, end: &str) -> Result<MacRange, RangeError> {
        let parse = |field: &'static str, value: &str| {
            let mac = MacAddr::parse(value.trim()).map_err(|_| RangeError::NotAMac {
                field,
                value: value.to_string(),
            })?;
            if mac.is_multicast() {
                return Err(RangeError::Multicast {
                    field,
                    value: value.to_string(),
                });
            }
            Ok(mac.to_u64())
        };
        let (s, e) = (parse("RANGE_START", start)?, parse("RANGE_END", end)?);
        if s >= e {
            return Err(RangeError::Order {
                start: start.to_string(),
                end: end.to_string(),
            });
        }
        Ok(MacRange { start: s, end: e })
    }

    pub fn start(&self) -> u64 {
        self.start
    }

    pub fn end(&self) -> u64 {
        self.end
    }

    pub fn contains(&self, mac: MacAddr) -> bool {
        (self.start..=self.end).contains(&mac.to_u64())
    }

    /// How many numbers the range spans (multicast ones inside included).
    pub fn span(&self) -> u64 {
        self.end - self.start + 1
    }
}

impl fmt::Display for MacRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}",
            MacAddr::from_u64(self.start),
            MacAddr::from_u64(self.end)
        )
    }
}

/// A number whose first octet is odd is a multicast address: never handed out, even when a
/// range spans it (02:..-04:.. holds all of 03:..).
pub fn is_multicast_number(n: u64) -> bool {
    (n >> 40) & 1 == 1
}

#[cfg(test)]
mod tests;
