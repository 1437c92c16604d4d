//! kubernetes-nmstate's names in the API, as upstream fixes them: the group and CRDs its
//! policies are written against, and its handler's DaemonSet. The render gives them to what it
//! renders; the cluster's detection looks for them to tell a kubernetes-nmstate installed by
//! other means ([`crate::cluster::ForeignNmstate`]). Both read them from here, a floor below
//! both, so the detection does not depend on the render.

pub const GROUP: &str = "nmstate.io";
pub const POLICY_CRD: &str = "nodenetworkconfigurationpolicies.nmstate.io";
pub const ENACTMENT_CRD: &str = "nodenetworkconfigurationenactments.nmstate.io";
pub const STATE_CRD: &str = "nodenetworkstates.nmstate.io";
pub const DAEMON_SET: &str = "nmstate-handler";
