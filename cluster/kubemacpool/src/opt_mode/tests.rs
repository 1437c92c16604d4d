use super::*;
use serde_json::json;

/// A configuration whose pod and VM webhooks select by `(operator, value)` on their own
/// label, run levels 0 and 1 never, as the operator renders it.
fn configuration(pods: (&str, &str), vms: (&str, &str)) -> MutatingWebhookConfiguration {
    let selector = |key: &str, (operator, value): (&str, &str)| {
        json!({"matchExpressions": [
            {"key": "runlevel", "operator": "NotIn", "values": ["0", "1"]},
            {"key": "openshift.io/run-level", "operator": "NotIn", "values": ["0", "1"]},
            {"key": key, "operator": operator, "values": [value]},
        ]})
    };
    let hook = |name: &str, sel: serde_json::Value| {
        json!({"name": name, "namespaceSelector": sel, "sideEffects": "None",
                   "admissionReviewVersions": ["v1"], "clientConfig": {}})
    };
    serde_json::from_value(json!({
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": [
            hook(POD_WEBHOOK, selector("mutatepods.kubemacpool.io", pods)),
            hook(VM_WEBHOOK, selector("mutatevirtualmachines.kubemacpool.io", vms)),
        ],
    }))
    .expect("a configuration")
}

/// Upstream's defaults: pods opt-in, VMs opt-out.
fn rendered() -> MutatingWebhookConfiguration {
    configuration(("In", "allocate"), ("NotIn", "ignore"))
}

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn with_namespaces() -> OptMode {
    let m = OptMode::default();
    m.set_namespace("plain", labels(&[]));
    m.set_namespace(
        "opted-in",
        labels(&[("mutatepods.kubemacpool.io", "allocate")]),
    );
    m.set_namespace(
        "vms-ignored",
        labels(&[("mutatevirtualmachines.kubemacpool.io", "ignore")]),
    );
    m.set_namespace(
        "pods-ignored",
        labels(&[("mutatepods.kubemacpool.io", "ignore")]),
    );
    m.set_namespace("kube-system", labels(&[("runlevel", "0")]));
    m
}

#[test]
fn pods_count_in_opted_in_namespaces_only_and_vms_everywhere_not_opted_out() {
    let m = with_namespaces();
    m.set_configuration(Some(&rendered()));
    assert!(m.manages(Managed::Pods, "opted-in"));
    assert!(!m.manages(Managed::Pods, "plain"));
    assert!(m.manages(Managed::Vms, "plain"));
    assert!(!m.manages(Managed::Vms, "vms-ignored"));
}

#[test]
fn run_level_namespaces_are_never_managed() {
    let m = with_namespaces();
    m.set_configuration(Some(&rendered()));
    assert!(!m.manages(Managed::Vms, "kube-system"));
}

#[test]
fn an_edited_selector_switches_the_mode_at_once() {
    let m = with_namespaces();
    m.set_configuration(Some(&rendered()));
    // Pods opt-out: every namespace not labelled `ignore`.
    m.set_configuration(Some(&configuration(
        ("NotIn", "ignore"),
        ("NotIn", "ignore"),
    )));
    assert!(m.manages(Managed::Pods, "plain"));
    assert!(!m.manages(Managed::Pods, "pods-ignored"));
}

#[test]
fn before_the_configuration_is_read_every_namespace_counts() {
    let m = with_namespaces();
    assert!(m.manages(Managed::Pods, "plain"));
    m.set_configuration(Some(&rendered()));
    m.set_configuration(None);
    assert!(m.manages(Managed::Pods, "plain"));
}
