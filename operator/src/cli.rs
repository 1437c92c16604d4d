//! The command line's pieces that are worth testing: flag parsing and the offline `render`.

use serde::Deserialize;

use crate::defaults::{fill_defaults, random_prefix};
use crate::error::{Context, Error, Result};
use crate::render;
use crate::settings::Settings;
use crate::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec};
use crate::validate;

/// `--name value` pairs, in order; a flag without a value is an error.
pub struct Flags(Vec<(String, String)>);

impl Flags {
    pub fn parse(args: &[String]) -> Result<Flags> {
        let mut out = Vec::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if !flag.starts_with('-') || flag == "-" {
                return Err(Error::new(format!("unexpected argument {flag:?}")));
            }
            let (name, value) = match flag.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => {
                    let v = it
                        .next()
                        .ok_or_else(|| Error::new(format!("{flag} needs a value")))?;
                    (flag.clone(), v.clone())
                }
            };
            out.push((name, value));
        }
        Ok(Flags(out))
    }

    /// The last value given for `name`.
    pub fn value(&self, name: &str) -> Result<Option<&str>> {
        Ok(self
            .0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str()))
    }

    pub fn expect_only(&self, known: &[&str]) -> Result<()> {
        match self.0.iter().find(|(n, _)| !known.contains(&n.as_str())) {
            Some((n, _)) => Err(Error::new(format!("unknown flag {n}"))),
            None => Ok(()),
        }
    }

    pub fn expect_none(&self) -> Result<()> {
        self.expect_only(&[])
    }
}

/// `4a:be` → `[0x4a, 0xbe]`: the two random bytes of a generated kubeMacPool range.
pub fn parse_mac_prefix(s: &str) -> Result<[u8; 2]> {
    let bad = || {
        Error::new(format!(
            "--mac-prefix {s:?}: expected two hex octets, e.g. 4a:be"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let byte = |x: &str| {
        if x.len() == 2 {
            u8::from_str_radix(x, 16).map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    Ok([byte(a)?, byte(b)?])
}

pub struct RenderOutput {
    /// Multi-document YAML of every object.
    pub yaml: String,
    /// What the user should know: components not deployed.
    pub notes: Vec<String>,
}

/// Parses a NetworkAddonsConfig (YAML), validates it, fills defaults (from `previous`, an
/// applied spec, when given) and renders it, as a reconcile would.
pub fn render_cr(
    cr_yaml: &str,
    previous: Option<&str>,
    prefix: Option<[u8; 2]>,
    settings: &Settings,
) -> Result<RenderOutput> {
    let cr: NetworkAddonsConfig =
        NetworkAddonsConfig::deserialize(serde_yaml::Deserializer::from_str(cr_yaml))
            .context("parse the NetworkAddonsConfig")?;
    let errors = validate::validate(&cr.spec);
    if !errors.is_empty() {
        return Err(Error::new(validate::message(&errors)));
    }
    let prev: Option<NetworkAddonsConfigSpec> = match previous {
        Some(text) => Some(
            NetworkAddonsConfigSpec::deserialize(serde_yaml::Deserializer::from_str(text))
                .context("parse the previously applied spec")?,
        ),
        None => None,
    };
    let applied = fill_defaults(
        &cr.spec,
        prev.as_ref(),
        prefix.unwrap_or_else(random_prefix),
    );
    if let Some(prev) = &prev {
        let unsafe_changes = crate::defaults::check_change_safe(prev, &applied);
        if !unsafe_changes.is_empty() {
            return Err(Error::new(unsafe_changes.join("\n")));
        }
    }
    let yaml = render::to_yaml(&render::render(&applied, settings)?)?;
    let notes = cr
        .spec
        .not_deployed()
        .into_iter()
        .map(|n| format!("{}: {}", n.component, n.reason))
        .collect();
    Ok(RenderOutput { yaml, notes })
}
