//! The one way to say what was being done when a `Result` failed: `.context("reading x")` for
//! a literal or a value at hand, `.with_context(|| format!(..))` for a context that costs
//! something to build (the closure only runs on an error). The context becomes the outer
//! error, the cause its `source()`; this is the extension-trait pattern of `anyhow::Context`,
//! returning the crate's own error type instead of a boxed one.
//!
//! Why a macro: a generic trait whose output error is a type parameter leaves that type to
//! inference, and `?` converts through `From`, so nothing pins it. Instead each crate's error
//! module invokes [`context_trait!`] once for its own `Error`, naming the constructor that
//! wraps a cause, and gets a `Context` trait whose output is that `Error`.
//!
//!
//! [`report`] is the one way to print an error with its causes on one line: a log line, a CNI
//! error's `msg`, a status condition's message.
//!
//! ```
//! # mod demo {
//! #[derive(Debug)]
//! pub enum Error {
//!     Io(std::io::Error),
//!     Chain(String, Box<Error>),
//! }
//! impl From<std::io::Error> for Error {
//!     fn from(e: std::io::Error) -> Error {
//!         Error::Io(e)
//!     }
//! }
//! impl Error {
//!     pub fn wrap(context: String, cause: Error) -> Error {
//!         Error::Chain(context, Box::new(cause))
//!     }
//! }
//! error_context::context_trait!(Error, Error::wrap);
//!
//! fn read(path: &str) -> Result<String, Error> {
//!     std::fs::read_to_string(path).with_context(|| format!("reading {path}"))
//! }
//! # }
//! ```

/// Defines `pub trait Context<T>` for `$error`, implemented for every `Result<T, E>` whose
/// `E` converts into `$error`. The wrapped error is built as `$wrap(context, cause)`, with the
/// context as a `String` and the cause as `$error`, so a constructor taking `impl Into<String>`
/// or `impl Display` (and `$error` or `impl Into<$error>`) fits.
#[macro_export]
macro_rules! context_trait {
    ($error:ty, $wrap:path) => {
        /// What was being done when the error of a `Result` happened: the context makes the
        /// outer error and the cause is its `source()`.
        pub trait Context<T> {
            /// Wraps the error with `context`, a literal or a value at hand.
            fn context<C: ::core::fmt::Display>(
                self,
                context: C,
            ) -> ::core::result::Result<T, $error>;

            /// Wraps the error with what `context` makes, which is only called on an error:
            /// for a `format!` that the success path should not pay for.
            fn with_context<C, F>(self, context: F) -> ::core::result::Result<T, $error>
            where
                C: ::core::fmt::Display,
                F: ::core::ops::FnOnce() -> C;
        }

        impl<T, E> Context<T> for ::core::result::Result<T, E>
        where
            E: ::core::convert::Into<$error>,
        {
            fn context<C: ::core::fmt::Display>(
                self,
                context: C,
            ) -> ::core::result::Result<T, $error> {
                self.map_err(|e| {
                    $wrap(
                        ::std::string::ToString::to_string(&context),
                        ::core::convert::Into::<$error>::into(e),
                    )
                })
            }

            fn with_context<C, F>(self, context: F) -> ::core::result::Result<T, $error>
            where
                C: ::core::fmt::Display,
                F: ::core::ops::FnOnce() -> C,
            {
                self.map_err(|e| {
                    $wrap(
                        ::std::string::ToString::to_string(&context()),
                        ::core::convert::Into::<$error>::into(e),
                    )
                })
            }
        }
    };
}

/// `err` and each of its causes on one line, outermost first, joined with ": ", for the places
/// that carry a message only (a log line, a CNI error's `msg`, a condition's message). A cause
/// whose text the line already holds is not repeated: many errors print their source in their
/// own text as well as returning it from `source()`. Line breaks and runs of spaces become one
/// space.
pub fn report(err: &(dyn std::error::Error + 'static)) -> String {
    let mut line = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        let text = next.to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = next.source();
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::fmt;

    #[derive(Debug)]
    pub enum Error {
        Cause(&'static str),
        Chain(String, Box<Error>),
    }

    impl fmt::Display for Error {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Error::Cause(text) => f.write_str(text),
                Error::Chain(context, _) => f.write_str(context),
            }
        }
    }

    impl std::error::Error for Error {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            match self {
                Error::Cause(_) => None,
                Error::Chain(_, cause) => Some(cause.as_ref()),
            }
        }
    }

    /// A foreign cause, converted on the way as `?` would.
    #[derive(Debug)]
    pub struct Foreign;

    impl From<Foreign> for Error {
        fn from(_: Foreign) -> Error {
            Error::Cause("foreign")
        }
    }

    impl Error {
        fn wrap(context: impl Into<String>, cause: Error) -> Error {
            Error::Chain(context.into(), Box::new(cause))
        }
    }

    context_trait!(Error, Error::wrap);

    #[test]
    fn the_context_is_the_outer_message_and_the_cause_its_source() {
        let failed: Result<(), Error> = Err(Error::Cause("disk full"));
        let err = failed.context("writing x").expect_err("still an error");
        assert_eq!(err.to_string(), "writing x");
        let source = err.source().map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("disk full"));

        let failed: Result<(), Foreign> = Err(Foreign);
        let err = failed
            .with_context(|| format!("reading {}", 7))
            .expect_err("still an error");
        assert_eq!(err.to_string(), "reading 7");
        let source = err.source().map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("foreign"));
    }

    #[test]
    fn with_context_is_not_called_on_ok() {
        let called = std::cell::Cell::new(false);
        let ok: Result<u8, Error> = Ok(1);
        let value = ok.with_context(|| {
            called.set(true);
            "built on the success path"
        });
        assert_eq!(value.ok(), Some(1));
        assert!(!called.get());
        let ok: Result<u8, Foreign> = Ok(2);
        assert_eq!(ok.context("unused").ok(), Some(2));
    }

    #[test]
    fn report_prints_each_cause_once_outermost_first() {
        let inner = Error::Chain("opening /x".into(), Box::new(Error::Cause("no such file")));
        let outer = Error::wrap("reading config", inner);
        assert_eq!(
            super::report(&outer),
            "reading config: opening /x: no such file"
        );
    }

    #[test]
    fn report_skips_a_cause_the_error_already_printed() {
        let io = std::io::Error::other("disk full");
        #[derive(Debug)]
        struct Shows(std::io::Error);
        impl fmt::Display for Shows {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "writing x: {}", self.0)
            }
        }
        impl std::error::Error for Shows {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(super::report(&Shows(io)), "writing x: disk full");
    }

    #[test]
    fn report_is_one_line() {
        let err = Error::Chain("first\n  second".into(), Box::new(Error::Cause("third")));
        assert_eq!(super::report(&err), "first second: third");
    }
}
