//! Go's `time.ParseDuration`, for `selfSignConfiguration`: users write the same strings they
//! wrote for the upstream operator (`168h`, `1h30m`, `1.5h`, `90s`).

use std::time::Duration;

/// `d` in whole seconds, in its largest whole unit (`10m`, `90s`, `2h`, `0s`): a string both Go
/// and the installer's `--gc-interval` parse. Sub-second parts are dropped.
pub fn format_duration(d: Duration) -> String {
    match d.as_secs() {
        0 => "0s".to_string(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Parses a Go duration string. Negative durations parse (Go accepts them) and are returned as
/// `Err` with the reason, since no field here may be negative.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (examples: 168h, 1h30m, 90s)");
    let mut rest = s;
    let negative = rest.starts_with('-');
    if let Some(r) = rest.strip_prefix(['-', '+']) {
        rest = r;
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, tail) = rest.split_at(num_len);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(bad());
        }
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let int: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let mut value = int.checked_mul(unit_ns).ok_or_else(bad)?;
        let mut scale = unit_ns;
        for d in frac.chars() {
            scale /= 10;
            value += u128::from(d.to_digit(10).ok_or_else(bad)?) * scale;
        }
        total_ns = total_ns.checked_add(value).ok_or_else(bad)?;
        rest = tail;
    }
    // Go's Duration is an int64 of nanoseconds.
    if total_ns > i64::MAX as u128 {
        return Err(format!("{s:?} is out of range"));
    }
    if negative && total_ns > 0 {
        return Err(format!("{s:?} is negative"));
    }
    let secs = u64::try_from(total_ns / 1_000_000_000).map_err(|_| bad())?;
    let nanos = u32::try_from(total_ns % 1_000_000_000).map_err(|_| bad())?;
    Ok(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_whole_seconds_in_one_unit_that_parses_back() {
        for (secs, text) in [
            (0, "0s"),
            (90, "90s"),
            (600, "10m"),
            (5400, "90m"),
            (7200, "2h"),
        ] {
            let d = Duration::from_secs(secs);
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_go_duration(text), Ok(d));
        }
    }

    #[test]
    fn parses_what_go_parses() {
        let cases = [
            ("168h", 168 * 3600),
            ("1h30m", 5400),
            ("1.5h", 5400),
            ("90s", 90),
            ("0", 0),
            ("2h0m0s", 7200),
            ("+3m", 180),
        ];
        for (s, secs) in cases {
            assert_eq!(parse_go_duration(s), Ok(Duration::from_secs(secs)), "{s}");
        }
        assert_eq!(parse_go_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_go_duration("1µs"), Ok(Duration::from_micros(1)));
    }

    #[test]
    fn refuses_what_go_refuses_and_negatives() {
        for s in [
            "",
            "h",
            "10",
            "1d",
            "1.2.3h",
            "abc",
            "-1h",
            "1h-2m",
            ".h",
            "9999999999h",
        ] {
            assert!(parse_go_duration(s).is_err(), "{s:?} should be refused");
        }
    }
}
