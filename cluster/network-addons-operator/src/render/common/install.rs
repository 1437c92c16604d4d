//! The init container of our plugins image, which puts the plugins into the host's CNI
//! directory, and the DaemonSet that runs it before a component's node agent.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Container, PodSpec, Volume, VolumeMount};

use super::{container, daemon_set, host_path_volume, mount, privileged, requests, strings, Ctx};
use crate::spec::Component;

/// Where the image keeps the node agent and the plugins it installs. (The image also has the
/// agent as `/cni-installer`, the name the previous release rendered, for one release.)
pub const NODE_AGENT: &str = "/node-agent";
pub const IMAGE_PLUGINS_DIR: &str = "/plugins";

/// The host's CNI binary directory, as a volume and where containers see it.
pub const CNI_BIN_VOLUME: &str = "cnibin";

/// The host's CNI binary directory, mounted at the same `/host<dir>` in every node agent
/// container.
pub fn cni_bin_volume(ctx: &Ctx) -> Volume {
    host_path_volume(CNI_BIN_VOLUME, &ctx.cni_bin_dir)
}

pub(super) fn cni_bin_mount(ctx: &Ctx) -> VolumeMount {
    mount(CNI_BIN_VOLUME, &ctx.host_bin_dir())
}

/// `--from /plugins --to /host<bin> --plugins a,b`: what every node agent command starts with.
pub(super) fn node_agent_args(ctx: &Ctx, verb: &str, plugins: &[&str]) -> Vec<String> {
    let mut args = vec![NODE_AGENT.to_string(), verb.to_string()];
    if verb != "probe" {
        args.extend(strings(&["--from", IMAGE_PLUGINS_DIR]));
    }
    args.extend([
        "--to".to_string(),
        ctx.host_bin_dir(),
        "--plugins".to_string(),
        plugins.join(","),
    ]);
    args
}

/// Init container `install`: puts `plugins` into the host's CNI directory (atomically, and
/// replacing binaries another installer put there), so the pod only starts once they are in.
pub fn install_container(ctx: &Ctx, plugins: &[&str]) -> Container {
    let mut command = node_agent_args(ctx, "install", plugins);
    command.push("--replace-foreign".to_string());
    Container {
        command: Some(command),
        resources: Some(requests("10m", "15Mi")),
        security_context: Some(privileged()),
        volume_mounts: Some(vec![cni_bin_mount(ctx)]),
        ..container(ctx, "install", &ctx.settings.plugins_image)
    }
}

/// What differs between the DaemonSets that put our plugins on every node. Each runs an init
/// container installing `plugins`, then its main container, in the host's network namespace
/// (the markers read the host's links, the macvtap device plugin creates them), as
/// `system-node-critical`, rolled out to 10% of the nodes at a time.
pub struct PluginDaemonSet<'a> {
    pub component: Component,
    pub name: &'a str,
    /// Upstream's selector labels, fixed once created.
    pub selector: &'a [(&'a str, &'a str)],
    pub service_account: &'a str,
    /// The pod template's one-line description.
    pub description: &'a str,
    pub plugins: &'a [&'a str],
    /// Host volumes besides the CNI binary directory.
    pub extra_volumes: Vec<Volume>,
    /// Whether the pods share the host's PID namespace.
    pub host_pid: bool,
}

/// The DaemonSet of `ds`, with `main` as its long-running container.
pub fn plugin_daemon_set(ctx: &Ctx, ds: PluginDaemonSet, main: Container) -> DaemonSet {
    let mut volumes = vec![cni_bin_volume(ctx)];
    volumes.extend(ds.extra_volumes);
    let pod = PodSpec {
        service_account_name: Some(ds.service_account.to_string()),
        host_network: Some(true),
        host_pid: ds.host_pid.then_some(true),
        priority_class_name: Some("system-node-critical".to_string()),
        init_containers: Some(vec![install_container(ctx, ds.plugins)]),
        containers: vec![main],
        volumes: Some(volumes),
        ..PodSpec::default()
    };
    daemon_set(
        ctx,
        ds.component,
        ds.name,
        ds.selector,
        ds.description,
        pod,
        Some("10%"),
    )
}
