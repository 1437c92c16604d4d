//! OpenShift's SecurityContextConstraints: there, a pod may only be privileged, use the host's
//! network and PID namespaces and mount host paths if an SCC granted to its service account
//! allows it. Each node agent's service account gets one of its own, named after it, as the
//! upstream operator does (`bridge-marker`, `ovs-cni-marker`; multus and macvtap are not
//! deployed on OpenShift).

use serde_json::{json, Value};

use super::common::{self, Ctx};
use crate::spec::Component;

/// The SCC letting `account` of the operand namespace run `component`'s node agent.
pub fn node_agent(ctx: &Ctx, component: Component, account: &str) -> Value {
    json!({
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": common::cluster_meta(ctx, account, Some(component)),
        "allowPrivilegedContainer": true,
        "allowHostDirVolumePlugin": true,
        "allowHostIPC": false,
        "allowHostNetwork": true,
        "allowHostPID": true,
        "allowHostPorts": false,
        "readOnlyRootFilesystem": false,
        "runAsUser": {"type": "RunAsAny"},
        "seLinuxContext": {"type": "RunAsAny"},
        "users": [format!("system:serviceaccount:{}:{account}", ctx.settings.namespace)],
        "volumes": ["*"],
    })
}
