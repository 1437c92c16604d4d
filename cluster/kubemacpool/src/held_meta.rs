//! The metadata of a stored pod or VirtualMachine, as far as the pool reads it: names, UID,
//! resourceVersion, labels, deletion, the networks annotation and whether the legacy finalizer
//! is there. The rest is skipped unread:
//! `managedFields` (a tree of every field each writer set) and annotations such as
//! `kubectl.kubernetes.io/last-applied-configuration` (a copy of the object) are most of an
//! object's metadata, and a start would hold them for every object at once.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Deserializer};

use crate::pod::NETWORKS;
use crate::vm::LEGACY_FINALIZER;

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Held {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<Networks>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
}

/// The annotations, of which only [`NETWORKS`] is kept.
#[derive(Default)]
struct Networks(Option<String>);

impl<'de> Deserialize<'de> for Networks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Networks, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Networks;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("annotations")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Networks, A::Error> {
                let mut networks = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == NETWORKS {
                        networks = Some(map.next_value::<String>()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(Networks(networks))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// `deserialize_with` for a held object's `metadata`.
pub fn held_metadata<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let held = Held::deserialize(d)?;
    let annotations = held
        .annotations
        .and_then(|a| a.0)
        .map(|n| BTreeMap::from([(NETWORKS.to_string(), n)]));
    Ok(ObjectMeta {
        name: held.name,
        namespace: held.namespace,
        uid: held.uid,
        resource_version: held.resource_version,
        labels: held.labels,
        annotations,
        deletion_timestamp: held.deletion_timestamp,
        // Only KubeMacPool's own legacy finalizer matters: the VM watch takes it off.
        finalizers: held
            .finalizers
            .filter(|f| f.iter().any(|f| f == LEGACY_FINALIZER))
            .map(|_| vec![LEGACY_FINALIZER.to_string()]),
        ..ObjectMeta::default()
    })
}

#[cfg(test)]
mod tests;
