//! What lands on the node: the plugins' files, and the bridge marker's capacity.

use super::*;

fn sha256(path: &std::path::Path) -> Result<String> {
    let out = kube_tier::daemon::run(std::process::Command::new("sha256sum").arg(path))?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

pub fn plugins_land_on_the_node(ctx: &mut Ctx) -> Result<()> {
    let dir = ctx.node01().host_path("/opt/cni/bin");
    let record: Value = serde_json::from_slice(&std::fs::read(dir.join(".cni-installer.json"))?)?;
    // `cnv-bridge` and `cnv-tuning`: the names configs written for the upstream operator use.
    for (plugin, source) in [
        ("bridge", "bridge"),
        ("tuning", "tuning"),
        ("cnv-bridge", "bridge"),
        ("cnv-tuning", "tuning"),
        ("ovs", "ovs"),
    ] {
        let installed = sha256(&dir.join(plugin))?;
        let built = sha256(&ctx.repo.join("target/cni-bin").join(source))?;
        check(installed == built, || {
            format!("{plugin} on the node is not the one in our image")
        })?;
        let recorded = record.to_string().contains(&installed);
        check(recorded, || {
            format!("{plugin} is not in the installer's record: {record}")
        })?;
    }
    Ok(())
}

fn capacity(ctx: &Ctx) -> Result<Value> {
    Ok(ctx.node()?["status"]["capacity"].clone())
}

/// The markers publish a bridge when it appears and withdraw it when it goes, on the kernel's
/// link notifications: well before their one-minute resync. The time from the link to the
/// Node's capacity is printed (each read of the Node takes a kubectl call, ~0.1 s).
pub fn marker_follows_bridges(ctx: &mut Ctx) -> Result<()> {
    let linux = "bridge.network.kubevirt.io/br-kt1";
    let ovs = "ovs-cni.network.kubevirt.io/br-kt-ovs";
    // Less than the markers' 60 s resync: only a reaction to the link passes.
    let wait = Duration::from_secs(30);
    let timed = |what: &str, change: &dyn Fn(&Ctx) -> Result<()>, there: bool, key: &str| {
        change(ctx)?;
        let started = std::time::Instant::now();
        wait_for(what, wait, || {
            let cap = capacity(ctx)?;
            Ok((cap.get(key).is_some() == there).then_some(()))
        })
        .with_context(|| format!("capacity: {}", capacity(ctx).unwrap_or_default()))?;
        Ok::<_, anyhow::Error>(started.elapsed().as_secs_f64())
    };
    let linux_added = timed(
        "br-kt1 in the node's capacity",
        &|ctx| ctx.sh("ip link add br-kt1 type bridge").map(drop),
        true,
        linux,
    )?;
    let ovs_added = timed(
        "br-kt-ovs in the node's capacity",
        &|ctx| ctx.cluster.ovs(0).add_br("br-kt-ovs"),
        true,
        ovs,
    )?;
    let linux_removed = timed(
        "br-kt1 gone from the node's capacity",
        &|ctx| ctx.sh("ip link del br-kt1").map(drop),
        false,
        linux,
    )?;
    let ovs_removed = timed(
        "br-kt-ovs gone from the node's capacity",
        &|ctx| ctx.cluster.ovs(0).del_br("br-kt-ovs"),
        false,
        ovs,
    )?;
    println!(
        "    link -> Node capacity: Linux bridge published in {linux_added:.2}s, withdrawn in \
         {linux_removed:.2}s; OVS bridge published in {ovs_added:.2}s, withdrawn in {ovs_removed:.2}s \
         (upstream's markers poll every 60s)"
    );
    Ok(())
}
