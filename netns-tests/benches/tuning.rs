//! tuning ADD+DEL, ours against Debian's Go reference plugin, side by side in one run.
//!
//! Both get the same config (mtu, promisc and one sysctl) on a veth in a namespace of this
//! benchmark's own; runs alternate between the two so machine noise hits both alike. Prints
//! medians and ratios against the goals; it never fails on a ratio (machines are noisy): it
//! fails only when a call fails.
//!
//! `cargo bench -p netns-tests --bench tuning` (as root; BENCH_ITERS sets the rounds, default 200).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use netns_tests::bench::{iterations, measure, median, Sample};
use netns_tests::{go_plugin, our_plugin, require_root, unique_name, Netns};
use serde_json::json;

const IFNAME: &str = "net1";

/// A state directory under /run, removed at the end.
struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `binary` as a runtime does (empty environment but `env`), measured.
fn call(binary: &Path, env: &[(&str, &str)], stdin: &[u8]) -> Sample {
    let mut cmd = Command::new(binary);
    cmd.env_clear().envs(env.iter().copied());
    measure(cmd, stdin)
}

struct Contender {
    name: &'static str,
    binary: PathBuf,
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
    rss_kib: i64,
}

fn main() {
    require_root();
    let iters = iterations(200);
    let ns = Netns::new("bench-tuning");
    ns.exec_ok(
        "ip",
        &[
            "link", "add", IFNAME, "type", "veth", "peer", "name", "peer1",
        ],
    );
    // Where the default dataDir (/run/cni/tuning) lives: tmpfs, as on a node.
    let data = RunDir(PathBuf::from(format!(
        "/run/{}",
        unique_name("bench-tuning")
    )));
    let mac = ns.link(IFNAME).and_then(|l| l.mac()).unwrap_or_default();
    // 1.0.0: the newest version Debian's Go tuning speaks.
    let conf = json!({
        "cniVersion": "1.0.0",
        "name": "benchnet",
        "type": "tuning",
        "mtu": 1400,
        "promisc": true,
        "sysctl": {"net.ipv4.conf.IFNAME.forwarding": "1"},
        "dataDir": data.0,
        "prevResult": {
            "cniVersion": "1.0.0",
            "interfaces": [{"name": IFNAME, "mac": mac, "sandbox": ns.path_str()}]
        }
    });
    let stdin = conf.to_string();
    let container_id = unique_name("bench");
    let env = |verb: &'static str| -> Vec<(&str, String)> {
        vec![
            ("CNI_COMMAND", verb.to_string()),
            ("CNI_CONTAINERID", container_id.clone()),
            ("CNI_NETNS", ns.path_str().to_string()),
            ("CNI_IFNAME", IFNAME.to_string()),
            ("CNI_PATH", "/usr/lib/cni".to_string()),
        ]
    };
    let add_env = env("ADD");
    let del_env = env("DEL");
    let add: Vec<(&str, &str)> = add_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let del: Vec<(&str, &str)> = del_env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let mut contenders = [
        Contender {
            name: "ours (Rust)",
            binary: our_plugin("tuning"),
            wall: vec![],
            cpu: vec![],
            rss_kib: 0,
        },
        Contender {
            name: "Go reference",
            binary: go_plugin("tuning"),
            wall: vec![],
            cpu: vec![],
            rss_kib: 0,
        },
    ];
    // Warm the page cache for both binaries before measuring.
    for c in &contenders {
        call(&c.binary, &add, stdin.as_bytes());
        call(&c.binary, &del, stdin.as_bytes());
    }
    for i in 0..iters {
        // Alternate who goes first so drift and cache effects do not favour one side.
        let order: [usize; 2] = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for idx in order {
            let c = &mut contenders[idx];
            let a = call(&c.binary, &add, stdin.as_bytes());
            let d = call(&c.binary, &del, stdin.as_bytes());
            c.wall.push(a.wall + d.wall);
            c.cpu.push(a.cpu + d.cpu);
            c.rss_kib = c.rss_kib.max(a.max_rss_kib).max(d.max_rss_kib);
        }
    }
    let version_rss = |b: &Path| {
        call(
            b,
            &[("CNI_COMMAND", "VERSION")],
            br#"{"cniVersion":"1.0.0"}"#,
        )
        .max_rss_kib
    };

    println!("tuning ADD+DEL (mtu, promisc, one sysctl), {iters} rounds each, medians:");
    println!(
        "{:<14} {:>12} {:>12} {:>14} {:>14} {:>12}",
        "", "wall", "cpu", "peak RSS", "RSS VERSION", "size"
    );
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let mut sizes = Vec::new();
    for c in contenders {
        let size = std::fs::metadata(&c.binary).map(|m| m.len()).unwrap_or(0);
        let (w, cpu) = (median(&c.wall), median(&c.cpu));
        println!(
            "{:<14} {:>10.2}ms {:>10.2}ms {:>11} KiB {:>11} KiB {:>12}",
            c.name,
            w.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3,
            c.rss_kib,
            version_rss(&c.binary),
            size
        );
        walls.push(w);
        cpus.push(cpu);
        sizes.push(size);
    }
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let verdict = |ok: bool| if ok { "meets goal" } else { "MISSES goal" };
    let wall_ratio = ratio(walls[0], walls[1]);
    let cpu_ratio = ratio(cpus[0], cpus[1]);
    println!(
        "wall ratio ours/Go: {wall_ratio:.2}x (goal <= 0.35x: {})",
        verdict(wall_ratio <= 0.35)
    );
    println!(
        "cpu ratio ours/Go:  {cpu_ratio:.2}x (goal <= 0.40x: {})",
        verdict(cpu_ratio <= 0.40)
    );
    println!(
        "static binary: {} bytes = {:.2} MB (goal <= 1.5 MB: {})",
        sizes[0],
        sizes[0] as f64 / 1e6,
        verdict(sizes[0] as f64 <= 1.5e6)
    );
}
