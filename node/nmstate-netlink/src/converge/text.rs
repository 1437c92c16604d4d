//! How a change reads: the text of port VLANs and routes in the journal's steps and in the
//! mismatches a verify reports.

use cni_common::netlink::PortVlan;

use crate::node::RouteState;

pub(crate) fn vlans_text(vlans: &[PortVlan]) -> String {
    if vlans.is_empty() {
        return "none".to_string();
    }
    vlans
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn route_text(r: &RouteState) -> String {
    let via = r.gw.map(|g| format!(" via {g}")).unwrap_or_default();
    let dev = r
        .oif
        .as_ref()
        .map(|o| format!(" dev {o}"))
        .unwrap_or_default();
    let metric = r.metric.map(|m| format!(" metric {m}")).unwrap_or_default();
    format!("{}{via}{dev}{metric} table {}", r.dst, r.table)
}
