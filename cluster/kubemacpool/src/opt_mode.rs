//! Which namespaces KubeMacPool manages, read from the live webhook configuration
//! `kubemacpool-mutator`, as upstream reads it: a namespace is managed for pods when the pod
//! webhook's namespaceSelector selects it (opt-in by default: labelled
//! `mutatepods.kubemacpool.io=allocate`), and for VMs when the VM webhook's does (opt-out by
//! default: not labelled `mutatevirtualmachines.kubemacpool.io=ignore`). The API server already
//! calls the webhooks by these selectors; the collision report follows them too, so objects in
//! namespaces KubeMacPool leaves alone never raise a collision. Editing a selector switches the
//! mode at once (the operator that renders the configuration puts its own back at its next
//! reconcile).
//!
//! Until the configuration has been read, and for a webhook it lacks, every namespace counts:
//! a collision is reported rather than missed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use kube::core::{Selector, SelectorExt};
use tracing::warn;

/// The configuration the cert manager also keeps the caBundle of.
pub use crate::certs::WEBHOOK_CONFIGURATION;
pub const POD_WEBHOOK: &str = "mutatepods.kubemacpool.io";
pub const VM_WEBHOOK: &str = "mutatevirtualmachines.kubemacpool.io";

/// What a user of MACs is, for the webhook that manages its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Managed {
    Pods,
    Vms,
}

#[derive(Default)]
pub struct OptMode {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    pods: Option<Selector>,
    vms: Option<Selector>,
    namespaces: HashMap<String, BTreeMap<String, String>>,
}

impl OptMode {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the selectors of the live configuration (`None`: it is gone).
    pub fn set_configuration(&self, configuration: Option<&MutatingWebhookConfiguration>) {
        let selector = |name: &str| -> Option<Selector> {
            let hook = configuration?
                .webhooks
                .iter()
                .flatten()
                .find(|w| w.name == name)?;
            match Selector::try_from(hook.namespace_selector.clone().unwrap_or_default()) {
                Ok(s) => Some(s),
                Err(e) => {
                    warn!(webhook = name, error = %e, "a namespaceSelector that cannot be read; every namespace counts");
                    None
                }
            }
        };
        let (pods, vms) = (selector(POD_WEBHOOK), selector(VM_WEBHOOK));
        let mut state = self.lock();
        state.pods = pods;
        state.vms = vms;
    }

    /// Records a namespace's labels (`None`: it is gone).
    pub fn set_namespace(&self, name: &str, labels: Option<BTreeMap<String, String>>) {
        let mut state = self.lock();
        match labels {
            Some(labels) => state.namespaces.insert(name.to_string(), labels),
            None => state.namespaces.remove(name),
        };
    }

    /// Whether `namespace` is managed for `kind`.
    pub fn manages(&self, kind: Managed, namespace: &str) -> bool {
        let state = self.lock();
        let selector = match kind {
            Managed::Pods => state.pods.as_ref(),
            Managed::Vms => state.vms.as_ref(),
        };
        let Some(selector) = selector else {
            return true;
        };
        let none = BTreeMap::new();
        selector.matches(state.namespaces.get(namespace).unwrap_or(&none))
    }
}

#[cfg(test)]
mod tests {
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
}
