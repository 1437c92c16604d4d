//! Where one JSON object or array ends in a byte stream, found by looking at each byte once as
//! it arrives: only brackets outside strings count, and a string ends at a quote that is not
//! escaped. Whether the bytes are valid JSON is left to the parser, which sees each whole value
//! once.

/// The end of one value, looked for across as many calls as its bytes take to arrive.
#[derive(Debug, Default)]
pub(super) struct Framer {
    /// The closers of the brackets opened and not yet closed; empty before the value's first
    /// byte.
    open: Vec<u8>,
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
}

/// What [`Framer::scan`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Scan {
    /// The value ends just before this offset of the bytes given.
    End(usize),
    /// All the bytes given belong to the value, which goes on.
    More,
    /// The value's first byte opens neither an object nor an array.
    NotAContainer,
}

impl Framer {
    /// Scans `bytes`, which continue the value given to earlier calls (the first call starts at
    /// its first byte). After [`Scan::End`] the framer is ready for the next value.
    pub(super) fn scan(&mut self, bytes: &[u8]) -> Scan {
        if self.open.is_empty() {
            match bytes.first() {
                None => return Scan::More,
                Some(b'{' | b'[') => {}
                Some(_) => return Scan::NotAContainer,
            }
        }
        for (i, &b) in bytes.iter().enumerate() {
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' => self.open.push(b'}'),
                b'[' => self.open.push(b']'),
                // A mismatched closer (`{]`) ends the value at once; the parser then says what
                // is wrong with it.
                b'}' | b']' => {
                    if self.open.pop() != Some(b) {
                        self.open.clear();
                        return Scan::End(i + 1);
                    }
                    if self.open.is_empty() {
                        return Scan::End(i + 1);
                    }
                }
                _ => {}
            }
        }
        Scan::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `pieces` one by one; the end of the value as an offset into all of them together.
    fn end_of(pieces: &[&[u8]]) -> Option<usize> {
        let mut f = Framer::default();
        let mut offset = 0;
        for piece in pieces {
            match f.scan(piece) {
                Scan::End(n) => return Some(offset + n),
                Scan::More => offset += piece.len(),
                Scan::NotAContainer => panic!("not a container"),
            }
        }
        None
    }

    #[test]
    fn an_object_ends_at_its_closing_brace() {
        assert_eq!(end_of(&[br#"{"a":{"b":[1,{}]}}{"next":1}"#]), Some(18));
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        assert_eq!(end_of(&[br#"{"a":"}]"}x"#]), Some(10));
    }

    #[test]
    fn an_escaped_quote_does_not_end_a_string() {
        assert_eq!(end_of(&[br#"{"a":"\"}"}x"#]), Some(11));
    }

    #[test]
    fn an_escaped_backslash_does_not_escape_the_quote_after_it() {
        assert_eq!(end_of(&[br#"{"a":"\\"}x"#]), Some(10));
    }

    #[test]
    fn a_value_split_anywhere_ends_at_the_same_place() {
        let value = br#"{"a":"\\\"}{[","b":[{"c":"\u005c"}]}"#;
        for at in 0..=value.len() {
            let (head, tail) = value.split_at(at);
            assert_eq!(end_of(&[head, tail]), Some(value.len()), "split at {at}");
        }
    }

    #[test]
    fn a_mismatched_closer_ends_the_value_at_once() {
        assert_eq!(end_of(&[br#"{"a":[}, "more""#]), Some(7));
    }

    #[test]
    fn a_value_without_its_closer_is_not_over() {
        assert_eq!(end_of(&[br#"{"a":["#, br#""}"]"#]), None);
    }

    #[test]
    fn only_objects_and_arrays_are_framed() {
        for bytes in [b"\"x\"".as_slice(), b"5", b"null", b"HTTP/1.1"] {
            assert_eq!(Framer::default().scan(bytes), Scan::NotAContainer);
        }
    }

    #[test]
    fn the_framer_starts_afresh_after_a_value() {
        let mut f = Framer::default();
        assert_eq!(f.scan(b"[]"), Scan::End(2));
        assert_eq!(f.scan(b"x"), Scan::NotAContainer);
    }
}
