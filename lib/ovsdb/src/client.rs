//! One connection to OVSDB, one request at a time.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::endpoint::{Endpoint, Stream};
use crate::error::{Context, Error, Result};
use crate::jsonrpc::{self, Decoder, Message};
use crate::transact::{text, Reply};
use crate::DATABASE;

#[derive(Debug)]
pub struct Client {
    stream: Stream,
    endpoint: Endpoint,
    decoder: Decoder,
    next_id: u64,
    timeout: Duration,
    /// Set once a message could not be decoded: where the next one starts is unknown, so the
    /// connection is of no further use.
    out_of_step: bool,
}

impl Client {
    /// Connects; `timeout` bounds the connect and every later request.
    pub fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Client> {
        let stream = endpoint
            .connect(timeout)
            .with_context(|| format!("cannot reach OVSDB at {endpoint}"))?;
        Ok(Client {
            stream,
            endpoint: endpoint.clone(),
            decoder: Decoder::default(),
            next_id: 0,
            timeout,
            out_of_step: false,
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
        let result = self
            .call("transact", Value::Array(params), self.timeout + extra)
            .with_context(|| self.at())?;
        let Value::Array(results) = result else {
            return Err(Error::wrap(
                self.at(),
                Error::Protocol(format!("transact result is not an array: {result}")),
            ));
        };
        Ok(Reply::new(results, ops.len()))
    }

    /// Which server an error came from.
    fn at(&self) -> String {
        format!("OVSDB at {}", self.endpoint)
    }

    /// Sends one request and reads until its response, answering the server's echo requests
    /// (its inactivity probe) and skipping notifications on the way.
    fn call(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value> {
        if self.out_of_step {
            return Err(Error::Protocol(
                "an earlier message could not be decoded; the connection must be opened again"
                    .into(),
            ));
        }
        let deadline = Instant::now() + timeout;
        self.next_id += 1;
        let id = self.next_id;
        self.send(&jsonrpc::request(id, method, params), deadline)?;
        loop {
            let msg = self.receive(deadline)?;
            if msg.method.as_deref() == Some("echo") {
                self.send(&jsonrpc::echo_reply(&msg), deadline)?;
                continue;
            }
            if msg.id.as_u64() != Some(id) {
                continue;
            }
            if !msg.error.is_null() {
                return Err(rpc_error(method, &msg.error));
            }
            return Ok(msg.result);
        }
    }

    fn send(&mut self, msg: &Value, deadline: Instant) -> Result<()> {
        let bytes = msg.to_string();
        let left = remaining(deadline).ok_or(Error::Timeout)?;
        self.stream.set_write_timeout(left)?;
        self.stream.write_all(bytes.as_bytes()).map_err(io_error)
    }

    /// The next whole message from the server.
    fn receive(&mut self, deadline: Instant) -> Result<Message> {
        loop {
            if let Some(msg) = self.decoder.next_message() {
                self.out_of_step |= msg.is_err();
                return Ok(msg?);
            }
            let left = remaining(deadline).ok_or(Error::Timeout)?;
            self.stream.set_read_timeout(left)?;
            match self.decoder.read_from(&mut self.stream) {
                Ok(0) => return Err(Error::Closed),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
    }
}

/// A response's `error`: RFC 7047 makes it an object with `error` and maybe `details`; any
/// other value is kept as its JSON.
fn rpc_error(method: &str, error: &Value) -> Error {
    let (error, details) = match error {
        Value::Object(o) if o.contains_key("error") => {
            (text(o.get("error")), text(o.get("details")))
        }
        other => (text(Some(other)), String::new()),
    };
    Error::Rpc {
        method: method.to_string(),
        error,
        details,
    }
}

/// Time left before `deadline`; None once it has passed (a zero timeout means "block" to std).
fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// A socket timeout (what std reports when the deadline set on the socket passes) is no answer
/// in time; anything else is the connection's failure.
fn io_error(e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout,
        _ => Error::Io(e),
    }
}

#[cfg(test)]
mod tests {
    //! Against a scripted server on a unix socket: it reads one request, then writes what the
    //! test gives it, as separate writes.

    use std::io::Read;
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::path::PathBuf;
    use std::thread::{self, JoinHandle};

    use super::*;

    struct Server {
        endpoint: Endpoint,
        dir: PathBuf,
        thread: Option<JoinHandle<Vec<Value>>>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Reads one JSON value from `conn`, byte by byte (requests are small).
    fn read_value(conn: &mut UnixStream) -> Value {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            conn.read_exact(&mut byte).expect("a request");
            buf.push(byte[0]);
            if let Ok(v) = serde_json::from_slice(&buf) {
                return v;
            }
        }
    }

    impl Server {
        /// Answers the first request with `writes`, each `{id}` replaced by the request's id;
        /// then reads `then_read` more messages (e.g. echo replies) and, if `hold`, keeps the
        /// connection until the client closes it. Returns everything read.
        fn start(tag: &str, writes: Vec<String>, then_read: usize, hold: bool) -> Server {
            let dir = std::env::temp_dir()
                .join(format!("ovsdb-client-test-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            let path = dir.join("db.sock");
            let listener = UnixListener::bind(&path).expect("bind");
            let thread = thread::spawn(move || {
                let (mut conn, _) = listener.accept().expect("accept");
                let request = read_value(&mut conn);
                let id = request["id"].to_string();
                for w in writes {
                    conn.write_all(w.replace("{id}", &id).as_bytes())
                        .expect("write");
                    thread::sleep(Duration::from_millis(2));
                }
                let mut read = vec![request];
                for _ in 0..then_read {
                    read.push(read_value(&mut conn));
                }
                if hold {
                    let _ = conn.read_to_end(&mut Vec::new());
                }
                read
            });
            Server {
                endpoint: Endpoint::Unix(path),
                dir,
                thread: Some(thread),
            }
        }

        fn client(&self, timeout: Duration) -> Client {
            Client::connect(&self.endpoint, timeout).expect("connect")
        }

        /// What the server read.
        fn join(mut self) -> Vec<Value> {
            self.thread
                .take()
                .expect("started")
                .join()
                .expect("the server thread")
        }
    }

    fn select() -> Vec<Value> {
        vec![json!({"op": "select", "table": "Bridge", "where": []})]
    }

    #[test]
    fn a_transaction_is_sent_on_the_open_vswitch_database() {
        let reply = r#"{"id":{id},"result":[{"rows":[]}],"error":null}"#;
        let server = Server::start("db", vec![reply.into()], 0, true);
        let results = server
            .client(Duration::from_secs(5))
            .transact(&select(), Duration::ZERO)
            .expect("transact")
            .into_results("select")
            .expect("committed");
        assert_eq!(results, vec![json!({"rows": []})]);
        let read = server.join();
        assert_eq!(read[0]["method"], "transact");
        assert_eq!(read[0]["params"][0], DATABASE);
        assert_eq!(read[0]["params"][1], select()[0]);
    }

    #[test]
    fn a_reply_written_in_pieces_is_read_whole() {
        let reply = r#"{"id":{id},"result":[{"rows":[{"name":"br0"}]}],"error":null}"#;
        let pieces = reply
            .split_inclusive([',', ':'])
            .map(str::to_string)
            .collect::<Vec<_>>();
        assert!(pieces.len() > 3);
        let server = Server::start("pieces", pieces, 0, true);
        let reply = server
            .client(Duration::from_secs(5))
            .transact(&select(), Duration::ZERO)
            .expect("transact");
        let results = reply.into_results("select").expect("committed");
        assert_eq!(results[0]["rows"][0]["name"], "br0");
    }

    #[test]
    fn echo_requests_and_notifications_before_the_reply_are_handled() {
        let server = Server::start(
            "echo",
            vec![
                r#"{"method":"echo","params":["ping"],"id":"echo"} {"method":"update","params":[null,{}],"id":null}"#.into(),
                r#"{"id":{id},"result":[{}],"error":null}"#.into(),
            ],
            1,
            true,
        );
        server
            .client(Duration::from_secs(5))
            .transact(&select(), Duration::ZERO)
            .expect("transact");
        let read = server.join();
        assert_eq!(
            read[1],
            json!({"id": "echo", "result": ["ping"], "error": null})
        );
    }

    #[test]
    fn after_an_undecodable_message_the_connection_is_not_used_again() {
        let server = Server::start(
            "garbage",
            vec![r#"{"id":{id},"result":[1,]}"#.into()],
            0,
            true,
        );
        let mut client = server.client(Duration::from_secs(5));
        let first = client
            .transact(&select(), Duration::ZERO)
            .expect_err("garbage");
        assert!(first.to_string().contains("OVSDB at"), "{first}");
        let second = client
            .transact(&select(), Duration::ZERO)
            .expect_err("out of step");
        let chain = format!("{:?}", second);
        assert!(chain.contains("opened again"), "{chain}");
    }

    #[test]
    fn a_server_error_reply_carries_its_error_and_details() {
        let reply = r#"{"id":{id},"result":null,"error":{"error":"unknown database","details":"get_schema asked for Foo"}}"#;
        let server = Server::start("rpcerr", vec![reply.into()], 0, true);
        let e = server
            .client(Duration::from_secs(5))
            .transact(&select(), Duration::ZERO)
            .expect_err("refused");
        match e.root() {
            Error::Rpc {
                method,
                error,
                details,
            } => {
                assert_eq!(method, "transact");
                assert_eq!(error, "unknown database");
                assert_eq!(details, "get_schema asked for Foo");
            }
            other => panic!("not an RPC error: {other:?}"),
        }
        assert!(!e.is_transient());
        assert!(
            e.report().starts_with(&format!(
                "OVSDB at {}: refused transact: unknown database",
                server.endpoint
            )),
            "{}",
            e.report()
        );
    }

    #[test]
    fn a_server_that_closes_the_connection_is_transient() {
        let server = Server::start("closed", vec![], 0, false);
        let e = server
            .client(Duration::from_secs(5))
            .transact(&select(), Duration::ZERO)
            .expect_err("closed");
        assert!(matches!(e.root(), Error::Closed | Error::Io(_)), "{e:?}");
        assert!(e.is_transient());
    }

    #[test]
    fn a_server_that_does_not_answer_times_out() {
        let server = Server::start("silent", vec![], 0, true);
        let mut client = server.client(Duration::from_millis(200));
        let started = Instant::now();
        let e = client
            .transact(&select(), Duration::ZERO)
            .expect_err("no answer");
        assert!(matches!(e.root(), Error::Timeout), "{e:?}");
        assert!(e.is_transient());
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(client);
    }

    #[test]
    fn garbage_from_the_server_is_an_undecodable_message() {
        let server = Server::start(
            "garbage",
            vec!["HTTP/1.1 400 Bad Request\r\n".into()],
            0,
            true,
        );
        let e = server
            .client(Duration::from_secs(5))
            .transact(&select(), Duration::ZERO)
            .expect_err("garbage");
        assert!(matches!(e.root(), Error::Json(_)), "{e:?}");
        assert!(!e.is_transient());
    }

    #[test]
    fn an_unreachable_server_is_transient_and_named() {
        let endpoint = Endpoint::Unix(std::env::temp_dir().join("ovsdb-client-test-nothing.sock"));
        let e = Client::connect(&endpoint, Duration::from_secs(1)).expect_err("nothing there");
        assert!(e.is_transient());
        assert!(
            e.report()
                .starts_with(&format!("cannot reach OVSDB at {endpoint}: ")),
            "{}",
            e.report()
        );
    }
}
