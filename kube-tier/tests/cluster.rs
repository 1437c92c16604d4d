//! The operator, the installer and the plugins on a running cluster: a real kube-apiserver,
//! controller-manager, scheduler, kubelet and containerd (scripts/kube-build), our image from a
//! real registry. One cluster serves every test; the tests run in order, each stating one
//! behaviour, and print libtest's lines so the run's summary counts them.
//!
//! `cargo test -p kube-tier --test cluster [-- NAME_SUBSTRING]`, as root, after
//! scripts/build-plugins and scripts/kube-build.

use std::panic::AssertUnwindSafe;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use kube_tier::cluster::{
    condition, condition_status, node_count_from_env, plugins_image_default, CONTAINERD_SOCK,
};
use kube_tier::daemon::wait_for;
use kube_tier::node::Node;
use kube_tier::Cluster;

mod scenarios;

type Test = fn(&mut Ctx) -> Result<()>;

/// The tests, in the order they run (later ones build on the operator the first deploys).
const TESTS: &[(&str, Test)] = &[
    (
        "pods_get_their_network_from_our_bridge_and_reach_each_other",
        scenarios::pods::pods_reach_each_other,
    ),
    (
        "pod_deletion_leaves_no_link_lease_or_state",
        scenarios::pods::pod_deletion_leaves_nothing,
    ),
    (
        "gc_collects_what_lost_dels_left_and_keeps_live_pods",
        scenarios::gc::gc_collects_what_lost_dels_left,
    ),
    (
        "gc_keeps_pods_created_while_it_runs",
        scenarios::gc::gc_keeps_pods_created_while_it_runs,
    ),
    (
        "the_image_is_an_index_of_amd64_and_arm64",
        scenarios::image::the_image_is_an_index_of_amd64_and_arm64,
    ),
    (
        "deploy_manifests_apply_as_the_readme_says",
        scenarios::operator::deploy_applies,
    ),
    (
        "seed_full_config_stays_progressing_and_names_unpullable_images",
        scenarios::operator::full_cr_progressing,
    ),
    (
        "the_operator_can_write_nothing_outside_its_namespace_but_its_cluster_scoped_kinds",
        scenarios::operator::least_privilege,
    ),
    (
        "a_rollout_applies_the_daemonset_once_and_writes_only_its_status",
        scenarios::control_loop::a_rollout_applies_the_daemonset_once,
    ),
    (
        "the_leaders_pod_deleted_the_other_replica_applies_a_change_within_15_s",
        scenarios::control_loop::the_other_replica_takes_over,
    ),
    (
        "the_ipam_controller_is_deployed_once_cert_manager_is_there",
        scenarios::operator::ipam_controller_follows_cert_manager,
    ),
    (
        "operator_metrics_are_scraped_through_its_service",
        scenarios::operator::metrics_through_the_service,
    ),
    (
        "render_diff_shows_a_change_without_making_it",
        scenarios::diff::render_diff_shows_a_change_without_making_it,
    ),
    (
        "on_openshift_the_node_agents_get_their_sccs",
        scenarios::operator::openshift_sccs,
    ),
    (
        "plugins_land_in_the_node_cni_directory",
        scenarios::operator::plugins_land_on_the_node,
    ),
    (
        "node_capacity_shows_the_bridges_and_follows_them",
        scenarios::operator::marker_follows_bridges,
    ),
    (
        "walkthrough_config_deploys_the_bridge_and_the_nmstate_handler",
        scenarios::operator::walkthrough_config,
    ),
    (
        "each_component_has_a_condition_and_objects_carry_the_configs_labels",
        scenarios::operator::component_conditions_and_config_labels,
    ),
    (
        "own_components_reach_available",
        scenarios::operator::own_components_reach_available,
    ),
    (
        "the_walkthrough_crosses_the_nodes_over_br0_and_their_eth1",
        scenarios::nodes::the_walkthrough_crosses_the_nodes_over_br0,
    ),
    (
        "the_walkthroughs_policy_is_available_in_seconds",
        scenarios::nmstate::the_walkthroughs_policy_is_available_in_seconds,
    ),
    (
        "what_the_node_cannot_apply_leaves_it_untouched_and_says_why",
        scenarios::nmstate::what_the_node_cannot_apply_leaves_it_untouched,
    ),
    (
        "max_unavailable_1_applies_the_policy_node_by_node",
        scenarios::nmstate::max_unavailable_one_applies_node_by_node,
    ),
    (
        "a_policy_failing_on_one_node_aborts_the_rest",
        scenarios::nmstate::a_policy_failing_on_one_node_aborts_the_rest,
    ),
    (
        "a_policy_cutting_the_node_off_the_api_server_is_rolled_back",
        scenarios::nmstate::a_policy_cutting_the_node_off_is_rolled_back,
    ),
    (
        "a_handler_killed_mid_apply_leaves_the_node_as_before",
        scenarios::nmstate::a_handler_killed_mid_apply_leaves_the_node_as_before,
    ),
    (
        "idle_the_operator_and_the_nmstate_handlers_write_nothing",
        scenarios::nmstate::an_idle_cluster_writes_nothing,
    ),
    (
        "removing_nmstate_keeps_the_crds_and_the_policies",
        scenarios::nmstate::removing_nmstate_keeps_the_crds_and_the_policies,
    ),
    (
        "ovs_vlan_100_crosses_the_nodes_and_vlan_200_is_cut_off",
        scenarios::nodes::ovs_vlan_100_crosses_the_nodes_and_vlan_200_is_cut_off,
    ),
    (
        "the_node_agents_collect_what_lost_dels_left",
        scenarios::gc::the_node_agents_collect_what_lost_dels_left,
    ),
    (
        "the_node_agents_collect_the_networks_of_attachment_definitions",
        scenarios::gc::the_node_agents_collect_the_networks_of_attachment_definitions,
    ),
    (
        "events_are_recorded_in_default",
        scenarios::operator::events_in_default,
    ),
    (
        "removing_a_component_deletes_its_objects",
        scenarios::changes::component_removed,
    ),
    (
        "placement_change_converges",
        scenarios::changes::placement_change,
    ),
    (
        "a_new_mac_range_is_the_clusters_own",
        scenarios::changes::a_new_mac_range_is_the_clusters_own,
    ),
    (
        "kubemacpool_range_change_converges",
        scenarios::changes::mac_range_change,
    ),
    (
        "kubemacpool_gives_pods_on_both_nodes_macs_from_the_range",
        scenarios::kubemacpool::pods_on_both_nodes_get_macs_from_the_range,
    ),
    (
        "kubemacpool_gives_vms_macs_and_refuses_one_mac_on_two_interfaces",
        scenarios::kubemacpool::vms_get_macs_and_one_mac_on_two_interfaces_is_refused,
    ),
    (
        "kubemacpool_applies_a_range_change_without_a_restart",
        scenarios::kubemacpool::a_range_change_applies_without_a_restart,
    ),
    (
        "kubemacpool_refuses_or_passes_a_hostile_corpus_and_stays_up",
        scenarios::kubemacpool::a_hostile_corpus_is_refused_or_passed_and_the_webhook_stays_up,
    ),
    (
        "kubemacpool_fails_no_create_over_rollouts_and_gives_500_distinct_macs",
        scenarios::kubemacpool::rollouts_and_a_killed_replica_fail_no_create_and_500_get_distinct_macs,
    ),
    (
        "kubemacpool_certificates_are_what_upstream_reads_and_come_back_when_deleted",
        scenarios::kubemacpool::the_certificates_are_what_upstream_reads_and_come_back_when_deleted,
    ),
    (
        "kubemacpool_a_drain_never_takes_the_last_manager",
        scenarios::kubemacpool::a_drain_never_takes_the_last_manager,
    ),
    (
        "kubemacpool_reports_a_collision_between_running_vmis_and_clears_it",
        scenarios::kubemacpool::a_collision_between_running_vmis_is_reported_and_cleared,
    ),
    (
        "kubemacpool_never_gives_again_a_mac_given_before_the_switch",
        scenarios::kubemacpool::macs_given_before_the_switch_are_never_given_again,
    ),
    (
        "invalid_config_is_refused_with_a_clear_condition",
        scenarios::changes::invalid_refused,
    ),
    (
        "a_malformed_field_is_refused_at_kubectl_apply",
        scenarios::changes::malformed_refused_at_apply,
    ),
    (
        "unsafe_change_is_refused_with_a_clear_condition",
        scenarios::changes::unsafe_refused,
    ),
    (
        "another_field_manager_keeps_its_fields",
        scenarios::changes::second_field_manager,
    ),
    (
        "objects_the_upstream_operator_created_are_taken_over_in_place",
        scenarios::changes::takeover,
    ),
    (
        "in_place_from_the_upstream_operator_leaves_no_moment_without_cni_binaries",
        scenarios::cnao::in_place_from_cnao,
    ),
    (
        "installer_upgrade_under_running_pods_fails_no_cni_call",
        scenarios::upgrade::installer_upgrade,
    ),
    (
        "deleting_the_config_garbage_collects_its_objects",
        scenarios::changes::delete_gc,
    ),
    (
        "a_lost_node_keeps_the_config_progressing_not_degraded",
        scenarios::nodes::a_lost_node_keeps_the_config_progressing_not_degraded,
    ),
    // Last: they crash and restart containerd and the kubelet.
    (
        "the_node_agents_collect_after_the_runtime_is_killed_mid_pod",
        scenarios::gc::the_node_agents_collect_after_the_runtime_is_killed_mid_pod,
    ),
    (
        "the_node_agents_collect_a_sandbox_deleted_behind_the_runtime",
        scenarios::gc::the_node_agents_collect_a_sandbox_deleted_behind_the_runtime,
    ),
    (
        "a_rebooted_node_gets_its_policies_back",
        scenarios::nmstate::a_rebooted_node_gets_its_policies_back,
    ),
    (
        "a_reboot_leaves_the_node_holding_only_what_its_live_pods_use",
        scenarios::reboot::a_reboot_leaves_the_node_holding_only_what_its_live_pods_use,
    ),
];

/// The last test of every run: teardown leaves nothing behind.
const TEARDOWN_TEST: &str = "the_tier_leaves_the_machine_as_it_found_it";

pub struct Ctx {
    pub cluster: Cluster,
    pub repo: std::path::PathBuf,
    /// The NetworkAddonsConfig [`Ctx::apply_nac`] applied last, as the API server then had it.
    applied: std::sync::Mutex<Option<AppliedConfig>>,
}

/// A spec applied by [`Ctx::apply_nac`], and what identifies the object it made: a later
/// change of its spec, labels or the object itself shows in them.
#[derive(Clone, PartialEq)]
struct AppliedConfig {
    spec: String,
    uid: Value,
    generation: Value,
    labels: Value,
}

fn main() -> ExitCode {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<&(&str, Test)> = TESTS
        .iter()
        .filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
        .collect();
    // The teardown's check runs after the selected tests, whatever they are.
    println!("\nrunning {} tests", selected.len() + 1);
    let started = Instant::now();
    if !nix::unistd::Uid::effective().is_root() {
        println!("the cluster tier needs root (it runs a kubelet and containerd)");
        return summary(0, selected.len() + 1, started);
    }
    let repo = kube_tier::repo();
    let cluster = match node_count_from_env()
        .and_then(|nodes| Ok((kube_tier::kube_bin()?, nodes)))
        .and_then(|(bin, nodes)| Cluster::start(&bin, &repo, nodes))
    {
        Ok(c) => c,
        Err(e) => {
            println!("the cluster did not start: {e:#}");
            return summary(0, selected.len() + 1, started);
        }
    };
    let mut ctx = Ctx {
        cluster,
        repo,
        applied: std::sync::Mutex::new(None),
    };
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in selected {
        let t = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| test(&mut ctx)));
        let secs = t.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(())) => {
                passed += 1;
                println!("test {name} ... ok ({secs:.1} s)");
            }
            Ok(Err(e)) => {
                failed += 1;
                println!("test {name} ... FAILED ({secs:.1} s)\n    {e:#}");
                diagnostics(&ctx);
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED (panicked, {secs:.1} s)");
                diagnostics(&ctx);
            }
        }
    }
    // Teardown is a test of its own: the machine is as it was before the start (processes,
    // mounts, namespaces, cgroups, sysctls, and the paths the tier may touch outside its base
    // directory).
    let t = Instant::now();
    let errors = ctx.cluster.teardown();
    let secs = t.elapsed().as_secs_f64();
    if errors.is_empty() {
        passed += 1;
        println!("test {TEARDOWN_TEST} ... ok ({secs:.1} s)");
    } else {
        failed += 1;
        println!(
            "test {TEARDOWN_TEST} ... FAILED ({secs:.1} s)\n    {}",
            errors.join("\n    ")
        );
    }
    summary(passed, failed, started)
}

fn summary(passed: usize, failed: usize, started: Instant) -> ExitCode {
    let ok = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {ok}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in {:.2}s\n",
        started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What a failed test needs to be understood: the NetworkAddonsConfig's status, the pods, the
/// recent events and the kubelets' last lines.
fn diagnostics(ctx: &Ctx) {
    let c = &ctx.cluster;
    for args in [
        vec![
            "get",
            "networkaddonsconfig",
            "cluster",
            "-o",
            "jsonpath={.status}",
        ],
        vec!["get", "pods", "-A", "-o", "wide"],
        vec!["get", "events", "-A", "--sort-by=.lastTimestamp"],
    ] {
        let out = c.kubectl(&args).unwrap_or_else(|e| format!("{e:#}"));
        let lines: Vec<&str> = out.lines().collect();
        println!(
            "    --- kubectl {}\n    {}",
            args.join(" "),
            lines[lines.len().saturating_sub(12)..].join("\n    ")
        );
    }
    for i in 0..c.nodes().len() {
        let name = c.daemon_name(i, "kubelet");
        println!(
            "    --- {name}\n    {}",
            c.log_tail(&name, 8).replace('\n', "\n    ")
        );
    }
}

// Shared steps of the scenarios.

pub const NAMESPACE: &str = "cluster-network-addons";
pub const OPERATOR: &str = "network-addons-operator";

impl Ctx {
    pub fn kubectl(&self, args: &[&str]) -> Result<String> {
        self.cluster.kubectl(args)
    }

    pub fn get(&self, args: &[&str]) -> Result<Value> {
        self.cluster.get_json(args)
    }

    /// `kubectl apply -f -` of a manifest.
    pub fn apply(&self, yaml: &str) -> Result<String> {
        self.cluster.kubectl_stdin(&["apply", "-f", "-"], yaml)
    }

    /// deploy/ applied as operator/README.md says, the operator told the nodes' CRI socket and
    /// a short GC interval, and its Deployment available.
    pub fn ensure_operator(&self) -> Result<()> {
        if self
            .kubectl(&["get", "deployment", OPERATOR, "-n", NAMESPACE])
            .is_ok()
        {
            return self.wait_rollout("deployment", OPERATOR);
        }
        for file in [
            "namespace.yaml",
            "network-addons-config.crd.yaml",
            "operator.yaml",
        ] {
            let path = self.repo.join("deploy").join(file);
            let path = path.to_string_lossy();
            // Kubernetes 1.20 has no CEL: its kubectl refuses the CRD's rules unless told not to
            // validate, and its API server drops them (operator/README.md).
            let mut args = vec!["apply", "-f", &path];
            if file.ends_with(".crd.yaml") {
                args.push("--validate=false");
            }
            self.kubectl(&args)
                .with_context(|| format!("kubectl {} (deploy/{file})", args.join(" ")))?;
        }
        // The nodes' CNI directories are the defaults; their CRI socket is named, the GC runs
        // sooner than by default, and its metrics are served.
        let cri = format!("CRI_SOCKET={CONTAINERD_SOCK}");
        let gc = format!("GC_INTERVAL={}", scenarios::gc::AGENT_GC_INTERVAL);
        let metrics = format!("GC_METRICS_PORT={}", scenarios::gc::AGENT_METRICS_PORT);
        self.kubectl(&[
            "set",
            "env",
            &format!("deployment/{OPERATOR}"),
            "-n",
            NAMESPACE,
            &cri,
            &gc,
            &metrics,
        ])?;
        self.wait_rollout("deployment", OPERATOR)
    }

    /// Scales the operator's Deployment to `replicas` (deploy/ runs two).
    pub fn scale_operator(&self, replicas: u32) -> Result<()> {
        self.kubectl(&[
            "scale",
            &format!("deployment/{OPERATOR}"),
            "-n",
            NAMESPACE,
            &format!("--replicas={replicas}"),
        ])
        .map(drop)
    }

    /// The pods of `daemonset` that are not being deleted.
    pub fn daemonset_pods(&self, daemonset: &str) -> Result<Vec<Value>> {
        let pods = self.get(&["get", "pods", "-n", NAMESPACE])?;
        Ok(pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| {
                p["metadata"]["ownerReferences"][0]["name"] == daemonset
                    && p["metadata"]["deletionTimestamp"].is_null()
            })
            .cloned()
            .collect())
    }

    /// The name of `daemonset`'s pod on `node`.
    pub fn daemonset_pod(&self, daemonset: &str, node: &str) -> Result<String> {
        self.daemonset_pods(daemonset)?
            .iter()
            .filter(|p| p["spec"]["nodeName"] == node)
            .find_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .with_context(|| format!("no pod of daemonset {daemonset} on {node}"))
    }

    /// Waits until the pod template of DaemonSet `daemonset` lists `toleration` (`listed`) or
    /// no longer lists it, as the operator applies a placement change; returns the DaemonSet.
    /// The toleration is compared whole: the node agents' default one has `operator: Exists`
    /// too.
    pub fn wait_toleration(
        &self,
        daemonset: &str,
        toleration: &Value,
        listed: bool,
    ) -> Result<Value> {
        let what = if listed {
            "to tolerate"
        } else {
            "no longer to tolerate"
        };
        wait_for(
            &format!("daemonset {daemonset} {what} {toleration}"),
            Duration::from_secs(90),
            || {
                let ds = self.get(&["get", "daemonset", daemonset, "-n", NAMESPACE])?;
                let now = ds["spec"]["template"]["spec"]["tolerations"]
                    .as_array()
                    .is_some_and(|t| t.contains(toleration));
                Ok((now == listed).then_some(ds))
            },
        )
    }

    /// Waits for the object to exist, then `kubectl rollout status`.
    pub fn wait_rollout(&self, kind: &str, name: &str) -> Result<()> {
        wait_for(
            &format!("{kind} {name} to exist"),
            Duration::from_secs(90),
            || Ok(self.exists(kind, name, Some(NAMESPACE))?.then_some(())),
        )?;
        self.kubectl(&[
            "rollout",
            "status",
            &format!("{kind}/{name}"),
            "-n",
            NAMESPACE,
            "--timeout=180s",
        ])
        .map(drop)
        .with_context(|| format!("{kind} {name} did not roll out"))
    }

    /// The NetworkAddonsConfig `cluster` as `spec` (YAML lines under `spec:`).
    pub fn apply_nac(&self, spec: &str) -> Result<()> {
        let indented: String = spec.lines().map(|l| format!("  {l}\n")).collect();
        self.apply(&format!(
            "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
             metadata:\n  name: cluster\nspec:\n{indented}"
        ))?;
        let applied = self.applied_config(spec)?;
        *self
            .applied
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))? = Some(applied);
        Ok(())
    }

    fn applied_config(&self, spec: &str) -> Result<AppliedConfig> {
        let nac = self.nac()?;
        Ok(AppliedConfig {
            spec: spec.to_string(),
            uid: nac["metadata"]["uid"].clone(),
            generation: nac["metadata"]["generation"].clone(),
            labels: nac["metadata"]["labels"].clone(),
        })
    }

    /// Starts a scenario from the NetworkAddonsConfig `spec`, Available: the one an earlier
    /// scenario left is handed on when [`Ctx::apply_nac`] applied that very spec and nothing has
    /// changed the object since; otherwise the cluster is reset and `spec` applied.
    pub fn start_from(&self, spec: &str) -> Result<()> {
        let last = self
            .applied
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .clone();
        let unchanged = match last {
            Some(last) if last.spec == spec => {
                self.applied_config(spec).ok().as_ref() == Some(&last)
            }
            _ => false,
        };
        if !unchanged {
            scenarios::operator::reset(self)?;
            self.apply_nac(spec)?;
        }
        self.kubectl_wait("Available", "240s")
    }

    pub fn nac(&self) -> Result<Value> {
        self.get(&["get", "networkaddonsconfig", "cluster"])
    }

    /// Waits until condition `type_` of the NetworkAddonsConfig has `status`, for the current
    /// generation; returns the object.
    pub fn wait_nac(&self, type_: &str, status: &str, timeout: Duration) -> Result<Value> {
        wait_for(
            &format!("NetworkAddonsConfig {type_}={status}"),
            timeout,
            || {
                let nac = self.nac()?;
                let observed = nac["status"]["observedGeneration"].as_i64();
                let current = nac["metadata"]["generation"].as_i64();
                let fresh = observed.is_none() || observed == current;
                Ok(
                    (fresh && condition_status(&nac, type_).as_deref() == Some(status))
                        .then_some(nac),
                )
            },
        )
        .with_context(|| {
            format!(
                "status now: {}",
                self.nac()
                    .map(|n| n["status"].to_string())
                    .unwrap_or_default()
            )
        })
    }

    /// `kubectl wait networkaddonsconfig cluster --for condition=X`, as users run it.
    pub fn kubectl_wait(&self, condition: &str, timeout: &str) -> Result<()> {
        self.kubectl(&[
            "wait",
            "networkaddonsconfig",
            "cluster",
            &format!("--for=condition={condition}"),
            &format!("--timeout={timeout}"),
        ])
        .map(drop)
    }

    pub fn exists(&self, kind: &str, name: &str, namespace: Option<&str>) -> Result<bool> {
        let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        Ok(!self.kubectl(&args)?.trim().is_empty())
    }

    /// Deletes for good each of `pods` that is being deleted while its node's containerd runs
    /// none of its containers any more: kubelet 1.20.2 can leave such a pod Terminating until
    /// its next collection of sandboxes, a minute later (kubernetes/kubernetes#97288).
    pub fn delete_stopped_pods(&self, pods: &[Value]) -> Result<()> {
        for pod in pods {
            if pod["metadata"]["deletionTimestamp"].is_null() {
                continue;
            }
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            let Some(index) = self.cluster.nodes().iter().position(|n| n.name() == node) else {
                continue;
            };
            let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            if self.cluster.running_containers(index, namespace, name)? == 0 {
                self.kubectl(&[
                    "delete",
                    "pod",
                    name,
                    "-n",
                    namespace,
                    "--force",
                    "--grace-period=0",
                    "--ignore-not-found",
                ])?;
            }
        }
        Ok(())
    }

    /// node01, where the scenarios that look at one node run their pods.
    pub fn node01(&self) -> &Node {
        self.cluster.node(0)
    }

    /// node01's Node object.
    pub fn node(&self) -> Result<Value> {
        self.get(&["get", "node", self.node01().name()])
    }

    /// Runs `script` on node01 and returns its stdout.
    pub fn sh(&self, script: &str) -> Result<String> {
        self.node01().sh(script)
    }
}

/// Every node's pod subnet starts so.
pub const POD_NETWORK_PREFIX: &str = "10.244.";
/// The nodes' CNI plugin directory, in their own view (containerd's `bin_dir`).
pub const NODE_CNI_BIN_DIR: &str = "/opt/cni/bin";

/// The first three octets (and the dot) of node01's pod subnet.
pub fn pod_subnet_prefix(ctx: &Ctx) -> String {
    ctx.node01()
        .pod_subnet()
        .trim_end_matches("0/24")
        .to_string()
}

pub fn plugins_image(ctx: &Ctx) -> Result<String> {
    plugins_image_default(&ctx.repo)
}

pub fn nac_condition(nac: &Value, type_: &str) -> Option<Value> {
    condition(nac, type_).cloned()
}

pub fn fail<T>(msg: String) -> Result<T> {
    bail!(msg)
}

pub fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<()> {
    ensure!(cond, "{}", msg());
    Ok(())
}
