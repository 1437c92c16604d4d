//! The bridge markers: the node agent as a long-running container that keeps the plugins in
//! place, marks the node's bridges and collects what lost DELs left, with its RBAC.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Container, ContainerPort, ExecAction, Probe, VolumeMount};
use k8s_openapi::api::rbac::v1::PolicyRule;

use super::install::{cni_bin_mount, node_agent_args};
use super::{
    cluster_identity, container, field_env, host_path, host_path_volume, mount, plugin_daemon_set,
    privileged, requests, rule, strings, to_rendered, Ctx, Identity, PluginDaemonSet,
};
use crate::error::Result;
use crate::labels;
use crate::render::Rendered;
use crate::spec::Component;
use net_types::format_go_duration;

/// The node's `/`, where the agents' garbage collection runs the plugins as the runtime does.
pub const HOST_ROOT_VOLUME: &str = "host-root";
pub const HOST_ROOT: &str = "/host";

/// What a marker's long-running node agent container does besides keeping the binaries
/// installed.
pub struct Agent<'a> {
    /// The container's name (upstream's, so the status lists familiar names).
    pub name: &'a str,
    /// `--mark <kind>`: publish the node's bridges of this kind as extended resources.
    pub mark: &'a str,
    /// Extra arguments after the common ones.
    pub extra_args: &'a [&'a str],
    /// Extra host mounts; their volumes go in [`PluginDaemonSet::extra_volumes`].
    pub extra_mounts: Vec<VolumeMount>,
    /// Which port after `GC_METRICS_PORT` serves this agent's metrics (agents of several
    /// components share their node's network).
    pub metrics_port_offset: u16,
}

/// Everything a bridge marker component renders: its service account, ClusterRole `role` and
/// binding `binding` ([`marker_rbac`]), then its DaemonSet, whose long-running container is the
/// node agent itself, keeping the plugins installed and marking the node's bridges.
pub fn marker(
    ctx: &Ctx,
    role: &str,
    binding: &str,
    ds: PluginDaemonSet,
    agent: Agent,
) -> Result<Vec<Rendered>> {
    let component = ds.component;
    let mut out = marker_rbac(ctx, component, ds.service_account, role, binding)?;
    let mut ds = ds;
    let metrics_port = agent.metrics_port(ctx);
    let mut main = agent_container(ctx, ds.plugins, agent);
    if collects_garbage(ctx) {
        ds.extra_volumes
            .push(host_path_volume(HOST_ROOT_VOLUME, "/"));
        with_garbage_collection(ctx, &mut main);
    }
    let mut daemon_set = plugin_daemon_set(ctx, ds, main);
    if let Some(port) = metrics_port {
        serve_metrics(&mut daemon_set, port);
    }
    out.push(to_rendered(Some(component), &daemon_set)?);
    Ok(out)
}

impl Agent<'_> {
    /// The port of its node where it serves its collection's metrics, if it collects and
    /// `GC_METRICS_PORT` is set.
    fn metrics_port(&self, ctx: &Ctx) -> Option<u16> {
        let base = ctx
            .settings
            .gc_metrics_port
            .filter(|_| collects_garbage(ctx))?;
        base.checked_add(self.metrics_port_offset)
    }
}

/// `run --metrics-address 0.0.0.0:<port>` on the node's network, as the container port
/// `metrics`, and the pods labelled for the operator's metrics Service, whose `metrics` target
/// port then reaches them (and its ServiceMonitor scrapes them where Prometheus runs).
fn serve_metrics(daemon_set: &mut DaemonSet, port: u16) {
    let Some(template) = daemon_set.spec.as_mut().map(|s| &mut s.template) else {
        return;
    };
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default)
        .insert(labels::PROMETHEUS.to_string(), "true".to_string());
    let Some(agent) = template
        .spec
        .as_mut()
        .and_then(|s| s.containers.first_mut())
    else {
        return;
    };
    agent
        .command
        .get_or_insert_with(Vec::new)
        .extend(["--metrics-address".to_string(), format!("0.0.0.0:{port}")]);
    agent.ports = Some(vec![ContainerPort {
        name: Some("metrics".to_string()),
        container_port: i32::from(port),
        protocol: Some("TCP".to_string()),
        ..ContainerPort::default()
    }]);
}

/// Whether the agents collect what lost DELs left (`GC_INTERVAL` not 0).
fn collects_garbage(ctx: &Ctx) -> bool {
    !ctx.settings.gc_interval.is_zero()
}

/// `run --gc-interval`: the agent runs its plugins' GC for every network they serve, through
/// the node's root (mounted whole: the plugins' GC reaches their state, OVSDB and `/dev` there
/// as when the runtime calls them), with the runtime's live sandboxes kept.
fn with_garbage_collection(ctx: &Ctx, agent: &mut Container) {
    let command = agent.command.get_or_insert_with(Vec::new);
    command.extend([
        "--gc-interval".to_string(),
        format_go_duration(ctx.settings.gc_interval),
        "--host-root".to_string(),
        HOST_ROOT.to_string(),
        "--cni-conf-dir".to_string(),
        host_path(&ctx.cni_conf_dir),
    ]);
    if !ctx.settings.cri_socket.is_empty() {
        command.extend([
            "--cri-socket".to_string(),
            host_path(&ctx.settings.cri_socket),
        ]);
    }
    agent
        .volume_mounts
        .get_or_insert_with(Vec::new)
        .push(VolumeMount {
            // The node's unmounts must reach the pod: a private copy of `/` would hold every mount
            // under it (other pods' volumes, a CSI volume being detached) busy until the agent
            // restarts. As the Multus DaemonSet mounts `/`; a node's `/` is a shared mount.
            mount_propagation: Some("HostToContainer".to_string()),
            ..mount(HOST_ROOT_VOLUME, HOST_ROOT)
        });
}

/// The long-running node agent container: re-installs when a binary goes missing or changes,
/// marks the node's bridges, and is ready only while every plugin is installed and verified.
fn agent_container(ctx: &Ctx, plugins: &[&str], agent: Agent) -> Container {
    let mut command = node_agent_args(ctx, "run", plugins);
    command.extend(strings(&["--replace-foreign", "--mark", agent.mark]));
    command.extend(strings(agent.extra_args));
    let mut mounts = vec![cni_bin_mount(ctx)];
    mounts.extend(agent.extra_mounts);
    Container {
        command: Some(command),
        env: Some(vec![field_env("NODE_NAME", "spec.nodeName")]),
        readiness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(node_agent_args(ctx, "probe", plugins)),
            }),
            period_seconds: Some(10),
            ..Probe::default()
        }),
        resources: Some(requests("10m", "15Mi")),
        security_context: Some(privileged()),
        volume_mounts: Some(mounts),
        ..container(ctx, agent.name, &ctx.settings.plugins_image)
    }
}

/// A marker reads Node objects and writes the bridge resources into their status; collecting
/// garbage, it lists its node's pods and the NetworkAttachmentDefinitions (which networks its
/// plugins serve); serving its metrics, it has the API server review its readers' tokens.
fn marker_rules(ctx: &Ctx) -> Vec<PolicyRule> {
    let mut rules = vec![
        rule(&[""], &["nodes"], &["get", "list", "watch"]),
        rule(&[""], &["nodes/status"], &["patch", "update"]),
    ];
    if collects_garbage(ctx) {
        rules.push(rule(&[""], &["pods"], &["list"]));
        rules.push(rule(
            &["k8s.cni.cncf.io"],
            &["network-attachment-definitions"],
            &["list"],
        ));
    }
    if collects_garbage(ctx) && ctx.settings.gc_metrics_port.is_some() {
        rules.push(rule(
            &["authentication.k8s.io"],
            &["tokenreviews"],
            &["create"],
        ));
        rules.push(rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"],
        ));
    }
    rules
}

/// The service account, ClusterRole and binding of a bridge marker ([`marker_rules`]).
fn marker_rbac(
    ctx: &Ctx,
    component: Component,
    account: &str,
    role: &str,
    binding: &str,
) -> Result<Vec<Rendered>> {
    let names = Identity {
        account,
        role,
        binding,
    };
    cluster_identity(ctx, component, names, marker_rules(ctx))
}
