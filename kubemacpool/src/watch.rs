//! The watches that feed the pool: every pod's and VirtualMachine's MACs (the state is the
//! objects, nothing else), and the range ConfigMap, applied as it changes; and those that feed
//! the collision report: running VMIs and pods, the webhook configuration's selectors and the
//! namespaces' labels.
//!
//! Lists ask for any resourceVersion, so the API server answers from its watch cache: at
//! 10,000 objects that is a fraction of a second, where paged quorum reads from etcd took
//! upstream over a minute. Pods are watched as metadata only; a VM is read and dropped at once.
//! Pods and VMs, which a start waits for, are listed and watched by [`crate::reflector`].

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use crate::claims::RENEW_EVERY;
use crate::collisions::{self, Migration, User};
use crate::held_pod::HeldPod;
use crate::held_vm::HeldVm;
use crate::range::MacRange;
use crate::reflector::{reflect, Kind};
use crate::state::Shared;
use crate::{opt_mode, pod, vm};

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

pub async fn follow_vms(client: Client, shared: Arc<Shared>) {
    let mut f = Follower {
        shared: &shared,
        prefix: "vm/",
        relisted: None,
    };
    let kind = Kind {
        path: HeldVm::url_path(&vm_resource(), None),
        metadata_only: false,
        what: "virtual machines",
    };
    let patcher = client.clone();
    let on = |event: Event<HeldVm>| match event {
        Event::Init => f.init(),
        Event::InitApply(o) | Event::Apply(o) => {
            let namespace = o.namespace().unwrap_or_default();
            if o.finalizers().iter().any(|f| f == vm::LEGACY_FINALIZER) {
                tokio::spawn(remove_legacy_finalizer(
                    patcher.clone(),
                    namespace.clone(),
                    o.name_any(),
                ));
            }
            let holder = vm_holder(&namespace, &o.name_any());
            let macs = o.spec.macs();
            f.apply(holder, macs);
        }
        Event::Delete(o) => f.delete(&vm_holder(
            &o.namespace().unwrap_or_default(),
            &o.name_any(),
        )),
        Event::InitDone => {
            f.init_done();
            if !f.shared.vms_synced.swap(true, Ordering::Relaxed) {
                info!(
                    after_ms = f.shared.started.elapsed().as_millis() as u64,
                    "virtual machines listed"
                );
            }
        }
    };
    let on_error = |e: &kube::Error| {
        // Without KubeVirt's CRD there are no VMs to wait for; the list keeps being tried and
        // picks them up once the CRD is installed.
        if matches!(e, kube::Error::Api(r) if r.code == 404) {
            shared.vms_synced.store(true, Ordering::Relaxed);
        } else {
            warn!(error = %e, "watching virtual machines");
        }
    };
    reflect(client, kind, on, on_error).await;
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

/// Takes the legacy finalizer off VM `namespace/name`. Older KubeMacPools added it and only
/// KubeMacPool removes it, so a VM deleted with it would wait for good; upstream's controller
/// removes it too. Both replicas may try: the patch names the VM's resourceVersion, and the one
/// that comes second is refused or finds nothing to remove.
async fn remove_legacy_finalizer(client: Client, namespace: String, name: String) {
    let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &vm_resource());
    let removed: anyhow::Result<bool> = async {
        let stored = serde_json::to_value(api.get(&name).await?)?;
        let Some(patch) = vm::legacy_finalizer_removal(&stored) else {
            return Ok(false);
        };
        api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(true)
    }
    .await;
    match removed {
        Ok(true) => {
            info!(%namespace, %name, "removed the legacy finalizer {}", vm::LEGACY_FINALIZER)
        }
        Ok(false) => {}
        Err(e) => warn!(error = %e, %namespace, %name, "removing the legacy finalizer"),
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

/// Reports every new collision by event, from the live replica whose identity sorts first.
/// Only that replica takes the collisions as reported: one that merely looked would never
/// report them once it becomes the first (its peer stopped).
pub async fn report_collisions(client: Client, shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        if !shared.collisions.has_unreported() {
            continue;
        }
        // Renewed within three renewals: a replica that stopped without retiring (killed) no
        // longer sorts first for the 45 s its blocks stay its own.
        let first = match shared.claims.live_allocators(3 * RENEW_EVERY).await {
            Ok(mut live) => {
                live.sort();
                live.first().cloned()
            }
            Err(e) => {
                warn!(error = %e, "listing the allocators");
                None
            }
        };
        if first.as_deref() != Some(shared.claims.identity()) {
            continue;
        }
        for (mac, users) in shared.collisions.unreported() {
            warn!(message = %crate::collisions::message(&mac, &users), "collision");
            crate::collisions::report(&client, &mac, &users).await;
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

/// Follows the webhook configuration's namespaceSelectors: which namespaces the collision
/// report counts ([`crate::opt_mode`]).
pub async fn follow_opt_mode(client: Client, shared: Arc<Shared>) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let config = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        opt_mode::WEBHOOK_CONFIGURATION
    ));
    let mut events = watcher(api, config).default_backoff().boxed();
    let mode = &shared.collisions.opt_mode;
    loop {
        match events.try_next().await {
            Ok(Some(Event::InitApply(c) | Event::Apply(c))) => mode.set_configuration(Some(&c)),
            Ok(Some(Event::Delete(_))) => mode.set_configuration(None),
            Ok(Some(Event::Init | Event::InitDone)) => {}
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching {}", opt_mode::WEBHOOK_CONFIGURATION),
        }
    }
}

/// Follows every namespace's labels, which the namespaceSelectors match.
pub async fn follow_namespaces(client: Client, shared: Arc<Shared>) {
    let api: Api<PartialObjectMeta<Namespace>> = Api::all(client);
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .boxed();
    let mode = &shared.collisions.opt_mode;
    loop {
        match events.try_next().await {
            Ok(Some(Event::InitApply(n) | Event::Apply(n))) => {
                mode.set_namespace(&n.name_any(), Some(n.labels().clone()))
            }
            Ok(Some(Event::Delete(n))) => mode.set_namespace(&n.name_any(), None),
            Ok(Some(Event::Init | Event::InitDone)) => {}
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching namespaces"),
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
