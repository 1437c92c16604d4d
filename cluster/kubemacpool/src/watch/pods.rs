//! Pods: every pod's MACs for the pool (metadata only, through [`crate::reflector`]), and the
//! running ones for the collision report.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use super::follower::Follower;
use crate::collisions::{self, User};
use crate::held_pod::HeldPod;
use crate::pod;
use crate::reflector::{reflect, Kind};
use crate::state::Shared;

pub fn pod_holder(namespace: &str, name: &str) -> String {
    format!("pod/{namespace}/{name}")
}

pub async fn follow_pods(client: Client, shared: Arc<Shared>) {
    let mut f = Follower {
        shared: &shared,
        prefix: "pod/",
        relisted: None,
    };
    let kind = Kind {
        path: HeldPod::url_path(&(), None),
        metadata_only: true,
        what: "pods",
    };
    let on = |event: Event<HeldPod>| match event {
        Event::Init => f.init(),
        Event::InitApply(p) | Event::Apply(p) => {
            let holder = pod_holder(&p.namespace().unwrap_or_default(), &p.name_any());
            let macs = p
                .annotations()
                .get(pod::NETWORKS)
                .map(|n| pod::held_macs(n))
                .unwrap_or_default();
            f.apply(holder, macs);
        }
        Event::Delete(p) => f.delete(&pod_holder(
            &p.namespace().unwrap_or_default(),
            &p.name_any(),
        )),
        Event::InitDone => {
            f.init_done();
            if !f.shared.pods_synced.swap(true, Ordering::Relaxed) {
                info!(
                    after_ms = f.shared.started.elapsed().as_millis() as u64,
                    "pods listed"
                );
            }
        }
    };
    reflect(client, kind, on, |e| warn!(error = %e, "watching pods")).await;
}

/// Follows the pods that run, for the collision report, which counts a pod only while it runs
/// and once Multus has attached it ([`crate::collisions::pod_uses`]). A watch of its own,
/// selected by phase on the API server: the pool's must see every pod, and reads no phase. A
/// pod that stops running leaves the selection, and the watch reports it deleted.
pub async fn follow_running_pods(client: Client, shared: Arc<Shared>) {
    let api: Api<PartialObjectMeta<Pod>> = Api::all(client);
    let config = watcher::Config::default()
        .fields("status.phase=Running")
        .any_semantic();
    let mut events = watcher(api, config).default_backoff().boxed();
    let collisions = &shared.collisions;
    let mut listed: Option<BTreeSet<User>> = None;
    loop {
        match events.try_next().await {
            Ok(Some(Event::Init)) => listed = Some(BTreeSet::new()),
            Ok(Some(Event::InitApply(p) | Event::Apply(p))) => {
                let user = pod_user(&p);
                if let Some(seen) = listed.as_mut() {
                    seen.insert(user.clone());
                }
                collisions.set(user, collisions::pod_uses(Some("Running"), &p.metadata));
            }
            Ok(Some(Event::Delete(p))) => collisions.set(pod_user(&p), Vec::new()),
            Ok(Some(Event::InitDone)) => {
                if let Some(seen) = listed.take() {
                    collisions.retain("pod", &seen);
                }
            }
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching running pods"),
        }
    }
}

fn pod_user(p: &PartialObjectMeta<Pod>) -> User {
    User {
        kind: "pod",
        namespace: p.namespace().unwrap_or_default(),
        name: p.name_any(),
        uid: p.uid().unwrap_or_default(),
    }
}
