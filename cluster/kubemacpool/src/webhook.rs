//! The two mutating webhooks: `/mutate-pods` and `/mutate-virtualmachines`. Each reads its
//! object, refuses what it must before anything is allocated, then takes MACs from the pool.

use std::sync::atomic::Ordering;

use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::Api;
use serde_json::Value;
use tracing::{debug, warn};

use crate::admission::{self, Denial, Review};
use crate::pod::{self, PodNeeds};
use crate::state::Shared;
use crate::vm;
use crate::watch::vm_resource;

pub async fn mutate_pod(shared: &Shared, review: &Review) -> Value {
    let req = &review.request;
    if req.operation != "CREATE" {
        return admission::allow(review, None);
    }
    let (elements, count, requested) = match pod::needs(&req.object) {
        Ok(PodNeeds::Skip) => return admission::allow(review, None),
        Ok(PodNeeds::Macs {
            elements,
            count,
            requested,
        }) => (elements, count, requested),
        // Upstream answers every refusal of a pod 500.
        Err(Denial(message)) => return deny(shared, review, 500, &message),
    };
    // Read only once the pod asks for MACs, as upstream: most pods cost no API call.
    if let Some(vmi) = pod::owning_vmi(&req.object) {
        let read = vm_exists(shared, &req.namespace, vmi).await;
        if let Err(e) = &read {
            warn!(namespace = %req.namespace, vmi, error = %e, "reading a launcher pod's VM");
        }
        if left_to_its_vm(&read) {
            return admission::allow(review, None);
        }
    }
    match shared.allocate(count, &requested, req.is_dry_run()).await {
        Ok(macs) => {
            debug!(namespace = %req.namespace, name = %req.object_name(), ?macs, "pod");
            admission::allow(review, Some(&pod::patch(&elements, &macs)))
        }
        Err(e) => deny(
            shared,
            review,
            500,
            &format!("Failed to allocate mac to the pod object: {e}"),
        ),
    }
}

/// Whether the VM of a launcher pod's VMI exists, read live from the API server (metadata
/// only): a VM created a moment ago may not be in the watch yet.
async fn vm_exists(shared: &Shared, namespace: &str, name: &str) -> Result<bool, kube::Error> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(shared.client.clone(), namespace, &vm_resource());
    Ok(api.get_metadata_opt(name).await?.is_some())
}

/// A launcher pod is its VM's business (virt-controller writes the VM's MACs, or none, into its
/// annotation) unless the read found no VM: only a VMI without one has its pod given MACs. A
/// failed read passes the pod unchanged, as upstream.
pub fn left_to_its_vm<E>(read: &Result<bool, E>) -> bool {
    !matches!(read, Ok(false))
}

pub async fn mutate_vm(shared: &Shared, review: &Review) -> Value {
    let req = &review.request;
    let create = match req.operation.as_str() {
        "CREATE" => true,
        "UPDATE" => false,
        _ => return admission::allow(review, None),
    };
    let old = (!create).then_some(&req.old_object);
    let needs = match vm::needs(&req.object, old, req.is_dry_run()) {
        Ok(needs) if needs.is_noop() => return admission::allow(review, None),
        Ok(needs) => needs,
        Err(Denial(message)) => {
            return deny(shared, review, 500, &vm::refusal_text(create, &message));
        }
    };
    match shared
        .allocate(needs.count(), needs.requested(), req.is_dry_run())
        .await
    {
        Ok(macs) => {
            let stamp = Timestamp::now().to_string();
            debug!(namespace = %req.namespace, name = %req.object_name(), ?macs, "virtual machine");
            admission::allow(review, Some(&vm::patch(&req.object, &needs, &macs, &stamp)))
        }
        Err(e) => deny(
            shared,
            review,
            500,
            &vm::refusal_text(create, &e.to_string()),
        ),
    }
}

fn deny(shared: &Shared, review: &Review, code: u16, message: &str) -> Value {
    shared.denied.fetch_add(1, Ordering::Relaxed);
    warn!(
        namespace = %review.request.namespace,
        name = %review.request.object_name(),
        message,
        "refused"
    );
    admission::deny(review, code, message)
}

#[cfg(test)]
mod tests;
