//! Default images of the upstream components, overridden by the operator's environment.

pub const MULTUS: &str = "";
pub const KUBEMACPOOL: &str = "";
pub const MACVTAP_CNI: &str = "";
