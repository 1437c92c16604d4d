//! A network config, parsed as the runtime runs it, and the plugins of ours in it. A
//! `.conflist` is a list (`name`, `plugins`, and since libcni 1.3 also the `*.conf` files of
//! the subdirectory named after the network, unless `loadOnlyInlinedPlugins`); a `.conf` or
//! `.json` is a single plugin, and runtimes refuse one that holds a list.

use std::collections::BTreeSet;
use std::path::Path;

use cni_common::env::validate_network_name;
use cni_common::version::SpecVersion;
use serde_json::{Map, Value};

use super::files::{conf_files, read_object};
use crate::error::{self, Context, Error};

/// How a config is read.
#[derive(Clone, Copy)]
pub(super) enum Form<'a> {
    /// A `.conf` or `.json` file: one plugin, with its own `type`.
    Single,
    /// A `.conflist` file in `dir`, whose subdirectory named after the network may hold more
    /// plugins.
    List { dir: Option<&'a Path> },
    /// A NAD's `spec.config`, named `name`: one plugin when `type` is set, else a list.
    Nad { name: &'a str },
}

/// A network's name and the plugins of ours, each with the config it is called with.
pub(super) struct Parsed {
    pub(super) name: String,
    pub(super) plugins: Vec<(String, Value)>,
}

/// Why a config cannot be read.
enum Broken {
    /// The config itself: it matters only when it names one of ours.
    Config(Error),
    /// A plugin file of a list's subdirectory: whose plugin it is cannot be told.
    PluginFile(Error),
}

impl From<Error> for Broken {
    fn from(why: Error) -> Broken {
        Broken::Config(why)
    }
}

impl From<String> for Broken {
    fn from(why: String) -> Broken {
        Broken::Config(Error::msg(why))
    }
}

impl From<&str> for Broken {
    fn from(why: &str) -> Broken {
        Broken::Config(Error::msg(why))
    }
}

/// The config's plugins of ours, `None` when it has none or disables GC; an error only when
/// the config cannot be read and may be ours.
pub(super) fn ours_in(
    object: &Map<String, Value>,
    form: Form<'_>,
    ours: &BTreeSet<String>,
) -> error::Result<Option<Parsed>> {
    match parse(object, form) {
        Ok(config) => {
            if config.disable_gc {
                return Ok(None);
            }
            let plugins: Vec<_> = config
                .plugins
                .into_iter()
                .filter(|(kind, _)| ours.contains(kind))
                .collect();
            Ok((!plugins.is_empty()).then_some(Parsed {
                name: config.name,
                plugins,
            }))
        }
        Err(Broken::Config(why)) if names_one_of(object, ours) => Err(why),
        Err(Broken::Config(_)) => Ok(None),
        Err(Broken::PluginFile(why)) => Err(why),
    }
}

/// A config as the runtime would run it: every plugin, ours or not.
struct Config {
    name: String,
    disable_gc: bool,
    plugins: Vec<(String, Value)>,
}

fn parse(object: &Map<String, Value>, form: Form<'_>) -> Result<Config, Broken> {
    let disable_gc = flag(object, "disableGC")?;
    let name = network_name(object, form)?;
    let list = match form {
        Form::Single if plugin_type(object)?.is_none() => {
            return Err(if object.contains_key("plugins") {
                "a plugin list in a .conf or .json file, which runtimes refuse".into()
            } else {
                "no \"type\"".into()
            });
        }
        Form::Single => false,
        Form::List { .. } => true,
        Form::Nad { .. } => plugin_type(object)?.is_none(),
    };
    let plugins = if list {
        list_plugins(object, form, &name)?
    } else {
        let mut single = object.clone();
        single.insert("name".to_string(), Value::String(name.clone()));
        let kind = plugin_type(object)?.unwrap_or_default();
        vec![(kind, Value::Object(single))]
    };
    Ok(Config {
        name,
        disable_gc,
        plugins,
    })
}

/// `name`, or for a NAD the NAD's name when it is missing or empty; valid by the spec's rule,
/// which also keeps it a single path component.
fn network_name(object: &Map<String, Value>, form: Form<'_>) -> Result<String, Broken> {
    let fallback = match form {
        Form::Nad { name } => Some(name),
        _ => None,
    };
    let name = match (object.get("name"), fallback) {
        (None, Some(fallback)) => fallback.to_string(),
        (Some(Value::String(name)), Some(fallback)) if name.is_empty() => fallback.to_string(),
        (Some(Value::String(name)), _) => name.clone(),
        (None, None) => return Err("no \"name\"".into()),
        (Some(_), _) => return Err("\"name\" is not a string".into()),
    };
    validate_network_name(&name).with_context(|| format!("network name {name:?}"))?;
    Ok(name)
}

/// A list's plugins, inline then from its subdirectory, each given the list's `name` and
/// `cniVersion` as libcni gives them.
fn list_plugins(
    object: &Map<String, Value>,
    form: Form<'_>,
    name: &str,
) -> Result<Vec<(String, Value)>, Broken> {
    let version = list_version(object)?;
    let mut plugins = match object.get("plugins") {
        None if matches!(form, Form::Nad { .. }) => {
            return Err("neither \"type\" nor \"plugins\"".into());
        }
        None => Vec::new(),
        Some(Value::Array(entries)) if entries.is_empty() => {
            return Err("\"plugins\" is empty".into());
        }
        Some(Value::Array(entries)) => entries
            .iter()
            .enumerate()
            .map(|(i, entry)| match entry {
                Value::Object(plugin) => Ok(plugin.clone()),
                _ => Err(Broken::from(format!("plugin {i} is not an object"))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("\"plugins\" is not a list".into()),
    };
    if let Form::List { dir: Some(dir) } = form {
        if !flag(object, "loadOnlyInlinedPlugins")? {
            plugins.extend(subdirectory_plugins(&dir.join(name))?);
        }
    }
    if plugins.is_empty() {
        return Err("no plugins".into());
    }
    plugins
        .into_iter()
        .enumerate()
        .map(|(i, mut plugin)| {
            let kind = plugin_type(&plugin)?
                .ok_or_else(|| Broken::from(format!("plugin {i} has no \"type\"")))?;
            plugin.insert("name".to_string(), Value::String(name.to_string()));
            plugin.insert("cniVersion".to_string(), Value::String(version.clone()));
            Ok((kind, Value::Object(plugin)))
        })
        .collect()
}

/// The `*.conf` files of a list's subdirectory, each one plugin with its `type`.
fn subdirectory_plugins(dir: &Path) -> Result<Vec<Map<String, Value>>, Broken> {
    let files = conf_files(dir, &[".conf"])
        .with_context(|| dir.display().to_string())
        .map_err(Broken::PluginFile)?;
    files
        .iter()
        .map(|file| {
            let plugin = match read_object(file) {
                Ok(plugin) if matches!(plugin_type(&plugin), Ok(Some(_))) => Ok(plugin),
                Ok(_) => Err(Error::msg("no \"type\"")),
                Err(e) => Err(e),
            };
            plugin
                .with_context(|| file.display().to_string())
                .map_err(Broken::PluginFile)
        })
        .collect()
}

/// The list's version as libcni picks it: the highest of `cniVersion` and `cniVersions` that
/// we know (higher ones are skipped), else `cniVersion` as written.
fn list_version(object: &Map<String, Value>) -> Result<String, Broken> {
    let version = match object.get("cniVersion") {
        None => String::new(),
        Some(Value::String(version)) => version.clone(),
        Some(_) => return Err("\"cniVersion\" is not a string".into()),
    };
    let Some(versions) = object.get("cniVersions") else {
        return Ok(version);
    };
    let Value::Array(versions) = versions else {
        return Err("\"cniVersions\" is not a list".into());
    };
    let mut best = known_version(&version);
    for entry in versions {
        let Value::String(entry) = entry else {
            return Err("\"cniVersions\" holds a value that is not a string".into());
        };
        best = best.max(known_version(entry));
    }
    Ok(best.map_or(version, |v| v.as_str().to_string()))
}

fn known_version(version: &str) -> Option<SpecVersion> {
    (!version.is_empty())
        .then(|| SpecVersion::lookup(version))
        .flatten()
}

/// `type` when set and not empty.
fn plugin_type(object: &Map<String, Value>) -> Result<Option<String>, Broken> {
    match object.get("type") {
        None => Ok(None),
        Some(Value::String(kind)) if kind.is_empty() => Ok(None),
        Some(Value::String(kind)) => Ok(Some(kind.clone())),
        Some(_) => Err("\"type\" is not a string".into()),
    }
}

/// A boolean key as libcni reads it: `true`/`false`, or those words in a string, any case.
fn flag(object: &Map<String, Value>, key: &str) -> Result<bool, Broken> {
    match object.get(key) {
        None => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(format!("\"{key}\" is neither true nor false").into()),
    }
}

/// Whether a config, readable or not, names one of ours as its `type` or a plugin's.
fn names_one_of(object: &Map<String, Value>, ours: &BTreeSet<String>) -> bool {
    let named = |object: &Map<String, Value>| matches!(object.get("type"), Some(Value::String(kind)) if ours.contains(kind));
    named(object)
        || matches!(object.get("plugins"), Some(Value::Array(plugins))
            if plugins.iter().any(|p| matches!(p, Value::Object(p) if named(p))))
}

#[cfg(test)]
mod tests {
    use crate::gc::networks::node_networks;
    use crate::gc::networks::testing::{bridge_list, conf_dir, ours};
    use serde_json::json;

    #[test]
    fn a_conflist_gives_each_plugin_of_ours_its_name_and_version_and_drops_the_others() {
        let dir = conf_dir(&[(
            "10.conflist",
            r#"{"cniVersion":"1.1.0","name":"blue","plugins":[
                {"type":"bridge","bridge":"br1","cniVersion":"0.3.1"},
                {"type":"portmap"},
                {"type":"tuning","mtu":1400}]}"#,
        )]);
        let (networks, _) = node_networks(dir.path(), &ours());
        assert_eq!(networks.len(), 1);
        assert_eq!(
            networks[0].plugins,
            [
                (
                    "bridge".to_string(),
                    json!({"type":"bridge","bridge":"br1","cniVersion":"1.1.0","name":"blue"})
                ),
                (
                    "tuning".to_string(),
                    json!({"type":"tuning","mtu":1400,"cniVersion":"1.1.0","name":"blue"})
                ),
            ]
        );
    }

    #[test]
    fn a_single_plugin_conf_is_passed_as_it_is() {
        let config = json!({"cniVersion":"0.4.0","name":"red","type":"cnv-bridge","bridge":"br0"});
        let dir = conf_dir(&[("10.conf", &config.to_string())]);
        let (networks, _) = node_networks(dir.path(), &ours());
        assert_eq!(networks[0].plugins, [("cnv-bridge".to_string(), config)]);
    }

    #[test]
    fn a_config_naming_none_of_ours_is_left_alone_even_when_broken() {
        let dir = conf_dir(&[
            (
                "10-calico.conflist",
                r#"{"name":"k8s","plugins":[{"type":"calico"}]}"#,
            ),
            ("20-broken.conflist", r#"{"plugins":[{"type":"calico"}]}"#),
            (
                "30-odd.conf",
                r#"{"name":"x","plugins":[{"type":"flannel"}]}"#,
            ),
        ]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(
            networks.is_empty() && unreadable.is_empty(),
            "{unreadable:?}"
        );
    }

    #[test]
    fn a_conf_file_holding_a_list_of_ours_is_unreadable() {
        let dir = conf_dir(&[("10.conf", &bridge_list("blue"))]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(networks.is_empty());
        assert!(
            unreadable[0].why.contains("runtimes refuse"),
            "{unreadable:?}"
        );
    }

    #[test]
    fn a_network_name_the_spec_forbids_is_unreadable() {
        for name in ["", "../etc", "a/b", "-x", "a b"] {
            let dir = conf_dir(&[("10.conflist", &bridge_list(name))]);
            let (networks, unreadable) = node_networks(dir.path(), &ours());
            assert!(networks.is_empty(), "{name:?}");
            assert_eq!(unreadable.len(), 1, "{name:?}");
        }
    }

    #[test]
    fn a_conflist_with_disable_gc_is_not_collected() {
        for value in [json!(true), json!("True")] {
            let config = json!({"name":"blue","disableGC":value,"plugins":[{"type":"bridge"}]});
            let dir = conf_dir(&[("10.conflist", &config.to_string())]);
            let (networks, unreadable) = node_networks(dir.path(), &ours());
            assert!(networks.is_empty() && unreadable.is_empty(), "{value}");
        }
    }

    #[test]
    fn a_conflist_takes_the_plugins_of_its_subdirectory_unless_only_inlined() {
        let files = |inline_only: bool| {
            let list = json!({"cniVersion":"1.1.0","name":"blue","loadOnlyInlinedPlugins":inline_only,
                              "plugins":[{"type":"bridge"}]});
            conf_dir(&[
                ("10.conflist", &list.to_string()),
                ("blue/20-tuning.conf", r#"{"type":"tuning"}"#),
                ("blue/10-ovs.conf", r#"{"type":"ovs"}"#),
                ("blue/30-notes.txt", "not a plugin"),
            ])
        };
        let kinds = |dir: &tempfile::TempDir| {
            let (networks, unreadable) = node_networks(dir.path(), &ours());
            assert!(unreadable.is_empty(), "{unreadable:?}");
            networks[0]
                .plugins
                .iter()
                .map(|(kind, config)| {
                    assert_eq!(config["name"], "blue");
                    kind.clone()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(&files(false)), ["bridge", "ovs", "tuning"]);
        assert_eq!(kinds(&files(true)), ["bridge"]);
    }

    #[test]
    fn a_broken_plugin_file_of_a_subdirectory_is_unreadable() {
        let dir = conf_dir(&[("10.conflist", &bridge_list("blue")), ("blue/10.conf", "{")]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(networks.is_empty());
        assert!(unreadable[0].why.contains("10.conf"), "{unreadable:?}");
    }

    #[test]
    fn a_list_version_is_the_highest_known_of_cni_version_and_cni_versions() {
        let dir = conf_dir(&[(
            "10.conflist",
            r#"{"cniVersion":"0.4.0","cniVersions":["1.0.0","1.1.0","9.0.0"],"name":"blue",
                "plugins":[{"type":"bridge"}]}"#,
        )]);
        let (networks, _) = node_networks(dir.path(), &ours());
        assert_eq!(networks[0].plugins[0].1["cniVersion"], "1.1.0");
    }
}
