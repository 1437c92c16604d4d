//! A small synchronous OVSDB client (RFC 7047): JSON-RPC over a unix or TCP stream.
//!
//! A CNI call is one short-lived process doing one or two transactions, so the client is
//! blocking std I/O with deadlines and no runtime. OVSDB messages are JSON objects written back
//! to back with no delimiter, so replies are cut out of the byte stream by [`Framer`], which
//! tracks nesting and strings, before serde_json decodes each one.
//!
//! Only what the plugin needs is here: `transact`, answering the server's `echo`, and functions
//! for the protocol's encodings of sets, maps and UUIDs.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cni_common::{Code, Error, Result};
use serde_json::{json, Value};

/// The database every Open vSwitch table lives in.
pub const DATABASE: &str = "Open_vSwitch";

/// Where OVSDB listens. TLS (`ssl:`) is not spoken.
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
    /// older configs use for the unix socket. `field` names the config field in errors.
    pub fn parse(field: &str, s: &str) -> Result<Endpoint> {
        let bad = |why: &str| Error::invalid_config(format!("{field} {s:?}: {why}"));
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
            return Err(Error::unsupported_field(format!(
                "{field} {s:?}: ssl: endpoints are not supported; use unix: or tcp:"
            )));
        }
        if s.starts_with('/') {
            return Ok(Endpoint::Unix(PathBuf::from(s)));
        }
        Err(bad("expected unix:PATH, tcp:IP[:PORT] or an absolute path"))
    }
}

/// `IP[:PORT]` to `host:port`; None when it is not an address OVSDB would take.
fn parse_tcp(addr: &str) -> Option<String> {
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
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

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(t)),
            Stream::Tcp(s) => s.set_read_timeout(Some(t)),
        }
    }

    fn set_write_timeout(&self, t: Duration) -> io::Result<()> {
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

/// One connection to OVSDB.
pub struct Client {
    stream: Stream,
    endpoint: Endpoint,
    framer: Framer,
    next_id: u64,
    timeout: Duration,
}

impl Client {
    /// Connects; `timeout` bounds the connect and every later request. An unreachable server
    /// is code 11 (try again later): OVS restarting is the usual reason.
    pub fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Client> {
        let stream = open(endpoint, timeout).map_err(|e| {
            Error::new(
                Code::TryAgainLater,
                format!("cannot reach OVSDB at {endpoint}: {e}"),
            )
        })?;
        Ok(Client {
            stream,
            endpoint: endpoint.clone(),
            framer: Framer::default(),
            next_id: 0,
            timeout,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Runs one transaction on [`DATABASE`] and returns its reply. `extra` lengthens the
    /// deadline for transactions whose `wait` operations may block on the server.
    pub fn transact(&mut self, ops: &[Value], extra: Duration) -> Result<Reply> {
        let mut params = Vec::with_capacity(ops.len() + 1);
        params.push(json!(DATABASE));
        params.extend_from_slice(ops);
        let result = self.call("transact", Value::Array(params), self.timeout + extra)?;
        let Value::Array(results) = result else {
            return Err(self.protocol_error(format!("transact result is not an array: {result}")));
        };
        Ok(Reply {
            results,
            ops: ops.len(),
        })
    }

    /// Sends one request and reads until its response, answering the server's echo requests
    /// (its inactivity probe) and skipping notifications on the way.
    fn call(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"method": method, "params": params, "id": id});
        self.send(&request, deadline)?;
        loop {
            let msg = self.receive(deadline)?;
            if msg.get("method").and_then(Value::as_str) == Some("echo") {
                let echo_id = msg.get("id").cloned().unwrap_or(Value::Null);
                let echo_params = msg.get("params").cloned().unwrap_or_else(|| json!([]));
                let reply = json!({"id": echo_id, "result": echo_params, "error": null});
                self.send(&reply, deadline)?;
                continue;
            }
            if msg.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            match msg.get("error") {
                None | Some(Value::Null) => {}
                Some(err) => {
                    return Err(Error::system(format!(
                        "OVSDB at {} refused {method}: {err}",
                        self.endpoint
                    )))
                }
            }
            return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    fn send(&mut self, msg: &Value, deadline: Instant) -> Result<()> {
        let bytes = msg.to_string();
        let left = remaining(deadline).ok_or_else(|| self.timed_out())?;
        self.stream
            .set_write_timeout(left)
            .and_then(|()| self.stream.write_all(bytes.as_bytes()))
            .map_err(|e| self.io_error(e))
    }

    /// The next complete message from the server.
    fn receive(&mut self, deadline: Instant) -> Result<Value> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.framer.next_message() {
                Some(Ok(msg)) => return Ok(msg),
                Some(Err(e)) => return Err(self.protocol_error(e)),
                None => {}
            }
            let left = remaining(deadline).ok_or_else(|| self.timed_out())?;
            self.stream
                .set_read_timeout(left)
                .map_err(|e| self.io_error(e))?;
            let n = match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(Error::new(
                        Code::TryAgainLater,
                        format!("OVSDB at {} closed the connection", self.endpoint),
                    ))
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => return Err(self.timed_out()),
                Err(e) => return Err(self.io_error(e)),
            };
            self.framer.push(&chunk[..n]);
        }
    }

    fn timed_out(&self) -> Error {
        Error::new(
            Code::TryAgainLater,
            format!("OVSDB at {} did not answer in time", self.endpoint),
        )
    }

    fn io_error(&self, e: io::Error) -> Error {
        Error::new(
            Code::TryAgainLater,
            format!("talking to OVSDB at {}: {e}", self.endpoint),
        )
    }

    fn protocol_error(&self, msg: String) -> Error {
        Error::system(format!("OVSDB at {}: {msg}", self.endpoint))
    }
}

fn open(endpoint: &Endpoint, timeout: Duration) -> io::Result<Stream> {
    match endpoint {
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

/// Time left before `deadline`; None once it has passed (a zero timeout means "block" to std).
fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The reply to one transaction: one result per operation, plus one more when the commit
/// itself failed (a constraint or referential integrity violation).
#[derive(Debug, Clone)]
pub struct Reply {
    results: Vec<Value>,
    ops: usize,
}

/// The operation a transaction failed at, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpFailure {
    /// Index of the failed operation; equal to the number of operations for a failed commit.
    pub index: usize,
    pub error: String,
    pub details: String,
}

impl fmt::Display for OpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)?;
        if !self.details.is_empty() {
            write!(f, " ({})", self.details)?;
        }
        Ok(())
    }
}

impl Reply {
    /// The first failure, if the transaction did not commit.
    pub fn failure(&self) -> Option<OpFailure> {
        self.results.iter().enumerate().find_map(|(index, r)| {
            let error = r.get("error").filter(|e| !e.is_null())?;
            let text = |v: Option<&Value>| match v {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            Some(OpFailure {
                index,
                error: text(Some(error)),
                details: text(r.get("details")),
            })
        })
    }

    /// The per-operation results of a committed transaction, or its failure as an error
    /// prefixed with `what`.
    pub fn into_results(self, what: &str) -> Result<Vec<Value>> {
        if let Some(f) = self.failure() {
            return Err(Error::system(format!(
                "{what}: OVSDB transaction failed: {f}"
            )));
        }
        if self.results.len() < self.ops {
            return Err(Error::system(format!(
                "{what}: OVSDB answered {} results for {} operations",
                self.results.len(),
                self.ops
            )));
        }
        Ok(self.results)
    }
}

/// Cuts complete top-level JSON values out of a byte stream. OVSDB peers write messages back
/// to back, so a read may end inside a message or hold several.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    /// How far `buf` has been scanned, and the scanner's state there.
    scanned: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl Framer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, None until one has fully arrived.
    pub fn next_message(&mut self) -> Option<std::result::Result<Value, String>> {
        while self.scanned < self.buf.len() {
            let b = self.buf[self.scanned];
            self.scanned += 1;
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            if self.depth == 0 {
                // Between messages: only whitespace, then the '{' that opens the next one.
                match b {
                    b'{' => self.depth = 1,
                    b' ' | b'\t' | b'\n' | b'\r' => {
                        self.buf.drain(..self.scanned);
                        self.scanned = 0;
                    }
                    _ => return Some(Err(self.garbage())),
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        let end = self.scanned;
                        let parsed = serde_json::from_slice(&self.buf[..end])
                            .map_err(|e| format!("undecodable message: {e}"));
                        self.buf.drain(..end);
                        self.scanned = 0;
                        return Some(parsed);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn garbage(&mut self) -> String {
        let shown = String::from_utf8_lossy(&self.buf[..self.buf.len().min(64)]).into_owned();
        self.buf.clear();
        self.scanned = 0;
        self.depth = 0;
        format!("not a JSON-RPC message: {shown:?}")
    }
}

// The protocol's encodings (RFC 7047 section 5.1).

/// `["set", [...]]`.
pub fn set<I: IntoIterator<Item = Value>>(items: I) -> Value {
    json!(["set", items.into_iter().collect::<Vec<_>>()])
}

/// `["map", [[k, v], ...]]`.
pub fn map<'a, I: IntoIterator<Item = (&'a String, &'a String)>>(pairs: I) -> Value {
    let pairs: Vec<Value> = pairs.into_iter().map(|(k, v)| json!([k, v])).collect();
    json!(["map", pairs])
}

/// `["uuid", "..."]`: a row already in the database.
pub fn uuid(id: &str) -> Value {
    json!(["uuid", id])
}

/// `["named-uuid", "..."]`: a row inserted earlier in the same transaction.
pub fn named_uuid(name: &str) -> Value {
    json!(["named-uuid", name])
}

/// The members of a set column: a set is written as `["set", [...]]`, except a one-member set
/// which may be the bare atom.
pub fn set_items(v: &Value) -> Vec<&Value> {
    match v.as_array().map(Vec::as_slice) {
        Some([tag, Value::Array(items)]) if tag == "set" => items.iter().collect(),
        _ => vec![v],
    }
}

/// A string-to-string map column; other pairs are skipped.
pub fn map_items(v: &Value) -> BTreeMap<String, String> {
    let Some([tag, Value::Array(pairs)]) = v.as_array().map(Vec::as_slice) else {
        return BTreeMap::new();
    };
    if tag != "map" {
        return BTreeMap::new();
    }
    pairs
        .iter()
        .filter_map(|p| match p.as_array().map(Vec::as_slice) {
            Some([Value::String(k), Value::String(v)]) => Some((k.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// The id of a `["uuid", "..."]` atom.
pub fn uuid_of(v: &Value) -> Option<&str> {
    match v.as_array().map(Vec::as_slice) {
        Some([tag, Value::String(id)]) if tag == "uuid" => Some(id),
        _ => None,
    }
}

/// The rows of a `select` result.
pub fn rows(result: &Value) -> &[Value] {
    result
        .get("rows")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(f: &mut Framer) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(m) = f.next_message() {
            out.push(m.expect("valid message"));
        }
        out
    }

    #[test]
    fn framer_cuts_back_to_back_messages() {
        let mut f = Framer::default();
        f.push(br#"{"id":1,"result":[]}{"id":2,"result":{}}  {"id":3}"#);
        let ids: Vec<_> = drain(&mut f).iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids, vec![json!(1), json!(2), json!(3)]);
    }

    #[test]
    fn framer_waits_for_a_message_split_across_reads() {
        let msg = br#"{"id":7,"result":[{"rows":[{"name":"a}b"}]}]}"#;
        let mut f = Framer::default();
        for chunk in msg.chunks(5) {
            assert!(drain(&mut f).is_empty());
            f.push(chunk);
        }
        let got = drain(&mut f);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["result"][0]["rows"][0]["name"], "a}b");
    }

    #[test]
    fn framer_is_not_fooled_by_brackets_and_escaped_quotes_in_strings() {
        let mut f = Framer::default();
        f.push(br#"{"s":"\"}]{[\\","t":"x"}{"u":1}"#);
        let got = drain(&mut f);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0]["s"], "\"}]{[\\");
        assert_eq!(got[1]["u"], 1);
    }

    #[test]
    fn framer_reports_garbage_between_messages() {
        let mut f = Framer::default();
        f.push(b"HTTP/1.1 400");
        assert!(matches!(f.next_message(), Some(Err(_))));
        f.push(b"] {\"id\":1}");
        assert!(matches!(f.next_message(), Some(Err(_))));
        assert!(f.next_message().is_none(), "garbage drops the buffer");
    }

    #[test]
    fn endpoints_parse_like_ovs_remotes() {
        let parse = |s| Endpoint::parse("socket_file", s);
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
        for bad in [
            "",
            "unix:",
            "tcp:",
            "tcp:1.2.3.4:x",
            "tcp:[::1",
            "http://x",
            "db.sock",
        ] {
            let e = parse(bad).expect_err(bad);
            assert_eq!(e.code(), Code::InvalidConfig, "{bad}");
            assert!(e.msg().starts_with("socket_file"), "{}", e.msg());
        }
        assert_eq!(
            parse("ssl:1.2.3.4:6640").expect_err("ssl").code(),
            Code::UnsupportedField
        );
    }

    #[test]
    fn sets_maps_and_uuids_round_trip() {
        let s = set([json!(1), json!(2)]);
        assert_eq!(s, json!(["set", [1, 2]]));
        assert_eq!(set_items(&s), vec![&json!(1), &json!(2)]);
        assert_eq!(set_items(&json!(5)), vec![&json!(5)]);
        let m: BTreeMap<String, String> = [("a".to_string(), "b".to_string())].into();
        assert_eq!(map_items(&map(&m)), m);
        assert_eq!(uuid_of(&uuid("1-2")), Some("1-2"));
        assert_eq!(uuid_of(&named_uuid("x")), None);
    }

    #[test]
    fn reply_reports_the_failed_operation_and_a_failed_commit() {
        let ok = Reply {
            results: vec![json!({}), json!({"uuid": ["uuid", "u"]})],
            ops: 2,
        };
        assert!(ok.failure().is_none());
        let failed = Reply {
            results: vec![
                json!({"error": "timed out", "details": "where"}),
                Value::Null,
            ],
            ops: 2,
        };
        assert_eq!(failed.failure().map(|f| f.index), Some(0));
        let commit = Reply {
            results: vec![
                json!({}),
                json!({}),
                json!({"error": "constraint violation"}),
            ],
            ops: 2,
        };
        let f = commit.failure().expect("commit failed");
        assert_eq!((f.index, f.error.as_str()), (2, "constraint violation"));
        assert!(commit.into_results("adding").is_err());
    }
}
