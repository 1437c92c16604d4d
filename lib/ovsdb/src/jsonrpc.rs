//! JSON-RPC 1.0 as OVSDB speaks it (RFC 7047 section 4): messages are JSON objects written back
//! to back with no delimiter, so one read from the socket may end inside a message or hold
//! several.

use std::io::{self, Read};

use serde::Deserialize;
use serde_json::{json, Value};

use framing::{Framer, Scan};

mod framing;

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

/// The longest message accepted. The largest replies this client asks for (selects of a few
/// columns of every Port or Bridge of a node) are a few hundred bytes a row: 64 MiB is over a
/// hundred thousand ports, far beyond any node, while a server that never ends a message cannot
/// make a plugin or the node agent grow without bound.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Bytes read from the server that are not yet whole messages.
///
/// Each byte is looked at once by the framer as it arrives and once more by the parser when its
/// message is whole, so a reply costs time in proportion to its size however many reads it took.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Where the first message not yet returned starts; bytes before it are spent.
    head: usize,
    /// How far past `head` the framer has looked.
    scanned: usize,
    framer: Framer,
    limit: usize,
    #[cfg(test)]
    work: Work,
}

/// What decoding has cost so far, for tests to bound.
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
struct Work {
    /// Bytes looked at by the framer.
    framed: usize,
    /// Bytes handed to the parser.
    parsed: usize,
    /// Calls to the parser.
    parses: usize,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::with_limit(MAX_MESSAGE_BYTES)
    }
}

/// Bytes taken from the socket per read.
const CHUNK: usize = 16 * 1024;

impl Decoder {
    /// A decoder that refuses messages longer than `limit` bytes.
    fn with_limit(limit: usize) -> Decoder {
        Decoder {
            buf: Vec::new(),
            head: 0,
            scanned: 0,
            framer: Framer::default(),
            limit,
            #[cfg(test)]
            work: Work::default(),
        }
    }

    /// Appends one read's worth of bytes from `r`; returns how many (0 at end of stream).
    pub fn read_from(&mut self, r: &mut impl Read) -> io::Result<usize> {
        let mut chunk = [0u8; CHUNK];
        let n = r.read(&mut chunk)?;
        self.push(&chunk[..n]);
        Ok(n)
    }

    /// Appends bytes already read.
    pub fn push(&mut self, bytes: &[u8]) {
        // Spent bytes go before new ones come: each byte moves at most once per message
        // returned before it, not once per read.
        if self.head > 0 {
            self.buf.drain(..self.head);
            self.scanned -= self.head;
            self.head = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message; None until one has fully arrived. Bytes that cannot start a
    /// message, or a message longer than [`MAX_MESSAGE_BYTES`], are an error, and are dropped
    /// with everything buffered after them: past them, nothing says where the next message
    /// would begin.
    pub fn next_message(&mut self) -> Option<Result<Message, serde_json::Error>> {
        if self.scanned == self.head {
            // Whitespace between messages is not part of either.
            let ws = self.buf[self.head..]
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .count();
            self.head += ws;
            self.scanned = self.head;
        }
        let new = &self.buf[self.scanned..];
        let scan = self.framer.scan(new);
        #[cfg(test)]
        {
            self.work.framed += match scan {
                Scan::End(n) => n,
                Scan::More => new.len(),
                Scan::NotAContainer => 0,
            };
        }
        match scan {
            Scan::NotAContainer => {
                let first = self.buf[self.head];
                Some(Err(self.refuse(format!(
                    "a JSON-RPC message is a JSON object, not a value starting with {:?}",
                    char::from(first)
                ))))
            }
            Scan::More => {
                self.scanned = self.buf.len();
                let len = self.scanned - self.head;
                if len > self.limit {
                    return Some(Err(
                        self.refuse(format!("a message longer than {} bytes", self.limit))
                    ));
                }
                if len == 0 {
                    // Nothing left: let the buffer start afresh.
                    self.clear();
                }
                None
            }
            Scan::End(n) => {
                let end = self.scanned + n;
                if end - self.head > self.limit {
                    return Some(Err(
                        self.refuse(format!("a message longer than {} bytes", self.limit))
                    ));
                }
                let bytes = &self.buf[self.head..end];
                #[cfg(test)]
                {
                    self.work.parsed += bytes.len();
                    self.work.parses += 1;
                }
                let parsed = serde_json::from_slice::<Message>(bytes);
                (self.head, self.scanned) = (end, end);
                match parsed {
                    Ok(msg) => Some(Ok(msg)),
                    Err(e) => {
                        self.clear();
                        Some(Err(e))
                    }
                }
            }
        }
    }

    /// Drops everything buffered and returns the error saying why.
    fn refuse(&mut self, why: String) -> serde_json::Error {
        self.clear();
        serde::de::Error::custom(why)
    }

    fn clear(&mut self) {
        self.buf.clear();
        (self.head, self.scanned) = (0, 0);
        self.framer = Framer::default();
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
    fn a_message_split_at_any_byte_comes_out_whole_once() {
        let msg = br#"{"id":"a\"}{","result":[{"rows":[{"name":"x]}\\"}]}],"error":null}"#;
        let whole: Message = serde_json::from_slice(msg).expect("json");
        for at in 0..=msg.len() {
            let mut d = Decoder::default();
            d.push(&msg[..at]);
            let mut got = drain(&mut d);
            if at < msg.len() {
                assert!(got.is_empty(), "split at {at}: a message before its end");
            }
            d.push(&msg[at..]);
            got.extend(drain(&mut d));
            assert_eq!(got, vec![whole.clone()], "split at {at}");
        }
    }

    #[test]
    fn two_messages_split_at_any_byte_both_come_out_in_order() {
        let bytes = br#"{"id":1,"result":"}"} {"method":"echo","params":["{\""],"id":"e"}"#;
        for at in 0..=bytes.len() {
            let mut d = Decoder::default();
            d.push(&bytes[..at]);
            let mut got = drain(&mut d);
            d.push(&bytes[at..]);
            got.extend(drain(&mut d));
            let ids: Vec<_> = got.iter().map(|m| m.id.clone()).collect();
            assert_eq!(ids, vec![json!(1), json!("e")], "split at {at}");
            assert_eq!(got[1].params, json!(["{\""]), "split at {at}");
        }
    }

    /// A reply of about a megabyte, as a select of many rows returns.
    fn big_reply() -> Vec<u8> {
        let rows: Vec<Value> = (0..10_000)
            .map(|i| json!({"name": format!("port{i}"), "other_config": ["map", [["k}", "v\"{"]]]}))
            .collect();
        json!({"id": 1, "result": [{"rows": rows}], "error": null})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn a_message_fed_in_many_small_reads_is_parsed_once() {
        let reply = big_reply();
        let mut d = Decoder::default();
        let mut got = Vec::new();
        for piece in reply.chunks(64) {
            d.push(piece);
            got.extend(drain(&mut d));
        }
        assert_eq!(got.len(), 1);
        assert_eq!(d.work.parses, 1);
    }

    #[test]
    fn decoding_looks_at_each_byte_a_bounded_number_of_times_however_it_is_split() {
        let reply = big_reply();
        assert!(reply.len() > 500_000, "{} bytes", reply.len());
        let mut d = Decoder::default();
        for piece in reply.chunks(64) {
            d.push(piece);
            drain(&mut d);
        }
        // Once to find the end, once to parse: re-parsing on every read would look at each
        // byte about len / 64 / 2 times.
        assert_eq!(d.work.framed, reply.len());
        assert_eq!(d.work.parsed, reply.len());
    }

    #[test]
    fn returned_messages_do_not_stay_in_the_buffer() {
        let mut d = Decoder::default();
        for i in 0..1000 {
            d.push(format!(r#"{{"id":{i}}}{{"id":"#).as_bytes());
            assert_eq!(drain(&mut d).len(), 1);
            d.push(b"0}");
            assert_eq!(drain(&mut d).len(), 1);
        }
        assert!(d.buf.len() < 64, "{} bytes kept", d.buf.len());
    }

    #[test]
    fn a_message_longer_than_the_limit_is_refused_before_it_ends() {
        let mut d = Decoder::with_limit(1000);
        d.push(br#"{"result":""#);
        let mut refused = None;
        for _ in 0..100 {
            d.push(&[b'a'; 100]);
            if let Some(r) = d.next_message() {
                refused = Some(r);
                break;
            }
        }
        let e = refused.expect("refused").expect_err("an error");
        assert!(e.to_string().contains("longer than 1000 bytes"), "{e}");
        assert!(d.buf.is_empty(), "the message so far is dropped");
    }

    #[test]
    fn a_whole_message_longer_than_the_limit_is_refused() {
        let mut d = Decoder::with_limit(20);
        d.push(br#"{"id":1,"result":"0123456789"}{"id":2}"#);
        assert!(matches!(d.next_message(), Some(Err(_))));
        assert!(d.next_message().is_none(), "nothing is left to decode");
    }

    #[test]
    fn a_message_of_exactly_the_limit_is_accepted() {
        let msg = br#"{"id":1,"result":"0123456789"}"#;
        let mut d = Decoder::with_limit(msg.len());
        d.push(msg);
        assert_eq!(drain(&mut d).len(), 1);
    }

    #[test]
    fn the_limit_is_64_mib() {
        assert_eq!(Decoder::default().limit, 64 << 20);
    }

    #[test]
    fn whitespace_alone_is_no_message_and_is_not_kept() {
        let mut d = Decoder::default();
        d.push(b" \r\n\t ");
        assert!(d.next_message().is_none());
        assert!(d.buf.is_empty());
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
