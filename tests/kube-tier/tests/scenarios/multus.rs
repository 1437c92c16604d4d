//! Extra networks as users attach them, through Multus: the helpers every scenario that
//! attaches one uses (`attach`), and Multus' own behaviours that users rely on (`behaviours`).

mod attach;
mod behaviours;

pub use attach::{
    around, attached_pod, attached_pod_manifest_in, attachment_config, delete_nads, events_of, nad,
    nad_in, pings, static_ipam, wait_attached, wait_attached_in, wait_multus, with_ips, NET1,
};
pub use behaviours::{
    a_missing_nad_waits_and_a_refused_config_says_why, deleting_a_multus_pod_breaks_no_pod,
};
