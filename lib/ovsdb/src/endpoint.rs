//! Where OVSDB listens, written as OVS writes its remotes, and the stream to it.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Ipv6Addr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};

/// An OVSDB server's address. TLS (`ssl:`) is not spoken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    /// `host:port` as given; resolved when connecting.
    Tcp(String),
}

/// OVSDB's registered port, the default of `tcp:IP` without one.
const DEFAULT_TCP_PORT: u16 = 6640;

impl Endpoint {
    /// Parses `unix:PATH`, `tcp:IP[:PORT]` (IPv6 in brackets) or a bare absolute path, which
    /// older configs use for the unix socket.
    pub fn parse(s: &str) -> Result<Endpoint> {
        let bad = |why| Error::InvalidEndpoint {
            endpoint: s.to_string(),
            why,
        };
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(bad("the unix socket path is empty"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = s.strip_prefix("tcp:") {
            return parse_tcp(addr)
                .map(Endpoint::Tcp)
                .ok_or_else(|| bad("expected tcp:IP[:PORT], with an IPv6 address in brackets"));
        }
        if s.starts_with("ssl:") {
            return Err(Error::UnsupportedEndpoint {
                endpoint: s.to_string(),
            });
        }
        if s.starts_with('/') {
            return Ok(Endpoint::Unix(PathBuf::from(s)));
        }
        Err(bad("expected unix:PATH, tcp:IP[:PORT] or an absolute path"))
    }

    /// Opens a stream to the server; `timeout` bounds a TCP connect.
    pub(crate) fn connect(&self, timeout: Duration) -> io::Result<Stream> {
        match self {
            Endpoint::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            Endpoint::Tcp(addr) => {
                let mut last = None;
                for sa in addr.to_socket_addrs()? {
                    match TcpStream::connect_timeout(&sa, timeout) {
                        Ok(s) => {
                            // Requests are small and answered one at a time.
                            s.set_nodelay(true)?;
                            return Ok(Stream::Tcp(s));
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| io::Error::other("the address resolved to nothing")))
            }
        }
    }
}

impl FromStr for Endpoint {
    type Err = Error;

    fn from_str(s: &str) -> Result<Endpoint> {
        Endpoint::parse(s)
    }
}

/// `IP[:PORT]` to `host:port`; None when it is not an address OVSDB would take.
fn parse_tcp(addr: &str) -> Option<String> {
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<Ipv6Addr>().ok()?;
        match after {
            "" => (format!("[{host}]"), DEFAULT_TCP_PORT),
            p => (format!("[{host}]"), p.strip_prefix(':')?.parse().ok()?),
        }
    } else {
        match addr.split_once(':') {
            None => (addr.to_string(), DEFAULT_TCP_PORT),
            Some((host, port)) => (host.to_string(), port.parse().ok()?),
        }
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() || bare.contains(char::is_whitespace) || port == 0 {
        return None;
    }
    Some(format!("{host}:{port}"))
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
            Endpoint::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// A connected unix or TCP socket.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn set_read_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(t)),
            Stream::Tcp(s) => s.set_read_timeout(Some(t)),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(Some(t)),
            Stream::Tcp(s) => s.set_write_timeout(Some(t)),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_like_ovs_remotes() {
        let parse = |s| Endpoint::parse(s);
        assert_eq!(
            parse("unix:/run/ovs/db.sock").expect("unix"),
            Endpoint::Unix("/run/ovs/db.sock".into())
        );
        assert_eq!(
            parse("/var/run/openvswitch/db.sock").expect("bare path"),
            Endpoint::Unix("/var/run/openvswitch/db.sock".into())
        );
        assert_eq!(
            parse("tcp:127.0.0.1:6641").expect("tcp"),
            Endpoint::Tcp("127.0.0.1:6641".into())
        );
        assert_eq!(
            parse("tcp:10.0.0.1").expect("default port"),
            Endpoint::Tcp("10.0.0.1:6640".into())
        );
        assert_eq!(
            parse("tcp:[::1]:6641").expect("ipv6"),
            Endpoint::Tcp("[::1]:6641".into())
        );
    }

    #[test]
    fn malformed_endpoints_are_invalid_and_named_in_the_error() {
        for bad in [
            "",
            "unix:",
            "tcp:",
            "tcp:1.2.3.4:x",
            "tcp:1.2.3.4:0",
            "tcp:[::1",
            "http://x",
            "db.sock",
        ] {
            let e = Endpoint::parse(bad).expect_err(bad);
            assert!(matches!(e, Error::InvalidEndpoint { .. }), "{bad}: {e:?}");
            assert!(e.to_string().starts_with(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn ssl_endpoints_are_unsupported_not_malformed() {
        let e = Endpoint::parse("ssl:1.2.3.4:6640").expect_err("ssl");
        assert!(matches!(e, Error::UnsupportedEndpoint { .. }), "{e:?}");
    }

    #[test]
    fn endpoints_display_as_they_parse() {
        for s in ["unix:/run/db.sock", "tcp:127.0.0.1:6640", "tcp:[::1]:6641"] {
            let e: Endpoint = s.parse().expect(s);
            assert_eq!(e.to_string(), s);
        }
    }
}
