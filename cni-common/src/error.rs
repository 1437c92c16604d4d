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

/// A CNI error: code, message (with context, outermost first) and optional details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: Code,
    msg: String,
    details: Option<String>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(code: Code, msg: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    /// Prefixes the message with what we were doing: "setting mtu of eth0: <cause>".
    pub fn context(mut self, ctx: impl fmt::Display) -> Self {
        self.msg = format!("{ctx}: {}", self.msg);
        self
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn msg(&self) -> &str {
        &self.msg
    }

    pub fn details(&self) -> Option<&str> {
        self.details.as_deref()
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
        let wire = Wire {
            cni_version: cni_version.filter(|v| !v.is_empty()),
            code: self.code.as_u32(),
            msg: &self.msg,
            details: self.details.as_deref(),
        };
        // Serializing a struct of strings and an integer cannot fail.
        serde_json::to_string(&wire)
            .unwrap_or_else(|_| format!("{{\"code\":{},\"msg\":\"internal error\"}}", wire.code))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.msg)?;
        if let Some(d) = &self.details {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(Code::Io, e.to_string())
    }
}

impl From<nix::Error> for Error {
    fn from(e: nix::Error) -> Self {
        Error::new(Code::System, e.desc().to_string())
    }
}

/// Adds context to any error that converts into ours.
pub trait Context<T> {
    fn context(self, ctx: impl fmt::Display) -> Result<T>;
    fn with_context<C: fmt::Display, F: FnOnce() -> C>(self, f: F) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, ctx: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(ctx))
    }

    fn with_context<C: fmt::Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
}

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
    fn context_prefixes_the_message_and_keeps_the_code() {
        let r: std::result::Result<(), std::io::Error> = Err(std::io::Error::other("disk full"));
        let e = r.context("writing state").expect_err("is an error");
        assert_eq!(e.code(), Code::Io);
        assert_eq!(e.msg(), "writing state: disk full");
    }

    #[test]
    fn codes_round_trip() {
        for n in [1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51, 100, 101, 142] {
            assert_eq!(Code::from_u32(n).as_u32(), n);
        }
    }
}
