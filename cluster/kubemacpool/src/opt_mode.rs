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
mod tests;
