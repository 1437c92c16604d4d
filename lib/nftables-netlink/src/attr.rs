//! Netlink attributes: a writer for the nested type-length-value lists nf_tables messages are
//! made of, and a reader for the ones the kernel sends back. nf_tables integers are big-endian.

use crate::sys::{NLA_F_NESTED, NLA_TYPE_MASK};
use crate::Error;

const NLA_HDRLEN: usize = 4;

fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// Attributes being written, in order.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct AttrWriter {
    buf: Vec<u8>,
}

impl AttrWriter {
    pub fn new() -> AttrWriter {
        AttrWriter::default()
    }

    pub fn bytes(&mut self, kind: u16, data: &[u8]) -> &mut Self {
        // An attribute longer than 64 KiB cannot be expressed; nothing we write comes close
        // (names are at most 256 bytes, keys 16).
        let len = u16::try_from(NLA_HDRLEN + data.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.buf.resize(align(self.buf.len()), 0);
        self
    }

    pub fn u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.bytes(kind, &value.to_be_bytes())
    }

    pub fn u64(&mut self, kind: u16, value: u64) -> &mut Self {
        self.bytes(kind, &value.to_be_bytes())
    }

    /// A string, with the NUL the kernel expects.
    pub fn str(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut data = Vec::with_capacity(value.len() + 1);
        data.extend_from_slice(value.as_bytes());
        data.push(0);
        self.bytes(kind, &data)
    }

    pub fn nested(&mut self, kind: u16, fill: impl FnOnce(&mut AttrWriter)) -> &mut Self {
        let mut inner = AttrWriter::new();
        fill(&mut inner);
        self.bytes(kind | NLA_F_NESTED, &inner.buf)
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// The attributes of `buf`, each as (type without flags, payload).
pub fn parse(buf: &[u8]) -> Result<Vec<(u16, &[u8])>, Error> {
    let mut attrs = Vec::new();
    let mut rest = buf;
    while rest.len() >= NLA_HDRLEN {
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]) & NLA_TYPE_MASK;
        if len < NLA_HDRLEN || len > rest.len() {
            return Err(Error::Decode(format!(
                "attribute {kind} claims {len} bytes, {} are left",
                rest.len()
            )));
        }
        attrs.push((kind, &rest[NLA_HDRLEN..len]));
        rest = &rest[align(len).min(rest.len())..];
    }
    Ok(attrs)
}

/// The payload of the first attribute of type `kind`.
pub fn find<'a>(attrs: &[(u16, &'a [u8])], kind: u16) -> Option<&'a [u8]> {
    attrs.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
}

pub fn get_u32(attrs: &[(u16, &[u8])], kind: u16) -> Option<u32> {
    let v = find(attrs, kind)?;
    Some(u32::from_be_bytes(v.get(..4)?.try_into().ok()?))
}

pub fn get_u64(attrs: &[(u16, &[u8])], kind: u16) -> Option<u64> {
    let v = find(attrs, kind)?;
    Some(u64::from_be_bytes(v.get(..8)?.try_into().ok()?))
}

/// A NUL-terminated string attribute.
pub fn get_str(attrs: &[(u16, &[u8])], kind: u16) -> Option<String> {
    let v = find(attrs, kind)?;
    let end = v.iter().position(|b| *b == 0).unwrap_or(v.len());
    Some(String::from_utf8_lossy(&v[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_carry_their_nul_and_are_padded_to_four_bytes() {
        let mut w = AttrWriter::new();
        w.str(3, "abcd");
        assert_eq!(
            w.as_bytes(),
            &[9, 0, 3, 0, b'a', b'b', b'c', b'd', 0, 0, 0, 0]
        );
    }

    #[test]
    fn integers_are_big_endian() {
        let mut w = AttrWriter::new();
        w.u32(5, 1);
        assert_eq!(w.as_bytes(), &[8, 0, 5, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn nested_attributes_are_flagged_and_read_back() {
        let mut w = AttrWriter::new();
        w.nested(4, |n| {
            n.u32(1, 7);
        });
        assert_eq!(w.as_bytes()[2..4], (4 | NLA_F_NESTED).to_ne_bytes());
        let outer = parse(w.as_bytes()).expect("parses");
        assert_eq!(outer[0].0, 4);
        let inner = parse(outer[0].1).expect("parses");
        assert_eq!(get_u32(&inner, 1), Some(7));
    }

    #[test]
    fn a_truncated_attribute_is_a_decode_error() {
        assert!(matches!(parse(&[12, 0, 1, 0, 0]), Err(Error::Decode(_))));
    }
}
