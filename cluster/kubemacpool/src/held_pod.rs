//! What a stored pod holds, as the pool's watch reads it: its metadata, asked of the API server
//! alone (as `PartialObjectMetadata`), of which [`crate::held_meta`] keeps what the pool reads,
//! and without the type fields that `PartialObjectMeta` flattens, which would make serde
//! buffer each object twice.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A stored pod, as far as the pool reads it.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct HeldPod {
    #[serde(default, deserialize_with = "crate::held_meta::held_metadata")]
    pub metadata: ObjectMeta,
}

impl kube::Resource for HeldPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Pod".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        "pods".into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests;
