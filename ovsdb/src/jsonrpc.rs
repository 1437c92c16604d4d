//! JSON-RPC 1.0 as OVSDB speaks it (RFC 7047 section 4): messages are JSON objects written back
//! to back with no delimiter, so one read from the socket may end inside a message or hold
//! several.

use std::io::{self, Read};

use serde::Deserialize;
use serde_json::{json, Deserializer, Value};

/// One message: a request or notification has a `method`, a response a `result` and an `error`
/// (one of them null).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Message {
    #[serde(default)]
    pub id: Value,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub params: Value,
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub error: Value,
}

/// A request to send.
pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "id": id})
}

/// The answer to the server's `echo` request (its inactivity probe): the same params back.
pub fn echo_reply(echo: &Message) -> Value {
    let params = match &echo.params {
        Value::Null => json!([]),
        p => p.clone(),
    };
    json!({"id": echo.id, "result": params, "error": null})
}

/// Bytes read from the server that are not yet whole messages.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

/// Bytes taken from the socket per read.
const CHUNK: usize = 16 * 1024;

impl Decoder {
    /// Appends one read's worth of bytes from `r`; returns how many (0 at end of stream).
    pub fn read_from(&mut self, r: &mut impl Read) -> io::Result<usize> {
        let mut chunk = [0u8; CHUNK];
        let n = r.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Appends bytes already read.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message; None until one has fully arrived. Bytes that cannot start a
    /// message are an error, and are dropped with everything buffered after them: past them,
    /// nothing says where the next message would begin.
    pub fn next_message(&mut self) -> Option<Result<Message, serde_json::Error>> {
        let mut stream = Deserializer::from_slice(&self.buf).into_iter::<Message>();
        let next = stream.next();
        // After a message, its end; before an incomplete one, its start (whitespace skipped).
        let used = stream.byte_offset();
        match next {
            None => {
                self.buf.clear();
                None
            }
            Some(Ok(msg)) => {
                self.buf.drain(..used);
                Some(Ok(msg))
            }
            Some(Err(e)) if e.is_eof() => {
                self.buf.drain(..used);
                None
            }
            Some(Err(e)) => {
                self.buf.clear();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out `chunks` one per read, as a socket does with separate writes.
    struct Chunks(std::collections::VecDeque<Vec<u8>>);

    impl Chunks {
        fn new<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Chunks {
            Chunks(chunks.into_iter().map(<[u8]>::to_vec).collect())
        }
    }

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some(chunk) = self.0.pop_front() else {
                return Ok(0);
            };
            assert!(chunk.len() <= buf.len(), "test chunks fit one read");
            buf[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    /// Every message `d` can give now.
    fn drain(d: &mut Decoder) -> Vec<Message> {
        let mut out = Vec::new();
        while let Some(m) = d.next_message() {
            out.push(m.expect("a valid message"));
        }
        out
    }

    /// Reads `r` to its end, collecting messages as they complete; also returns how many reads
    /// completed none.
    fn read_all(r: &mut Chunks) -> (Vec<Message>, usize) {
        let mut d = Decoder::default();
        let (mut got, mut empty_reads) = (Vec::new(), 0);
        while d.read_from(r).expect("read") > 0 {
            let msgs = drain(&mut d);
            if msgs.is_empty() {
                empty_reads += 1;
            }
            got.extend(msgs);
        }
        (got, empty_reads)
    }

    #[test]
    fn a_message_split_across_reads_is_decoded_once_it_has_all_arrived() {
        let msg = br#"{"id":7,"result":[{"rows":[{"name":"a}b"}]}],"error":null}"#;
        let mut r = Chunks::new(msg.chunks(5));
        let (got, empty_reads) = read_all(&mut r);
        assert_eq!(got.len(), 1);
        assert_eq!(empty_reads, msg.len().div_ceil(5) - 1);
        assert_eq!(got[0].id, json!(7));
        assert_eq!(got[0].result[0]["rows"][0]["name"], "a}b");
    }

    #[test]
    fn several_messages_in_one_read_all_come_out() {
        let mut r =
            Chunks::new([br#"{"id":1,"result":[]}{"id":2,"result":{}}  {"id":3}"#.as_slice()]);
        let (got, _) = read_all(&mut r);
        let ids: Vec<_> = got.iter().map(|m| m.id.clone()).collect();
        assert_eq!(ids, vec![json!(1), json!(2), json!(3)]);
    }

    #[test]
    fn a_read_may_end_one_message_and_begin_the_next() {
        let mut r = Chunks::new([
            br#"{"id":1,"res"#.as_slice(),
            br#"ult":5} {"method":"echo","#,
            br#""params":[],"id":"echo"}"#,
        ]);
        let (got, _) = read_all(&mut r);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].result, json!(5));
        assert_eq!(got[1].method.as_deref(), Some("echo"));
    }

    #[test]
    fn brackets_and_escaped_quotes_inside_strings_do_not_end_a_message() {
        let mut d = Decoder::default();
        d.push(br#"{"result":"\"}]{[\\","id":1}{"id":2}"#);
        let got = drain(&mut d);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].result, "\"}]{[\\");
        assert_eq!(got[1].id, json!(2));
    }

    #[test]
    fn garbage_is_an_error_and_drops_the_buffer() {
        let mut d = Decoder::default();
        d.push(b"HTTP/1.1 400 {\"id\":1}");
        assert!(matches!(d.next_message(), Some(Err(_))));
        assert!(d.next_message().is_none(), "nothing is left to decode");
    }

    #[test]
    fn a_json_value_that_is_not_an_object_is_an_error() {
        for bytes in [b"[1,2]".as_slice(), b"\"x\"", b"{\"method\":5}"] {
            let mut d = Decoder::default();
            d.push(bytes);
            let got = d.next_message();
            assert!(
                matches!(got, Some(Err(ref e)) if !e.is_eof()),
                "{}: {got:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn the_echo_reply_returns_the_params_under_the_same_id() {
        let echo: Message =
            serde_json::from_str(r#"{"method":"echo","params":["x"],"id":"e1"}"#).expect("json");
        assert_eq!(
            echo_reply(&echo),
            json!({"id": "e1", "result": ["x"], "error": null})
        );
    }
}
