//! Each command's options, made from its flags: defaults filled in, and what a flag needs
//! (the node's name, another flag) checked. `run`'s own options live here; the other
//! commands' live beside the code that runs them.

use std::path::Path;
use std::time::Duration;

use cni_common::node_policy::PolicyFile;

use super::defaults::{CRI_SOCKETS, DEFAULT_INTERVAL, DEFAULT_OVSDB, NODE_NAME_ENV};
use super::values::PluginList;
use super::{GcArgs, InstallArgs, RunArgs};
use crate::error::{Error, Result};
use crate::gc::round;
use crate::install;
use crate::marker::Mark;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    pub install: install::Options,
    pub mark: Option<MarkOptions>,
    pub gc: Option<GcLoop>,
    /// `--metrics-address`: where the garbage collection's metrics are served.
    pub metrics_address: Option<std::net::SocketAddr>,
}

/// `run --gc-interval`: a collection round this often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcLoop {
    pub interval: Duration,
    pub round: round::Options,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkOptions {
    pub mark: Mark,
    pub ovsdb: String,
    pub interval: Duration,
    pub node_name: String,
}

pub(super) fn run_options(a: RunArgs, node_name: Option<&str>) -> Result<RunOptions> {
    let mark = mark_options(&a, node_name)?;
    let gc = match a.gc_interval {
        Some(interval) => Some(GcLoop {
            interval,
            round: round::Options {
                plugins: names(a.install.plugins.clone()).map(|names| names.into_iter().collect()),
                ..gc_options(&a.install.to, a.gc, node_name)?
            },
        }),
        None => None,
    };
    if a.metrics_address.is_some() && gc.is_none() {
        return Err(Error::Usage(
            "--metrics-address needs --gc-interval".to_string(),
        ));
    }
    Ok(RunOptions {
        install: install_options(a.install),
        mark,
        gc,
        metrics_address: a.metrics_address,
    })
}

pub(super) fn gc_options(to: &Path, a: GcArgs, node_name: Option<&str>) -> Result<round::Options> {
    let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::msg(format!(
            "garbage collection needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
        ))
    })?;
    let cri_socket = a.cri_socket.unwrap_or_else(|| {
        let found = CRI_SOCKETS
            .iter()
            .map(|s| a.host_root.join(s))
            .find(|p| p.exists());
        found.unwrap_or_else(|| a.host_root.join(CRI_SOCKETS[0]))
    });
    Ok(round::Options {
        host_root: a.host_root,
        bin_dir: to.to_path_buf(),
        conf_dir: a.cni_conf_dir,
        cri_socket,
        node_networks: a.node_networks,
        node_name: node_name.to_string(),
        plugins: None,
    })
}

pub(super) fn install_options(a: InstallArgs) -> install::Options {
    let policy = PolicyFile {
        state_dirs: a.allow_state_dir,
        ovsdb_endpoints: a.allow_ovsdb,
        ovsdb_socket_dirs: a.allow_ovsdb_socket_dir,
        config_dirs: a.allow_config_dir,
    };
    install::Options {
        from: a.from,
        to: a.to,
        plugins: a.plugins.map(|p| p.0),
        replace_foreign: a.replace_foreign,
        node_policy: (policy != PolicyFile::default()).then_some(policy),
    }
}

/// The names in a `--plugins` list, for the commands that look at what is installed.
pub(super) fn names(plugins: Option<PluginList>) -> Option<Vec<String>> {
    plugins.map(|list| list.0.into_iter().map(|p| p.name).collect())
}

fn mark_options(a: &RunArgs, node_name: Option<&str>) -> Result<Option<MarkOptions>> {
    let Some(mark) = a.mark else {
        if a.ovsdb.is_some() || a.interval.is_some() {
            return Err(Error::Usage(
                "--ovsdb and --interval need --mark".to_string(),
            ));
        }
        return Ok(None);
    };
    if mark != Mark::Ovs && a.ovsdb.is_some() {
        return Err(Error::Usage("--ovsdb is for --mark ovs".to_string()));
    }
    let node_name = node_name.filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::msg(format!(
            "--mark needs the node's name in {NODE_NAME_ENV} (env valueFrom fieldRef spec.nodeName)"
        ))
    })?;
    Ok(Some(MarkOptions {
        mark,
        ovsdb: a.ovsdb.clone().unwrap_or_else(|| DEFAULT_OVSDB.to_string()),
        interval: a.interval.unwrap_or(DEFAULT_INTERVAL),
        node_name: node_name.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::cli::testing::{args, plugins};
    use crate::cli::{parse, Command, DEFAULT_FROM, DEFAULT_TO};
    use crate::{probe, uninstall};

    #[test]
    fn flags_left_out_take_their_defaults() {
        let Command::Run(plain) = parse(&args("run"), None).expect("run without mark") else {
            panic!("not run");
        };
        assert_eq!(plain.mark, None);
        assert_eq!(plain.install.from, PathBuf::from(DEFAULT_FROM));
        assert_eq!(plain.install.to, PathBuf::from(DEFAULT_TO));
        assert_eq!(plain.install.plugins, None);
        let Command::Run(marking) =
            parse(&args("run --mark linux-bridge"), Some("n")).expect("run --mark")
        else {
            panic!("not run");
        };
        let mark = marking.mark.expect("mark options");
        assert_eq!(mark.interval, DEFAULT_INTERVAL);
        assert_eq!(mark.ovsdb, DEFAULT_OVSDB);
    }

    /// The names configs written for the cluster-network-addons-operator use: `cnv-bridge` and
    /// `cnv-tuning`, copies of `bridge` and `tuning`.
    #[test]
    fn a_plugin_can_be_installed_under_a_second_name() {
        let list = "bridge,tuning,cnv-bridge=bridge,cnv-tuning=tuning";
        let second = |name: &str, source: &str| install::Plugin {
            name: name.to_string(),
            source: source.to_string(),
        };
        let Command::Install(opts) = parse(
            &args(&format!("install --from /plugins --to /x --plugins {list}")),
            None,
        )
        .expect("install") else {
            panic!("not install");
        };
        assert_eq!(
            opts.plugins,
            Some(vec![
                install::Plugin::named("bridge"),
                install::Plugin::named("tuning"),
                second("cnv-bridge", "bridge"),
                second("cnv-tuning", "tuning"),
            ])
        );
        let names = plugins(&["bridge", "tuning", "cnv-bridge", "cnv-tuning"]);
        assert_eq!(
            parse(&args(&format!("probe --to /x --plugins={list}")), None).ok(),
            Some(Command::Probe(probe::Options {
                to: "/x".into(),
                plugins: names.clone(),
            }))
        );
        assert_eq!(
            parse(&args(&format!("uninstall --to /x --plugins {list}")), None).ok(),
            Some(Command::Uninstall(uninstall::Options {
                to: "/x".into(),
                plugins: names,
            }))
        );
        let Command::Run(run) = parse(&args(&format!("run --plugins {list}")), None).expect("run")
        else {
            panic!("not run");
        };
        assert_eq!(run.install.plugins.map(|p| p.len()), Some(4));
    }

    /// Each DaemonSet's agent collects for the plugins it installs, under every name it gives
    /// them; `gc` alone collects for everything the record names.
    #[test]
    fn run_collects_for_the_plugins_it_installs() {
        let line =
            "run --to /host/opt/cni/bin --plugins bridge,cnv-bridge=bridge --gc-interval 30s \
                    --cri-socket /host/run/containerd/containerd.sock --metrics-address :9091";
        let Command::Run(run) = parse(&args(line), Some("node01")).expect("run") else {
            panic!("not run");
        };
        let gc = run.gc.expect("--gc-interval");
        assert_eq!(gc.interval, Duration::from_secs(30));
        assert_eq!(
            gc.round.plugins,
            Some(["bridge", "cnv-bridge"].map(String::from).into())
        );
        assert_eq!(gc.round.node_name, "node01");
        assert_eq!(run.metrics_address, "0.0.0.0:9091".parse().ok());
        let Command::Gc(round) =
            parse(&args("gc --to /host/opt/cni/bin"), Some("node01")).expect("gc")
        else {
            panic!("not gc");
        };
        assert_eq!(round.plugins, None);
    }

    #[test]
    fn allow_options_become_the_node_policy() {
        let line = "install --allow-state-dir /data/cni --allow-state-dir /srv/cni \
                    --allow-ovsdb tcp:127.0.0.1:6640 --allow-ovsdb-socket-dir /var/run/ovs2 \
                    --allow-config-dir /etc/ovs";
        let Command::Install(opts) = parse(&args(line), None).expect("install") else {
            panic!("not an install");
        };
        assert_eq!(
            opts.node_policy,
            Some(PolicyFile {
                state_dirs: vec!["/data/cni".into(), "/srv/cni".into()],
                ovsdb_endpoints: vec!["tcp:127.0.0.1:6640".into()],
                ovsdb_socket_dirs: vec!["/var/run/ovs2".into()],
                config_dirs: vec!["/etc/ovs".into()],
            })
        );
    }
}
