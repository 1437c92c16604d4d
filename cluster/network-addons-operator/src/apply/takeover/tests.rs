use super::*;
use serde_json::json;

fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        api_version: Some("apps/v1".into()),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1(fields)),
        manager: Some(manager.into()),
        operation: Some(operation.into()),
        subresource: None,
        time: None,
    }
}

fn rendered() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "x", "labels": {"app.kubernetes.io/managed-by": "network-addons-operator"}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    })
}

fn managers(entries: &[ManagedFieldsEntry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn the_fields_of_the_manager_that_set_ours_become_ours_extra_ones_included() {
    let previous = entry(
        "cluster-network-addons-operator",
        "Update",
        json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}},
                   "f:spec": {"f:template": {"f:spec": {"f:containers": {
                       "k:{\"name\":\"c\"}": {"f:command": {}, "f:image": {}}}}}}}),
    );
    let out = take_over_fields(&[previous], &rendered(), "network-addons-operator", None)
        .expect("taken over");
    assert_eq!(
        managers(&out),
        [("network-addons-operator".into(), "Apply".into())]
    );
    let fields = &out[0].fields_v1.as_ref().expect("fields").0;
    assert!(fields.to_string().contains("f:command"), "{fields}");
}

#[test]
fn a_manager_that_set_none_of_our_fields_keeps_its_own() {
    let token_controller = entry(
        "kube-controller-manager",
        "Update",
        json!({"f:secrets": {".": {}}}),
    );
    assert!(take_over_fields(
        &[token_controller],
        &rendered(),
        "network-addons-operator",
        None
    )
    .is_none());
}

#[test]
fn status_writers_and_other_api_versions_keep_their_entries() {
    let mut status = entry(
        "kube-controller-manager",
        "Update",
        json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}),
    );
    status.subresource = Some("status".into());
    let mut old = entry(
        "kubectl",
        "Update",
        json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}),
    );
    old.api_version = Some("extensions/v1beta1".into());
    // The status writer and the other version's writer are the only ones that set a field
    // of ours: neither is taken over.
    assert!(take_over_fields(
        &[status.clone(), old.clone()],
        &rendered(),
        "network-addons-operator",
        None
    )
    .is_none());
    let author = entry(
        "kubectl-create",
        "Update",
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {}}}}}),
    );
    let out = take_over_fields(
        &[status, old, author],
        &rendered(),
        "network-addons-operator",
        None,
    )
    .expect("taken over");
    assert_eq!(
        managers(&out),
        [
            ("kube-controller-manager".into(), "Update".into()),
            ("kubectl".into(), "Update".into()),
            ("network-addons-operator".into(), "Apply".into()),
        ]
    );
}

#[test]
fn our_earlier_apply_is_merged_not_duplicated() {
    let ours = entry(
        "network-addons-operator",
        "Apply",
        json!({"f:metadata": {"f:labels": {"f:a": {}}}}),
    );
    let author = entry(
        "helm",
        "Update",
        json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:b": {}}}}),
    );
    let out = take_over_fields(
        &[ours, author],
        &rendered(),
        "network-addons-operator",
        None,
    )
    .expect("taken over");
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].fields_v1.as_ref().expect("fields").0,
        json!({"f:metadata": {"f:labels": {"f:a": {}, "f:app.kubernetes.io/managed-by": {}, "f:b": {}}}})
    );
}

#[test]
fn the_status_another_manager_wrote_becomes_ours_in_the_status_entry() {
    let mut status_writer = entry(
        "cluster-network-addons-operator",
        "Update",
        json!({"f:status": {"f:conditions": {}, "f:notDeployed": {}}}),
    );
    status_writer.subresource = Some("status".into());
    let spec_writer = entry("kubectl", "Update", json!({"f:spec": {"f:multus": {}}}));
    let body = json!({"apiVersion": "apps/v1", "status": {"conditions": []}});
    let out = take_over_fields(
        &[status_writer, spec_writer],
        &body,
        "network-addons-operator",
        Some("status"),
    )
    .expect("taken over");
    assert_eq!(
        managers(&out),
        [
            ("kubectl".into(), "Update".into()),
            ("network-addons-operator".into(), "Apply".into()),
        ]
    );
    assert_eq!(out[1].subresource.as_deref(), Some("status"));
    assert!(out[1]
        .fields_v1
        .as_ref()
        .expect("fields")
        .0
        .to_string()
        .contains("f:notDeployed"));
}

#[test]
fn an_old_api_servers_status_entry_gives_up_only_its_status() {
    // Before 1.22 a write of the status is recorded with no subresource, in the same entry
    // as the manager's writes of the object.
    let writer = entry(
        "cluster-network-addons-operator",
        "Update",
        json!({"f:metadata": {"f:annotations": {"f:a": {}}},
                   "f:status": {"f:conditions": {}, "f:notDeployed": {}}}),
    );
    let body = json!({"apiVersion": "apps/v1", "status": {"conditions": []}});
    let out = take_over_fields(&[writer], &body, "network-addons-operator", Some("status"))
        .expect("taken over");
    assert_eq!(
        managers(&out),
        [
            ("cluster-network-addons-operator".into(), "Update".into()),
            ("network-addons-operator".into(), "Apply".into()),
        ]
    );
    assert_eq!(
        out[0].fields_v1.as_ref().expect("fields").0,
        json!({"f:metadata": {"f:annotations": {"f:a": {}}}})
    );
    assert_eq!(
        out[1].fields_v1.as_ref().expect("fields").0,
        json!({"f:status": {"f:conditions": {}, "f:notDeployed": {}}})
    );
}

/// A webhook configuration as we render it: one webhook, its service, no CA.
fn webhook() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "w", "labels": {"app.kubernetes.io/managed-by": "network-addons-operator"}},
        "webhooks": [{"name": "mutatepods.example.io", "failurePolicy": "Fail",
                      "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]
    })
}

fn webhook_entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
    ManagedFieldsEntry {
        api_version: Some("admissionregistration.k8s.io/v1".into()),
        ..entry(manager, operation, fields)
    }
}

#[test]
fn an_injector_that_set_one_field_of_a_list_item_we_render_keeps_it() {
    // By update: only the field changed is recorded.
    let by_update = webhook_entry(
        "cainjector",
        "Update",
        json!({"f:webhooks": {"k:{\"name\":\"mutatepods.example.io\"}":
                {"f:clientConfig": {"f:caBundle": {}}}}}),
    );
    // By server-side apply: the item's key field is the applier's too.
    let by_apply = webhook_entry(
        "cert-manager",
        "Apply",
        json!({"f:webhooks": {"k:{\"name\":\"mutatepods.example.io\"}":
                {".": {}, "f:name": {}, "f:clientConfig": {"f:caBundle": {}}}}}),
    );
    for injector in [by_update, by_apply] {
        assert!(
            take_over_fields(&[injector], &webhook(), "network-addons-operator", None).is_none()
        );
    }
}

#[test]
fn the_author_of_a_list_item_we_render_is_taken_over() {
    let author = webhook_entry(
        "cluster-network-addons-operator",
        "Update",
        json!({"f:webhooks": {"k:{\"name\":\"mutatepods.example.io\"}":
                {".": {}, "f:name": {}, "f:failurePolicy": {}, "f:sideEffects": {}}}}),
    );
    assert!(take_over_fields(&[author], &webhook(), "network-addons-operator", None).is_some());
}

#[test]
fn an_item_of_a_list_we_do_not_render_is_not_ours_to_take() {
    let other = webhook_entry(
        "someone",
        "Update",
        json!({"f:webhooks": {"k:{\"name\":\"other.example.io\"}":
                {".": {}, "f:name": {}, "f:failurePolicy": {}}}}),
    );
    assert!(take_over_fields(&[other], &webhook(), "network-addons-operator", None).is_none());
}
