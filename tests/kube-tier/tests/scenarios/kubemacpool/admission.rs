//! What the webhooks write: MACs for pods on both nodes and for VMs, refusals in upstream's
//! words, and a range change applied without a restart.

use std::time::Instant;

use super::*;

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
        check(
            refused.contains("Network Attachment Selection Annotation JSON format"),
            || format!("malformed JSON was not refused clearly: {refused:?}"),
        )?;
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
    delete_vms(ctx)?;
    outcome
}

const RANGE_CONFIG: &str = "kubemacpool-mac-range-config";

/// Creates pod `name` on `br1` in the range scenario's namespace, and returns the networks
/// KubeMacPool's webhook wrote into it. An earlier pod of that name is force-deleted first: the
/// namespace has no NAD, so the pod never starts, and a graceful delete would wait (up to half a
/// minute here) for the kubelet to give up a sandbox Multus refuses.
fn range_pod(ctx: &Ctx, name: &str) -> Result<String> {
    ctx.force_delete_pod(RANGE_NAMESPACE, name)?;
    ctx.apply(&pod_yaml(
        name,
        RANGE_NAMESPACE,
        "node01",
        r#"[{"name":"br1"}]"#,
    ))?;
    networks_of(ctx, name, RANGE_NAMESPACE)
}

/// A ConfigMap edited to a range that cannot be used, as upstream reports it: a Warning event
/// on each manager's pod (`InvalidRange` for a value that is not a MAC, `UpdateFailed` for ends
/// out of order), which `kubectl describe pod` shows; the range before it keeps serving.
fn a_bad_range_is_an_event_on_every_manager(ctx: &Ctx) -> Result<()> {
    let managers: BTreeSet<String> = live_managers_field(ctx, "/metadata/uid")?
        .into_iter()
        .collect();
    let set_range = |start: &str, end: &str| {
        let data = serde_json::json!({"data": {"RANGE_START": start, "RANGE_END": end}});
        ctx.kubectl(&[
            "patch",
            "configmap",
            RANGE_CONFIG,
            "-n",
            NAMESPACE,
            "--type",
            "merge",
            "-p",
            &data.to_string(),
        ])
        .map(drop)
    };
    let cases = [
        ("02:31:00:00:00:zz", "02:31:00:00:0f:ff", "InvalidRange"),
        ("02:31:00:00:0f:ff", "02:31:00:00:00:00", "UpdateFailed"),
    ];
    let outcome = cases.iter().try_for_each(|(start, end, reason)| {
        set_range(start, end)?;
        let patched = Instant::now();
        let on = wait_for(
            &format!("{reason} events on every manager"),
            Duration::from_secs(60),
            || {
                let events = ctx.get(&[
                    "get",
                    "events",
                    "-n",
                    NAMESPACE,
                    "--field-selector",
                    &format!("reason={reason},involvedObject.kind=Pod"),
                ])?;
                let on: BTreeSet<String> = events["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|e| e["type"] == "Warning")
                    .filter(|e| e["message"].as_str().is_some_and(|m| m.contains(start)))
                    .filter_map(|e| e["involvedObject"]["uid"].as_str().map(str::to_string))
                    .collect();
                Ok(managers.is_subset(&on).then_some(on))
            },
        )?;
        let events_after = patched.elapsed();
        // The range before it still serves.
        let written = range_pod(ctx, "kmp-bad-range")?;
        println!(
            "    RANGE_START {start:?}, RANGE_END {end:?}: {reason} on {} manager pods {:.1}s \
             after the patch; a pod's MAC from the range before {:.1}s after it",
            on.len(),
            events_after.as_secs_f64(),
            patched.elapsed().as_secs_f64()
        );
        check(written.contains("02:31:00:00:0"), || {
            format!("with the bad range in place, a pod got {written}")
        })
    });
    // As the operator renders it for the NetworkAddonsConfig above.
    let restored = set_range("02:31:00:00:00:00", "02:31:00:00:0f:ff");
    outcome.and(restored)
}

/// A range change reaches the running managers through the ConfigMap: the next pod's MAC is
/// from the new range, and no manager pod was replaced. A bad range in the ConfigMap then is
/// an event on the managers' pods, and the range before it keeps serving.
pub fn a_range_change_applies_without_a_restart(ctx: &mut Ctx) -> Result<()> {
    let started = Instant::now();
    deploy(ctx)?;
    println!(
        "    KubeMacPool deployed and rolled out {:.1}s after the start",
        started.elapsed().as_secs_f64()
    );
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
    let changed = Instant::now();
    let outcome = (|| {
        let mac = wait_for(
            "a pod's MAC from the new range",
            Duration::from_secs(60),
            || {
                let written = range_pod(ctx, "kmp-new-range")?;
                Ok(written.contains("02:31:00:00:0").then_some(written))
            },
        )?;
        println!(
            "    {:.1}s after the change: {mac}",
            changed.elapsed().as_secs_f64()
        );
        let after = managers(ctx)?;
        check(before == after, || {
            format!("the managers were replaced: {before:?} then {after:?}")
        })?;
        a_bad_range_is_an_event_on_every_manager(ctx)
    })();
    ctx.kubectl(&["delete", "namespace", RANGE_NAMESPACE, "--wait=false"])?;
    outcome
}
