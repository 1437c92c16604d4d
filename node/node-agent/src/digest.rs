//! sha256 of files, in lowercase hex (what `sha256sum` prints).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Context, Result};

/// Read and hashed in pieces of this size.
const CHUNK: usize = 128 * 1024;

/// The sha256 of what is read from `r`.
pub fn sha256_reader(mut r: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// The sha256 of the file at `path` (following no symlink is the caller's business).
pub fn sha256_file(path: &Path) -> Result<String> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    sha256_reader(file).with_context(|| format!("reading {}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The first 12 hex digits, for messages.
pub fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            sha256_reader(&b""[..]).expect("hash"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        // Longer than one read.
        let data = vec![b'a'; 3 * CHUNK + 7];
        let whole = sha256_reader(&data[..]).expect("hash");
        assert_eq!(
            whole,
            "f5e95f05f8bd367cffb8a06a1b2e37f113a0bab3690f64be5ea71dbf8ec383ef"
        );
        assert_eq!(short(&whole).len(), 12);
    }
}
