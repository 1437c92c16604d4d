//! `render --diff`: what applying a NetworkAddonsConfig would change in the live cluster, without
//! changing anything. The spec goes through the reconcile's own steps (validation, defaults from
//! the applied record, the unsafe-change check, the cluster's capabilities, render); each object
//! is then applied with server-side apply in dry-run mode (`dryRun=All`: the API server runs
//! defaulting, admission and validation but stores nothing) and compared with the live one; the
//! objects the reconcile would delete are listed as it finds them.

use std::collections::HashSet;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::Value;

use crate::apply::{self, Identity, FIELD_MANAGER};
use crate::cluster::ClusterInfo;
use crate::desired::{applied_spec, objects_for, owner_reference};
use crate::error::{Context, Error, Result};
use crate::settings::Settings;
use crate::spec::{NetworkAddonsConfig, CONFIG_NAME};

/// What one object would go through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Create {
        yaml: String,
    },
    /// A unified diff of the live object and the object after the apply.
    Update {
        diff: String,
    },
    /// Not made by this operator: the reconcile takes it over in place, and the fields only the
    /// other manager set (which the dry run still shows) go with the apply.
    TakeOver {
        diff: String,
    },
    Delete,
    /// The API server refused the dry run with this message.
    Refused {
        message: String,
    },
    Unchanged,
}

/// Every object of the render and every one the reconcile would delete, with its change.
pub async fn diff(
    client: &Client,
    cr: &NetworkAddonsConfig,
    settings: &Settings,
    prefix: [u8; 2],
) -> Result<Vec<(Identity, Change)>> {
    let (_, applied) = applied_spec(client, &settings.namespace, &cr.spec, prefix)
        .await
        // Whatever its reason, the refusal is why there is nothing to compare; it reads as
        // `render` words an invalid spec.
        .map_err(|f| Error::InvalidConfig(f.message))?;
    let cluster = ClusterInfo::detect(client, &settings.namespace).await?;
    let live_config = Api::<NetworkAddonsConfig>::all(client.clone())
        .get_opt(CONFIG_NAME)
        .await
        .with_context(|| format!("read NetworkAddonsConfig {CONFIG_NAME}"))?;
    let owner = live_config.as_ref().and_then(owner_reference);
    let (mut objects, record) = objects_for(cr, &applied, settings, &cluster, owner.as_ref())?;
    objects.extend(record);

    let mut out = Vec::new();
    for object in &objects {
        out.push((Identity::of(object), change(client, object).await?));
    }
    let keep: HashSet<Identity> = objects.iter().map(Identity::of).collect();
    let listing = apply::list_managed(client, &settings.namespace).await;
    if !listing.errors.is_empty() {
        return Err(Error::other(listing.errors.join("\n")));
    }
    out.extend(
        listing
            .unrendered(&keep)
            .into_iter()
            .map(|(_, id)| (id, Change::Delete)),
    );
    Ok(out)
}

/// The live object against the dry run of its apply.
async fn change(client: &Client, object: &Value) -> Result<Change> {
    let id = Identity::of(object);
    let api = apply::api(client, apply::kind_of(object)?, &id.namespace);
    let live = api
        .get_opt(&id.name)
        .await
        .with_context(|| format!("read {id}"))?;
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    let after = match api.patch(&id.name, &params, &Patch::Apply(object)).await {
        Ok(after) => after,
        Err(kube::Error::Api(s)) => {
            return Ok(Change::Refused {
                message: s.message.clone(),
            })
        }
        Err(e) => return Err(Error::wrap(format!("dry-run apply {id}"), e)),
    };
    let after_yaml = to_yaml(&after)?;
    let Some(live) = live else {
        return Ok(Change::Create { yaml: after_yaml });
    };
    let live_yaml = to_yaml(&live)?;
    if live_yaml == after_yaml {
        return Ok(Change::Unchanged);
    }
    let diff = unified(&live_yaml, &after_yaml);
    if apply::is_ours(&live) || apply::kind_of(object)?.keep {
        Ok(Change::Update { diff })
    } else {
        Ok(Change::TakeOver { diff })
    }
}

/// The object as YAML without what the server keeps for itself (managed fields, versions,
/// uid, times) and without its status.
fn to_yaml<T: serde::Serialize>(object: &T) -> Result<String> {
    let mut value = serde_json::to_value(object).context("serialise an object")?;
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = value["metadata"].as_object_mut() {
        for key in [
            "managedFields",
            "resourceVersion",
            "generation",
            "uid",
            "creationTimestamp",
            "selfLink",
        ] {
            meta.remove(key);
        }
    }
    crate::yaml::to_string(&value).context("serialise an object as YAML")
}

/// A unified diff (three lines of context) from `before` to `after`.
pub fn unified(before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header("live", "applied")
        .to_string()
}

/// What `render --diff` prints: one block per object that would change, then a summary line.
pub fn report(changes: &[(Identity, Change)]) -> String {
    let mut out = String::new();
    let (mut create, mut update, mut delete, mut same, mut refused) = (0, 0, 0, 0, 0);
    for (id, change) in changes {
        match change {
            Change::Create { yaml } => {
                create += 1;
                out.push_str(&format!("+ create {id}\n"));
                for line in yaml.lines() {
                    out.push_str(&format!("+ {line}\n"));
                }
            }
            Change::Update { diff } => {
                update += 1;
                out.push_str(&format!("~ update {id}\n{diff}"));
            }
            Change::TakeOver { diff } => {
                update += 1;
                out.push_str(&format!(
                    "~ take over {id} (another manager made it; it is kept, and the fields only that manager set are removed)\n{diff}"
                ));
            }
            Change::Delete => {
                delete += 1;
                out.push_str(&format!("- delete {id}\n"));
            }
            Change::Refused { message } => {
                refused += 1;
                out.push_str(&format!(
                    "! {id}: the API server would refuse it: {message}\n"
                ));
            }
            Change::Unchanged => same += 1,
        }
    }
    out.push_str(&format!(
        "{create} to create, {update} to change, {delete} to delete, {refused} refused, {same} unchanged\n"
    ));
    out
}

/// Connects through `KUBECONFIG` (or in cluster) and reports what applying `cr` would change.
pub async fn diff_live(
    cr: &NetworkAddonsConfig,
    settings: &Settings,
    prefix: Option<[u8; 2]>,
) -> Result<String> {
    let client = Client::try_default()
        .await
        .context("connect to the API server")?;
    // A new MAC range is the one the operator in that cluster would make.
    let prefix = match prefix {
        Some(prefix) => prefix,
        None => crate::defaults::cluster_mac_prefix(&client, 1).await,
    };
    Ok(report(&diff(&client, cr, settings, prefix).await?))
}

#[cfg(test)]
mod tests;
