//! MAC addresses as CNI configs, results and the NetworkAddonsConfig write them: six hex
//! octets separated by colons.

use std::fmt;
use std::io::Read;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

/// Why a MAC address could not be had.
#[derive(Debug)]
pub enum MacAddrError {
    /// The text is not six hex octets.
    Invalid(String),
    /// A hardware address of another length than six bytes.
    Length(usize),
    /// The kernel's randomness could not be read.
    Random(std::io::Error),
}

impl fmt::Display for MacAddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MacAddrError::Invalid(s) => write!(f, "invalid MAC address {s:?}"),
            MacAddrError::Length(n) => write!(f, "hardware address of {n} bytes"),
            MacAddrError::Random(_) => f.write_str("read /dev/urandom"),
        }
    }
}

impl std::error::Error for MacAddrError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MacAddrError::Random(e) => Some(e),
            _ => None,
        }
    }
}

impl MacAddr {
    /// Parses `aa:bb:cc:dd:ee:ff` (also `-` separated, any case), as Go's net.ParseMAC does for
    /// 48-bit addresses.
    pub fn parse(s: &str) -> Result<MacAddr, MacAddrError> {
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

    /// The address as a 48-bit number, for ranges and arithmetic on them.
    pub fn to_u64(&self) -> u64 {
        self.0
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }

    /// The address of a 48-bit number; the bits above 48 are ignored.
    pub fn from_u64(n: u64) -> MacAddr {
        let b = n.to_be_bytes();
        MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    /// A random locally administered unicast address, as the kernel gives a new veth. Choosing
    /// it ourselves saves reading it back from the container's namespace.
    pub fn random_local() -> Result<MacAddr, MacAddrError> {
        let mut b = [0u8; 6];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut b))
            .map_err(MacAddrError::Random)?;
        b[0] = (b[0] & 0xfe) | 0x02;
        Ok(MacAddr(b))
    }
}

impl FromStr for MacAddr {
    type Err = MacAddrError;

    fn from_str(s: &str) -> Result<MacAddr, MacAddrError> {
        let bad = || MacAddrError::Invalid(s.to_string());
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
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl TryFrom<&[u8]> for MacAddr {
    type Error = MacAddrError;

    fn try_from(b: &[u8]) -> Result<MacAddr, MacAddrError> {
        let arr: [u8; 6] = b.try_into().map_err(|_| MacAddrError::Length(b.len()))?;
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
    fn an_address_and_its_48_bit_number_convert_both_ways() {
        let mac: MacAddr = "02:ab:cd:00:00:ff".parse().expect("valid");
        assert_eq!(mac.to_u64(), 0x02ab_cd00_00ff);
        assert_eq!(MacAddr::from_u64(0x02ab_cd00_00ff), mac);
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
    fn a_malformed_address_is_quoted_in_the_error() {
        let e = MacAddr::parse("0a:58").expect_err("too short");
        assert_eq!(e.to_string(), r#"invalid MAC address "0a:58""#);
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

    #[test]
    fn only_six_bytes_make_a_hardware_address() {
        let six = MacAddr::try_from(&[2, 0, 0, 0, 0, 1][..]).expect("six bytes");
        assert_eq!(six.to_string(), "02:00:00:00:00:01");
        let e = MacAddr::try_from(&[0u8; 8][..]).expect_err("eight bytes");
        assert_eq!(e.to_string(), "hardware address of 8 bytes");
    }

    #[test]
    fn serialises_as_its_text_and_rejects_bad_text() {
        let mac = MacAddr([0x0a, 0x58, 0, 0, 0, 0xff]);
        let json = serde_json::to_string(&mac).expect("serialise");
        assert_eq!(json, r#""0a:58:00:00:00:ff""#);
        assert_eq!(serde_json::from_str::<MacAddr>(&json).expect("parse"), mac);
        let e = serde_json::from_str::<MacAddr>(r#""nope""#).expect_err("invalid");
        assert!(
            e.to_string().contains(r#"invalid MAC address "nope""#),
            "{e}"
        );
    }
}
