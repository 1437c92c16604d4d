//! A switch from upstream's allocator: no MAC it gave is given again.

use super::*;

/// A cluster switching from upstream keeps every MAC upstream gave: with the VMs and pods
/// holding 12 of a 16-MAC range created before our allocator runs (as upstream leaves them),
/// new VMs get the four others, each once, then the range is full, refused with upstream's
/// words.
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
        // Until the range is full: each of the four free MACs is given, once. (Each replica
        // allocates in blocks of its own, here of one MAC each: the last free MAC may sit in
        // the other replica's block, which gives it back when asked.)
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
        check(distinct.len() == given.len() && distinct == free, || {
            format!("the new VMs got {given:?}; the free ones were {free:?}")
        })?;
        check(full.contains("the range is full"), || {
            format!("a VM past the range's end: {full:?}")
        })?;
        println!("    then: {}", full.lines().last().unwrap_or_default());
        Ok(())
    })();
    delete_vms(ctx)?;
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
