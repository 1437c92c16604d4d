//! What came back from one invocation, and what a check expects of it.

use crate::invoke::Exit;
use crate::report::excerpt;
use crate::validate::error_object::{parse_error, CniError};
use crate::validate::stdout::Stdout;
use serde_json::Value;

/// What came back from one plugin invocation.
pub struct Reply {
    pub exit: Exit,
    pub stdout: Stdout,
    pub stderr: String,
}

impl Reply {
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    pub fn describe(&self) -> String {
        let mut s = self.exit.to_string();
        match &self.stdout {
            Stdout::Empty => s.push_str(", empty stdout"),
            Stdout::Json(v) => match parse_error(v) {
                Ok(e) if !self.success() => s.push_str(&format!(", error {e}")),
                _ => s.push_str(&format!(", stdout {}", excerpt(&v.to_string()))),
            },
            Stdout::Invalid(why) => s.push_str(&format!(", {why}")),
        }
        if !self.success()
            && !matches!(self.stdout, Stdout::Json(_))
            && !self.stderr.trim().is_empty()
        {
            s.push_str(&format!(", stderr: {}", excerpt(&self.stderr)));
        }
        s
    }

    pub fn expect_empty_success(&self) -> Result<(), String> {
        if self.success() && self.stdout == Stdout::Empty {
            Ok(())
        } else {
            Err(format!(
                "expected exit 0 with empty stdout, got {}",
                self.describe()
            ))
        }
    }

    pub fn expect_object(&self) -> Result<Value, String> {
        match (&self.exit, &self.stdout) {
            (Exit::Code(0), Stdout::Json(v @ Value::Object(_))) => Ok(v.clone()),
            _ => Err(format!(
                "expected exit 0 with a JSON object, got {}",
                self.describe()
            )),
        }
    }

    pub fn expect_error(&self, code: Option<u64>) -> Result<CniError, String> {
        let want = code.map_or_else(|| "an error".to_string(), |c| format!("error code {c}"));
        if matches!(self.exit, Exit::Code(c) if c != 0) {
            let Stdout::Json(v) = &self.stdout else {
                return Err(format!(
                    "expected {want} as JSON on stdout, got {}",
                    self.describe()
                ));
            };
            let err = parse_error(v)?;
            match code {
                Some(c) if err.code != c => Err(format!("expected error code {c}, got {err}")),
                _ => Ok(err),
            }
        } else {
            Err(format!(
                "expected {want} with a non-zero exit, got {}",
                self.describe()
            ))
        }
    }
}
