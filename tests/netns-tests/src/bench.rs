//! What the benchmarks share: one child process measured from spawn to reaping, with its own
//! CPU time and peak RSS, and medians.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One finished call: wall time, CPU time (user + system) and peak RSS of the child.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub wall: Duration,
    pub cpu: Duration,
    pub max_rss_kib: i64,
}

/// Spawns `cmd` with `stdin`, and reaps it with wait4 for its own rusage (std's `Child` cannot
/// give it).
///
/// # Panics
/// If the command cannot be spawned or does not exit 0, with its output.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which std's Child cannot see
pub fn measure(mut cmd: Command, stdin: &[u8]) -> Sample {
    let desc = format!("{cmd:?}");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {desc}: {e}"));
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin);
    }
    let mut status = 0;
    // SAFETY: rusage is plain data filled in by the kernel; the pid is our own child's.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = i32::try_from(child.id()).expect("pid fits i32");
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(rc, pid, "wait4 failed for {desc}");
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut out);
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{desc} failed: {out}"
    );
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    Sample {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
    }
}

impl Sample {
    /// Two processes run one after the other: times add up, the peak RSS is the larger one.
    pub fn then(self, next: Sample) -> Sample {
        Sample {
            wall: self.wall + next.wall,
            cpu: self.cpu + next.cpu,
            max_rss_kib: self.max_rss_kib.max(next.max_rss_kib),
        }
    }
}

/// The median of `v`; zero for no samples.
pub fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Rounds to run: `$BENCH_ITERS`, else `default`.
pub fn iterations(default: usize) -> usize {
    std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
