//! Durations written the way Go's `time.ParseDuration` reads them (`8760h0m0s`, `1h30m`,
//! `1.5h`, `500ms`): the rotation intervals come from the operator in that form.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {0:?}: expected a Go duration such as 8760h0m0s, 90s or 500ms")]
pub struct BadDuration(pub String);

/// Nanoseconds per unit, the units Go accepts (`µs` in both of its spellings).
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        _ => return None,
    })
}

/// Parses a Go duration. Negative durations are refused (an interval cannot be negative), and
/// so is anything longer than Go's limit (about 292 years), as Go refuses it too.
pub fn parse_go_duration(text: &str) -> Result<Duration, BadDuration> {
    let bad = || BadDuration(text.to_string());
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if let Some(negative) = rest.strip_prefix('-') {
        // Go takes "-0" as zero; any other negative value has no meaning here.
        return if negative == "0" {
            Ok(Duration::ZERO)
        } else {
            Err(bad())
        };
    }
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
            Some(f) => {
                let n = f.bytes().take_while(u8::is_ascii_digit).count();
                f.split_at(n)
            }
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
        total = whole
            .checked_mul(per_unit)
            .and_then(|t| t.checked_add(total))
            .ok_or_else(bad)?;
        // Digits past nanosecond precision of an hour cannot change the result.
        let frac_digits = &frac_digits[..frac_digits.len().min(20)];
        if !frac_digits.is_empty() {
            let frac: u128 = frac_digits.parse().map_err(|_| bad())?;
            total += frac * per_unit / 10u128.pow(frac_digits.len() as u32);
        }
        if total > i64::MAX as u128 {
            return Err(bad());
        }
        rest = after;
    }
    let nanos = u64::try_from(total).map_err(|_| bad())?;
    Ok(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hours(h: u64) -> Duration {
        Duration::from_secs(h * 3600)
    }

    #[test]
    fn a_go_duration_with_hours_minutes_seconds_parses() {
        assert_eq!(parse_go_duration("8760h0m0s"), Ok(hours(8760)));
        assert_eq!(parse_go_duration("4380h0m0s"), Ok(hours(4380)));
        assert_eq!(parse_go_duration("24h0m0s"), Ok(hours(24)));
    }

    #[test]
    fn hours_and_minutes_add_up() {
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(90 * 60)));
    }

    #[test]
    fn seconds_and_milliseconds_parse() {
        assert_eq!(parse_go_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("3us"), Ok(Duration::from_micros(3)));
        assert_eq!(parse_go_duration("3µs"), Ok(Duration::from_micros(3)));
        assert_eq!(parse_go_duration("7ns"), Ok(Duration::from_nanos(7)));
    }

    #[test]
    fn a_fraction_of_a_unit_parses() {
        assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.s"), Ok(Duration::from_secs(1)));
    }

    #[test]
    fn a_bare_zero_and_a_plus_sign_are_accepted() {
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("-0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("+2m"), Ok(Duration::from_secs(120)));
    }

    #[test]
    fn malformed_durations_are_refused() {
        for text in [
            "", "h", "10", "1x", "1h 30m", "-1h", ".h", "1..5h", "1e3s", "5d",
        ] {
            assert!(parse_go_duration(text).is_err(), "{text:?} was accepted");
        }
    }

    #[test]
    fn a_duration_beyond_go_limit_is_refused() {
        assert!(parse_go_duration("2562047h").is_ok());
        assert!(parse_go_duration("2562048h").is_err());
    }
}
