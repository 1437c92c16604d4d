//! A replica that has just become the leader: it leaves alone what the last leader completed
//! and nobody changed since, and applies the rest.

use serde_json::json;

use crate::harness::{new_ctx, started, writes, Harness, BRIDGE_DS, LINUX_BRIDGE, NS};
use network_addons_operator::desired::APPLIED_CONFIGMAP;

impl Harness {
    /// The same cluster seen by a replica that has just become the leader: it has applied
    /// nothing yet.
    fn new_leader(self) -> Harness {
        Harness {
            ctx: new_ctx(&self.client, &self.now, [0x12, 0x34]),
            ..self
        }
    }
}

#[tokio::test]
async fn a_new_leader_writes_nothing_the_last_one_completed() {
    let h = started(LINUX_BRIDGE).await;
    h.set_ready(BRIDGE_DS);
    h.reconcile().await.unwrap();
    let h = h.new_leader();
    h.fake.clear_requests();
    h.advance(1);
    h.reconcile().await.unwrap();
    assert_eq!(writes(&h), Vec::<String>::new());
}

#[tokio::test]
async fn a_new_leader_applies_what_changed_behind_the_last_ones_back() {
    let h = started(LINUX_BRIDGE).await;
    let mut ds = h.fake.daemonset(NS, BRIDGE_DS).unwrap();
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("elsewhere/bridge:1");
    h.fake.put("apps/v1", "daemonsets", ds);
    let h = h.new_leader();
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(
        h.object_writes(),
        [format!(
            "PATCH /apis/apps/v1/namespaces/{NS}/daemonsets/{BRIDGE_DS}"
        )]
    );
}

#[tokio::test]
async fn a_new_leader_applies_everything_when_the_last_render_was_not_completed() {
    let h = started(LINUX_BRIDGE).await;
    let mut record = h.fake.configmap(NS, APPLIED_CONFIGMAP).unwrap();
    record["metadata"]["annotations"] = json!({});
    h.fake.put("v1", "configmaps", record);
    let written_first: Vec<String> = h
        .object_writes()
        .into_iter()
        .filter(|w| !w.contains("/networkaddonsconfigs"))
        .collect();
    let h = h.new_leader();
    h.fake.clear_requests();
    h.reconcile().await.unwrap();
    assert_eq!(h.object_writes(), written_first);
}
