//! The two mutating webhooks: `/mutate-pods` and `/mutate-virtualmachines`. Each reads its
//! object, refuses what it must before anything is allocated, then takes MACs from the pool.

use std::sync::atomic::Ordering;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use tracing::{debug, warn};

use crate::admission::{self, Review};
use crate::patch::Denial;
use crate::pod::{self, PodNeeds};
use crate::state::Shared;
use crate::vm;
use crate::watch::vm_holder;

pub async fn mutate_pod(shared: &Shared, review: &Review) -> Value {
    let req = &review.request;
    if req.operation != "CREATE" || launched_by_a_vm(shared, review) {
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

/// A VM's launcher pod carries the MACs its VM was given (virt-controller copies them into
/// the annotation): nothing to allocate while the VM exists, as upstream.
fn launched_by_a_vm(shared: &Shared, review: &Review) -> bool {
    let owners = review
        .request
        .object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array);
    owners.into_iter().flatten().any(|o| {
        o.get("kind").and_then(Value::as_str) == Some("VirtualMachineInstance")
            && o.get("name").and_then(Value::as_str).is_some_and(|name| {
                shared
                    .pool()
                    .holder_macs(&vm_holder(&review.request.namespace, name))
                    .is_some()
            })
    })
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
