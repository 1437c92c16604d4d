//! What a stored VirtualMachine holds, as the pool's watch reads it: its metadata and its
//! interfaces' `macAddress`, nothing else. The rest of each object is skipped unread, where a
//! `DynamicObject` would buffer and copy all of it: at 10,000 VMs that is most of the start.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use net_types::MacAddr;

use crate::vm::distinct_macs;

/// A stored VirtualMachine, as far as the pool reads it.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct HeldVm {
    #[serde(deserialize_with = "crate::held_meta::held_metadata")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: HeldSpec,
}

impl kube::Resource for HeldVm {
    type DynamicType = kube::core::ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct HeldSpec {
    #[serde(default)]
    template: HeldTemplate,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct HeldTemplate {
    #[serde(default)]
    spec: HeldTemplateSpec,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct HeldTemplateSpec {
    #[serde(default)]
    domain: HeldDomain,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct HeldDomain {
    #[serde(default)]
    devices: HeldDevices,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct HeldDevices {
    #[serde(default)]
    interfaces: Vec<HeldInterface>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct HeldInterface {
    #[serde(default, rename = "macAddress")]
    mac_address: Option<String>,
}

impl HeldSpec {
    /// What [`held_macs`] reads, from the decoded part.
    pub fn macs(&self) -> Vec<MacAddr> {
        distinct_macs(
            self.template
                .spec
                .domain
                .devices
                .interfaces
                .iter()
                .filter_map(|i| i.mac_address.as_deref()),
        )
    }
}

#[cfg(test)]
mod tests;
