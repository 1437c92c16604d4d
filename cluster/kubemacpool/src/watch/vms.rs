//! VirtualMachines: their MACs for the pool, each read and dropped at once, and the legacy
//! finalizer taken off any VM that still carries it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::watcher::Event;
use kube::{Api, Client, Resource, ResourceExt};
use tracing::{info, warn};

use super::follower::Follower;
use crate::held_vm::HeldVm;
use crate::reflector::{reflect, Kind};
use crate::state::Shared;
use crate::vm;

pub fn vm_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachine"),
        "virtualmachines",
    )
}

pub fn vm_holder(namespace: &str, name: &str) -> String {
    format!("vm/{namespace}/{name}")
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

/// Takes the legacy finalizer off VM `namespace/name`. Older KubeMacPools added it and only
/// KubeMacPool removes it, so a VM deleted with it would wait for good; upstream's controller
/// removes it too. Both replicas may try: the patch names the VM's resourceVersion, and the one
/// that comes second is refused or finds nothing to remove.
async fn remove_legacy_finalizer(client: Client, namespace: String, name: String) {
    let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &vm_resource());
    let removed: crate::error::Result<bool> = async {
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
        Err(e) => warn!(
            error = %error_context::report(&e),
            %namespace,
            %name,
            "removing the legacy finalizer"
        ),
    }
}
