//! Default images of the upstream components, overridden by the operator's environment under
//! the upstream operator's names (`MULTUS_IMAGE`, `KUBEMACPOOL_IMAGE`, `MACVTAP_CNI_IMAGE`,
//! `MULTUS_DYNAMIC_NETWORKS_CONTROLLER_IMAGE`, `KUBE_SECONDARY_DNS_IMAGE`, `CORE_DNS_IMAGE`,
//! `KUBEVIRT_IPAM_CONTROLLER_IMAGE`).
//!
//! The digests are the ones the cluster-network-addons-operator v0.103.0 release pins in its
//! operator Deployment (`manifests/cluster-network-addons/0.103.0/operator.yaml`), so a cluster
//! moving from it to this operator keeps running the same upstream bits. Pinning by digest makes
//! the pull reproducible; the tag, where it is known, is there for the reader (the runtime pulls
//! by digest and ignores it).

/// Multus v4.3.0, thick plugin (`multus-daemon`, `multus-shim`, `install_multus`). Upstream
/// publishes the thick image for amd64 only.
pub const MULTUS: &str = "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0-thick@sha256:2b9671447f3ea4e7e56730843dbf59445b9307246f393b61386b896d56ae51c9";

/// Upstream KubeMacPool (`/manager`), both the MAC controller and its certificate manager: what
/// `KUBEMACPOOL_IMAGE` is set to for a cluster that wants it instead of ours. The digest
/// the upstream operator's 0.104.0-rc-0 pins, whose webhook server takes `--tls-min-version`
/// and `--tls-cipher-suites`.
pub const KUBEMACPOOL: &str = "quay.io/kubevirt/kubemacpool@sha256:22b6f29367fc5f4ff2a1fbc18f3a5db1e9b090208bf21c6962c36b6053100f79";

/// macvtap-cni, for its device plugin (`/macvtap-deviceplugin`); our own `macvtap` plugin
/// replaces the CNI binary it also ships. The release pins it by digest only.
pub const MACVTAP_CNI: &str = "quay.io/kubevirt/macvtap-cni@sha256:aee6d9beb458fa76b0eab34335e2b528ad9eaff74b87be2fd62658ba77cbfa87";

/// multus-dynamic-networks-controller (`/dynamic-networks-controller`): hot-plugs interfaces
/// into running pods through multus's daemon socket.
pub const MULTUS_DYNAMIC_NETWORKS_CONTROLLER: &str = "ghcr.io/k8snetworkplumbingwg/multus-dynamic-networks-controller@sha256:c7d137a7f4ddd81233b9778d02ae57a496e892ddedf74d49382d86df50ddcc27";

/// kube-secondary-dns's status monitor, which writes the zone file of the VMs' secondary IPs.
pub const KUBE_SECONDARY_DNS: &str = "ghcr.io/kubevirt/kubesecondarydns@sha256:f5fe9c98fb6d7e5e57a6df23fe82e43e65db5953d76af44adda9ab40c46ad0bf";

/// CoreDNS, serving kube-secondary-dns's zone.
pub const CORE_DNS: &str = "registry.k8s.io/coredns/coredns@sha256:a0ead06651cf580044aeb0a0feba63591858fb2e43ade8c9dea45a6a89ae7e5e";

/// kubevirt-ipam-controller (`/manager`): IPAMClaims for VMs' persistent IPs, and the webhook
/// that points virt-launcher pods at them. The digest the upstream operator's 0.104.0-rc-0 pins,
/// whose webhook server takes `--tls-min-version` and `--tls-cipher-suites`.
pub const KUBEVIRT_IPAM_CONTROLLER: &str = "ghcr.io/kubevirt/ipam-controller@sha256:83f03d3185ee5b27489ae4cb876bf64c9a0b9a910724deae8c341bfae0531152";
