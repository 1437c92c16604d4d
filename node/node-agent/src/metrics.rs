//! `run --metrics-address`: what the agent's garbage collection did, for Prometheus, at
//! `/metrics` (and `/healthz`):
//! - `cni_installer_gc_rounds_total{result}`: rounds by result: `collected` (ran every GC),
//!   `deferred` (a pod's sandbox was being made), `failed` (the runtime or the API server could
//!   not be asked, or the round timed out);
//! - `cni_installer_gc_collected_total`: what the plugins' GC removed, one per port, lease,
//!   rule set, OVS port, state file or tap node;
//! - `cni_installer_gc_plugin_failures_total`: plugin GC calls that failed;
//! - `cni_installer_gc_last_collection_timestamp_seconds`: when a round last ran every GC.
//!
//! The names keep the agent's earlier name: dashboards and alerts select the series by name, and
//! renamed series would start afresh at the upgrade.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use http::StatusCode;
use http_endpoint::Reply;

use crate::gc::round::Report;

/// The counters; shared by the collection loop, which updates them, and the endpoint.
#[derive(Debug, Default)]
pub struct Metrics {
    collected_rounds: AtomicU64,
    deferred_rounds: AtomicU64,
    failed_rounds: AtomicU64,
    collected: AtomicU64,
    plugin_failures: AtomicU64,
    last_collection: AtomicU64,
}

impl Metrics {
    /// A round that ended with `report`.
    pub fn round(&self, report: &Report) {
        if report.deferred.is_some() {
            self.deferred_rounds.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.collected_rounds.fetch_add(1, Ordering::Relaxed);
        self.collected
            .fetch_add(report.collected.len() as u64, Ordering::Relaxed);
        self.plugin_failures
            .fetch_add(report.failures.len() as u64, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.last_collection.store(now, Ordering::Relaxed);
    }

    /// A round that could not run (or did not end in time).
    pub fn failed_round(&self) {
        self.failed_rounds.fetch_add(1, Ordering::Relaxed);
    }

    /// The metrics in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut head = |name: &str, kind: &str, help: &str| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        };
        head(
            "cni_installer_gc_rounds_total",
            "counter",
            "Garbage collection rounds, by result",
        );
        for (result, counter) in [
            ("collected", &self.collected_rounds),
            ("deferred", &self.deferred_rounds),
            ("failed", &self.failed_rounds),
        ] {
            out.push_str(&format!(
                "cni_installer_gc_rounds_total{{result=\"{result}\"}} {}\n",
                get(counter)
            ));
        }
        for (name, kind, help, value) in [
            (
                "cni_installer_gc_collected_total",
                "counter",
                "What the plugins' garbage collection removed",
                get(&self.collected),
            ),
            (
                "cni_installer_gc_plugin_failures_total",
                "counter",
                "Plugin garbage collection calls that failed",
                get(&self.plugin_failures),
            ),
            (
                "cni_installer_gc_last_collection_timestamp_seconds",
                "gauge",
                "When a round last ran every garbage collection (Unix time; 0: never)",
                get(&self.last_collection),
            ),
        ] {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        }
        out
    }

    /// The endpoint's answer to `path`.
    pub fn answer(&self, path: &str) -> Reply {
        match path {
            "/metrics" => Reply::metrics(self.render()),
            "/healthz" => Reply::text(StatusCode::OK, "ok\n"),
            _ => Reply::not_found(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, name: &str) -> Option<String> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ').map(str::to_string))
    }

    #[test]
    fn rounds_count_by_result_and_collections_by_thing() {
        let m = Metrics::default();
        m.round(&Report {
            networks: 2,
            collected: vec!["a: port veth1".into(), "a: lease 10.0.0.2".into()],
            failures: vec!["b: ovs GC failed".into()],
            ..Report::default()
        });
        m.round(&Report {
            deferred: Some("pod x has no sandbox yet".into()),
            ..Report::default()
        });
        m.failed_round();
        let text = m.render();
        let rounds = |result: &str| {
            sample(
                &text,
                &format!("cni_installer_gc_rounds_total{{result=\"{result}\"}}"),
            )
        };
        assert_eq!(rounds("collected").as_deref(), Some("1"));
        assert_eq!(rounds("deferred").as_deref(), Some("1"));
        assert_eq!(rounds("failed").as_deref(), Some("1"));
        assert_eq!(
            sample(&text, "cni_installer_gc_collected_total").as_deref(),
            Some("2")
        );
        assert_eq!(
            sample(&text, "cni_installer_gc_plugin_failures_total").as_deref(),
            Some("1")
        );
        assert_ne!(
            sample(&text, "cni_installer_gc_last_collection_timestamp_seconds").as_deref(),
            Some("0")
        );
    }

    #[test]
    fn every_metric_has_help_and_type_before_its_samples() {
        assert_eq!(
            http_endpoint::undeclared_samples(&Metrics::default().render()),
            Vec::<String>::new()
        );
    }
}
