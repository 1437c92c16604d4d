//! The watches that feed the pool: every pod's and VirtualMachine's MACs (the state is the
//! objects, nothing else), and the range ConfigMap, applied as it changes; and those that feed
//! the collision report: running VMIs and pods, the webhook configuration's selectors and the
//! namespaces' labels.
//!
//! Lists ask for any resourceVersion, so the API server answers from its watch cache: at
//! 10,000 objects that is a fraction of a second, where paged quorum reads from etcd took
//! upstream over a minute. Pods are watched as metadata only; a VM is read and dropped at once.
//! Pods and VMs, which a start waits for, are listed and watched by [`crate::reflector`].
//!
//! One module per watched kind; each task runs for the manager's life ([`crate::manager`]).

mod follower;
mod namespaces;
mod pending;
mod pods;
mod range;
mod reporter;
mod vmis;
mod vms;

pub use namespaces::{follow_namespaces, follow_opt_mode};
pub use pending::expire_pending;
pub use pods::{follow_pods, follow_running_pods, pod_holder};
pub use range::{follow_range, RANGE_CONFIG};
pub use reporter::report_collisions;
pub use vmis::{follow_vmis, vmi_macs, vmi_resource};
pub use vms::{follow_vms, vm_holder, vm_resource};
