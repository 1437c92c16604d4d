//! Rendering: the applied spec (defaults filled) to the Kubernetes objects of each component.
//! Pure: no API calls, so `render` prints offline exactly what the reconciler applies.

pub mod images;

use serde_json::Value;

use crate::error::Result;
use crate::settings::Settings;
use crate::spec::{Component, NetworkAddonsConfigSpec};

/// One object to apply, and the component it belongs to (`None`: shared by all, e.g. the
/// operand Namespace).
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    pub component: Option<Component>,
    pub object: Value,
}

/// A kind the renderer can produce: the reconciler lists these by label to delete what a
/// render no longer contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderedKind {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// Never deleted when a component goes away (the operand Namespace, CRDs: deleting them
    /// would delete what users created in them).
    pub keep: bool,
}

/// Every kind `render` can produce. A test checks each rendered object's kind is listed.
pub const RENDERED_KINDS: &[RenderedKind] = &[];

/// All objects of `applied`, in apply order.
pub fn render(applied: &NetworkAddonsConfigSpec, settings: &Settings) -> Result<Vec<Rendered>> {
    let _ = (applied, settings);
    Ok(Vec::new())
}
