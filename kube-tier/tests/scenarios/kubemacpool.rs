//! KubeMacPool's allocator (`kubeMacPool: {}`, ours by default): MACs for pods in opted-in
//! namespaces and for VirtualMachines, from the range, through the webhook the API server calls.
//! KubeVirt does not run here: its VirtualMachine and VirtualMachineInstance CRDs stand in.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context, Result};
use net_types::MacAddr;
use serde_json::Value;

use kube_tier::daemon::wait_for;
use kube_tier::image::BUSYBOX_IMAGE;

use super::operator::stand_in_crds;
use crate::{check, Ctx, NAMESPACE};

const RANGE_START: &str = "02:30:00:00:00:00";
const RANGE_END: &str = "02:30:00:00:0f:ff";
const SPEC: &str =
    "kubeMacPool:\n  rangeStart: \"02:30:00:00:00:00\"\n  rangeEnd: \"02:30:00:00:0f:ff\"\n";
/// Opted in: the pod webhook acts only in namespaces labelled so (one per scenario: the one
/// before may still be terminating).
const POD_NAMESPACE: &str = "kmp-pods";
const RANGE_NAMESPACE: &str = "kmp-range";
const CORPUS_NAMESPACE: &str = "kmp-corpus";
const STREAM_NAMESPACE: &str = "kmp-stream";
const SWITCH_NAMESPACE: &str = "kmp-switch";
const IGNORED_NAMESPACE: &str = "kmp-vms-ignored";
const CERT_NAMESPACE: &str = "kmp-certs";
const MANAGER: &str = "kubemacpool-mac-controller-manager";
const NETWORKS: &str = "k8s.v1.cni.cncf.io/networks";

fn in_range(mac: &str) -> bool {
    let (start, end) = (
        MacAddr::parse(RANGE_START).map(|m| m.to_u64()),
        MacAddr::parse(RANGE_END).map(|m| m.to_u64()),
    );
    match (MacAddr::parse(mac), start, end) {
        (Ok(m), Ok(s), Ok(e)) => (s..=e).contains(&m.to_u64()),
        _ => false,
    }
}

/// The config with KubeMacPool, its managers ready.
fn deploy(ctx: &Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(SPEC)?;
    ctx.kubectl_wait("KubeMacPoolAvailable", "180s")?;
    ctx.wait_rollout("deployment", MANAGER)
}

fn opted_in_namespace(ctx: &Ctx, name: &str) -> Result<()> {
    ctx.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:\n    \
         mutatepods.kubemacpool.io: allocate\n"
    ))
    .map(drop)
}

fn pod_yaml(name: &str, namespace: &str, node: &str, networks: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  \
         annotations:\n    {NETWORKS}: '{networks}'\nspec:\n  nodeName: {node}\n  \
         terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n    \
         imagePullPolicy: IfNotPresent\n    command: [\"/bin/sleep\", \"3600\"]\n"
    )
}

fn networks_of(ctx: &Ctx, name: &str, namespace: &str) -> Result<String> {
    let pod = ctx.get(&["get", "pod", name, "-n", namespace])?;
    Ok(pod["metadata"]["annotations"][NETWORKS]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// A pod on node01 and one on node02 get MACs from the range in the elements that lack one;
/// a requested MAC, another namespace and unknown keys stay as written; a pod in a namespace
/// that did not opt in, and the comma form, pass unchanged; malformed JSON is refused.
pub fn pods_on_both_nodes_get_macs_from_the_range(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    opted_in_namespace(ctx, POD_NAMESPACE)?;
    let outcome = (|| {
        let requested = "02:aa:bb:cc:dd:ee";
        let networks = format!(
            r#"[{{"name":"br1"}},{{"name":"br2","namespace":"default","interface":"net2","mac":"{requested}","x-note":{{"k":[1]}}}}]"#
        );
        let mut given = BTreeSet::new();
        for (pod, node) in [("kmp-a", "node01"), ("kmp-b", "node02")] {
            ctx.apply(&pod_yaml(pod, POD_NAMESPACE, node, &networks))?;
            let written = networks_of(ctx, pod, POD_NAMESPACE)?;
            println!("    {pod} on {node}: {written}");
            let list: Vec<Value> = serde_json::from_str(&written)
                .with_context(|| format!("{pod}'s annotation is not a list: {written}"))?;
            let mac = list[0]["mac"].as_str().unwrap_or_default().to_string();
            check(in_range(&mac), || {
                format!("{pod}: {mac:?} is not in {RANGE_START}-{RANGE_END}")
            })?;
            check(
                list[1]["mac"] == requested
                    && list[1]["namespace"] == "default"
                    && list[1]["x-note"]["k"][0] == 1,
                || format!("{pod}: the second element changed: {}", list[1]),
            )?;
            check(given.insert(mac.clone()), || {
                format!("{mac} given twice: {given:?}")
            })?;
        }
        let plain = r#"[{"name":"br1"}]"#;
        ctx.apply(&pod_yaml("kmp-not-opted-in", "default", "node01", plain))?;
        let kept = networks_of(ctx, "kmp-not-opted-in", "default")?;
        check(kept == plain, || {
            format!("default's pod was changed: {kept}")
        })?;
        ctx.apply(&pod_yaml(
            "kmp-comma",
            POD_NAMESPACE,
            "node01",
            "br1,default/br2@net2",
        ))?;
        let comma = networks_of(ctx, "kmp-comma", POD_NAMESPACE)?;
        check(comma == "br1,default/br2@net2", || {
            format!("the comma form was changed: {comma}")
        })?;
        let refused = ctx
            .apply(&pod_yaml(
                "kmp-malformed",
                POD_NAMESPACE,
                "node01",
                r#"[{"name":"br1""#,
            ))
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        check(refused.contains("is not a JSON list"), || {
            format!("malformed JSON was not refused clearly: {refused:?}")
        })?;
        println!(
            "    malformed JSON refused: {}",
            refused.lines().last().unwrap_or_default()
        );
        Ok(())
    })();
    ctx.kubectl(&[
        "delete",
        "pod",
        "-n",
        "default",
        "kmp-not-opted-in",
        "--ignore-not-found",
        "--wait=false",
    ])?;
    ctx.kubectl(&["delete", "namespace", POD_NAMESPACE, "--wait=false"])?;
    outcome
}

fn kubevirt_crds() -> String {
    stand_in_crds(
        "kubevirt.io",
        &[
            ("virtualmachines", "VirtualMachine"),
            ("virtualmachineinstances", "VirtualMachineInstance"),
        ],
    )
}

/// A VM whose interfaces are `(name, binding, network)`: network `pod` is the pod network,
/// anything else a Multus network of that name; `mac` set where given.
fn vm_yaml(name: &str, interfaces: &[(&str, &str, &str, Option<&str>)]) -> String {
    let mut ifaces = String::new();
    let mut nets = String::new();
    for (iface, binding, network, mac) in interfaces {
        ifaces.push_str(&format!(
            "            - name: {iface}\n              {binding}: {{}}\n"
        ));
        if let Some(mac) = mac {
            ifaces.push_str(&format!("              macAddress: \"{mac}\"\n"));
        }
        if *network == "pod" {
            nets.push_str(&format!("        - name: {iface}\n          pod: {{}}\n"));
        } else {
            nets.push_str(&format!(
                "        - name: {iface}\n          multus:\n            networkName: {network}\n"
            ));
        }
    }
    format!(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: {name}\n  namespace: default\n\
         spec:\n  running: false\n  template:\n    spec:\n      domain:\n        devices:\n          interfaces:\n{ifaces}\
         \x20     networks:\n{nets}"
    )
}

fn vm_macs(vm: &Value) -> Vec<(String, String)> {
    vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                i["name"].as_str().unwrap_or_default().to_string(),
                i["macAddress"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// VMs in any namespace get MACs on their masquerade and Multus interfaces and the transaction
/// timestamp; one MAC on two interfaces of one VM is refused with upstream's words; a dry run
/// returns MACs and keeps none.
pub fn vms_get_macs_and_one_mac_on_two_interfaces_is_refused(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    wait_for(
        "the VirtualMachine CRD to be served",
        Duration::from_secs(30),
        || {
            Ok(ctx
                .kubectl(&["get", "virtualmachines.kubevirt.io", "-A"])
                .ok()
                .map(drop))
        },
    )?;
    let outcome = (|| {
        let yaml = vm_yaml(
            "kmp-vm",
            &[
                ("default", "masquerade", "pod", None),
                ("br1", "bridge", "br1", None),
            ],
        );
        ctx.apply(&yaml)?;
        let vm = ctx.get(&[
            "get",
            "virtualmachines.kubevirt.io",
            "kmp-vm",
            "-n",
            "default",
        ])?;
        let macs = vm_macs(&vm);
        println!("    kmp-vm: {macs:?}");
        check(
            macs.len() == 2 && macs.iter().all(|(_, m)| in_range(m)) && macs[0].1 != macs[1].1,
            || format!("kmp-vm's interfaces: {macs:?}"),
        )?;
        check(
            vm["metadata"]["annotations"]["kubemacpool.io/transaction-timestamp"].is_string(),
            || format!("no transaction timestamp: {}", vm["metadata"]),
        )?;

        let dry = ctx.cluster.kubectl_stdin(
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            &vm_yaml("kmp-dry", &[("br1", "bridge", "br1", None)]),
        )?;
        let dry: Value = serde_json::from_str(&dry)?;
        let dry_mac = vm_macs(&dry)
            .first()
            .map(|(_, m)| m.clone())
            .unwrap_or_default();
        check(in_range(&dry_mac), || {
            format!("the dry run's MAC: {dry_mac:?}")
        })?;
        let after = ctx.cluster.kubectl_stdin(
            &["create", "-o", "json", "-f", "-"],
            &vm_yaml("kmp-after-dry", &[("br1", "bridge", "br1", None)]),
        )?;
        let after_mac = vm_macs(&serde_json::from_str(&after)?)
            .first()
            .map(|(_, m)| m.clone())
            .unwrap_or_default();
        check(after_mac == dry_mac, || {
            format!("the dry run kept {dry_mac}: the next VM got {after_mac}")
        })?;

        let dup = "02:30:00:00:0a:0a";
        let refused = ctx
            .apply(&vm_yaml(
                "kmp-dup",
                &[
                    ("br1", "bridge", "br1", Some(dup)),
                    ("br2", "bridge", "br2", Some(dup)),
                ],
            ))
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        check(refused.contains("duplicate MAC address"), || {
            format!("one MAC on two interfaces was not refused: {refused:?}")
        })?;
        println!(
            "    refused: {}",
            refused.lines().last().unwrap_or_default()
        );
        Ok(())
    })();
    ctx.kubectl(&[
        "delete",
        "virtualmachines.kubevirt.io",
        "-n",
        "default",
        "--all",
        "--wait=false",
    ])?;
    outcome
}

/// A range change reaches the running managers through the ConfigMap: the next pod's MAC is
/// from the new range, and no manager pod was replaced.
pub fn a_range_change_applies_without_a_restart(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    let managers = |ctx: &Ctx| -> Result<BTreeSet<String>> {
        let pods = ctx.get(&["get", "pods", "-n", NAMESPACE, "-l", "app=kubemacpool"])?;
        Ok(pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            // A pod of an earlier rollout may still be terminating: not a manager any more.
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .filter_map(|p| p["metadata"]["uid"].as_str().map(str::to_string))
            .collect())
    };
    let before = managers(ctx)?;
    ctx.apply_nac(
        "kubeMacPool:\n  rangeStart: \"02:31:00:00:00:00\"\n  rangeEnd: \"02:31:00:00:0f:ff\"\n",
    )?;
    opted_in_namespace(ctx, RANGE_NAMESPACE)?;
    let outcome = (|| {
        let mac = wait_for(
            "a pod's MAC from the new range",
            Duration::from_secs(60),
            || {
                let _ = ctx.kubectl(&["delete", "pod", "-n", RANGE_NAMESPACE, "kmp-new-range"]);
                ctx.apply(&pod_yaml(
                    "kmp-new-range",
                    RANGE_NAMESPACE,
                    "node01",
                    r#"[{"name":"br1"}]"#,
                ))?;
                let written = networks_of(ctx, "kmp-new-range", RANGE_NAMESPACE)?;
                Ok(written.contains("02:31:00:00:0").then_some(written))
            },
        )?;
        println!("    after the change: {mac}");
        let after = managers(ctx)?;
        check(before == after, || {
            format!("the managers were replaced: {before:?} then {after:?}")
        })
    })();
    ctx.kubectl(&["delete", "namespace", RANGE_NAMESPACE, "--wait=false"])?;
    outcome
}

/// The names of the manager pods that are not terminating.
fn live_managers(ctx: &Ctx) -> Result<Vec<String>> {
    let pods = ctx.get(&[
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        "control-plane=mac-controller-manager",
    ])?;
    Ok(pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect())
}

/// Asks the API server to evict `pod`, as `kubectl drain` does: the answer, or the refusal.
fn evict(ctx: &Ctx, pod: &str) -> Result<String, String> {
    let eviction = format!(
        "{{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"Eviction\",\"metadata\":{{\"name\":\"{pod}\",\"namespace\":\"{NAMESPACE}\"}}}}"
    );
    ctx.cluster
        .kubectl_stdin(
            &[
                "create",
                "--raw",
                &format!("/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction"),
                "-f",
                "-",
            ],
            &eviction,
        )
        .map_err(|e| format!("{e:#}"))
}

/// A drain evicts one manager and is refused the other until the first one's replacement is
/// ready: the PodDisruptionBudget keeps one serving.
pub fn a_drain_never_takes_the_last_manager(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    let budget = wait_for(
        "the managers' PodDisruptionBudget to count both",
        Duration::from_secs(60),
        || {
            let pdb = ctx.get(&["get", "poddisruptionbudgets", MANAGER, "-n", NAMESPACE])?;
            Ok(
                (pdb["status"]["currentHealthy"] == 2 && pdb["status"]["disruptionsAllowed"] == 1)
                    .then_some(pdb),
            )
        },
    )?;
    println!(
        "    {} {MANAGER}: minAvailable {}, {} healthy, {} disruption allowed",
        budget["apiVersion"].as_str().unwrap_or_default(),
        budget["spec"]["minAvailable"],
        budget["status"]["currentHealthy"],
        budget["status"]["disruptionsAllowed"]
    );
    let managers = live_managers(ctx)?;
    check(managers.len() == 2, || format!("managers: {managers:?}"))?;
    let first = evict(ctx, &managers[0]);
    let second = evict(ctx, &managers[1]);
    println!(
        "    evicting {}: {}",
        managers[0],
        if first.is_ok() { "evicted" } else { "refused" }
    );
    println!(
        "    evicting {} at once: {}",
        managers[1],
        second
            .as_ref()
            .err()
            .and_then(|e| e.lines().last())
            .unwrap_or("evicted")
    );
    check(first.is_ok(), || {
        format!("the first eviction was refused: {first:?}")
    })?;
    check(
        second
            .as_ref()
            .is_err_and(|e| e.contains("disruption budget")),
        || format!("the second eviction was not refused by the budget: {second:?}"),
    )?;
    ctx.wait_rollout("deployment", MANAGER)
}

/// One key of a Secret in the operand namespace, decoded.
fn secret_data(ctx: &Ctx, secret: &str, key: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    let s = ctx.get(&["get", "secret", secret, "-n", NAMESPACE])?;
    let text = s["data"][key]
        .as_str()
        .with_context(|| format!("Secret {secret} has no {key}"))?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .with_context(|| format!("Secret {secret}'s {key} is not base64"))
}

/// `openssl <args>` with `input` on stdin (files named in `args` are written beforehand).
fn openssl(args: &[&str], input: &[u8]) -> Result<String> {
    use std::io::Write;
    let mut child = std::process::Command::new("openssl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("run openssl")?;
    child
        .stdin
        .take()
        .context("openssl's stdin")?
        .write_all(input)?;
    let out = child.wait_with_output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    check(out.status.success(), || format!("openssl {args:?}: {text}"))?;
    Ok(text)
}

/// The first PEM certificate of `pem`, as openssl prints its fingerprint.
fn fingerprint(pem: &[u8]) -> Result<String> {
    openssl(&["x509", "-noout", "-fingerprint", "-sha256"], pem)
}

/// What upstream's cert manager requires of the Secrets and the webhooks' caBundle before it
/// keeps them (it reads the CA key as RSA and nothing else), checked after ours made them; then
/// the serving Secret deleted is made again and the webhook serves with it.
pub fn the_certificates_are_what_upstream_reads_and_come_back_when_deleted(
    ctx: &mut Ctx,
) -> Result<()> {
    deploy(ctx)?;
    let ca_secret = ctx.get(&["get", "secret", "kubemacpool-mutator-ca", "-n", NAMESPACE])?;
    let serving = ctx.get(&["get", "secret", "kubemacpool-service", "-n", NAMESPACE])?;
    check(
        ca_secret["type"] == "Opaque" && serving["type"] == "kubernetes.io/tls",
        || {
            format!(
                "Secret types: {} and {}",
                ca_secret["type"], serving["type"]
            )
        },
    )?;
    let ca_cert = secret_data(ctx, "kubemacpool-mutator-ca", "ca.crt")?;
    let ca_key = secret_data(ctx, "kubemacpool-mutator-ca", "ca.key")?;
    let rsa = openssl(&["rsa", "-check", "-noout", "-text"], &ca_key)?;
    check(
        rsa.contains("RSA key ok") && rsa.contains("2048 bit"),
        || format!("the CA key is not the RSA key upstream reads: {rsa}"),
    )?;
    println!("    kubemacpool-mutator-ca: ca.crt, ca.key (RSA 2048, RSA key ok)");
    let webhooks = ctx.get(&["get", "mutatingwebhookconfiguration", "kubemacpool-mutator"])?;
    let ca_print = fingerprint(&ca_cert)?;
    for hook in webhooks["webhooks"].as_array().into_iter().flatten() {
        let bundle = hook["clientConfig"]["caBundle"]
            .as_str()
            .unwrap_or_default();
        let bundle = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(bundle)?
        };
        let text = String::from_utf8_lossy(&bundle).to_string();
        let last = text
            .rfind("-----BEGIN CERTIFICATE-----")
            .map(|i| text[i..].to_string())
            .unwrap_or_default();
        check(fingerprint(last.as_bytes())? == ca_print, || {
            format!(
                "{}: the caBundle's last certificate is not the CA's",
                hook["name"]
            )
        })?;
    }
    let dir = scratch_dir()?;
    let bundle_path = dir.join("ca.pem");
    std::fs::write(&bundle_path, &ca_cert)?;
    let host = format!("kubemacpool-service.{NAMESPACE}.svc");
    let verified = openssl(
        &[
            "verify",
            "-CAfile",
            &bundle_path.to_string_lossy(),
            "-verify_hostname",
            &host,
        ],
        &secret_data(ctx, "kubemacpool-service", "tls.crt")?,
    );
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "    kubemacpool-service: tls.crt for {host}: {}",
        verified?.trim()
    );
    println!("    both webhooks' caBundle ends with the CA's certificate");

    // Recovery: the serving Secret deleted, made again and served.
    let uid = serving["metadata"]["uid"].clone();
    ctx.kubectl(&["delete", "secret", "kubemacpool-service", "-n", NAMESPACE])?;
    let deleted = std::time::Instant::now();
    wait_for(
        "the serving Secret to be made again",
        Duration::from_secs(60),
        || {
            let again = ctx.get(&["get", "secret", "kubemacpool-service", "-n", NAMESPACE]);
            Ok(again
                .ok()
                .filter(|s| s["metadata"]["uid"] != uid && s["data"]["tls.crt"].is_string())
                .map(drop))
        },
    )?;
    let remade = deleted.elapsed();
    opted_in_namespace(ctx, CERT_NAMESPACE)?;
    let outcome = wait_for(
        "a pod create through the webhook with the new certificate",
        Duration::from_secs(60),
        || {
            let _ = ctx.kubectl(&["delete", "pod", "-n", CERT_NAMESPACE, "kmp-after-certs"]);
            Ok(ctx
                .apply(&parked_pod_yaml("kmp-after-certs", CERT_NAMESPACE))
                .ok()
                .map(drop))
        },
    );
    println!(
        "    serving Secret deleted: made again {:.1}s later; a pod created through the webhook {:.1}s after the delete",
        remade.as_secs_f64(),
        deleted.elapsed().as_secs_f64()
    );
    ctx.kubectl(&["delete", "namespace", CERT_NAMESPACE, "--wait=false"])?;
    outcome
}

fn scratch_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("kmp-certs-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The metrics of every manager replica that is not terminating (through the API server's pod
/// proxy, on `port`): a replica on its way out may already be cut off its network.
fn manager_metrics(ctx: &Ctx, port: u16) -> Result<Vec<(String, String)>> {
    let pods = ctx.get(&[
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        "control-plane=mac-controller-manager",
    ])?;
    let mut out = Vec::new();
    for pod in pods["items"].as_array().into_iter().flatten() {
        if !pod["metadata"]["deletionTimestamp"].is_null() {
            continue;
        }
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let path = format!("/api/v1/namespaces/{NAMESPACE}/pods/https:{name}:{port}/proxy/metrics");
        out.push((name.to_string(), ctx.kubectl(&["get", "--raw", &path])?));
    }
    Ok(out)
}

/// The pending MACs of every manager replica: what admissions hold that no stored object
/// names yet.
fn pending_macs(ctx: &Ctx) -> Result<u64> {
    let mut total = 0;
    for (name, body) in manager_metrics(ctx, 8000)? {
        total += body
            .lines()
            .find_map(|l| l.strip_prefix("kubemacpool_macs_pending "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .with_context(|| format!("no kubemacpool_macs_pending from {name}:\n{body}"))?;
    }
    Ok(total)
}

/// What the API server answered a create: "allowed" with the annotation as stored, or the
/// refusal's last line.
fn create_outcome(ctx: &Ctx, yaml: &str) -> String {
    match ctx
        .cluster
        .kubectl_stdin(&["create", "-o", "json", "-f", "-"], yaml)
    {
        Ok(out) => {
            let v: Value = serde_json::from_str(&out).unwrap_or_default();
            let text = v["metadata"]["annotations"][NETWORKS]
                .as_str()
                .map(|s| s.chars().take(120).collect::<String>())
                .unwrap_or_else(|| {
                    vm_macs(&v)
                        .iter()
                        .take(2)
                        .map(|(_, m)| m.clone())
                        .collect::<Vec<_>>()
                        .join(",")
                });
            format!("allowed: {text}")
        }
        Err(e) => {
            // The API server's words, without kubectl's command line before them.
            let e = format!("{e:#}");
            let words = e
                .split_once("denied the request: ")
                .map(|(_, w)| w)
                .or_else(|| e.split_once("Error from server").map(|(_, w)| w))
                .unwrap_or(&e);
            format!(
                "refused: {}",
                words.trim().chars().take(160).collect::<String>()
            )
        }
    }
}

/// A hostile corpus against the running webhook: each case is refused with a message or passed
/// through, no refused object holds a MAC, and the managers stay up.
pub fn a_hostile_corpus_is_refused_or_passed_and_the_webhook_stays_up(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    opted_in_namespace(ctx, CORPUS_NAMESPACE)?;
    let outcome = (|| {
        let ten_thousand = format!(
            "[{}]",
            (0..10_000)
                .map(|i| format!(r#"{{"name":"n{i}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        let megabyte = format!(r#"[{{"name":"{}"}}]"#, "a".repeat(1 << 20));
        let pod_cases: Vec<(&str, String, &str)> = vec![
            ("malformed JSON", r#"[{"name":"br1""#.into(), "refused"),
            ("a list of 10,000 elements", ten_thousand, "refused"),
            ("a 1 MB annotation", megabyte, "refused"),
            (
                "a multicast MAC",
                r#"[{"name":"br1","mac":"01:00:5e:00:00:01"}]"#.into(),
                "refused",
            ),
            (
                "the broadcast MAC",
                r#"[{"name":"br1","mac":"ff:ff:ff:ff:ff:ff"}]"#.into(),
                "refused",
            ),
            (
                "a MAC outside the range",
                r#"[{"name":"br1","mac":"02:99:00:00:00:01"}]"#.into(),
                "allowed",
            ),
            (
                "unknown keys",
                r#"[{"name":"br1","x-unknown":{"a":[1,{"b":null}]}}]"#.into(),
                "allowed",
            ),
            (
                "a non-string mac",
                r#"[{"name":"br1","mac":42}]"#.into(),
                "refused",
            ),
            (
                "a non-string name",
                r#"[{"name":{"n":1}}]"#.into(),
                "refused",
            ),
            ("a list of strings", r#"["br1","br2"]"#.into(), "refused"),
            (
                "another namespace in the element",
                r#"[{"name":"br1","namespace":"kube-system"}]"#.into(),
                "allowed",
            ),
        ];
        let before = pending_macs(ctx)?;
        let mut rows = Vec::new();
        for (i, (case, networks, expected)) in pod_cases.iter().enumerate() {
            let yaml = pod_yaml(&format!("corpus-{i}"), CORPUS_NAMESPACE, "node01", networks);
            let got = create_outcome(ctx, &yaml);
            rows.push((case.to_string(), got.clone()));
            check(got.starts_with(expected), || {
                format!("{case}: expected {expected}, got {got}")
            })?;
        }
        let interfaces: Vec<(String, String)> = (0..1000)
            .map(|i| (format!("if{i}"), format!("net{i}")))
            .collect();
        let refs: Vec<(&str, &str, &str, Option<&str>)> = interfaces
            .iter()
            .map(|(i, n)| (i.as_str(), "bridge", n.as_str(), None))
            .collect();
        let got = create_outcome(ctx, &vm_yaml("corpus-vm-1000", &refs));
        rows.push(("a VM with 1,000 interfaces".into(), got.clone()));
        check(got.starts_with("refused"), || {
            format!("a VM with 1,000 interfaces: {got}")
        })?;
        let allowed_pods = pod_cases.iter().filter(|c| c.2 == "allowed").count() as u64;
        let after = pending_macs(ctx)?;
        println!("    | case | outcome |\n    |---|---|");
        for (case, got) in &rows {
            println!("    | {case} | {} |", got.replace('|', "\\|"));
        }
        println!("    pending MACs before {before}, after {after} ({allowed_pods} pods allowed)");
        check(after <= before + allowed_pods, || {
            format!("refused objects hold MACs: pending {before} then {after}")
        })?;
        let ready = ctx.get(&["get", "deployment", MANAGER, "-n", NAMESPACE])?;
        check(ready["status"]["readyReplicas"] == 2, || {
            format!("the managers are not both ready: {}", ready["status"])
        })
    })();
    ctx.kubectl(&["delete", "namespace", CORPUS_NAMESPACE, "--wait=false"])?;
    outcome
}

/// A pod no scheduler serves: stored and Pending for good, on no node (a pod bound to a node
/// that does not exist would be deleted by the pod garbage collector, freeing its MAC).
fn parked_pod_yaml(name: &str, namespace: &str) -> String {
    parked_pod_yaml_with(name, namespace, r#"[{"name":"br1"}]"#)
}

fn parked_pod_yaml_with(name: &str, namespace: &str, networks: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  \
         annotations:\n    {NETWORKS}: '{networks}'\nspec:\n  schedulerName: kmp-none\n  \
         containers:\n  - name: main\n    image: {BUSYBOX_IMAGE}\n"
    )
}

/// The MACs an object was stored with, from `kubectl create -o json`'s answer: a pod's
/// annotation or a VM's interfaces.
fn macs_of_created(v: &Value) -> Vec<String> {
    if let Some(text) = v["metadata"]["annotations"][NETWORKS].as_str() {
        let list: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
        return list
            .iter()
            .filter_map(|e| e["mac"].as_str().map(str::to_string))
            .collect();
    }
    vm_macs(v)
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| !m.is_empty())
        .collect()
}

/// What one object was given: its name and MACs.
type Given = (String, Vec<String>);

/// Creates the objects of `yaml` (documents one after the other, in one `kubectl create`) and
/// returns what each was stored with, or why the create failed.
fn create_for_macs(ctx: &Ctx, name: &str, yaml: &str) -> Result<Vec<Given>, String> {
    let out = ctx
        .cluster
        .kubectl_stdin(&["create", "-o", "json", "-f", "-"], yaml)
        .map_err(|e| format!("{name}: {e:#}"))?;
    serde_json::Deserializer::from_str(&out)
        .into_iter::<Value>()
        .map(|v| {
            let v = v.map_err(|e| format!("{name}: kubectl's answer: {e}"))?;
            let created = v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            Ok((created, macs_of_created(&v)))
        })
        .collect()
}

/// Creates pods `<prefix>-<n>` one after the other until `stop`: what each was given, and the
/// failures.
fn stream_of_creates(
    ctx: &Ctx,
    prefix: &str,
    namespace: &str,
    stop: &std::sync::atomic::AtomicBool,
) -> (Vec<Given>, Vec<String>) {
    let (mut given, mut failures) = (Vec::new(), Vec::new());
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let name = format!("{prefix}-{n}");
        match create_for_macs(ctx, &name, &parked_pod_yaml(&name, namespace)) {
            Ok(g) => given.extend(g),
            Err(e) => failures.push(e),
        }
        n += 1;
    }
    (given, failures)
}

/// Every MAC given twice among `given`, and the objects given none.
fn duplicates_and_empties(given: &[Given]) -> (Vec<String>, Vec<String>) {
    let mut seen = std::collections::BTreeMap::new();
    let (mut duplicates, mut empty) = (Vec::new(), Vec::new());
    for (holder, macs) in given {
        if macs.is_empty() {
            empty.push(holder.clone());
        }
        for mac in macs {
            if let Some(first) = seen.insert(mac.clone(), holder.clone()) {
                duplicates.push(format!("{mac}: {first} and {holder}"));
            }
        }
    }
    (duplicates, empty)
}

/// No admission fails while the managers are rolled out and while one is killed, over a steady
/// stream of creates; then 500 pods and VMs created at once, through both replicas, get 500
/// different MACs.
pub fn rollouts_and_a_killed_replica_fail_no_create_and_500_get_distinct_macs(
    ctx: &mut Ctx,
) -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let ctx: &Ctx = ctx;
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    opted_in_namespace(ctx, STREAM_NAMESPACE)?;
    let outcome = (|| {
        let stop = AtomicBool::new(false);
        let begun = std::time::Instant::now();
        let (mut given, failures) = std::thread::scope(|s| -> Result<_> {
            let stream = s.spawn(|| stream_of_creates(ctx, "stream", STREAM_NAMESPACE, &stop));
            let events = (|| -> Result<()> {
                std::thread::sleep(Duration::from_secs(3));
                ctx.kubectl(&["rollout", "restart", "deployment", MANAGER, "-n", NAMESPACE])?;
                ctx.kubectl(&[
                    "rollout",
                    "status",
                    "deployment",
                    MANAGER,
                    "-n",
                    NAMESPACE,
                    "--timeout=180s",
                ])?;
                println!(
                    "    rolled out {:.1}s after the start",
                    begun.elapsed().as_secs_f64()
                );
                let pods = ctx.get(&[
                    "get",
                    "pods",
                    "-n",
                    NAMESPACE,
                    "-l",
                    "control-plane=mac-controller-manager",
                ])?;
                let victim = pods["items"][0]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                ctx.kubectl(&[
                    "delete",
                    "pod",
                    &victim,
                    "-n",
                    NAMESPACE,
                    "--force",
                    "--grace-period=0",
                ])?;
                println!("    killed {victim}");
                std::thread::sleep(Duration::from_secs(5));
                ctx.kubectl(&[
                    "rollout",
                    "status",
                    "deployment",
                    MANAGER,
                    "-n",
                    NAMESPACE,
                    "--timeout=180s",
                ])?;
                std::thread::sleep(Duration::from_secs(3));
                Ok(())
            })();
            stop.store(true, Ordering::Relaxed);
            let result = stream
                .join()
                .map_err(|_| anyhow::anyhow!("the stream panicked"))?;
            events.map(|()| result)
        })?;
        let created = given.len() + failures.len();
        println!(
            "    {created} creates during a rollout and a killed replica ({:.1}s), {} failed",
            begun.elapsed().as_secs_f64(),
            failures.len()
        );
        check(failures.is_empty(), || {
            format!("failed creates:\n{}", failures.join("\n"))
        })?;

        // 500 at once: 250 pods and 250 VMs from 10 threads, each one `kubectl create` of 50.
        let at_once_begun = std::time::Instant::now();
        let results = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..10 {
                let results = &results;
                s.spawn(move || {
                    let documents: Vec<String> = (0..50)
                        .map(|i| {
                            let n = t * 50 + i;
                            let name = format!("many-{n}");
                            if n % 2 == 0 {
                                parked_pod_yaml(&name, STREAM_NAMESPACE)
                            } else {
                                vm_yaml(&name, &[("br1", "bridge", "br1", None)])
                            }
                        })
                        .collect();
                    let r = create_for_macs(ctx, &format!("many-{t}*"), &documents.join("---\n"));
                    if let Ok(mut all) = results.lock() {
                        all.push(r);
                    }
                });
            }
        });
        let results = results.into_inner().unwrap_or_default();
        println!(
            "    500 created at once in {:.1}s",
            at_once_begun.elapsed().as_secs_f64()
        );
        let (ok, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(|r| r.is_ok());
        let failed: Vec<String> = failed.into_iter().filter_map(|r| r.err()).collect();
        check(failed.is_empty(), || {
            format!("failed creates:\n{}", failed.join("\n"))
        })?;
        let at_once: Vec<Given> = ok.into_iter().filter_map(|r| r.ok()).flatten().collect();
        check(at_once.len() == 500, || {
            format!("{} of the 500 objects were stored", at_once.len())
        })?;
        given.extend(at_once);
        let (duplicates, empty) = duplicates_and_empties(&given);
        let macs: usize = given.iter().map(|(_, m)| m.len()).sum();
        println!(
            "    {macs} MACs given to {} pods and VMs ({created} during the rollouts, 500 at once), {} duplicates",
            given.len(),
            duplicates.len()
        );
        check(empty.is_empty(), || format!("given no MAC: {empty:?}"))?;
        check(duplicates.is_empty(), || duplicates.join("\n"))
    })();
    ctx.kubectl(&[
        "delete",
        "pods",
        "--all",
        "-n",
        STREAM_NAMESPACE,
        "--force",
        "--grace-period=0",
    ])?;
    ctx.kubectl(&["delete", "namespace", STREAM_NAMESPACE, "--wait=false"])?;
    ctx.kubectl(&[
        "delete",
        "virtualmachines.kubevirt.io",
        "-n",
        "default",
        "--all",
        "--wait=false",
    ])?;
    outcome
}

/// The `kmp_mac_collisions` lines of every manager replica's metrics (the port upstream
/// serves them on).
fn collision_gauges(ctx: &Ctx) -> Result<Vec<String>> {
    Ok(manager_metrics(ctx, 8443)?
        .iter()
        .flat_map(|(_, body)| body.lines())
        .filter(|l| l.starts_with("kmp_mac_collisions{"))
        .map(str::to_string)
        .collect())
}

/// A VMI as virt-handler leaves it running: phase and the MAC of its interface.
fn running_vmi_yaml(name: &str, namespace: &str, mac: &str) -> String {
    format!(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec: {{}}\nstatus:\n  phase: Running\n  interfaces:\n  - name: br1\n    mac: \"{mac}\"\n"
    )
}

/// Two running VMIs with one MAC: a Warning event `MACCollision` with upstream's message on
/// each, the gauge `kmp_mac_collisions{mac}` at 2 on every replica, cleared when one goes.
pub fn a_collision_between_running_vmis_is_reported_and_cleared(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    let mac = "02:30:00:00:0e:0e";
    // VMs opted out: the live webhook's selector leaves this namespace alone, and so does the
    // collision report.
    let ignored_mac = "02:30:00:00:0e:0f";
    ctx.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {IGNORED_NAMESPACE}\n  labels:\n    \
         mutatevirtualmachines.kubemacpool.io: ignore\n"
    ))?;
    let outcome = (|| {
        for name in ["kmp-vmi-ignored-a", "kmp-vmi-ignored-b"] {
            ctx.apply(&running_vmi_yaml(name, IGNORED_NAMESPACE, ignored_mac))?;
        }
        for name in ["kmp-vmi-a", "kmp-vmi-b"] {
            ctx.apply(&running_vmi_yaml(name, "default", mac))?;
        }
        let expected =
            format!("MAC {mac}: Collision between vmi/default/kmp-vmi-a, vmi/default/kmp-vmi-b");
        let events = wait_for("the MACCollision events", Duration::from_secs(60), || {
            let events = ctx.get(&[
                "get",
                "events",
                "-n",
                "default",
                "--field-selector",
                "reason=MACCollision",
            ])?;
            let on: BTreeSet<String> = events["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["message"] == expected.as_str() && e["type"] == "Warning")
                .filter_map(|e| e["involvedObject"]["name"].as_str().map(str::to_string))
                .collect();
            Ok((on.len() == 2).then_some(on))
        })?;
        println!("    {expected:?} on {events:?}");
        let gauge = format!("kmp_mac_collisions{{mac=\"{mac}\"}} 2");
        let lines = wait_for("the collision gauge", Duration::from_secs(30), || {
            let lines = collision_gauges(ctx)?;
            Ok((lines.iter().filter(|l| **l == gauge).count() == 2).then_some(lines))
        })?;
        println!("    {lines:?}");
        check(!lines.iter().any(|l| l.contains(ignored_mac)), || {
            format!("VMIs in {IGNORED_NAMESPACE}, opted out, were counted: {lines:?}")
        })?;
        println!(
            "    the same MAC on two VMIs in {IGNORED_NAMESPACE} (VMs opted out): not counted"
        );
        ctx.kubectl(&[
            "delete",
            "virtualmachineinstances.kubevirt.io",
            "kmp-vmi-b",
            "-n",
            "default",
        ])?;
        wait_for(
            "the collision gauge to clear",
            Duration::from_secs(30),
            || Ok(collision_gauges(ctx)?.is_empty().then_some(())),
        )
    })();
    ctx.kubectl(&[
        "delete",
        "virtualmachineinstances.kubevirt.io",
        "-n",
        "default",
        "--all",
        "--wait=false",
    ])?;
    ctx.kubectl(&["delete", "namespace", IGNORED_NAMESPACE, "--wait=false"])?;
    outcome
}

/// A cluster switching from upstream keeps every MAC upstream gave: with the VMs and pods
/// holding 12 of a 16-MAC range created before our allocator runs (as upstream leaves them),
/// new VMs get only the four others, each once, until the range is full, refused with
/// upstream's words.
pub fn macs_given_before_the_switch_are_never_given_again(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    // No KubeMacPool: what upstream left behind is created with no webhook in the way.
    ctx.apply_nac("linuxBridge: {}\n")?;
    wait_for("no kubemacpool webhook", Duration::from_secs(120), || {
        Ok(
            (!ctx.exists("mutatingwebhookconfiguration", "kubemacpool-mutator", None)?)
                .then_some(()),
        )
    })?;
    ctx.apply(&kubevirt_crds())?;
    opted_in_namespace(ctx, SWITCH_NAMESPACE)?;
    let range: Vec<String> = (0..16).map(|i| format!("02:32:00:00:00:{i:02x}")).collect();
    let outcome = (|| {
        for (i, mac) in range[..8].iter().enumerate() {
            ctx.apply(&vm_yaml(
                &format!("kmp-before-{i}"),
                &[("br1", "bridge", "br1", Some(mac.as_str()))],
            ))?;
        }
        let held_by_pod = range[8..12]
            .iter()
            .enumerate()
            .map(|(i, m)| format!(r#"{{"name":"br{i}","mac":"{m}"}}"#))
            .collect::<Vec<_>>()
            .join(",");
        ctx.apply(&parked_pod_yaml_with(
            "kmp-before-pod",
            SWITCH_NAMESPACE,
            &format!("[{held_by_pod}]"),
        ))?;
        ctx.apply_nac(
            "linuxBridge: {}\nkubeMacPool:\n  rangeStart: \"02:32:00:00:00:00\"\n  rangeEnd: \"02:32:00:00:00:0f\"\n",
        )?;
        ctx.kubectl_wait("KubeMacPoolAvailable", "180s")?;
        ctx.wait_rollout("deployment", MANAGER)?;
        // Until the range is full: every MAC given is one of the four free ones, none twice.
        // (Each replica allocates in blocks of its own, here of one MAC each, so the last free
        // MAC may sit in the other replica's block: at least two are given, one per replica.)
        let (mut given, mut full) = (Vec::new(), String::new());
        for i in 0..6 {
            let name = format!("kmp-after-{i}");
            match create_for_macs(
                ctx,
                &name,
                &vm_yaml(&name, &[("br1", "bridge", "br1", None)]),
            ) {
                Ok(created) => given.extend(created.into_iter().flat_map(|(_, macs)| macs)),
                Err(e) => {
                    full = e;
                    break;
                }
            }
        }
        let free: BTreeSet<String> = range[12..].iter().cloned().collect();
        let distinct: BTreeSet<String> = given.iter().cloned().collect();
        println!("    12 of 16 held before the switch; the new VMs got {given:?}");
        check(
            distinct.len() == given.len() && distinct.is_subset(&free) && given.len() >= 2,
            || format!("the new VMs got {given:?}; the free ones were {free:?}"),
        )?;
        check(full.contains("the range is full"), || {
            format!("a VM past the range's end: {full:?}")
        })?;
        println!("    then: {}", full.lines().last().unwrap_or_default());
        Ok(())
    })();
    ctx.kubectl(&[
        "delete",
        "virtualmachines.kubevirt.io",
        "-n",
        "default",
        "--all",
        "--wait=false",
    ])?;
    ctx.kubectl(&[
        "delete",
        "pods",
        "--all",
        "-n",
        SWITCH_NAMESPACE,
        "--force",
        "--grace-period=0",
    ])?;
    ctx.kubectl(&["delete", "namespace", SWITCH_NAMESPACE, "--wait=false"])?;
    outcome
}
