//! `network-addons-operator render --diff` against the live cluster: what a CR change would do,
//! shown before it is applied and without applying it.

use std::process::Command;

use anyhow::{Context, Result};

use kube_tier::daemon::run;

use super::operator::{LINUX_BRIDGE_DS, OVS_DS, OWN_SPEC};
use crate::{check, Ctx, NAMESPACE, OPERATOR};

/// `render --diff -f <spec>` as the operator in the cluster would see it: its environment, and
/// the cluster through the admin kubeconfig.
fn render_diff(ctx: &Ctx, spec: &str) -> Result<String> {
    let file = ctx.cluster.base().join("diff-cr.yaml");
    let indented: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    std::fs::write(
        &file,
        format!(
            "apiVersion: networkaddonsoperator.network.kubevirt.io/v1\nkind: NetworkAddonsConfig\n\
             metadata:\n  name: cluster\nspec:\n{indented}"
        ),
    )?;
    let deployment = ctx.get(&["get", "deployment", OPERATOR, "-n", NAMESPACE])?;
    let mut cmd = Command::new(ctx.repo.join("target/operator/network-addons-operator"));
    cmd.args(["render", "--diff", "-f"])
        .arg(&file)
        .env("KUBECONFIG", ctx.cluster.kubeconfig())
        .env("OPERAND_NAMESPACE", NAMESPACE);
    for var in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
            cmd.env(name, value);
        }
    }
    run(&mut cmd).context("render --diff")
}

pub fn render_diff_shows_a_change_without_making_it(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.start_from(OWN_SPEC)?;

    let same = render_diff(ctx, OWN_SPEC)?;
    check(
        same.contains("0 to create, 0 to change, 0 to delete, 0 refused"),
        || format!("the applied spec itself shows changes:\n{same}"),
    )?;

    // ovs off, macvtap on
    let report = render_diff(ctx, "linuxBridge: {}\nmacvtap: {}\n")?;
    println!("    {}", report.lines().last().unwrap_or_default());
    for line in [
        "+ create DaemonSet cluster-network-addons/macvtap-cni".to_string(),
        format!("- delete DaemonSet cluster-network-addons/{OVS_DS}"),
    ] {
        check(report.contains(&line), || {
            format!("no {line:?} in:\n{report}")
        })?;
    }
    check(
        !report.contains(&format!(
            "DaemonSet cluster-network-addons/{LINUX_BRIDGE_DS}"
        )),
        || format!("the unchanged bridge DaemonSet shows as changed:\n{report}"),
    )?;
    // nothing happened
    check(ctx.exists("daemonset", OVS_DS, Some(NAMESPACE))?, || {
        "the dry run deleted ovs".into()
    })?;
    check(
        !ctx.exists("daemonset", "macvtap-cni", Some(NAMESPACE))?,
        || "the dry run created macvtap".into(),
    )
}
