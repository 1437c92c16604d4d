//! No admission lost: a drain, rollouts and a killed replica, and 500 creates at once.

use super::*;

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
    // What the replicas write goes with their Deployment when KubeMacPool is removed (a Lease
    // of an earlier Deployment of that name goes with that one).
    let leases = ctx.get(&["get", "leases", "-n", NAMESPACE, "-l", "app=kubemacpool"])?;
    let claims = ctx.get(&[
        "get",
        "configmap",
        "kubemacpool-mac-claims",
        "-n",
        NAMESPACE,
    ])?;
    let written: Vec<&Value> = leases["items"]
        .as_array()
        .into_iter()
        .flatten()
        .chain([&claims])
        .collect();
    for object in &written {
        check(
            object["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
                && object["metadata"]["ownerReferences"][0]["name"] == MANAGER,
            || {
                format!(
                    "{} is not owned by the manager's Deployment: {}",
                    object["metadata"]["name"], object["metadata"]["ownerReferences"]
                )
            },
        )?;
    }
    println!(
        "    {} Leases and kubemacpool-mac-claims are owned by Deployment {MANAGER}",
        written.len() - 1
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
            .and_then(|e| e.split_once("Error from server"))
            .map_or("evicted", |(_, words)| words.trim())
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
                ctx.wait_rollout("deployment", MANAGER)?;
                println!(
                    "    rolled out {:.1}s after the start",
                    begun.elapsed().as_secs_f64()
                );
                let victim = live_managers(ctx)?.into_iter().next().unwrap_or_default();
                ctx.force_delete_pod(NAMESPACE, &victim)?;
                println!("    killed {victim}");
                std::thread::sleep(Duration::from_secs(5));
                ctx.wait_rollout("deployment", MANAGER)?;
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
    // One deletecollection each, in the API server (kubectl deletes 500 objects one by one, a
    // minute): the pods are on no node, so they go at once.
    for collection in [
        format!("/api/v1/namespaces/{STREAM_NAMESPACE}/pods"),
        "/apis/kubevirt.io/v1/namespaces/default/virtualmachines".to_string(),
    ] {
        ctx.kubectl(&["delete", "--raw", &collection])?;
    }
    ctx.kubectl(&["delete", "namespace", STREAM_NAMESPACE, "--wait=false"])?;
    outcome
}
