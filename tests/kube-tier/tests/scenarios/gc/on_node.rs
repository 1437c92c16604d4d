//! `node-agent gc` run on the node itself: what lost DELs left goes, the pods created
//! while it runs stay.

use super::*;

pub fn gc_collects_what_lost_dels_left(ctx: &mut Ctx) -> Result<()> {
    create_pod(ctx, "gc-live")?;
    let live_ip = wait_pod_ip(ctx, "gc-live")?;
    let live_lease = leases_dir(ctx).join(&live_ip);
    let leak = Leak::make(ctx, "gc-leaked-1")?;
    check(ports(ctx)?.contains(&leak.att.host_veth), || {
        format!(
            "the leaked attachment's port {} is not on the bridge",
            leak.att.host_veth
        )
    })?;
    check(exists(&leak.lease(ctx)), || {
        "the leaked attachment has no lease".into()
    })?;
    let before = ports(ctx)?.len();

    let report = collect(ctx).context("node-agent gc")?;
    println!(
        "    node-agent gc:\n      {}",
        report.trim().replace('\n', "\n      ")
    );
    let after = ports(ctx)?;
    check(!after.contains(&leak.att.host_veth), || {
        format!(
            "the leaked port {} is still on the bridge: {after:?}",
            leak.att.host_veth
        )
    })?;
    check(after.len() + 1 == before, || {
        format!("GC removed more than the leaked port: {before} ports before, {after:?} after")
    })?;
    check(!exists(&leak.lease(ctx)), || {
        format!("the leaked lease {} is left", leak.lease(ctx).display())
    })?;
    let chains = Chains::on_node01(ctx)?;
    check(chains == leak.chains_before, || {
        format!(
            "the leaked attachment's nftables chains are left: {:?} before it, {chains:?} after GC",
            leak.chains_before
        )
    })?;
    for what in [
        format!("collected port {}", leak.att.host_veth),
        "collected spoof check of attachment".to_string(),
        "collected masquerade of attachment".to_string(),
    ] {
        check(report.contains(&what), || {
            format!("the agent did not say {what:?}:\n{report}")
        })?;
    }
    check(exists(&live_lease), || {
        "the live pod's lease was collected".into()
    })?;
    reaches_its_gateway(ctx, "gc-live", "after the collection")?;
    delete_pod(ctx, "gc-live")?;
    Ok(())
}

pub fn gc_keeps_pods_created_while_it_runs(ctx: &mut Ctx) -> Result<()> {
    let stop = AtomicBool::new(false);
    let ctx = &*ctx;
    let (rounds, pods) = std::thread::scope(|s| -> Result<(usize, Vec<String>)> {
        let collector = s.spawn(|| -> Result<usize> {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                collect(ctx)?;
                n += 1;
            }
            Ok(n)
        });
        let made: Result<Vec<String>> = (0..3)
            .map(|i| {
                let name = format!("gc-new-{i}");
                create_pod(ctx, &name)?;
                wait_pod_ip(ctx, &name).map(|_| name)
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        let rounds = collector.join().expect("the collector thread")?;
        Ok((rounds, made?))
    })?;
    // One more round once every pod runs: each must keep what it has.
    collect(ctx)?;
    for pod in &pods {
        let ip = wait_pod_ip(ctx, pod)?;
        check(leases_dir(ctx).join(&ip).exists(), || {
            format!("{pod}'s lease of {ip} was collected")
        })?;
        reaches_its_gateway(ctx, pod, &format!("after {rounds} collection rounds"))?;
    }
    println!(
        "    {rounds} collection rounds ran while {} pods started",
        pods.len()
    );
    for pod in &pods {
        delete_pod(ctx, pod)?;
    }
    Ok(())
}
