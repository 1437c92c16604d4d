//! The runner: one cluster for every test, the tests in the order given, a failure's
//! diagnostics after its line, and teardown as the last test. It prints libtest's lines (`running
//! N tests`, `test NAME ... ok`, `test result: ...`) so the run's summary counts them.

pub mod ctx;
pub mod diagnostics;
pub mod metrics;
pub mod nac;
pub mod steps;

use std::panic::AssertUnwindSafe;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, ensure, Result};

use kube_tier::cluster::node_count_from_env;
use kube_tier::Cluster;

use ctx::Ctx;
use diagnostics::diagnostics;

/// One test: it fails by returning an error (see [`check`] and [`fail`]) or by panicking.
pub type Test = fn(&mut Ctx) -> Result<()>;

/// Fails the test with `msg`.
pub fn fail<T>(msg: String) -> Result<T> {
    bail!(msg)
}

/// Fails the test with `msg()` unless `cond` holds.
pub fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<()> {
    ensure!(cond, "{}", msg());
    Ok(())
}

/// The last test of every run: teardown leaves nothing behind.
const TEARDOWN_TEST: &str = "the_tier_leaves_the_machine_as_it_found_it";

/// Runs the tests whose names contain one of the command line's arguments (all of them when it
/// names none) on a cluster started for the run, then tears it down.
pub fn run(tests: &[(&str, Test)]) -> ExitCode {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<&(&str, Test)> = tests
        .iter()
        .filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
        .collect();
    // The teardown's check runs after the selected tests, whatever they are.
    println!("\nrunning {} tests", selected.len() + 1);
    let started = Instant::now();
    if !nix::unistd::Uid::effective().is_root() {
        println!("the cluster tier needs root (it runs a kubelet and containerd)");
        return summary(0, selected.len() + 1, started);
    }
    let repo = kube_tier::repo();
    let cluster = match node_count_from_env()
        .and_then(|nodes| Ok((kube_tier::kube_bin()?, nodes)))
        .and_then(|(bin, nodes)| Cluster::start(&bin, &repo, nodes))
    {
        Ok(c) => c,
        Err(e) => {
            println!("the cluster did not start: {e:#}");
            return summary(0, selected.len() + 1, started);
        }
    };
    let mut ctx = Ctx::new(cluster, repo);
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in selected {
        if run_one(&mut ctx, name, *test) {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    if teardown(&mut ctx) {
        passed += 1;
    } else {
        failed += 1;
    }
    summary(passed, failed, started)
}

/// Runs one test and prints its line, and the diagnostics when it fails; true when it passed.
fn run_one(ctx: &mut Ctx, name: &str, test: Test) -> bool {
    let t = Instant::now();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| test(ctx)));
    let secs = t.elapsed().as_secs_f64();
    match outcome {
        Ok(Ok(())) => {
            println!("test {name} ... ok ({secs:.1} s)");
            return true;
        }
        Ok(Err(e)) => println!("test {name} ... FAILED ({secs:.1} s)\n    {e:#}"),
        Err(_) => println!("test {name} ... FAILED (panicked, {secs:.1} s)"),
    }
    diagnostics(ctx);
    false
}

/// Teardown is a test of its own: the machine is as it was before the start (processes,
/// mounts, namespaces, cgroups, sysctls, and the paths the tier may touch outside its base
/// directory). True when it passed.
fn teardown(ctx: &mut Ctx) -> bool {
    let t = Instant::now();
    let errors = ctx.cluster.teardown();
    let secs = t.elapsed().as_secs_f64();
    if errors.is_empty() {
        println!("test {TEARDOWN_TEST} ... ok ({secs:.1} s)");
        true
    } else {
        println!(
            "test {TEARDOWN_TEST} ... FAILED ({secs:.1} s)\n    {}",
            errors.join("\n    ")
        );
        false
    }
}

fn summary(passed: usize, failed: usize, started: Instant) -> ExitCode {
    let ok = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {ok}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in {:.2}s\n",
        started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
