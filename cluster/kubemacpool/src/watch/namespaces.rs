//! Which namespaces the collision report counts: the webhook configuration's
//! namespaceSelectors and every namespace's labels.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, ResourceExt};
use tracing::warn;

use crate::opt_mode;
use crate::state::Shared;

/// Follows the webhook configuration's namespaceSelectors: which namespaces the collision
/// report counts ([`crate::opt_mode`]).
pub async fn follow_opt_mode(client: Client, shared: Arc<Shared>) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let config = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        opt_mode::WEBHOOK_CONFIGURATION
    ));
    let mut events = watcher(api, config).default_backoff().boxed();
    let mode = &shared.collisions.opt_mode;
    loop {
        match events.try_next().await {
            Ok(Some(Event::InitApply(c) | Event::Apply(c))) => mode.set_configuration(Some(&c)),
            Ok(Some(Event::Delete(_))) => mode.set_configuration(None),
            Ok(Some(Event::Init | Event::InitDone)) => {}
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching {}", opt_mode::WEBHOOK_CONFIGURATION),
        }
    }
}

/// Follows every namespace's labels, which the namespaceSelectors match.
pub async fn follow_namespaces(client: Client, shared: Arc<Shared>) {
    let api: Api<PartialObjectMeta<Namespace>> = Api::all(client);
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .boxed();
    let mode = &shared.collisions.opt_mode;
    loop {
        match events.try_next().await {
            Ok(Some(Event::InitApply(n) | Event::Apply(n))) => {
                mode.set_namespace(&n.name_any(), Some(n.labels().clone()))
            }
            Ok(Some(Event::Delete(n))) => mode.set_namespace(&n.name_any(), None),
            Ok(Some(Event::Init | Event::InitDone)) => {}
            Ok(None) => return,
            Err(e) => warn!(error = %e, "watching namespaces"),
        }
    }
}
