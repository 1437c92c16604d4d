//! `kube-tier up`: starts the cluster tier's cluster and keeps it until SIGINT or SIGTERM, for
//! looking around by hand: `ip netns exec kube-tier-<pid> kubectl --kubeconfig ... get pods -A`.

use std::process::ExitCode;

use nix::sys::signal::{SigSet, Signal};

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() != Some("up") {
        eprintln!(
            "usage: kube-tier up    (as root; after scripts/build-plugins and scripts/kube-build)"
        );
        return ExitCode::FAILURE;
    }
    // Blocked before any thread exists, so every thread leaves the signals to sigwait.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if let Err(e) = signals.thread_block() {
        eprintln!("kube-tier: block signals: {e}");
        return ExitCode::FAILURE;
    }
    let repo = kube_tier::repo();
    let cluster = match kube_tier::kube_bin().and_then(|bin| kube_tier::Cluster::start(&bin, &repo))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kube-tier: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "cluster up; in another shell:\n  ip netns exec {} {} --kubeconfig {} get nodes\nSIGINT or SIGTERM tears it down",
        cluster.node().netns(),
        kube_tier::kube_bin().map(|b| b.join("kubectl").display().to_string()).unwrap_or_default(),
        cluster.kubeconfig().display()
    );
    let _ = signals.wait();
    drop(cluster);
    ExitCode::SUCCESS
}
