use super::*;
use crate::spec::GROUP;

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: format!("{GROUP}/v1"),
        kind: "NetworkAddonsConfig".to_string(),
        name: "cluster".to_string(),
        uid: "u1".to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

#[test]
fn namespaces_and_crds_get_no_owner() {
    let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
    set_owner(&mut ns, &owner());
    assert!(ns["metadata"].get("ownerReferences").is_none());
    let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "x"}});
    set_owner(&mut crd, &owner());
    assert!(crd["metadata"].get("ownerReferences").is_none());
}

#[test]
fn the_owner_is_added_once() {
    let mut ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"}});
    set_owner(&mut ds, &owner());
    set_owner(&mut ds, &owner());
    let refs = ds["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["controller"], true);
    assert_eq!(refs[0]["blockOwnerDeletion"], true);
    assert_eq!(refs[0]["kind"], "NetworkAddonsConfig");
}

#[test]
fn a_label_already_set_is_not_replaced() {
    let mut o = json!({"metadata": {"labels": {"a": "mine"}}});
    ensure_label(&mut o, "a", "other");
    ensure_label(&mut o, "b", "new");
    assert_eq!(o["metadata"]["labels"], json!({"a": "mine", "b": "new"}));
}

#[test]
fn api_resources_split_group_and_version() {
    let k = RenderedKind {
        api_version: "apps/v1",
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
        keep: false,
    };
    let r = api_resource(&k);
    assert_eq!((r.group.as_str(), r.version.as_str()), ("apps", "v1"));
    let core = RenderedKind {
        api_version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        namespaced: true,
        keep: false,
    };
    let r = api_resource(&core);
    assert_eq!((r.group.as_str(), r.version.as_str()), ("", "v1"));
    assert_eq!(r.api_version, "v1");
}
