//! One line per check, and the totals.

use std::io::Write;

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Passed; the optional note says what was accepted and why.
    Pass(Option<String>),
    Fail(String),
    Skip(String),
}

impl Outcome {
    pub fn from_result(r: Result<(), String>) -> Self {
        match r {
            Ok(()) => Outcome::Pass(None),
            Err(e) => Outcome::Fail(e),
        }
    }
}

pub struct Report {
    filter: Option<String>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// Prints a `# text` comment line. Not println!: a closed stdout must not turn cleanup into a
/// panic.
pub fn comment(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "# {text}");
    let _ = out.flush();
}

/// The line printed for one check.
pub fn line(name: &str, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass(None) => format!("PASS {name}"),
        Outcome::Pass(Some(note)) => format!("PASS {name}: {note}"),
        Outcome::Fail(why) => format!("FAIL {name}: {why}"),
        Outcome::Skip(why) => format!("SKIP {name}: {why}"),
    }
}

impl Report {
    pub fn new(filter: Option<String>) -> Self {
        Report {
            filter,
            passed: 0,
            failed: 0,
            skipped: 0,
        }
    }

    /// Whether `--filter` selects this check.
    pub fn wants(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }

    pub fn wants_any(&self, names: &[String]) -> bool {
        names.iter().any(|n| self.wants(n))
    }

    pub fn record(&mut self, name: &str, outcome: Outcome) {
        if !self.wants(name) {
            return;
        }
        match outcome {
            Outcome::Pass(_) => self.passed += 1,
            Outcome::Fail(_) => self.failed += 1,
            Outcome::Skip(_) => self.skipped += 1,
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", line(name, &outcome));
        let _ = out.flush();
    }

    pub fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// A short, single-line excerpt of some output, for messages.
pub fn excerpt(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 160 {
        let cut: String = flat.chars().take(160).collect();
        format!("{cut}...")
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_has_its_line() {
        assert_eq!(line("a", &Outcome::Pass(None)), "PASS a");
        assert_eq!(line("a", &Outcome::Pass(Some("n".into()))), "PASS a: n");
        assert_eq!(line("a", &Outcome::Fail("x".into())), "FAIL a: x");
        assert_eq!(line("a", &Outcome::Skip("y".into())), "SKIP a: y");
    }

    #[test]
    fn the_filter_selects_the_checks_that_are_counted() {
        let mut r = Report::new(Some("del".into()));
        assert!(r.wants("del-1.0.0"));
        assert!(!r.wants("add-1.0.0"));
        r.record("add-1.0.0", Outcome::Fail("x".into()));
        assert_eq!(r.failed, 0);
        r.record("del-1.0.0", Outcome::Skip("x".into()));
        assert_eq!(r.summary(), "0 passed, 0 failed, 1 skipped");
    }
}
