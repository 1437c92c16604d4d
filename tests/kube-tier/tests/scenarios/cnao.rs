//! In place from the cluster-network-addons-operator: its operator removed, its operands left
//! running as its README says, ours installed. The node's `bridge` and `tuning` are CNAO's (Go
//! plugins copied as `cnv-bridge`/`cnv-tuning`, `bridge`/`tuning` symlinks to them, as its
//! linux-bridge DaemonSet leaves a node without vendor plugins), pods run on them, and from the
//! moment ours starts until it is Available no CNI binary is ever missing on the node and every
//! pod created meanwhile gets its network. CNAO's ServiceAccount and Service are taken over in
//! place: a pod running with the ServiceAccount calls the API server across the switch and is
//! never refused, and the Service keeps its ClusterIP.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;

use super::operator::{reset, APPLIED_RECORD, LINUX_BRIDGE_DS};
use super::pods::{churn_pods, create_pod, wait_pod_ip};
use crate::{check, Ctx, NAMESPACE, OPERATOR};

/// The names a pod's CNI calls and CNAO's tooling use.
const BINARIES: [&str; 4] = ["bridge", "tuning", "cnv-bridge", "cnv-tuning"];
/// CNAO's version, on its objects' version label.
const CNAO_VERSION: &str = "0.103.0";
/// CNAO's ServiceAccount that ours renders too, and the pod that holds its token.
const MARKER_SA: &str = "bridge-marker";
const TOKEN_POD: &str = "token-user";
/// CNAO's metrics Service, which ours renders too.
const METRICS_SERVICE: &str = "cluster-network-addons-operator-prometheus-metrics";

/// Metadata as CNAO writes it: its labels and the NetworkAddonsConfig as controlling owner.
fn cnao_meta(name: &str, namespaced: bool, owner: &Value) -> String {
    let namespace = if namespaced {
        format!("  namespace: {NAMESPACE}\n")
    } else {
        String::new()
    };
    format!(
        "metadata:\n  name: {name}\n{namespace}  labels:\n    app.kubernetes.io/managed-by: cnao-operator\n    \
         app.kubernetes.io/component: network\n    networkaddonsoperator.network.kubevirt.io/version: {CNAO_VERSION}\n  \
         ownerReferences:\n  - apiVersion: networkaddonsoperator.network.kubevirt.io/v1\n    kind: NetworkAddonsConfig\n    \
         name: cluster\n    uid: {}\n    controller: true\n    blockOwnerDeletion: true\n",
        owner["metadata"]["uid"].as_str().unwrap_or_default()
    )
}

/// CNAO's linux-bridge DaemonSet for a node without vendor plugins: copy the Go `bridge` and
/// `tuning` as `cnv-*`, point `bridge` and `tuning` at them, then sleep, so readiness means
/// installed. Its bridge-marker DaemonSet (which this operator does not render) and RBAC too.
fn cnao_objects(owner: &Value) -> String {
    let host_bin = crate::NODE_CNI_BIN_DIR;
    let script = format!(
        "for c in bridge tuning; do cp /go-plugins/$c /opt/cni/bin/.cnv-$c.new && \
         mv -f /opt/cni/bin/.cnv-$c.new /opt/cni/bin/cnv-$c && \
         ln -sf {host_bin}/cnv-$c /opt/cni/bin/.$c.link && mv -f /opt/cni/bin/.$c.link /opt/cni/bin/$c; done; \
         mkdir -p /tmp && touch /tmp/ready; while true; do sleep 3600; done"
    );
    let ds = |name: &str, command: &str, mounts: bool| {
        let (volume_mounts, volumes) = if mounts {
            (
                "        volumeMounts:\n        - {name: cnibin, mountPath: /opt/cni/bin}\n        \
                 - {name: go-plugins, mountPath: /go-plugins, readOnly: true}\n"
                    .to_string(),
                format!(
                    "      volumes:\n      - {{name: cnibin, hostPath: {{path: {host_bin}}}}}\n      \
                     - {{name: go-plugins, hostPath: {{path: /usr/lib/cni}}}}\n"
                ),
            )
        } else {
            (String::new(), String::new())
        };
        format!(
            "---\napiVersion: apps/v1\nkind: DaemonSet\n{}spec:\n  selector:\n    matchLabels:\n      name: {name}\n  \
             template:\n    metadata:\n      labels:\n        name: {name}\n        tier: node\n        app: cni-plugins\n    \
             spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: cni-plugins\n        \
             image: {BUSYBOX_IMAGE}\n        command: [\"/bin/sh\", \"-c\", {command:?}]\n        \
             readinessProbe:\n          exec:\n            command: [\"cat\", \"/tmp/ready\"]\n          periodSeconds: 1\n{volume_mounts}{volumes}",
            cnao_meta(name, true, owner)
        )
    };
    let mut out = ds(LINUX_BRIDGE_DS, &script, true);
    out.push_str(&ds(
        "bridge-marker",
        "mkdir -p /tmp && touch /tmp/ready; while true; do sleep 3600; done",
        false,
    ));
    out.push_str(&format!(
        "---\napiVersion: v1\nkind: ServiceAccount\n{}",
        cnao_meta("bridge-marker", true, owner)
    ));
    out.push_str(&format!(
        "---\napiVersion: v1\nkind: Service\n{}spec:\n  selector:\n    prometheus.cnao.io: \"true\"\n  \
         ports:\n  - {{name: metrics, port: 8080, protocol: TCP, targetPort: metrics}}\n",
        cnao_meta(METRICS_SERVICE, true, owner)
    ));
    out.push_str(&format!(
        "---\napiVersion: v1\nkind: ConfigMap\n{}data:\n  applied: '{{\"linuxBridge\":{{}},\"imagePullPolicy\":\"IfNotPresent\"}}'\n",
        cnao_meta(APPLIED_RECORD, true, owner)
    ));
    out
}

/// A pod with CNAO's ServiceAccount that asks the API server for `/api` with its token five
/// times a second and prints `<unix seconds> <HTTP status>` for each call: 401 once the token is
/// refused, `none` when no HTTP answer came.
fn token_pod() -> String {
    let script = "t=/var/run/secrets/kubernetes.io/serviceaccount/token; while true; do \
         s=$(wget -S -q -O /dev/null --no-check-certificate --header \"Authorization: Bearer $(cat $t)\" \
         https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api 2>&1 | grep -m1 HTTP/ | awk '{print $2}'); \
         echo \"$(date +%s) ${s:-none}\"; sleep 0.2; done";
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {TOKEN_POD}\n  namespace: {NAMESPACE}\nspec:\n  \
         serviceAccountName: {MARKER_SA}\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    \
         image: {BUSYBOX_IMAGE}\n    imagePullPolicy: IfNotPresent\n    command: [\"/bin/sh\", \"-c\", {script:?}]\n"
    )
}

/// The token pod's calls so far: (unix seconds, HTTP status).
fn token_calls(ctx: &Ctx) -> Result<Vec<(u64, String)>> {
    let log = ctx.kubectl(&["logs", "-n", NAMESPACE, TOKEN_POD])?;
    Ok(log
        .lines()
        .filter_map(|l| {
            let (at, code) = l.split_once(' ')?;
            Some((at.parse().ok()?, code.to_string()))
        })
        .collect())
}

/// The uid (and the ClusterIP, for a Service) of one of CNAO's objects.
pub fn identity(ctx: &Ctx, kind: &str, name: &str) -> Result<(String, String)> {
    let o = ctx.get(&["get", kind, name, "-n", NAMESPACE])?;
    Ok((
        o["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        o["spec"]["clusterIP"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// What is wrong with `name` in node01's CNI directory for a CNI call: missing, or not
/// executable (a symlink followed as on the node).
fn unusable(ctx: &Ctx, name: &str) -> Option<String> {
    let path = ctx
        .node01()
        .resolve(Path::new(crate::NODE_CNI_BIN_DIR).join(name));
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().mode() & 0o111 != 0 && m.len() > 0 => None,
        Ok(m) => Some(format!(
            "{name} not executable or empty ({:o})",
            m.permissions().mode()
        )),
        Err(e) => Some(format!("{name}: {e}")),
    }
}

pub fn in_place_from_cnao(ctx: &mut Ctx) -> Result<()> {
    let ctx: &Ctx = ctx;
    let outcome = switch_from_cnao(ctx);
    // Whatever the outcome, the next scenarios find neither pod and the operator's two
    // replicas. Deleting the pod made on CNAO's plugins runs a DEL (ours, after the switch):
    // one that does not finish fails the test.
    let cleaned = [
        ctx.kubectl(&[
            "delete",
            "pod",
            "-n",
            NAMESPACE,
            TOKEN_POD,
            "--ignore-not-found",
            "--wait=false",
        ])
        .map(drop),
        ctx.kubectl(&[
            "delete",
            "pod",
            "-n",
            "default",
            BEFORE_SWITCH,
            "--ignore-not-found",
            "--timeout=120s",
        ])
        .map(drop),
        ctx.scale_operator(2),
    ]
    .into_iter()
    .collect::<Result<()>>();
    if let (Err(_), Err(e)) = (&outcome, &cleaned) {
        println!("    cleanup after the failure: {e:#}");
    }
    outcome.and(cleaned)
}

/// The status as CNAO's operator writes it (an update of the status subresource, by its own
/// field manager), with a field ours never writes (`notDeployed` when everything is deployed).
fn write_cnao_status(ctx: &Ctx, nac: &Value) -> Result<()> {
    let mut nac = nac.clone();
    // Of no generation: the Available it says must not pass for ours.
    nac["status"] = serde_json::json!({
        "observedGeneration": 0,
        "observedVersion": CNAO_VERSION,
        "conditions": [{"type": "Available", "status": "True", "reason": "AsExpected",
                        "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "notDeployed": [{"component": "written-by-cnao", "reason": "CnaoOnly"}],
    });
    let uri = format!(
        "/apis/networkaddonsoperator.network.kubevirt.io/v1/networkaddonsconfigs/cluster/status\
         ?fieldManager={CNAO_MANAGER}"
    );
    ctx.cluster
        .kubectl_stdin(&["replace", "--raw", &uri, "-f", "-"], &nac.to_string())
        .map(drop)
}

/// CNAO's field manager (its binary's name).
const CNAO_MANAGER: &str = "cluster-network-addons-operator";

/// The status CNAO wrote is ours now, without what only CNAO wrote: the operator took it over
/// (a patch of the config's managedFields, which its RBAC allows) and applied its own.
fn cnao_status_taken_over(ctx: &Ctx) -> Result<()> {
    let nac = ctx.nac()?;
    let status_managers: Vec<&str> = nac["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        // Kubernetes 1.20 records a status write with no subresource: the entry's fields say.
        .filter(|e| !e["fieldsV1"]["f:status"].is_null())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    println!("    the config's status managers after the switch: {status_managers:?}");
    check(!status_managers.contains(&CNAO_MANAGER), || {
        format!("CNAO still manages the status: {status_managers:?}")
    })?;
    check(nac["status"]["notDeployed"].is_null(), || {
        format!(
            "CNAO's notDeployed stayed: {}",
            nac["status"]["notDeployed"]
        )
    })
}

/// A pod on CNAO's plugins, deleted only after the switch: its DEL runs ours.
const BEFORE_SWITCH: &str = "before-switch";

fn switch_from_cnao(ctx: &Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    reset(ctx)?;
    // CNAO's operator is gone; its config and operands stay.
    ctx.scale_operator(0)?;
    // Kubelet 1.20.2 can leave a stopped pod Terminating until its next garbage collection of
    // sandboxes, a minute later (kubernetes/kubernetes#97288). Once its node's containerd runs
    // none of the pod's containers, no operator runs in it: the pod is deleted for good then.
    wait_for("no operator pod", Duration::from_secs(180), || {
        let pods = ctx.get(&[
            "get",
            "pods",
            "-n",
            NAMESPACE,
            "-l",
            &format!("name={OPERATOR}"),
        ])?;
        let pods = pods["items"].as_array().cloned().unwrap_or_default();
        ctx.delete_stopped_pods(&pods)?;
        Ok(pods.is_empty().then_some(()))
    })?;
    ctx.apply_nac("linuxBridge: {}\nimagePullPolicy: IfNotPresent\n")?;
    let nac = ctx.nac()?;
    ctx.apply(&cnao_objects(&nac))?;
    write_cnao_status(ctx, &nac)?;
    ctx.kubectl(&[
        "rollout",
        "status",
        &format!("daemonset/{LINUX_BRIDGE_DS}"),
        "-n",
        NAMESPACE,
        "--timeout=120s",
    ])?;
    let dir = ctx.node01().host_path(crate::NODE_CNI_BIN_DIR);
    let link = std::fs::read_link(dir.join("bridge")).context("bridge is not CNAO's symlink")?;
    check(link.ends_with("cnv-bridge"), || {
        format!("bridge -> {}", link.display())
    })?;
    create_pod(ctx, BEFORE_SWITCH)?;
    wait_pod_ip(ctx, BEFORE_SWITCH)?;
    ctx.apply(&token_pod())?;
    wait_for(
        "the token pod's first calls",
        Duration::from_secs(90),
        || {
            Ok(token_calls(ctx)
                .ok()
                .filter(|c| c.iter().filter(|(_, code)| code == "200").count() >= 3)
                .map(drop))
        },
    )?;
    let account_before = identity(ctx, "serviceaccount", MARKER_SA)?;
    let service_before = identity(ctx, "service", METRICS_SERVICE)?;
    let switch_started = unix_now();

    let stop = AtomicBool::new(false);
    let gaps: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    let (checks, pods) = std::thread::scope(|s| -> Result<(usize, usize)> {
        let watcher = s.spawn(|| {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                for name in BINARIES {
                    if let Some(why) = unusable(ctx, name) {
                        if let Ok(mut g) = gaps.lock() {
                            g.push(format!("{:.3} s: {why}", started.elapsed().as_secs_f64()));
                        }
                    }
                }
                n += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            n
        });
        let churn = s.spawn(|| churn_pods(ctx, "switch", ctx.node01().name(), 20, &stop));
        let switch = (|| -> Result<()> {
            ctx.scale_operator(2)?;
            ctx.wait_nac("Available", "True", Duration::from_secs(240))?;
            ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)
        })();
        stop.store(true, Ordering::Relaxed);
        let checks = watcher
            .join()
            .map_err(|_| anyhow::anyhow!("the watcher panicked"))?;
        let pods = churn
            .join()
            .map_err(|_| anyhow::anyhow!("the churn thread panicked"))??;
        switch?;
        Ok((checks, pods))
    })?;
    let switch_ended = unix_now();
    cnao_status_taken_over(ctx)?;
    let gaps = gaps.into_inner().unwrap_or_default();
    println!(
        "    {checks} checks of {BINARIES:?} over {:.1} s, {pods} pods created during the switch, {} gaps",
        started.elapsed().as_secs_f64(),
        gaps.len()
    );
    check(gaps.is_empty(), || {
        format!(
            "CNI binaries missing during the switch:\n{}",
            gaps.join("\n")
        )
    })?;
    check(pods > 0, || "no pod was created during the switch".into())?;

    // Ours now: regular files, not CNAO's symlinks; CNAO's leftovers gone; its record taken over.
    for name in BINARIES {
        let m = std::fs::symlink_metadata(dir.join(name))?;
        check(m.file_type().is_file(), || {
            format!("{name} is still a symlink")
        })?;
    }
    check(
        !ctx.exists("daemonset", "bridge-marker", Some(NAMESPACE))?,
        || "CNAO's bridge-marker DaemonSet was left".into(),
    )?;
    let ds = ctx.get(&["get", "daemonset", LINUX_BRIDGE_DS, "-n", NAMESPACE])?;
    check(
        ds["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "network-addons-operator",
        || format!("the DaemonSet is not ours: {}", ds["metadata"]["labels"]),
    )?;
    // The ServiceAccount and the Service are CNAO's objects still, now ours: the token pod was
    // never refused, before, during or after the switch.
    let calls = wait_for(
        "a call of the token pod's accepted after the switch",
        Duration::from_secs(30),
        || {
            let calls = token_calls(ctx)?;
            let after = calls
                .iter()
                .any(|(at, code)| *at > switch_ended && code == "200");
            Ok(after.then_some(calls))
        },
    )?;
    let account_after = identity(ctx, "serviceaccount", MARKER_SA)?;
    let service_after = identity(ctx, "service", METRICS_SERVICE)?;
    // Only the API server's 401 or 403 refuses the token. A call with no HTTP answer (`none`:
    // the connection failed or timed out) says nothing of the token: it is reported, not failed
    // on.
    let period = |at: u64| {
        if at < switch_started {
            0
        } else if at <= switch_ended {
            1
        } else {
            2
        }
    };
    let mut accepted = [0usize; 3];
    let (mut refused, mut other) = (Vec::new(), Vec::new());
    let (mut unanswered, mut in_a_row, mut most_in_a_row) = (0, 0, 0);
    for (at, code) in &calls {
        in_a_row = if code == "none" { in_a_row + 1 } else { 0 };
        most_in_a_row = most_in_a_row.max(in_a_row);
        match code.as_str() {
            "200" => accepted[period(*at)] += 1,
            "401" | "403" => refused.push(format!("{at}: {code}")),
            "none" => unanswered += 1,
            _ => other.push(format!("{at}: {code}")),
        }
    }
    let [before, during, after] = accepted;
    println!(
        "    token pod's API calls: {before} accepted before, {during} during, {after} after the \
         switch; {} refused; {unanswered} unanswered (at most {most_in_a_row} in a row); other \
         answers {other:?}; ServiceAccount uid {} -> {}; Service uid {} -> {}, ClusterIP {} -> {}",
        refused.len(),
        account_before.0,
        account_after.0,
        service_before.0,
        service_after.0,
        service_before.1,
        service_after.1
    );
    check(refused.is_empty(), || {
        format!(
            "the token pod's calls were refused:\n{}",
            refused.join("\n")
        )
    })?;
    check(during > 0 && after > 0, || {
        format!("the token pod's calls accepted: {during} during and {after} after the switch")
    })?;
    check(account_after.0 == account_before.0, || {
        "the ServiceAccount was re-created".into()
    })?;
    check(service_after == service_before, || {
        "the Service was re-created or its ClusterIP changed".into()
    })?;
    for (kind, name) in [("serviceaccount", MARKER_SA), ("service", METRICS_SERVICE)] {
        let o = ctx.get(&["get", kind, name, "-n", NAMESPACE])?;
        check(
            o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "network-addons-operator"
                && o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                    .is_null(),
            || {
                format!(
                    "{kind} {name} still carries CNAO's fields: {}",
                    o["metadata"]
                )
            },
        )?;
    }
    let applied = ctx.get(&["get", "configmap", APPLIED_RECORD, "-n", NAMESPACE])?;
    check(
        applied["data"]["applied"]
            .to_string()
            .contains("linuxBridge"),
        || format!("applied record: {}", applied["data"]),
    )
}
