//! Reading and writing the two Secrets and the webhook configuration. Every write carries the
//! resourceVersion it was computed from (or is a create), so of two cert managers acting on the
//! same state one wins and the other is told to read again instead of overwriting.

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ApiResource, DynamicObject, ListParams, PostParams};
use kube::{Api, Client};

use super::WEBHOOK_CONFIGURATION;
use crate::error::{Context, Result};

/// The result of a conditional write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Done,
    /// Someone else changed (or created) the object since it was read.
    Conflict,
}

pub(crate) trait Cluster {
    async fn secret(&self, name: &str) -> Result<Option<Secret>>;
    /// The MutatingWebhookConfiguration, untyped (see `objects`).
    async fn webhook_configuration(&self) -> Result<Option<DynamicObject>>;
    async fn create_secret(&self, secret: &Secret) -> Result<Written>;
    /// Replaces the Secret whose resourceVersion is in `secret`'s metadata.
    async fn replace_secret(&self, secret: &Secret) -> Result<Written>;
    async fn replace_webhook_configuration(&self, config: &DynamicObject) -> Result<Written>;
}

pub(crate) struct KubeCluster {
    secrets: Api<Secret>,
    configs: Api<DynamicObject>,
}

impl KubeCluster {
    pub fn new(client: Client, namespace: &str) -> KubeCluster {
        KubeCluster {
            secrets: Api::namespaced(client.clone(), namespace),
            configs: Api::all_with(
                client,
                &ApiResource::erase::<MutatingWebhookConfiguration>(&()),
            ),
        }
    }
}

/// 409 is a lost race; so is 404 on a replace (the object was deleted since it was read).
fn conflict_or<T>(r: Result<T, kube::Error>, replacing: bool, what: &str) -> Result<Written> {
    match r {
        Ok(_) => Ok(Written::Done),
        Err(kube::Error::Api(s)) if s.code == 409 || (replacing && s.code == 404) => {
            Ok(Written::Conflict)
        }
        Err(e) => Err(e).context(what),
    }
}

impl Cluster for KubeCluster {
    /// Read by listing one name: KubeMacPool's role grants list and watch on Secrets, not get.
    async fn secret(&self, name: &str) -> Result<Option<Secret>> {
        let found = self
            .secrets
            .list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await
            .with_context(|| format!("reading Secret {name}"))?;
        Ok(found.items.into_iter().next())
    }

    async fn webhook_configuration(&self) -> Result<Option<DynamicObject>> {
        self.configs
            .get_opt(WEBHOOK_CONFIGURATION)
            .await
            .with_context(|| {
                format!("reading MutatingWebhookConfiguration {WEBHOOK_CONFIGURATION}")
            })
    }

    async fn create_secret(&self, secret: &Secret) -> Result<Written> {
        let name = secret.metadata.name.clone().unwrap_or_default();
        conflict_or(
            self.secrets.create(&PostParams::default(), secret).await,
            false,
            &format!("creating Secret {name}"),
        )
    }

    async fn replace_secret(&self, secret: &Secret) -> Result<Written> {
        let name = secret.metadata.name.clone().unwrap_or_default();
        conflict_or(
            self.secrets
                .replace(&name, &PostParams::default(), secret)
                .await,
            true,
            &format!("replacing Secret {name}"),
        )
    }

    async fn replace_webhook_configuration(&self, config: &DynamicObject) -> Result<Written> {
        conflict_or(
            self.configs
                .replace(WEBHOOK_CONFIGURATION, &PostParams::default(), config)
                .await,
            true,
            &format!("updating the caBundle of {WEBHOOK_CONFIGURATION}"),
        )
    }
}
