use super::*;

#[derive(Deserialize)]
struct Object {
    #[serde(deserialize_with = "held_metadata")]
    metadata: ObjectMeta,
}

#[test]
fn what_the_pool_reads_is_kept_and_the_rest_is_not() {
    let o: Object = serde_json::from_value(serde_json::json!({"metadata": {
            "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
            "labels": {"kubevirt.io": "virt-launcher"},
            "annotations": {NETWORKS: "[{\"name\":\"br1\"}]", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}],
        }}))
        .expect("decodes");
    let m = o.metadata;
    assert_eq!(
        (m.name.as_deref(), m.namespace.as_deref()),
        (Some("p"), Some("ns"))
    );
    assert_eq!(
        (m.uid.as_deref(), m.resource_version.as_deref()),
        (Some("u"), Some("7"))
    );
    assert_eq!(m.labels.unwrap_or_default()["kubevirt.io"], "virt-launcher");
    let annotations = m.annotations.unwrap_or_default();
    assert_eq!(annotations.len(), 1, "{annotations:?}");
    assert_eq!(annotations[NETWORKS], "[{\"name\":\"br1\"}]");
    assert!(m.deletion_timestamp.is_some());
    assert!(m.managed_fields.is_none());
}

#[test]
fn an_object_without_annotations_has_none() {
    let o: Object =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "v"}})).expect("decodes");
    assert!(o.metadata.annotations.is_none());
}
