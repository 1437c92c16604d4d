//! What the pod start benchmarks read off a cluster: each sandbox's creation in containerd's
//! log, pods seen Running, whose bridge made an interface, failed sandboxes, and the medians
//! and 95th percentiles they print.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::daemon::wait_for;
use crate::node::Node;
use crate::Cluster;

/// The median and 95th percentile of a side's samples, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub median: f64,
    pub p95: f64,
    pub count: usize,
}

impl Latency {
    pub fn of(samples: &[f64]) -> Latency {
        Latency {
            median: percentile(samples, 0.5),
            p95: percentile(samples, 0.95),
            count: samples.len(),
        }
    }
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "median {:.0} ms, p95 {:.0} ms ({} pods)",
            self.median, self.p95, self.count
        )
    }
}

/// The value below which a share `p` (0 to 1) of `values` lie (nearest rank); NaN for none.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let at = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(at).copied().unwrap_or(f64::NAN)
}

/// Waits until pod `name` in `default` is Running.
pub fn wait_running(cluster: &Cluster, name: &str) -> Result<()> {
    wait_for(&format!("{name} Running"), Duration::from_secs(120), || {
        let phase = cluster.kubectl(&["get", "pod", name, "-o", "jsonpath={.status.phase}"])?;
        Ok((phase.trim() == "Running").then_some(()))
    })
}

/// Whether our bridge made the host side of `pod`'s `ifname` on `node`: ours names its veths
/// in their alias, the Go plugin does not.
pub fn veth_is_ours(cluster: &Cluster, node: &Node, pod: &str, ifname: &str) -> Result<bool> {
    let iflink = cluster.kubectl(&[
        "exec",
        pod,
        "--",
        "cat",
        &format!("/sys/class/net/{ifname}/iflink"),
    ])?;
    let index: u64 = iflink
        .trim()
        .parse()
        .with_context(|| format!("{pod}'s {ifname} iflink"))?;
    let links: Vec<Value> = serde_json::from_str(&node.sh("ip -j -d link show")?)?;
    let host = links
        .iter()
        .find(|l| l["ifindex"].as_u64() == Some(index))
        .with_context(|| format!("{pod}'s host veth of {ifname} (ifindex {index})"))?;
    Ok(host["ifalias"]
        .as_str()
        .is_some_and(|a| a.starts_with("cni-bridge ")))
}

/// How many times a sandbox of a pod whose name starts with `prefix` failed to be created
/// (the pods' `FailedCreatePodSandBox` events).
pub fn sandbox_failures(cluster: &Cluster, prefix: &str) -> Result<usize> {
    let events = cluster.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "reason=FailedCreatePodSandBox",
        "-o",
        "custom-columns=POD:.involvedObject.name,COUNT:.count",
        "--no-headers",
    ])?;
    Ok(events
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<usize>().ok())
        .sum())
}

/// Each pod's sandbox creation in milliseconds, from containerd's `RunPodSandbox` line to its
/// `returns sandbox id` line (the last attempt of each pod), read from containerd's log.
pub fn sandbox_times(log: &Path) -> Result<BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(log).with_context(|| format!("read {}", log.display()))?;
    Ok(sandbox_times_in(&text))
}

fn sandbox_times_in(text: &str) -> BTreeMap<String, f64> {
    let mut started: BTreeMap<String, f64> = BTreeMap::new();
    let mut took = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line
            .split("RunPodSandbox for &PodSandboxMetadata{Name:")
            .nth(1)
        else {
            continue;
        };
        let (Some(name), Some(at)) = (rest.split(',').next(), timestamp(line)) else {
            continue;
        };
        if line.contains("returns sandbox id") {
            if let Some(t0) = started.remove(name) {
                took.insert(name.to_string(), (at - t0) * 1000.0);
            }
        } else if !line.contains("failed") {
            started.insert(name.to_string(), at);
        }
    }
    took
}

/// The sandbox times of `names`, failing when containerd's log has fewer than half of them.
pub fn sandbox_times_of(times: &BTreeMap<String, f64>, names: &[String]) -> Result<Vec<f64>> {
    let found: Vec<f64> = names.iter().filter_map(|n| times.get(n).copied()).collect();
    if found.len() < names.len() / 2 {
        bail!(
            "containerd's log times {} of {} sandboxes",
            found.len(),
            names.len()
        );
    }
    Ok(found)
}

/// Seconds since the epoch of a containerd log line's `time="YYYY-MM-DDTHH:MM:SS.fffZ"`.
fn timestamp(line: &str) -> Option<f64> {
    let t = line.strip_prefix("time=\"")?.split('"').next()?;
    let (date, time) = t.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut hms = time.split(':');
    let (h, min) = (
        hms.next()?.parse::<f64>().ok()?,
        hms.next()?.parse::<f64>().ok()?,
    );
    let s = hms.next()?.parse::<f64>().ok()?;
    Some(days_from_civil(y, m, day) as f64 * 86400.0 + h * 3600.0 + min * 60.0 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_is_timed_from_its_last_attempt_to_its_id() {
        let log = "\
time=\"2026-12-06T08:00:00.000Z\" level=info msg=\"RunPodSandbox for &PodSandboxMetadata{Name:p1,Uid:a,}\"
time=\"2026-12-06T08:00:01.000Z\" level=error msg=\"RunPodSandbox for &PodSandboxMetadata{Name:p1,Uid:a,} failed, error\"
time=\"2026-12-06T08:00:02.000Z\" level=info msg=\"RunPodSandbox for &PodSandboxMetadata{Name:p1,Uid:a,}\"
time=\"2026-12-06T08:00:02.250Z\" level=info msg=\"RunPodSandbox for &PodSandboxMetadata{Name:p1,Uid:a,} returns sandbox id \\\"x\\\"\"
";
        let times = sandbox_times_in(log);
        assert_eq!(times.len(), 1);
        assert!((times["p1"] - 250.0).abs() < 0.01, "{times:?}");
    }

    #[test]
    fn a_timestamp_counts_days_across_a_month_end() {
        let a = timestamp("time=\"2026-02-28T23:59:59.500Z\" x").expect("a timestamp");
        let b = timestamp("time=\"2026-03-01T00:00:00.500Z\" x").expect("a timestamp");
        assert!((b - a - 1.0).abs() < 1e-6);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
    }

    #[test]
    fn the_median_and_p95_are_nearest_ranks() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let l = Latency::of(&v);
        assert_eq!((l.median, l.p95, l.count), (51.0, 95.0, 100));
        assert!(percentile(&[], 0.5).is_nan());
    }
}
