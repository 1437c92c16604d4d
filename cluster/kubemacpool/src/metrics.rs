//! The manager's metrics, in Prometheus' text format.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::state::Shared;

pub fn render(shared: &Shared) -> String {
    let (held, pending, blocks) = {
        let pool = shared.pool();
        let (held, pending) = pool.counts();
        (held, pending, pool.blocks().len())
    };
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    };
    metric(
        "kubemacpool_macs_held",
        "gauge",
        "MACs named by stored pods and virtual machines.",
        held.to_string(),
    );
    metric(
        "kubemacpool_macs_pending",
        "gauge",
        "MACs handed out by this replica whose objects are not stored yet.",
        pending.to_string(),
    );
    metric(
        "kubemacpool_blocks_claimed",
        "gauge",
        "Blocks of the range this replica allocates from.",
        blocks.to_string(),
    );
    metric(
        "kubemacpool_macs_allocated_total",
        "counter",
        "MACs this replica handed out.",
        shared.allocated.load(Ordering::Relaxed).to_string(),
    );
    metric(
        "kubemacpool_admissions_denied_total",
        "counter",
        "Admissions this replica refused.",
        shared.denied.load(Ordering::Relaxed).to_string(),
    );
    metric(
        "kubemacpool_range_full_total",
        "counter",
        "Admissions refused because the range is full.",
        shared.range_full.load(Ordering::Relaxed).to_string(),
    );
    let micros = shared.admission_micros.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "# HELP kubemacpool_admission_duration_seconds Time this replica took to answer admissions, from the request's headers to the response's body.\n\
         # TYPE kubemacpool_admission_duration_seconds summary\n\
         kubemacpool_admission_duration_seconds_sum {}.{:06}\n\
         kubemacpool_admission_duration_seconds_count {}",
        micros / 1_000_000,
        micros % 1_000_000,
        shared.admissions.load(Ordering::Relaxed)
    );
    out.push_str(&shared.collisions.render());
    // Upstream's deprecated counter, which the operator's KubeMacPoolDuplicateMacsFound alert
    // reads; from the collision reporter only, as the gauge above, so that its sum over the
    // replicas is the count.
    out.push_str(
        "# HELP kubevirt_kmp_duplicate_macs [DEPRECATED] MACs of the VMs stored at start that another stored object also names. Use kmp_mac_collisions instead.\n\
         # TYPE kubevirt_kmp_duplicate_macs counter\n",
    );
    if shared.collisions.is_reporting() {
        let _ = writeln!(
            out,
            "kubevirt_kmp_duplicate_macs {}",
            shared.duplicate_macs.load(Ordering::Relaxed)
        );
    }
    out
}
