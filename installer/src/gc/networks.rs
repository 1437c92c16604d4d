//! The networks our plugins serve, read the way the runtime and Multus read them, with the
//! config each plugin of ours gets when it is called.
//!
//! The node's conf dir is read as libcni and containerd read it: the files whose name ends in
//! `.conf`, `.conflist` or `.json` (what follows the name's last dot, so a file called `.conf`
//! counts too; directories do not), in byte order of their names. containerd loads the first
//! `max_conf_num` of them (one by default) and names the i-th network's interface `eth<i>`.
//! A `.conflist` is a list (`name`, `plugins`, and since libcni 1.3 also the `*.conf` files of
//! the subdirectory named after the network, unless `loadOnlyInlinedPlugins`); a `.conf` or
//! `.json` is a single plugin, and runtimes refuse one that holds a list.
//!
//! A NetworkAttachmentDefinition's `spec.config` is read as Multus reads it: a non-empty
//! `type` makes it a single plugin, otherwise it is a list; a missing or empty `name` becomes
//! the NAD's own name. An empty `spec.config` makes Multus load, from its own conf dir, the
//! file whose network is named like the NAD: a file on the node that this agent does not read.
//!
//! Whatever cannot be read is reported ([`Unreadable`]) and never collected: a config is never
//! guessed. A config that names none of our plugins is left alone, broken or not, and so is
//! one with `disableGC`, which the spec asks runtimes to honour.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use cni_common::env::validate_network_name;
use cni_common::version::SpecVersion;
use serde_json::{Map, Value};

/// A network our plugins serve, with what GC needs to call them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    /// The config's `name`: what the plugins key their state by.
    pub name: String,
    pub source: Source,
    /// The config as libcni would pass each plugin: for a conflist, one entry per plugin of
    /// ours (the plugin's own object plus `name` and `cniVersion`); for a single-plugin config,
    /// that config. Each entry is (type, the binary name; config).
    pub plugins: Vec<(String, Value)>,
}

/// Where a network's config comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file of the node's conf dir; `index` is its place in the order the runtime loads
    /// them, counting every conf file, ours or not (containerd loads only the first
    /// `max_conf_num`).
    NodeConflist {
        file: PathBuf,
        index: usize,
    },
    Nad {
        namespace: String,
        name: String,
    },
}

/// A config that could not be read: never collected, reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file, or `namespace/name` of the NAD.
    pub source: String,
    pub why: String,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.why)
    }
}

/// The extensions libcni's runtimes read in a conf dir.
const CONF_EXTENSIONS: [&str; 3] = [".conf", ".conflist", ".json"];

/// The node's conflists in `dir` (*.conf, *.conflist, *.json, in the order libcni/containerd
/// sort them) that name one of `ours`. A missing `dir` has none.
pub fn node_networks(dir: &Path, ours: &BTreeSet<String>) -> (Vec<Network>, Vec<Unreadable>) {
    let mut networks = Vec::new();
    let mut unreadable = Vec::new();
    let files = match conf_files(dir, &CONF_EXTENSIONS) {
        Ok(files) => files,
        Err(e) => {
            unreadable.push(Unreadable {
                source: dir.display().to_string(),
                why: format!("cannot list: {e}"),
            });
            return (networks, unreadable);
        }
    };
    for (index, file) in files.into_iter().enumerate() {
        match node_file(&file, ours) {
            Ok(Some(Parsed { name, plugins })) => networks.push(Network {
                name,
                source: Source::NodeConflist { file, index },
                plugins,
            }),
            Ok(None) => {}
            Err(why) => unreadable.push(Unreadable {
                source: file.display().to_string(),
                why,
            }),
        }
    }
    (networks, unreadable)
}

/// A NetworkAttachmentDefinition's spec.config, if it names one of `ours`.
pub fn nad_network(
    namespace: &str,
    name: &str,
    config: &str,
    ours: &BTreeSet<String>,
) -> Result<Option<Network>, Unreadable> {
    let unreadable = |why: String| Unreadable {
        source: format!("{namespace}/{name}"),
        why,
    };
    if config.is_empty() {
        return Err(unreadable(
            "config in a file on the node: Multus loads the network named after the NAD from its \
             conf dir when spec.config is empty"
                .to_string(),
        ));
    }
    let object = match serde_json::from_str(config) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err(unreadable("spec.config is not a JSON object".to_string())),
        Err(e) => return Err(unreadable(format!("spec.config is not JSON: {e}"))),
    };
    let parsed = ours_in(&object, Form::Nad { name }, ours).map_err(unreadable)?;
    Ok(parsed.map(
        |Parsed {
             name: network,
             plugins,
         }| Network {
            name: network,
            source: Source::Nad {
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            plugins,
        },
    ))
}

/// libcni's `ConfFiles`, sorted as containerd sorts them: the entries of `dir` whose name ends
/// in one of `extensions` after its last dot, directories left out.
fn conf_files(dir: &Path, extensions: &[&str]) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name();
        let name = name.as_bytes();
        let extension = name
            .iter()
            .rposition(|&b| b == b'.')
            .map(|dot| &name[dot..]);
        if extension.is_some_and(|ext| extensions.iter().any(|e| e.as_bytes() == ext)) {
            files.push(entry.path());
        }
    }
    files.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    Ok(files)
}

/// One conf file of the node: a list when it ends in `.conflist`, else a single plugin.
fn node_file(file: &Path, ours: &BTreeSet<String>) -> Result<Option<Parsed>, String> {
    let object = read_object(file)?;
    let form = if file.as_os_str().as_bytes().ends_with(b".conflist") {
        Form::List { dir: file.parent() }
    } else {
        Form::Single
    };
    ours_in(&object, form, ours)
}

/// A regular file's JSON object. Opened without blocking: a FIFO left in the directory would
/// otherwise hold the agent until someone writes to it.
fn read_object(file: &Path) -> Result<Map<String, Value>, String> {
    let mut handle = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(file)
        .map_err(|e| e.to_string())?;
    let regular = handle.metadata().map_err(|e| e.to_string())?.is_file();
    if !regular {
        return Err("not a regular file".to_string());
    }
    let mut text = Vec::new();
    handle.read_to_end(&mut text).map_err(|e| e.to_string())?;
    match serde_json::from_slice(&text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err("not a JSON object".to_string()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// How a config is read.
#[derive(Clone, Copy)]
enum Form<'a> {
    /// A `.conf` or `.json` file: one plugin, with its own `type`.
    Single,
    /// A `.conflist` file in `dir`, whose subdirectory named after the network may hold more
    /// plugins.
    List { dir: Option<&'a Path> },
    /// A NAD's `spec.config`, named `name`: one plugin when `type` is set, else a list.
    Nad { name: &'a str },
}

/// A network's name and the plugins of ours, each with the config it is called with.
struct Parsed {
    name: String,
    plugins: Vec<(String, Value)>,
}

/// Why a config cannot be read.
enum Broken {
    /// The config itself: it matters only when it names one of ours.
    Config(String),
    /// A plugin file of a list's subdirectory: whose plugin it is cannot be told.
    PluginFile(String),
}

impl From<String> for Broken {
    fn from(why: String) -> Broken {
        Broken::Config(why)
    }
}

impl From<&str> for Broken {
    fn from(why: &str) -> Broken {
        Broken::Config(why.to_string())
    }
}

/// The config's plugins of ours, `None` when it has none or disables GC; an error only when
/// the config cannot be read and may be ours.
fn ours_in(
    object: &Map<String, Value>,
    form: Form<'_>,
    ours: &BTreeSet<String>,
) -> Result<Option<Parsed>, String> {
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
    validate_network_name(&name).map_err(|e| format!("network name {name:?}: {e}"))?;
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
                _ => Err(format!("plugin {i} is not an object")),
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
                .ok_or_else(|| Broken::Config(format!("plugin {i} has no \"type\"")))?;
            plugin.insert("name".to_string(), Value::String(name.to_string()));
            plugin.insert("cniVersion".to_string(), Value::String(version.clone()));
            Ok((kind, Value::Object(plugin)))
        })
        .collect()
}

/// The `*.conf` files of a list's subdirectory, each one plugin with its `type`.
fn subdirectory_plugins(dir: &Path) -> Result<Vec<Map<String, Value>>, Broken> {
    let broken =
        |file: &Path, why: String| Broken::PluginFile(format!("{}: {why}", file.display()));
    let files = conf_files(dir, &[".conf"]).map_err(|e| broken(dir, e.to_string()))?;
    files
        .iter()
        .map(|file| {
            let plugin = read_object(file).map_err(|why| broken(file, why))?;
            match plugin_type(&plugin) {
                Ok(Some(_)) => Ok(plugin),
                _ => Err(broken(file, "no \"type\"".to_string())),
            }
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
    use super::*;
    use serde_json::json;
    use std::fs;

    fn ours() -> BTreeSet<String> {
        [
            "bridge",
            "tuning",
            "ovs",
            "macvtap",
            "cnv-bridge",
            "cnv-tuning",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn conf_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, text) in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).expect("mkdir");
            }
            fs::write(path, text).expect("write");
        }
        dir
    }

    fn bridge_list(name: &str) -> String {
        json!({"cniVersion": "1.0.0", "name": name, "plugins": [{"type": "bridge"}]}).to_string()
    }

    fn names(networks: &[Network]) -> Vec<&str> {
        networks.iter().map(|n| n.name.as_str()).collect()
    }

    fn nad(config: &str) -> Result<Option<Network>, Unreadable> {
        nad_network("ns", "nad", config, &ours())
    }

    fn single_nad(config: &str) -> Network {
        nad(config).expect("readable").expect("ours")
    }

    #[test]
    fn node_files_come_in_byte_order_of_their_names_with_their_load_index() {
        let dir = conf_dir(&[
            ("20-b.conflist", &bridge_list("b")),
            (
                "10-other.conflist",
                r#"{"name":"o","plugins":[{"type":"flannel"}]}"#,
            ),
            ("1-a.conflist", &bridge_list("a")),
            ("Z.conflist", &bridge_list("z")),
        ]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(unreadable.is_empty(), "{unreadable:?}");
        assert_eq!(names(&networks), ["a", "b", "z"]);
        let indexes: Vec<_> = networks
            .iter()
            .map(|n| match &n.source {
                Source::NodeConflist { index, .. } => *index,
                Source::Nad { .. } => usize::MAX,
            })
            .collect();
        // 1-a, 10-other, 20-b, Z: the file not ours counts too.
        assert_eq!(indexes, [0, 2, 3]);
    }

    #[test]
    fn only_conf_conflist_and_json_files_are_read_and_directories_are_not() {
        let dir = conf_dir(&[
            (
                "a.conf",
                r#"{"cniVersion":"1.0.0","name":"a","type":"bridge"}"#,
            ),
            (
                "b.json",
                r#"{"cniVersion":"1.0.0","name":"b","type":"bridge"}"#,
            ),
            (
                ".conf",
                r#"{"cniVersion":"1.0.0","name":"dot","type":"bridge"}"#,
            ),
            ("c.conflist", &bridge_list("c")),
            ("d.conf.bak", r#"{"name":"d","type":"bridge"}"#),
            ("e.yaml", r#"{"name":"e","type":"bridge"}"#),
            ("sub.conf/x.conf", r#"{"name":"f","type":"bridge"}"#),
        ]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(unreadable.is_empty(), "{unreadable:?}");
        assert_eq!(names(&networks), ["dot", "a", "b", "c"]);
    }

    #[test]
    fn a_missing_conf_dir_has_no_networks() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (networks, unreadable) = node_networks(&dir.path().join("absent"), &ours());
        assert!(networks.is_empty() && unreadable.is_empty());
    }

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
    fn a_file_that_is_not_json_is_unreadable() {
        let dir = conf_dir(&[("10.conflist", "{\"name\": \"blue\", ")]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(networks.is_empty());
        assert_eq!(unreadable.len(), 1);
        assert!(unreadable[0].source.ends_with("10.conflist"));
        assert!(
            unreadable[0].why.starts_with("not JSON"),
            "{}",
            unreadable[0].why
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

    #[test]
    fn a_fifo_in_the_conf_dir_is_unreadable_without_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        nix::unistd::mkfifo(&dir.path().join("10.conf"), nix::sys::stat::Mode::S_IRWXU)
            .expect("mkfifo");
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(networks.is_empty());
        assert_eq!(unreadable[0].why, "not a regular file");
    }

    #[test]
    fn a_nad_config_without_name_takes_the_nad_name() {
        for config in [
            r#"{"cniVersion":"1.0.0","type":"bridge"}"#,
            r#"{"cniVersion":"1.0.0","name":"","type":"bridge"}"#,
        ] {
            let network = single_nad(config);
            assert_eq!(network.name, "nad");
            assert_eq!(network.plugins[0].1["name"], "nad", "{config}");
        }
    }

    #[test]
    fn a_nad_config_keeps_its_own_name_over_the_nad_name() {
        let network = single_nad(r#"{"name":"blue","type":"bridge"}"#);
        assert_eq!(network.name, "blue");
        assert_eq!(
            network.source,
            Source::Nad {
                namespace: "ns".to_string(),
                name: "nad".to_string()
            }
        );
    }

    #[test]
    fn a_nad_config_with_plugins_and_no_type_is_a_conflist() {
        let network = single_nad(
            r#"{"cniVersion":"1.1.0","name":"blue","plugins":[{"type":"ovs","bridge":"br1"}]}"#,
        );
        assert_eq!(
            network.plugins,
            [(
                "ovs".to_string(),
                json!({"type":"ovs","bridge":"br1","name":"blue","cniVersion":"1.1.0"})
            )]
        );
    }

    #[test]
    fn a_nad_config_with_a_type_is_one_plugin_whatever_its_plugins() {
        let network = single_nad(r#"{"name":"blue","type":"bridge","plugins":[{"type":"ovs"}]}"#);
        assert_eq!(network.plugins.len(), 1);
        assert_eq!(network.plugins[0].0, "bridge");
        assert!(
            nad(r#"{"name":"blue","type":"macvlan","plugins":[{"type":"ovs"}]}"#)
                .expect("readable")
                .is_none()
        );
    }

    #[test]
    fn a_nad_with_an_empty_config_is_unreadable_as_a_file_on_the_node() {
        let unreadable = nad("").expect_err("unreadable");
        assert_eq!(unreadable.source, "ns/nad");
        assert!(unreadable.why.starts_with("config in a file on the node"));
    }

    #[test]
    fn a_nad_config_that_does_not_parse_is_unreadable() {
        for config in ["{", " ", "[]", r#""bridge""#] {
            assert!(nad(config).is_err(), "{config:?}");
        }
    }

    #[test]
    fn a_broken_nad_config_of_ours_is_unreadable_and_of_others_is_none() {
        for config in [
            r#"{"name":"a/b","type":"bridge"}"#,
            r#"{"name":7,"type":"bridge"}"#,
            r#"{"name":"blue","plugins":[{"type":"tuning"},{"mtu":1}]}"#,
            r#"{"name":"blue","cniVersion":1,"plugins":[{"type":"tuning"}]}"#,
        ] {
            assert!(nad(config).is_err(), "{config}");
        }
        for config in [r#"{"name":"a/b","type":"macvlan"}"#, r#"{"name":"x"}"#] {
            assert_eq!(nad(config), Ok(None), "{config}");
        }
    }
}
