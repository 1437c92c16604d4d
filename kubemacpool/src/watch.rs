//! The watches that feed the pool: every pod's and VirtualMachine's MACs (the state is the
//! objects, nothing else), and the range ConfigMap, applied as it changes.
//!
//! Lists ask for any resourceVersion, so the API server answers from its watch cache: at
//! 10,000 objects that is a fraction of a second, where paged quorum reads from etcd took
//! upstream over a minute. Pods are watched as metadata only; a VM is read and dropped at once.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, ResourceExt};
use tracing::{info, warn};

use crate::pod;
use crate::range::MacRange;
use crate::state::Shared;
use crate::vm;

pub const RANGE_CONFIG: &str = "kubemacpool-mac-range-config";

pub fn vm_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachine"),
        "virtualmachines",
    )
}

pub fn pod_holder(namespace: &str, name: &str) -> String {
    format!("pod/{namespace}/{name}")
}

pub fn vm_holder(namespace: &str, name: &str) -> String {
    format!("vm/{namespace}/{name}")
}

/// Applies one kind's watch events to the pool; a relist drops the holders that are gone.
struct Follower<'a> {
    shared: &'a Shared,
    prefix: &'static str,
    relisted: Option<HashSet<String>>,
}

impl Follower<'_> {
    fn apply(&mut self, holder: String, macs: Vec<net_types::MacAddr>) {
        self.shared.pool().set_holder(&holder, &macs);
        if let Some(seen) = self.relisted.as_mut() {
            seen.insert(holder);
        }
    }

    fn delete(&mut self, holder: &str) {
        self.shared.pool().remove_holder(holder);
    }

    fn init(&mut self) {
        self.relisted = Some(HashSet::new());
    }

    fn init_done(&mut self) {
        let Some(seen) = self.relisted.take() else {
            return;
        };
        let mut pool = self.shared.pool();
        for gone in pool
            .holders_with_prefix(self.prefix)
            .into_iter()
            .filter(|h| !seen.contains(h))
        {
            pool.remove_holder(&gone);
        }
    }
}

pub async fn follow_pods(client: Client, shared: Arc<Shared>) {
    let api: Api<PartialObjectMeta<Pod>> = Api::all(client);
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .boxed();
    let mut f = Follower {
        shared: &shared,
        prefix: "pod/",
        relisted: None,
    };
    loop {
        match events.try_next().await {
            Ok(Some(event)) => match event {
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
                    if !shared.pods_synced.swap(true, Ordering::Relaxed) {
                        info!(
                            after_ms = shared.started.elapsed().as_millis() as u64,
                            "pods listed"
                        );
                    }
                }
            },
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching pods"),
        }
    }
}

pub async fn follow_vms(client: Client, shared: Arc<Shared>) {
    let api: Api<DynamicObject> = Api::all_with(client, &vm_resource());
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .boxed();
    let mut f = Follower {
        shared: &shared,
        prefix: "vm/",
        relisted: None,
    };
    loop {
        match events.try_next().await {
            Ok(Some(event)) => match event {
                Event::Init => f.init(),
                Event::InitApply(o) | Event::Apply(o) => {
                    let holder = vm_holder(&o.namespace().unwrap_or_default(), &o.name_any());
                    let macs = vm::held_macs(&o.data);
                    f.apply(holder, macs);
                }
                Event::Delete(o) => f.delete(&vm_holder(
                    &o.namespace().unwrap_or_default(),
                    &o.name_any(),
                )),
                Event::InitDone => {
                    f.init_done();
                    if !shared.vms_synced.swap(true, Ordering::Relaxed) {
                        info!(
                            after_ms = shared.started.elapsed().as_millis() as u64,
                            "virtual machines listed"
                        );
                    }
                }
            },
            Ok(None) => return,
            Err(e) => {
                // Without KubeVirt's CRD there are no VMs to wait for; the watch keeps trying
                // and picks them up once the CRD is installed.
                if is_not_found(&e) {
                    shared.vms_synced.store(true, Ordering::Relaxed);
                } else {
                    warn!(error = %e, "watching virtual machines");
                }
            }
        }
    }
}

fn is_not_found(e: &watcher::Error) -> bool {
    matches!(
        e,
        watcher::Error::InitialListFailed(kube::Error::Api(r))
            | watcher::Error::WatchFailed(kube::Error::Api(r))
            if r.code == 404
    )
}

/// Applies every change of the range ConfigMap; a ConfigMap with a bad range is reported and
/// the range before it kept.
pub async fn follow_range(client: Client, namespace: String, shared: Arc<Shared>) {
    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={RANGE_CONFIG}"));
    let mut events = watcher(api, config)
        .default_backoff()
        .applied_objects()
        .boxed();
    loop {
        match events.try_next().await {
            Ok(Some(cm)) => {
                let data = cm.data.unwrap_or_default();
                let (start, end) = (
                    data.get("RANGE_START").cloned().unwrap_or_default(),
                    data.get("RANGE_END").cloned().unwrap_or_default(),
                );
                match MacRange::parse(&start, &end) {
                    Ok(range) => {
                        let dropped = shared.pool().set_range(range, crate::random_u64());
                        if !dropped.is_empty() {
                            if let Err(e) = shared.claims.release(&dropped).await {
                                warn!(error = %e, "giving back the blocks outside the new range");
                            }
                        }
                        info!(%range, "range");
                    }
                    Err(e) => warn!(error = %e, "{RANGE_CONFIG} keeps the range before it"),
                }
            }
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching {RANGE_CONFIG}"),
        }
    }
}

/// Ends the holds of admissions whose objects never came.
pub async fn expire_pending(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let freed = shared.pool().expire(std::time::Instant::now());
        if freed > 0 {
            info!(
                freed,
                "MACs of admissions whose objects never came are free"
            );
        }
    }
}
