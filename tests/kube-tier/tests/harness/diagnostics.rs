//! What a failed test prints after its line, for the reader of the run's log.

use kube_tier::operator::{NAMESPACE, OPERATOR};

use super::ctx::Ctx;

/// What a failed test needs to be understood: the NetworkAddonsConfig's status, the pods, the
/// recent events, the operator replicas' last lines (and their previous run's, when one
/// restarted) and the kubelets' last lines.
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
    operator_logs(ctx);
    for i in 0..c.nodes().len() {
        let name = c.daemon_name(i, "kubelet");
        println!(
            "    --- {name}\n    {}",
            c.log_tail(&name, 8).replace('\n', "\n    ")
        );
    }
}

fn operator_logs(ctx: &Ctx) {
    let c = &ctx.cluster;
    let pods = c
        .kubectl(&["get", "pods", "-n", NAMESPACE, "-o", "name"])
        .unwrap_or_default();
    for pod in pods
        .lines()
        .filter(|p| p.starts_with(&format!("pod/{OPERATOR}-")))
    {
        for (run, previous) in [("", false), (" (previous run)", true)] {
            let mut args = vec!["logs", "-n", NAMESPACE, pod, "--tail=12"];
            if previous {
                args.push("--previous");
            }
            let out = match c.kubectl(&args) {
                Ok(out) => out,
                // A replica that never restarted has no previous run to show.
                Err(_) if previous => continue,
                Err(e) => format!("no log: {e:#}"),
            };
            println!(
                "    --- {pod}{run}\n    {}",
                out.trim_end().replace('\n', "\n    ")
            );
        }
    }
}
