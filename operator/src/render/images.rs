//! Default images of the upstream components, overridden by the operator's environment
//! (`MULTUS_IMAGE`, `KUBEMACPOOL_IMAGE`, `MACVTAP_CNI_IMAGE`).
//!
//! The digests are the ones the cluster-network-addons-operator v0.103.0 release pins in its
//! operator Deployment (`manifests/cluster-network-addons/0.103.0/operator.yaml`), so a cluster
//! moving from it to this operator keeps running the same upstream bits. Pinning by digest makes
//! the pull reproducible; the tag, where it is known, is there for the reader (the runtime pulls
//! by digest and ignores it).

/// Multus v4.3.0, thick plugin (`multus-daemon`, `multus-shim`, `install_multus`). Upstream
/// publishes the thick image for amd64 only.
pub const MULTUS: &str = "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0-thick@sha256:2b9671447f3ea4e7e56730843dbf59445b9307246f393b61386b896d56ae51c9";

/// KubeMacPool (`/manager`), both the MAC controller and its certificate manager. The release
/// pins it by digest only.
pub const KUBEMACPOOL: &str = "quay.io/kubevirt/kubemacpool@sha256:d009c4829af2a3b46f70d54687075aa401d216c27fd965f24c0c5b7b3b7d92c7";

/// macvtap-cni, for its device plugin (`/macvtap-deviceplugin`); our own `macvtap` plugin
/// replaces the CNI binary it also ships. The release pins it by digest only.
pub const MACVTAP_CNI: &str = "quay.io/kubevirt/macvtap-cni@sha256:aee6d9beb458fa76b0eab34335e2b528ad9eaff74b87be2fd62658ba77cbfa87";
