//! Durations as Go's `time.ParseDuration` reads them (`168h`, `1h30m`, `1.5h`, `500ms`): the
//! operator's settings and `selfSignConfiguration`, the intervals it hands KubeMacPool's
//! certificate manager, and the node agent's flags are written the way users wrote them for the
//! upstream components, and the operator writes them back for the others to read.

use std::fmt;
use std::time::Duration;

/// Why a text is not a duration that may be used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoDurationError {
    /// Go would not parse it either.
    NotADuration(String),
    /// Go parses it, but no interval or timeout here may be negative.
    Negative(String),
    /// Longer than Go's limit (an int64 of nanoseconds, about 292 years).
    OutOfRange(String),
}

impl fmt::Display for GoDurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoDurationError::NotADuration(t) => {
                write!(
                    f,
                    "{t:?} is not a duration (examples: 168h, 1h30m, 90s, 500ms)"
                )
            }
            GoDurationError::Negative(t) => write!(f, "{t:?} is negative"),
            GoDurationError::OutOfRange(t) => write!(f, "{t:?} is out of range"),
        }
    }
}

impl std::error::Error for GoDurationError {}

/// Nanoseconds per unit, the units Go accepts (`µs` in both of its spellings).
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Parses `text` as Go does, and refuses a negative duration other than zero.
pub fn parse_go_duration(text: &str) -> Result<Duration, GoDurationError> {
    let bad = || GoDurationError::NotADuration(text.to_string());
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_digits, after) = rest.split_at(int_len);
        let (frac_digits, after) = match after.strip_prefix('.') {
            Some(f) => f.split_at(f.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", after),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(bad());
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let per_unit = unit_nanos(unit).ok_or_else(bad)?;
        let whole: u128 = if int_digits.is_empty() {
            0
        } else {
            int_digits.parse().map_err(|_| bad())?
        };
        let too_long = || GoDurationError::OutOfRange(text.to_string());
        total = whole
            .checked_mul(per_unit)
            .and_then(|t| t.checked_add(total))
            .ok_or_else(too_long)?;
        // Each further digit is worth a tenth of the one before; past a nanosecond, nothing.
        let mut scale = per_unit;
        for d in frac_digits.bytes() {
            scale /= 10;
            total += u128::from(d - b'0') * scale;
        }
        if total > i64::MAX as u128 {
            return Err(too_long());
        }
        rest = after;
    }
    if negative && total > 0 {
        return Err(GoDurationError::Negative(text.to_string()));
    }
    let nanos = u64::try_from(total).map_err(|_| bad())?;
    Ok(Duration::from_nanos(nanos))
}

/// `d` in whole seconds, in its largest whole unit (`10m`, `90s`, `2h`, `0s`): what Go and
/// [`parse_go_duration`] both read back. Sub-second parts are dropped.
pub fn format_go_duration(d: Duration) -> String {
    match d.as_secs() {
        0 => "0s".to_string(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hours(h: u64) -> Duration {
        Duration::from_secs(h * 3600)
    }

    #[test]
    fn hours_minutes_and_seconds_add_up() {
        assert_eq!(parse_go_duration("8760h0m0s"), Ok(hours(8760)));
        assert_eq!(parse_go_duration("168h"), Ok(hours(168)));
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("2h0m0s"), Ok(hours(2)));
    }

    #[test]
    fn every_unit_go_knows_parses() {
        assert_eq!(parse_go_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("3us"), Ok(Duration::from_micros(3)));
        assert_eq!(parse_go_duration("3µs"), Ok(Duration::from_micros(3)));
        assert_eq!(parse_go_duration("3\u{3bc}s"), Ok(Duration::from_micros(3)));
        assert_eq!(parse_go_duration("7ns"), Ok(Duration::from_nanos(7)));
    }

    #[test]
    fn a_fraction_of_a_unit_parses() {
        assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.s"), Ok(Duration::from_secs(1)));
        // Digits past a nanosecond change nothing, however many there are.
        let long = format!("1.{}s", "9".repeat(40));
        assert_eq!(
            parse_go_duration(&long),
            Ok(Duration::from_nanos(1_999_999_999))
        );
    }

    #[test]
    fn a_bare_zero_and_a_sign_are_accepted() {
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("-0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("-0s"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("+2m"), Ok(Duration::from_secs(120)));
    }

    #[test]
    fn what_go_refuses_is_not_a_duration() {
        for text in [
            "", "h", "10", "1x", "1d", "5d", "1h 30m", ".h", "1..5h", "1.2.3h", "1e3s", "abc",
            "1h-2m", "+", "-",
        ] {
            assert_eq!(
                parse_go_duration(text),
                Err(GoDurationError::NotADuration(text.into())),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_negative_duration_is_refused_as_negative() {
        assert_eq!(
            parse_go_duration("-1h"),
            Err(GoDurationError::Negative("-1h".into()))
        );
        assert_eq!(
            GoDurationError::Negative("-1h".into()).to_string(),
            "\"-1h\" is negative"
        );
    }

    #[test]
    fn a_duration_beyond_gos_limit_is_out_of_range() {
        assert!(parse_go_duration("2562047h").is_ok());
        assert_eq!(
            parse_go_duration("2562048h"),
            Err(GoDurationError::OutOfRange("2562048h".into()))
        );
        assert!(parse_go_duration("9999999999999999999999999999h").is_err());
    }

    #[test]
    fn a_whole_duration_is_written_in_one_unit_that_parses_back() {
        for (secs, text) in [
            (0, "0s"),
            (90, "90s"),
            (600, "10m"),
            (5400, "90m"),
            (7200, "2h"),
        ] {
            let d = Duration::from_secs(secs);
            assert_eq!(format_go_duration(d), text);
            assert_eq!(parse_go_duration(text), Ok(d));
        }
    }
}
