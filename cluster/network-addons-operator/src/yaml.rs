//! YAML in and out, with serde-saphyr (the crate kube-client reads kubeconfigs with), so
//! every manifest the operator writes is formatted one way.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// Block style, strings on one line however long: a folded description would make every
/// diff of a manifest noisier than its change.
fn options() -> serde_saphyr::SerializerOptions {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = usize::MAX;
    options
}

/// `value` as one YAML document, without a `---` line.
pub fn to_string<T: Serialize>(value: &T) -> std::result::Result<String, Error> {
    serde_saphyr::to_string_with_options(value, options()).map_err(Error::from)
}

/// One YAML document as `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_saphyr::from_str(text).map_err(Error::from)
}
