#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::NetworkAddonsConfigSpec;
use serde_json::json;

#[test]
fn label_values_are_valid_label_values() {
    assert_eq!(label_value("0.1.0"), "0.1.0");
    assert_eq!(label_value("v1.2.0+abc/def"), "v1.2.0-abc-def");
    assert_eq!(label_value("+x+"), "x");
    assert_eq!(label_value(&"a".repeat(80)).len(), 63);
}

/// A DaemonSet with our labels on itself and its pod template, as every rendered one has.
fn bridge_daemon_set() -> Rendered {
    let spec = NetworkAddonsConfigSpec::default();
    let settings = Settings::defaults();
    let ctx = Ctx::new(&spec, &settings, &ClusterInfo::default());
    let ours = labels(&ctx, Some(Component::LinuxBridge));
    Rendered {
        component: Some(Component::LinuxBridge),
        object: json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta(&ctx, "bridge-marker", Some(Component::LinuxBridge)),
            "spec": {
                "selector": selector(&[("name", "bridge-marker")]),
                "template": {"metadata": {"labels": ours}},
            },
        }),
    }
}

#[test]
fn the_configs_relationship_labels_but_managed_by_go_on_objects_and_pod_templates() {
    let mut objects = vec![bridge_daemon_set()];
    let cr = string_map(&[
        (labels::COMPONENT, "network"),
        (labels::MANAGED_BY, "hco-operator"),
        (labels::PART_OF, "hyperconverged-cluster"),
        (labels::VERSION, "1.14.0"),
        ("app", "kubevirt-hyperconverged"),
    ]);
    relationship_labels(&mut objects, &cr);
    let o = &objects[0].object;
    for l in [
        &o["metadata"]["labels"],
        &o["spec"]["template"]["metadata"]["labels"],
    ] {
        assert_eq!(l[labels::COMPONENT], "network");
        assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        assert_eq!(l[labels::PART_OF], "hyperconverged-cluster");
        assert_eq!(l[labels::VERSION], "1.14.0");
        assert_eq!(l[labels::OWN_COMPONENT], "linuxBridge");
        assert!(l.get("app").is_none());
    }
    assert_eq!(
        o["spec"]["selector"]["matchLabels"],
        json!({"name": "bridge-marker"})
    );
}

#[test]
fn without_relationship_labels_on_the_config_ours_stay() {
    let mut objects = vec![bridge_daemon_set()];
    relationship_labels(&mut objects, &string_map(&[("app", "x")]));
    let l = &objects[0].object["metadata"]["labels"];
    assert_eq!(l[labels::COMPONENT], "linuxBridge");
    assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
}
