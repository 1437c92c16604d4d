//! What every component's objects share: labels and metadata, placement, small builders for
//! containers, volumes and RBAC, the operand Namespace, the two containers of our CNI installer
//! image (an init container that installs, a long-running one that keeps the binaries in place
//! and marks the node), and the DaemonSet around them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, ExecAction, HTTPGetAction,
    HostPathVolumeSource, Namespace, ObjectFieldSelector, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec,
    Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;

use super::Rendered;
use crate::cluster::ClusterInfo;
use crate::defaults::{default_infra_placement, default_workloads_placement, DEFAULT_PULL_POLICY};
use crate::duration::format_duration;
use crate::error::{Error, Result};
use crate::labels;
use crate::settings::{
    Settings, DEFAULT_CNI_BIN_DIR, DEFAULT_CNI_CONF_DIR, OPENSHIFT_CNI_BIN_DIR,
    OPENSHIFT_CNI_CONF_DIR,
};
use crate::spec::{Component, NetworkAddonsConfigSpec, Placement};

/// The `app.kubernetes.io/component` value of objects no single component owns.
pub const SHARED_COMPONENT: &str = "network-addons";

/// Where the installer image keeps its binary and the plugins it installs.
pub const INSTALLER: &str = "/cni-installer";
pub const INSTALLER_PLUGINS_DIR: &str = "/plugins";

/// The host's CNI binary directory, as a volume and where containers see it.
pub const CNI_BIN_VOLUME: &str = "cnibin";
/// The node's `/`, where the agents' garbage collection runs the plugins as the runtime does.
pub const HOST_ROOT_VOLUME: &str = "host-root";
pub const HOST_ROOT: &str = "/host";

/// Everything a component's render reads: the applied spec with its defaults resolved once.
pub struct Ctx<'a> {
    pub spec: &'a NetworkAddonsConfigSpec,
    pub settings: &'a Settings,
    /// What the cluster offers (OpenShift, cert-manager).
    pub cluster: ClusterInfo,
    /// The nodes' CNI directories: the settings', or OpenShift's where the settings keep the
    /// vanilla defaults.
    pub cni_bin_dir: String,
    pub cni_conf_dir: String,
    pub pull_policy: String,
    /// Cluster-wide controllers (Deployments).
    pub infra: Placement,
    /// Node agents (DaemonSets).
    pub workloads: Placement,
}

impl<'a> Ctx<'a> {
    /// `applied` normally has every default filled; an unfilled field still renders with the
    /// operator's default rather than an empty value.
    pub fn new(
        applied: &'a NetworkAddonsConfigSpec,
        settings: &'a Settings,
        cluster: &ClusterInfo,
    ) -> Ctx<'a> {
        let pull_policy = applied
            .image_pull_policy
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_PULL_POLICY.to_string());
        let placement = applied.placement_configuration.as_ref();
        let on_openshift = |dir: &String, vanilla: &str, openshift: &str| {
            if cluster.openshift && dir == vanilla {
                openshift.to_string()
            } else {
                dir.clone()
            }
        };
        Ctx {
            spec: applied,
            settings,
            cluster: *cluster,
            cni_bin_dir: on_openshift(
                &settings.cni_bin_dir,
                DEFAULT_CNI_BIN_DIR,
                OPENSHIFT_CNI_BIN_DIR,
            ),
            cni_conf_dir: on_openshift(
                &settings.cni_conf_dir,
                DEFAULT_CNI_CONF_DIR,
                OPENSHIFT_CNI_CONF_DIR,
            ),
            pull_policy,
            infra: placement
                .and_then(|p| p.infra.clone())
                .unwrap_or_else(default_infra_placement),
            workloads: placement
                .and_then(|p| p.workloads.clone())
                .unwrap_or_else(default_workloads_placement),
        }
    }

    /// The host's CNI binary directory as our containers see it: `/host<cni_bin_dir>`.
    pub fn host_bin_dir(&self) -> String {
        host_path(&self.cni_bin_dir)
    }
}

/// `/host` + an absolute host path (a relative one is taken from `/`).
pub fn host_path(path: &str) -> String {
    format!("/host/{}", path.trim_start_matches('/'))
}

/// A label value Kubernetes accepts: at most 63 of `[A-Za-z0-9._-]`, alphanumeric at both ends.
/// Versions such as `1.2.0+abc` become `1.2.0-abc`.
pub fn label_value(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    mapped
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// The labels on every object and pod template of `component` (`None`: shared objects).
pub fn labels(ctx: &Ctx, component: Option<Component>) -> BTreeMap<String, String> {
    let version = label_value(&ctx.settings.operator_version);
    BTreeMap::from([
        (
            labels::MANAGED_BY.to_string(),
            labels::MANAGED_BY_VALUE.to_string(),
        ),
        (
            labels::COMPONENT.to_string(),
            component
                .map_or(SHARED_COMPONENT, Component::key)
                .to_string(),
        ),
        (
            labels::PART_OF.to_string(),
            labels::PART_OF_VALUE.to_string(),
        ),
        (labels::VERSION.to_string(), version.clone()),
        (labels::UPSTREAM_VERSION.to_string(), version),
        (
            labels::OWN_COMPONENT.to_string(),
            component
                .map_or(SHARED_COMPONENT, Component::key)
                .to_string(),
        ),
    ])
}

/// Gives every object and pod template the NetworkAddonsConfig's own relationship labels
/// (`app.kubernetes.io/{component,part-of,version}`) where it has them, as the upstream operator
/// does. Selectors keep theirs: they cannot change once created.
pub fn relationship_labels(objects: &mut [Rendered], cr_labels: &BTreeMap<String, String>) {
    let ours: Vec<(&str, &String)> = labels::RELATIONSHIP
        .iter()
        .filter_map(|k| cr_labels.get(*k).map(|v| (*k, v)))
        .collect();
    if ours.is_empty() {
        return;
    }
    for r in objects {
        let mut targets = vec!["/metadata/labels"];
        if r.object["spec"]["template"]["metadata"].is_object() {
            targets.push("/spec/template/metadata/labels");
        }
        for target in targets {
            if let Some(serde_json::Value::Object(map)) = r.object.pointer_mut(target) {
                for (k, v) in &ours {
                    map.insert(k.to_string(), serde_json::Value::String(label_value(v)));
                }
            }
        }
    }
}

/// Metadata of a cluster-scoped object.
pub fn cluster_meta(ctx: &Ctx, name: &str, component: Option<Component>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(labels(ctx, component)),
        ..ObjectMeta::default()
    }
}

/// Metadata of an object in the operand namespace.
pub fn meta(ctx: &Ctx, name: &str, component: Option<Component>) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(ctx.settings.namespace.clone()),
        ..cluster_meta(ctx, name, component)
    }
}

pub fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A selector over fixed labels only: `spec.selector` cannot change once created, so it never
/// holds the version. The keys are upstream's, so an object upstream created is taken over in
/// place.
pub fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(string_map(pairs)),
        match_expressions: None,
    }
}

/// A pod template carrying our labels plus the selector's, and a one-line description.
pub fn pod_template(
    ctx: &Ctx,
    component: Component,
    selector_labels: &[(&str, &str)],
    description: &str,
    spec: PodSpec,
) -> PodTemplateSpec {
    let mut pod_labels = labels(ctx, Some(component));
    pod_labels.extend(string_map(selector_labels));
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: Some(string_map(&[("description", description)])),
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    }
}

/// Sets node selector, affinity and tolerations; an empty part of the placement leaves the
/// field unset.
pub fn place(spec: &mut PodSpec, placement: &Placement) {
    spec.node_selector = placement.node_selector.clone().filter(|m| !m.is_empty());
    spec.affinity = placement.affinity.clone();
    spec.tolerations = placement.tolerations.clone().filter(|t| !t.is_empty());
}

/// A DaemonSet of node agents: workloads placement, rolled out `max_unavailable` at a time
/// (`None`: the API's default of one node).
pub fn daemon_set(
    ctx: &Ctx,
    component: Component,
    name: &str,
    selector_labels: &[(&str, &str)],
    description: &str,
    mut spec: PodSpec,
    max_unavailable: Option<&str>,
) -> DaemonSet {
    place(&mut spec, &ctx.workloads);
    DaemonSet {
        metadata: meta(ctx, name, Some(component)),
        spec: Some(DaemonSetSpec {
            selector: selector(selector_labels),
            template: pod_template(ctx, component, selector_labels, description, spec),
            update_strategy: Some(DaemonSetUpdateStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: max_unavailable.map(|m| RollingUpdateDaemonSet {
                    max_unavailable: Some(IntOrString::String(m.to_string())),
                    max_surge: None,
                }),
            }),
            ..DaemonSetSpec::default()
        }),
        status: None,
    }
}

/// Requests only: limits on node agents and controllers get them OOM-killed on big clusters,
/// and a CPU limit throttles them when the node is busy, exactly when they are needed.
pub fn requests(cpu: &str, memory: &str) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.to_string())),
            ("memory".to_string(), Quantity(memory.to_string())),
        ])),
        ..ResourceRequirements::default()
    }
}

pub fn container_port(name: &str, port: i32, protocol: &str) -> ContainerPort {
    ContainerPort {
        container_port: port,
        name: Some(name.to_string()),
        protocol: Some(protocol.to_string()),
        ..ContainerPort::default()
    }
}

/// An HTTP GET probe of `path` on `port` (a number, or the name of a container port).
pub fn http_probe(path: &str, port: IntOrString, initial_delay: i32, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port,
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(initial_delay),
        period_seconds: Some(period),
        ..Probe::default()
    }
}

/// No privilege escalation, no capabilities: for controllers that only talk to the API.
pub fn restricted() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(strings(&["ALL"])),
            add: None,
        }),
        ..SecurityContext::default()
    }
}

pub fn privileged() -> SecurityContext {
    SecurityContext {
        privileged: Some(true),
        ..SecurityContext::default()
    }
}

/// A container with the fields every rendered container has: the spec's pull policy and the
/// log tail as termination message.
pub fn container(ctx: &Ctx, name: &str, image: &str) -> Container {
    Container {
        name: name.to_string(),
        image: Some(image.to_string()),
        image_pull_policy: Some(ctx.pull_policy.clone()),
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        ..Container::default()
    }
}

pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub fn host_path_volume(name: &str, path: &str) -> Volume {
    Volume {
        name: name.to_string(),
        host_path: Some(HostPathVolumeSource {
            path: path.to_string(),
            type_: None,
        }),
        ..Volume::default()
    }
}

pub fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: path.to_string(),
        ..VolumeMount::default()
    }
}

/// An environment variable from the pod's own fields (`spec.nodeName`, `metadata.namespace`).
pub fn field_env(name: &str, field_path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: field_path.to_string(),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// A variable set to `value`. An empty one is rendered without `value` (the same empty
/// variable): the API server does not store an empty string, so applying `value: ""` would
/// change the object on every apply (Kubernetes 1.20 then writes it and every watcher, the
/// operator included, hears of it again).
pub fn value_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: (!value.is_empty()).then(|| value.to_string()),
        value_from: None,
    }
}

pub fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

/// The Service in front of a webhook server: 443 to `port` of the pods `selector` picks. Every
/// key of the port is set: Kubernetes 1.20's server-side apply does not default `protocol` and
/// refuses a port without it.
pub fn webhook_service(
    ctx: &Ctx,
    component: Component,
    name: &str,
    selector: &[(&str, &str)],
    port: i32,
) -> Service {
    Service {
        metadata: meta(ctx, name, Some(component)),
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 443,
                protocol: Some("TCP".to_string()),
                target_port: Some(IntOrString::Int(port)),
                ..ServicePort::default()
            }]),
            selector: Some(string_map(selector)),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

pub fn service_account(ctx: &Ctx, name: &str, component: Component) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(ctx, name, Some(component)),
        ..ServiceAccount::default()
    }
}

pub fn cluster_role(
    ctx: &Ctx,
    name: &str,
    component: Component,
    rules: Vec<PolicyRule>,
) -> ClusterRole {
    ClusterRole {
        metadata: cluster_meta(ctx, name, Some(component)),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// Binds `role` to the service account `account` of the operand namespace.
pub fn cluster_role_binding(
    ctx: &Ctx,
    name: &str,
    component: Component,
    role: &str,
    account: &str,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: cluster_meta(ctx, name, Some(component)),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: Some(vec![Subject {
            api_group: None,
            kind: "ServiceAccount".to_string(),
            name: account.to_string(),
            namespace: Some(ctx.settings.namespace.clone()),
        }]),
    }
}

pub fn to_rendered<T: Serialize>(component: Option<Component>, object: &T) -> Result<Rendered> {
    Ok(Rendered {
        component,
        object: serde_json::to_value(object)
            .map_err(|e| Error::wrap("serialise a rendered object", e))?,
    })
}

/// The operand namespace. Its node agents are privileged (they write the host's CNI directory,
/// read its links, talk to OVSDB), so Pod Security admission must allow privileged pods here.
pub fn namespace(ctx: &Ctx) -> Namespace {
    let mut ns_labels = labels(ctx, None);
    for mode in ["enforce", "audit", "warn"] {
        ns_labels.insert(
            format!("pod-security.kubernetes.io/{mode}"),
            "privileged".to_string(),
        );
    }
    Namespace {
        metadata: ObjectMeta {
            name: Some(ctx.settings.namespace.clone()),
            labels: Some(ns_labels),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

/// The host's CNI binary directory, mounted at the same `/host<dir>` in every installer
/// container.
pub fn cni_bin_volume(ctx: &Ctx) -> Volume {
    host_path_volume(CNI_BIN_VOLUME, &ctx.cni_bin_dir)
}

fn cni_bin_mount(ctx: &Ctx) -> VolumeMount {
    mount(CNI_BIN_VOLUME, &ctx.host_bin_dir())
}

/// `--from /plugins --to /host<bin> --plugins a,b`: what every installer command starts with.
fn installer_args(ctx: &Ctx, verb: &str, plugins: &[&str]) -> Vec<String> {
    let mut args = vec![INSTALLER.to_string(), verb.to_string()];
    if verb != "probe" {
        args.extend(strings(&["--from", INSTALLER_PLUGINS_DIR]));
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
    let mut command = installer_args(ctx, "install", plugins);
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

/// What a marker's long-running installer container does besides keeping the binaries
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
}

/// Everything a bridge marker component renders: its service account, ClusterRole `role` and
/// binding `binding` ([`marker_rbac`]), then its DaemonSet, whose long-running container is the
/// installer itself, keeping the plugins installed and marking the node's bridges.
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
    let mut main = agent_container(ctx, ds.plugins, agent);
    if collects_garbage(ctx) {
        ds.extra_volumes
            .push(host_path_volume(HOST_ROOT_VOLUME, "/"));
        with_garbage_collection(ctx, &mut main);
    }
    out.push(to_rendered(
        Some(component),
        &plugin_daemon_set(ctx, ds, main),
    )?);
    Ok(out)
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
        format_duration(ctx.settings.gc_interval),
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

/// The long-running installer container: re-installs when a binary goes missing or changes,
/// marks the node's bridges, and is ready only while every plugin is installed and verified.
fn agent_container(ctx: &Ctx, plugins: &[&str], agent: Agent) -> Container {
    let mut command = installer_args(ctx, "run", plugins);
    command.extend(strings(&["--replace-foreign", "--mark", agent.mark]));
    command.extend(strings(agent.extra_args));
    let mut mounts = vec![cni_bin_mount(ctx)];
    mounts.extend(agent.extra_mounts);
    Container {
        command: Some(command),
        env: Some(vec![field_env("NODE_NAME", "spec.nodeName")]),
        readiness_probe: Some(Probe {
            exec: Some(ExecAction {
                command: Some(installer_args(ctx, "probe", plugins)),
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
/// plugins serve).
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
    Ok(vec![
        to_rendered(Some(component), &service_account(ctx, account, component))?,
        to_rendered(
            Some(component),
            &cluster_role(ctx, role, component, marker_rules(ctx)),
        )?,
        to_rendered(
            Some(component),
            &cluster_role_binding(ctx, binding, component, role, account),
        )?,
    ])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_valid_label_values() {
        assert_eq!(label_value("0.1.0"), "0.1.0");
        assert_eq!(label_value("v1.2.0+abc/def"), "v1.2.0-abc-def");
        assert_eq!(label_value("+x+"), "x");
        assert_eq!(label_value(&"a".repeat(80)).len(), 63);
    }

    fn bridge_daemon_set() -> Rendered {
        let spec = NetworkAddonsConfigSpec::default();
        let settings = Settings::defaults();
        let ctx = Ctx::new(&spec, &settings, &ClusterInfo::default());
        let ds = daemon_set(
            &ctx,
            Component::LinuxBridge,
            "bridge-marker",
            &[("name", "bridge-marker")],
            "marks bridges",
            PodSpec::default(),
            None,
        );
        to_rendered(Some(Component::LinuxBridge), &ds).unwrap()
    }

    #[test]
    fn the_configs_relationship_labels_but_managed_by_go_on_objects_and_pod_templates() {
        let mut objects = vec![bridge_daemon_set()];
        let cr = string_map(&[
            (labels::COMPONENT, "network"),
            (labels::MANAGED_BY, "hco-operator"),
            (labels::PART_OF, "hyperconverged-cluster"),
            (labels::VERSION, "1.14.0"),
            ("app", "kubevirt-hyperconverged"),
        ]);
        relationship_labels(&mut objects, &cr);
        let o = &objects[0].object;
        for l in [
            &o["metadata"]["labels"],
            &o["spec"]["template"]["metadata"]["labels"],
        ] {
            assert_eq!(l[labels::COMPONENT], "network");
            assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
            assert_eq!(l[labels::PART_OF], "hyperconverged-cluster");
            assert_eq!(l[labels::VERSION], "1.14.0");
            assert_eq!(l[labels::OWN_COMPONENT], "linuxBridge");
            assert!(l.get("app").is_none());
        }
        assert_eq!(
            o["spec"]["selector"]["matchLabels"],
            serde_json::json!({"name": "bridge-marker"})
        );
    }

    #[test]
    fn without_relationship_labels_on_the_config_ours_stay() {
        let mut objects = vec![bridge_daemon_set()];
        relationship_labels(&mut objects, &string_map(&[("app", "x")]));
        let l = &objects[0].object["metadata"]["labels"];
        assert_eq!(l[labels::COMPONENT], "linuxBridge");
        assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
    }

    #[test]
    fn host_paths_are_under_host() {
        assert_eq!(host_path("/opt/cni/bin"), "/host/opt/cni/bin");
        assert_eq!(host_path("/var/lib/cni/bin"), "/host/var/lib/cni/bin");
        assert_eq!(host_path("relative"), "/host/relative");
    }
}
