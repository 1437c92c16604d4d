//! MAC addresses: the type lives in the `net-types` leaf crate, which the operator shares
//! without building netlink; here it meets the CNI error codes.

pub use net_types::{MacAddr, MacAddrError};

use crate::error::Error;

/// A malformed address is the caller's configuration; a missing random source or a
/// hardware address of the wrong length is the system's.
impl From<MacAddrError> for Error {
    fn from(e: MacAddrError) -> Error {
        match &e {
            MacAddrError::Invalid(_) => Error::invalid_config(e.to_string()),
            MacAddrError::Length(_) | MacAddrError::Random(_) => {
                Error::system(error_context::report(&e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn a_malformed_address_is_an_invalid_config() {
        let e = Error::from(MacAddr::parse("zz").expect_err("invalid"));
        assert_eq!(e.code(), Code::InvalidConfig);
        assert_eq!(e.msg(), r#"invalid MAC address "zz""#);
    }

    #[test]
    fn a_hardware_address_of_the_wrong_length_is_a_system_error() {
        let e = Error::from(MacAddr::try_from(&[0u8; 4][..]).expect_err("four bytes"));
        assert_eq!(e.code(), Code::System);
    }
}
