//! Running VirtualMachineInstances, for the collision report.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, ResourceExt};
use tracing::warn;

use crate::collisions::{Migration, User};
use crate::state::Shared;

pub fn vmi_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachineInstance"),
        "virtualmachineinstances",
    )
}

/// The running VMIs' MACs (`status.interfaces[].mac`), for collisions.
pub async fn follow_vmis(client: Client, shared: Arc<Shared>) {
    let api: Api<DynamicObject> = Api::all_with(client, &vmi_resource());
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .boxed();
    let mut relisted: Option<BTreeSet<User>> = None;
    loop {
        match events.try_next().await {
            Ok(Some(Event::Init)) => relisted = Some(BTreeSet::new()),
            Ok(Some(Event::InitApply(o) | Event::Apply(o))) => {
                let user = vmi_user(&o);
                if let Some(seen) = relisted.as_mut() {
                    seen.insert(user.clone());
                }
                let migration = Migration::of_vmi(&o.data);
                shared
                    .collisions
                    .set_migrating(user, vmi_macs(&o.data), migration);
            }
            Ok(Some(Event::Delete(o))) => shared.collisions.set(vmi_user(&o), Vec::new()),
            Ok(Some(Event::InitDone)) => {
                if let Some(seen) = relisted.take() {
                    shared.collisions.retain("vmi", &seen);
                }
            }
            Ok(None) => return,
            Err(e) if is_not_found(&e) => {}
            Err(e) => warn!(error = %e, "watching virtual machine instances"),
        }
    }
}

fn vmi_user(o: &DynamicObject) -> User {
    User {
        kind: "vmi",
        namespace: o.namespace().unwrap_or_default(),
        name: o.name_any(),
        uid: o.uid().unwrap_or_default(),
    }
}

/// A running VMI's MACs, as virt-handler reports them.
pub fn vmi_macs(vmi: &serde_json::Value) -> Vec<net_types::MacAddr> {
    if vmi
        .pointer("/status/phase")
        .and_then(serde_json::Value::as_str)
        != Some("Running")
    {
        return Vec::new();
    }
    vmi.pointer("/status/interfaces")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("mac")?.as_str())
        .filter_map(|m| net_types::MacAddr::parse(m).ok())
        .collect()
}

fn is_not_found(e: &watcher::Error) -> bool {
    matches!(
        e,
        watcher::Error::InitialListFailed(kube::Error::Api(r))
            | watcher::Error::WatchFailed(kube::Error::Api(r))
            if r.code == 404
    )
}
