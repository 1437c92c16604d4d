//! The stdout rule, judged over every invocation of the run.

use crate::report::Outcome;
use crate::suite::Suite;

impl Suite {
    pub(super) fn stdout_check(&mut self) {
        let outcome = if self.violations.is_empty() {
            Outcome::Pass(Some(format!(
                "{} invocations, stdout was always one JSON value or empty as required",
                self.invocations
            )))
        } else {
            let shown: Vec<&str> = self.violations.iter().take(5).map(String::as_str).collect();
            Outcome::Fail(format!(
                "{} of {} invocations broke the stdout rule: {}{}",
                self.violations.len(),
                self.invocations,
                shown.join(" | "),
                if self.violations.len() > 5 {
                    " | ..."
                } else {
                    ""
                }
            ))
        };
        self.report.record("stdout-json", outcome);
    }
}
