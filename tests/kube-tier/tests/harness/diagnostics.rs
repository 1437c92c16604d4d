//! What a failed test prints after its line, for the reader of the run's log.

use super::ctx::Ctx;

/// What a failed test needs to be understood: the NetworkAddonsConfig's status, the pods, the
/// recent events and the kubelets' last lines.
pub fn diagnostics(ctx: &Ctx) {
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
