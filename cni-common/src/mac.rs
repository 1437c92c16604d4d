//! MAC addresses as CNI configs and results write them: six hex octets separated by colons.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// Parses `aa:bb:cc:dd:ee:ff` (also `-` separated, any case), as Go's net.ParseMAC does for
    /// 48-bit addresses.
    pub fn parse(s: &str) -> Result<MacAddr> {
        s.parse()
    }

    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 == 1
    }

    pub fn is_zero(&self) -> bool {
        self.0 == [0; 6]
    }

    pub fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// A random locally administered unicast address, as the kernel gives a new veth. Choosing
    /// it ourselves saves reading it back from the container's namespace.
    pub fn random_local() -> Result<MacAddr> {
        let mut b = [0u8; 6];
        // SAFETY: getrandom writes at most `b.len()` bytes into `b`.
        let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
        if usize::try_from(n).ok() != Some(b.len()) {
            return Err(Error::system(format!(
                "getrandom: {}",
                std::io::Error::last_os_error()
            )));
        }
        b[0] = (b[0] & 0xfe) | 0x02;
        Ok(MacAddr(b))
    }
}

impl FromStr for MacAddr {
    type Err = Error;

    fn from_str(s: &str) -> Result<MacAddr> {
        let bad = || Error::invalid_config(format!("invalid MAC address {s:?}"));
        if s.len() != 17 {
            return Err(bad());
        }
        let sep = s.as_bytes()[2];
        if sep != b':' && sep != b'-' {
            return Err(bad());
        }
        let mut out = [0u8; 6];
        for (i, part) in s.split(sep as char).enumerate() {
            if i >= 6 || part.len() != 2 {
                return Err(bad());
            }
            out[i] = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        Ok(MacAddr(out))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl Serialize for MacAddr {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.msg().to_string()))
    }
}

impl TryFrom<&[u8]> for MacAddr {
    type Error = Error;

    fn try_from(b: &[u8]) -> Result<MacAddr> {
        let arr: [u8; 6] = b
            .try_into()
            .map_err(|_| Error::system(format!("hardware address of {} bytes", b.len())))?;
        Ok(MacAddr(arr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_local_addresses_are_unicast_locally_administered_and_differ() {
        let a = MacAddr::random_local().expect("random");
        let b = MacAddr::random_local().expect("random");
        assert!(!a.is_multicast() && a.0[0] & 2 == 2, "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn parses_colon_and_dash_forms_in_any_case() {
        let a: MacAddr = "0A:58:0a:00:00:FF".parse().expect("valid");
        let b: MacAddr = "0a-58-0a-00-00-ff".parse().expect("valid");
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "0a:58:0a:00:00:ff");
    }

    #[test]
    fn rejects_malformed_addresses() {
        for bad in [
            "",
            "0a:58:0a:00:00",
            "0a:58:0a:00:00:ff:ee",
            "zz:58:0a:00:00:ff",
            "0a:58:0a:00:0:fff",
            "0a.58.0a.00.00.ff",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn multicast_bit_is_the_low_bit_of_the_first_octet() {
        assert!(MacAddr::parse("01:00:5e:00:00:01")
            .expect("valid")
            .is_multicast());
        assert!(!MacAddr::parse("02:00:5e:00:00:01")
            .expect("valid")
            .is_multicast());
    }
}
