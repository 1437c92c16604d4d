//! The one error type of every plugin: a CNI error code plus a message that carries its context.
//!
//! Printed as the spec's error object on stdout (libcni parses stdout, not stderr) with a non-zero
//! exit status.

use std::fmt;

use serde::Serialize;

/// Well-known CNI error codes (spec section 5), plus the plugin-specific ones we use (100+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// 1: the config's version is not one we support, or the verb needs a newer version.
    IncompatibleVersion,
    /// 2: a config field we understand but cannot honour here.
    UnsupportedField,
    /// 3: the container is unknown or does not exist.
    UnknownContainer,
    /// 4: a CNI_* environment variable is missing or invalid.
    InvalidEnvironment,
    /// 5: I/O failure (reading stdin, state files).
    Io,
    /// 6: the config or a result could not be decoded.
    Decoding,
    /// 7: the config decoded but is invalid.
    InvalidConfig,
    /// 8: the namespace path is not a network namespace (Go skel's code; not in the spec table).
    InvalidNetns,
    /// 11: transient failure; the runtime may retry.
    TryAgainLater,
    /// 50: STATUS: the plugin cannot service ADD.
    NotAvailable,
    /// 51: STATUS: not available, and existing containers may have limited connectivity.
    LimitedConnectivity,
    /// 100: a kernel or host operation (netlink, sysctl, OVSDB) failed.
    System,
    /// 101: the delegated IPAM plugin could not be run or returned garbage.
    Ipam,
    /// Any other code, e.g. one passed through from a delegated plugin.
    Other(u32),
}

impl Code {
    pub fn as_u32(self) -> u32 {
        match self {
            Code::IncompatibleVersion => 1,
            Code::UnsupportedField => 2,
            Code::UnknownContainer => 3,
            Code::InvalidEnvironment => 4,
            Code::Io => 5,
            Code::Decoding => 6,
            Code::InvalidConfig => 7,
            Code::InvalidNetns => 8,
            Code::TryAgainLater => 11,
            Code::NotAvailable => 50,
            Code::LimitedConnectivity => 51,
            Code::System => 100,
            Code::Ipam => 101,
            Code::Other(n) => n,
        }
    }

    pub fn from_u32(n: u32) -> Code {
        match n {
            1 => Code::IncompatibleVersion,
            2 => Code::UnsupportedField,
            3 => Code::UnknownContainer,
            4 => Code::InvalidEnvironment,
            5 => Code::Io,
            6 => Code::Decoding,
            7 => Code::InvalidConfig,
            8 => Code::InvalidNetns,
            11 => Code::TryAgainLater,
            50 => Code::NotAvailable,
            51 => Code::LimitedConnectivity,
            100 => Code::System,
            101 => Code::Ipam,
            n => Code::Other(n),
        }
    }
}

/// A CNI error: what failed, with the chain of what we were doing around it.
///
/// The CNI code comes from the variant (and from the innermost error of a chain), so the code a
/// runtime sees is decided where the failure happened, not where it was last described.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A failure we describe ourselves, with the code that classifies it.
    #[error("{msg}{}", details.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Message {
        code: Code,
        msg: String,
        details: Option<String>,
    },
    /// What we were doing when `source` failed: "setting mtu of eth0: <cause>".
    #[error("{context}: {source}")]
    Wrapped {
        context: String,
        #[source]
        source: Box<Error>,
    },
    /// A system call or file operation failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A kernel interface (a /proc/sys file, an ioctl) refused: a host failure, not an I/O one.
    #[error("{context}: {source}")]
    Kernel {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A system call made through nix failed.
    #[error("{}", .0.desc())]
    Nix(#[from] nix::Error),
    /// JSON that does not decode into what it must be: the config, a result, a state file.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A prefix length its address cannot have, in a kernel reply or a decoded result (config
    /// fields fail earlier, as JSON).
    #[error("{0}")]
    Prefix(#[from] ipnetwork::IpNetworkError),
    /// What we were doing when a foreign `source` failed, with the code the failing step gives
    /// it: e.g. JSON an IPAM plugin printed is the delegate's failure (101), where JSON
    /// converts to undecodable input (6).
    #[error("{context}: {source}")]
    Classified {
        code: Code,
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The kernel refused a netlink request: its errno, and the extended ack's text if any.
    #[error("{}{}", std::io::Error::from_raw_os_error(*errno), detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Netlink { errno: i32, detail: Option<String> },
    /// Several steps of a teardown failed; the first one's code is the code.
    #[error("{} teardown steps failed: {}", .0.len(), .0.iter().map(Error::msg).collect::<Vec<_>>().join("; "))]
    Several(Vec<Error>),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(code: Code, msg: impl Into<String>) -> Self {
        Error::Message {
            code,
            msg: msg.into(),
            details: None,
        }
    }

    /// Says what we were doing when `source` failed; the code stays the source's. On a
    /// `Result`, [`Context`] says it.
    pub fn wrap(context: impl fmt::Display, source: impl Into<Error>) -> Self {
        Error::Wrapped {
            context: context.to_string(),
            source: Box::new(source.into()),
        }
    }

    /// `source` under `context`, with `code` rather than the one `source` converts to: for a
    /// step whose failure means something else than its cause's kind says. Like a
    /// [`Error::new`] message, it carries no errno.
    pub fn classified(
        code: Code,
        context: impl fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Classified {
            code,
            context: context.to_string(),
            source: source.into(),
        }
    }

    /// Adds the spec's `details` to the innermost message (ignored on other variants, which
    /// carry their own).
    pub fn with_details(self, with: impl Into<String>) -> Self {
        match self {
            Error::Message { code, msg, .. } => Error::Message {
                code,
                msg,
                details: Some(with.into()),
            },
            Error::Wrapped { context, source } => Error::Wrapped {
                context,
                source: Box::new(source.with_details(with)),
            },
            other => other,
        }
    }

    pub fn code(&self) -> Code {
        match self {
            Error::Message { code, .. } => *code,
            Error::Wrapped { source, .. } => source.code(),
            Error::Io(_) => Code::Io,
            Error::Json(_) => Code::Decoding,
            Error::Classified { code, .. } => *code,
            Error::Prefix(_) | Error::Kernel { .. } | Error::Nix(_) | Error::Netlink { .. } => {
                Code::System
            }
            Error::Several(errors) => errors.first().map_or(Code::System, Error::code),
        }
    }

    /// The whole chain in one line, outermost first, without the details: the spec's `msg`.
    pub fn msg(&self) -> String {
        match self {
            Error::Message { msg, .. } => msg.clone(),
            Error::Wrapped { context, source } => format!("{context}: {}", source.msg()),
            other => other.to_string(),
        }
    }

    /// The spec's `details`, from the innermost message.
    pub fn details(&self) -> Option<&str> {
        match self {
            Error::Message { details, .. } => details.as_deref(),
            Error::Wrapped { source, .. } => source.details(),
            _ => None,
        }
    }

    /// The kernel's errno when the root cause is a system call or netlink request, 0 otherwise:
    /// lets callers tell "already exists" from a real failure without reading messages.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Wrapped { source, .. } => source.errno(),
            Error::Io(e) | Error::Kernel { source: e, .. } => e.raw_os_error().unwrap_or(0),
            Error::Nix(e) => *e as i32,
            Error::Netlink { errno, .. } => *errno,
            Error::Several(errors) => errors.first().map_or(0, Error::errno),
            Error::Message { .. }
            | Error::Json(_)
            | Error::Prefix(_)
            | Error::Classified { .. } => 0,
        }
    }

    /// A kernel interface refused what we asked: code 100, with the OS error as the source.
    pub fn kernel(context: impl fmt::Display, source: std::io::Error) -> Self {
        Error::Kernel {
            context: context.to_string(),
            source,
        }
    }

    pub fn invalid_config(msg: impl Into<String>) -> Self {
        Error::new(Code::InvalidConfig, msg)
    }

    pub fn decoding(msg: impl Into<String>) -> Self {
        Error::new(Code::Decoding, msg)
    }

    pub fn invalid_env(msg: impl Into<String>) -> Self {
        Error::new(Code::InvalidEnvironment, msg)
    }

    pub fn system(msg: impl Into<String>) -> Self {
        Error::new(Code::System, msg)
    }

    pub fn unsupported_field(msg: impl Into<String>) -> Self {
        Error::new(Code::UnsupportedField, msg)
    }

    pub fn incompatible_version(msg: impl Into<String>) -> Self {
        Error::new(Code::IncompatibleVersion, msg)
    }

    /// The spec's error object; `cniVersion` is included when known.
    pub fn to_json(&self, cni_version: Option<&str>) -> String {
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(rename = "cniVersion", skip_serializing_if = "Option::is_none")]
            cni_version: Option<&'a str>,
            code: u32,
            msg: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            details: Option<&'a str>,
        }
        let msg = self.msg();
        let wire = Wire {
            cni_version: cni_version.filter(|v| !v.is_empty()),
            code: self.code().as_u32(),
            msg: &msg,
            details: self.details(),
        };
        // Serializing a struct of strings and an integer cannot fail.
        serde_json::to_string(&wire)
            .unwrap_or_else(|_| format!("{{\"code\":{},\"msg\":\"internal error\"}}", wire.code))
    }
}

// `.context(..)` and `.with_context(|| ..)` on every Result whose error converts into ours.
error_context::context_trait!(Error, Error::wrap);

/// `.context_as(code, ..)` on a `Result`: what was being done, for a step whose failure takes
/// another CNI code than its cause converts to (our own result that does not encode is a
/// plugin failure, 100, not undecodable input, 6). The error is [`Error::classified`].
pub trait ContextAs<T> {
    fn context_as<C: fmt::Display>(self, code: Code, context: C) -> Result<T>;

    /// As [`ContextAs::context_as`], with a context only built on an error.
    fn with_context_as<C: fmt::Display, F: FnOnce() -> C>(
        self,
        code: Code,
        context: F,
    ) -> Result<T>;
}

impl<T, E> ContextAs<T> for std::result::Result<T, E>
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn context_as<C: fmt::Display>(self, code: Code, context: C) -> Result<T> {
        self.map_err(|e| Error::classified(code, context, e))
    }

    fn with_context_as<C: fmt::Display, F: FnOnce() -> C>(
        self,
        code: Code,
        context: F,
    ) -> Result<T> {
        self.map_err(|e| Error::classified(code, context(), e))
    }
}

/// An error and its causes on one line, for a plugin whose library's error becomes a `msg`:
/// the workspace's one renderer, here so that plugins need no dependency of their own on it.
pub use error_context::report;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_json_has_code_msg_and_version() {
        let e = Error::invalid_config("vlan 4095 is out of range").with_details("field vlan");
        let v: serde_json::Value =
            serde_json::from_str(&e.to_json(Some("1.0.0"))).expect("valid json");
        assert_eq!(v["code"], 7);
        assert_eq!(v["cniVersion"], "1.0.0");
        assert_eq!(v["msg"], "vlan 4095 is out of range");
        assert_eq!(v["details"], "field vlan");
    }

    #[test]
    fn error_json_omits_empty_version_and_details() {
        let e = Error::decoding("bad json");
        let v: serde_json::Value = serde_json::from_str(&e.to_json(Some(""))).expect("valid json");
        assert!(v.get("cniVersion").is_none());
        assert!(v.get("details").is_none());
    }

    #[test]
    fn wrap_prefixes_the_message_and_keeps_the_code() {
        let e = Error::wrap("writing state", std::io::Error::other("disk full"));
        assert_eq!(e.code(), Code::Io);
        assert_eq!(e.msg(), "writing state: disk full");
    }

    #[test]
    fn wrap_keeps_the_cause_as_the_source() {
        let e = Error::wrap("writing state", std::io::Error::other("disk full"));
        let source = std::error::Error::source(&e).expect("has a source");
        assert_eq!(source.to_string(), "disk full");
    }

    #[test]
    fn context_on_a_result_wraps_as_wrap_does() {
        let failed: std::result::Result<(), _> = Err(std::io::Error::other("disk full"));
        let e = failed.context("writing state").expect_err("an error");
        assert_eq!(e.code(), Code::Io);
        assert_eq!(e.msg(), "writing state: disk full");
        let source = std::error::Error::source(&e).expect("has a source");
        assert_eq!(source.to_string(), "disk full");
    }

    #[test]
    fn json_that_does_not_decode_is_a_decoding_error_under_its_context() {
        let failed = serde_json::from_str::<u8>("x");
        let cause = failed.as_ref().expect_err("not JSON").to_string();
        let e = failed
            .context("failed to decode network configuration")
            .expect_err("an error");
        assert_eq!(e.code(), Code::Decoding);
        assert_eq!(
            e.msg(),
            format!("failed to decode network configuration: {cause}")
        );
    }

    #[test]
    fn a_prefix_its_address_cannot_have_is_a_system_error() {
        let failed = ipnetwork::IpNetwork::new([10, 0, 0, 0].into(), 33);
        let e = failed
            .context("route from the kernel")
            .expect_err("an error");
        assert_eq!(e.code(), Code::System);
        assert!(
            e.msg().starts_with("route from the kernel: "),
            "{}",
            e.msg()
        );
    }

    #[test]
    fn a_classified_cause_takes_the_given_code_and_no_errno() {
        let cause = std::io::Error::from_raw_os_error(libc::ENOENT);
        let text = cause.to_string();
        let e = Error::classified(Code::Ipam, "starting /opt/cni/bin/x", cause);
        assert_eq!(e.code(), Code::Ipam);
        assert_eq!(e.errno(), 0);
        assert_eq!(e.msg(), format!("starting /opt/cni/bin/x: {text}"));
        let source = std::error::Error::source(&e).expect("has a source");
        assert_eq!(source.to_string(), text);
    }

    #[test]
    fn details_of_a_wrapped_error_are_the_innermost() {
        let e = Error::wrap(
            "loading",
            Error::decoding("bad json").with_details("line 3"),
        );
        assert_eq!(e.details(), Some("line 3"));
        assert_eq!(e.code(), Code::Decoding);
    }

    #[test]
    fn errno_reaches_through_the_chain() {
        let e = Error::wrap(
            "ip link add br0",
            Error::Netlink {
                errno: libc::EEXIST,
                detail: None,
            },
        );
        assert_eq!(e.errno(), libc::EEXIST);
        assert_eq!(e.msg(), "ip link add br0: File exists (os error 17)");
    }

    #[test]
    fn codes_round_trip() {
        for n in [1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51, 100, 101, 142] {
            assert_eq!(Code::from_u32(n).as_u32(), n);
        }
    }
}
