//! clap's reports of a mistake on the command line, rewritten on one line and in the words of
//! this command line (`install does not take --bogus`), since the DaemonSet's log is where
//! they are read.

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::error::Error;

/// clap's report of a mistake, on one line and in the words of this command line.
pub(super) fn usage_error(e: &clap::Error, command: Option<&str>) -> Error {
    let mistake = Mistake(e);
    let what = match e.kind() {
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "no command given".to_string()
        }
        ErrorKind::InvalidSubcommand => {
            format!(
                "unknown command {:?}",
                mistake.context(ContextKind::InvalidSubcommand)
            )
        }
        ErrorKind::UnknownArgument => mistake.unknown_argument(command),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation if mistake.value().is_empty() => {
            format!("{} needs a value", mistake.flag())
        }
        ErrorKind::InvalidValue => mistake.invalid_value(),
        ErrorKind::ValueValidation => mistake.failed_validation(),
        ErrorKind::ArgumentConflict => mistake.conflict(),
        ErrorKind::TooManyValues => format!("{} takes no value", mistake.flag()),
        // Anything else: clap's own first line.
        _ => mistake.first_line(),
    };
    Error::Usage(what)
}

/// One clap error, read for the parts a usage message names.
struct Mistake<'a>(&'a clap::Error);

impl Mistake<'_> {
    fn context(&self, kind: ContextKind) -> String {
        match self.0.get(kind) {
            Some(ContextValue::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }

    /// The flag, without its value name: "--to <DIR>" -> "--to".
    fn flag(&self) -> String {
        self.context(ContextKind::InvalidArg)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    }

    fn value(&self) -> String {
        self.context(ContextKind::InvalidValue)
    }

    /// A flag the command does not take, or a word where none belongs.
    fn unknown_argument(&self, command: Option<&str>) -> String {
        let arg = self.context(ContextKind::InvalidArg);
        match (arg.starts_with('-'), command) {
            (true, Some(command)) => {
                let name = arg.split('=').next().unwrap_or_default();
                format!("{command} does not take {name}")
            }
            _ => format!("unexpected argument {arg:?}"),
        }
    }

    /// A value outside a fixed set: the set, when clap has it.
    fn invalid_value(&self) -> String {
        match self.0.get(ContextKind::ValidValue) {
            Some(ContextValue::Strings(valid)) => {
                format!(
                    "{} {:?}: expected {}",
                    self.flag(),
                    self.value(),
                    valid.join(" or ")
                )
            }
            _ => format!("{} {:?}: not a valid value", self.flag(), self.value()),
        }
    }

    /// A value our parser refused: its reason.
    fn failed_validation(&self) -> String {
        let why = std::error::Error::source(self.0)
            .map(error_context::report)
            .unwrap_or_default();
        format!("{} {:?}: {why}", self.flag(), self.value())
    }

    /// A flag given twice, or with one it excludes.
    fn conflict(&self) -> String {
        let (arg, prior) = (
            self.context(ContextKind::InvalidArg),
            self.context(ContextKind::PriorArg),
        );
        if prior.is_empty() || arg == prior {
            format!("{} given twice", self.flag())
        } else {
            format!("{} cannot be used with {prior}", self.flag())
        }
    }

    fn first_line(&self) -> String {
        self.0
            .render()
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::parse;
    use crate::cli::testing::args;

    #[test]
    fn mistakes_are_named_on_one_line() {
        for (line, node, says) in [
            ("", None, "no command"),
            ("copy", None, "unknown command \"copy\""),
            ("probe --from /plugins", None, "probe does not take --from"),
            ("probe --from=/plugins", None, "probe does not take --from"),
            ("install --to", None, "--to needs a value"),
            ("install --to=", None, "--to needs a value"),
            ("install --to /a --to /b", None, "--to given twice"),
            ("install --plugins bridge,,tuning", None, "an empty name"),
            ("install --plugins bridge,bridge", None, "bridge twice"),
            ("install --plugins ../x", None, "invalid plugin name"),
            ("install --plugins x=../bridge", None, "invalid plugin name"),
            ("install --plugins cnv-bridge=", None, "invalid plugin name"),
            (
                "install --plugins cnv-bridge=bridge,cnv-bridge=tuning",
                None,
                "cnv-bridge twice",
            ),
            (
                "install --plugins bridge,bridge=bridge",
                None,
                "bridge twice",
            ),
            ("install --replace-foreign=yes", None, "takes no value"),
            ("install stray", None, "unexpected argument \"stray\""),
            (
                "run --mark bridge",
                Some("n"),
                "--mark \"bridge\": expected linux-bridge or ovs",
            ),
            ("run --mark linux-bridge", None, "NODE_NAME"),
            ("run --mark linux-bridge", Some(""), "NODE_NAME"),
            ("run --interval 5s", Some("n"), "need --mark"),
            (
                "run --metrics-address :9091",
                Some("n"),
                "needs --gc-interval",
            ),
            (
                "run --mark linux-bridge --ovsdb unix:/x",
                Some("n"),
                "--ovsdb is for --mark ovs",
            ),
            (
                "run --mark ovs --interval 0s",
                Some("n"),
                "--interval \"0s\"",
            ),
            (
                "run --mark ovs --ovsdb=",
                Some("n"),
                "--ovsdb needs a value",
            ),
        ] {
            let err = parse(&args(line), node).expect_err(line).report();
            assert!(err.contains(says), "{line}: {err}");
            assert!(!err.contains('\n'), "{line}: {err}");
        }
    }

    #[test]
    fn usage_mistakes_point_at_the_help() {
        let err = parse(&args("install --bogus"), None).expect_err("--bogus");
        assert_eq!(
            err.report(),
            "install does not take --bogus (node-agent help for usage)"
        );
    }
}
