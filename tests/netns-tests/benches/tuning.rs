//! tuning ADD+DEL, ours against the Go reference plugin, side by side in one run, with the
//! state files on a tmpfs (as on a node) and on the disk.
//!
//! Both get the same config (mtu, promisc and one sysctl) on a veth in a namespace of this
//! benchmark's own. tuning keeps a state file per attachment in its dataDir, `/run/cni/tuning`
//! by default: a tmpfs on a node, gone at reboot with the attachments it describes. Where `/run`
//! is not a tmpfs (it is the root file system on the project's machines), a benchmark that put
//! the files there would time the disk instead. So the benchmark enters a mount namespace of
//! its own, mounts a tmpfs on `/run/cni/bench-tuning-<unique>` and uses it as the dataDir; it
//! also times a second dataDir on the root file system, `/var/lib/cni/bench-tuning-<unique>`,
//! to show what the same state costs on a disk.
//!
//! Each round runs every (implementation, dataDir) pair once, in an order that rotates from
//! round to round, so machine noise hits all alike. Prints medians and ratios against the goals
//! (on the tmpfs, as on a node); it never fails on a ratio (machines are noisy): it fails only
//! when a call fails.
//!
//! `cargo bench -p netns-tests --bench tuning` (as root; BENCH_ITERS sets the rounds, default
//! 200). The Go plugin comes from `$GO_PLUGINS_DIR` when set (e.g. the current release, from
//! `scripts/go-plugins-1.9.1`), else from Debian's package in /usr/lib/cni (1.1.1 on Debian 12).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use netns_tests::bench::{iterations, measure, median, ms, Sample};
use netns_tests::{go_reference, our_plugin, require_root, unique_name, Netns};
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statfs::{statfs, EXT4_SUPER_MAGIC, TMPFS_MAGIC};
use serde_json::json;

const IFNAME: &str = "net1";

/// Runs `binary` as a runtime does (empty environment but `env`), measured.
fn call(binary: &Path, env: &[(&str, &str)], stdin: &[u8]) -> Sample {
    let mut cmd = Command::new(binary);
    cmd.env_clear().envs(env.iter().copied());
    measure(cmd, stdin)
}

/// Moves this process into a mount namespace of its own whose mounts propagate nowhere, so
/// what it mounts is seen by it and its children only, and goes with it however it ends.
/// Must run while the process has one thread (unshare refuses otherwise).
fn enter_private_mount_namespace() {
    unshare(CloneFlags::CLONE_NEWNS).expect("unshare(CLONE_NEWNS), as root");
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .expect("making / private in the benchmark's mount namespace");
}

/// A directory made for the benchmark, with a tmpfs of its own on it or not; unmounted and
/// removed on drop.
struct DataDir {
    path: PathBuf,
    tmpfs: bool,
    /// `parent`, when it did not exist before: removed too if it is empty again.
    made_parent: Option<PathBuf>,
}

impl DataDir {
    /// `<parent>/bench-tuning-<unique>` on whatever file system holds `parent`.
    fn on_disk(parent: &str) -> DataDir {
        let parent = Path::new(parent);
        let made_parent = (!parent.exists()).then(|| parent.to_path_buf());
        let path = parent.join(unique_name("bench-tuning"));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        DataDir {
            path,
            tmpfs: false,
            made_parent,
        }
    }

    /// `<parent>/bench-tuning-<unique>` with a tmpfs mounted on it.
    fn on_tmpfs(parent: &str) -> DataDir {
        let mut dir = DataDir::on_disk(parent);
        mount(
            Some("tmpfs"),
            &dir.path,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("mode=0755,size=16m"),
        )
        .unwrap_or_else(|e| panic!("mounting a tmpfs on {}: {e}", dir.path.display()));
        dir.tmpfs = true;
        dir
    }

    /// The file system it is on, as the kernel reports it.
    fn fs_type(&self) -> String {
        let t = statfs(&self.path)
            .unwrap_or_else(|e| panic!("statfs {}: {e}", self.path.display()))
            .filesystem_type();
        match t {
            TMPFS_MAGIC => "tmpfs".into(),
            EXT4_SUPER_MAGIC => "ext4".into(),
            other => format!("file system type {:#x}", other.0),
        }
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        if self.tmpfs {
            if let Err(e) = umount2(&self.path, MntFlags::empty()) {
                eprintln!("unmounting {}: {e}", self.path.display());
                return;
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
        if let Some(parent) = &self.made_parent {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

/// One implementation with one dataDir: its config and what its rounds measured.
struct Series {
    implementation: &'static str,
    storage: &'static str,
    binary: PathBuf,
    stdin: Vec<u8>,
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
    rss_kib: i64,
}

fn main() {
    // First, while the process has a single thread.
    require_root();
    enter_private_mount_namespace();
    let ours = our_plugin("tuning");
    let go = go_reference("tuning");
    let iters = iterations(200).max(1);
    let ns = Netns::new("bench-tuning");
    ns.exec_ok(
        "ip",
        &[
            "link", "add", IFNAME, "type", "veth", "peer", "name", "peer1",
        ],
    );
    // Under /run/cni and /var/lib/cni, the two places the plugin keeps state.
    let tmpfs = DataDir::on_tmpfs("/run/cni");
    let disk = DataDir::on_disk("/var/lib/cni");
    let mac = ns.link(IFNAME).and_then(|l| l.mac()).unwrap_or_default();
    // 1.0.0: spoken by Debian 12's Go tuning (1.1.1) and the current one alike.
    let conf = |data: &DataDir| {
        json!({
            "cniVersion": "1.0.0",
            "name": "benchnet",
            "type": "tuning",
            "mtu": 1400,
            "promisc": true,
            "sysctl": {"net.ipv4.conf.IFNAME.forwarding": "1"},
            "dataDir": data.path,
            "prevResult": {
                "cniVersion": "1.0.0",
                "interfaces": [{"name": IFNAME, "mac": mac, "sandbox": ns.path_str()}]
            }
        })
        .to_string()
        .into_bytes()
    };
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

    let series = |implementation, storage, binary: &PathBuf, data: &DataDir| Series {
        implementation,
        storage,
        binary: binary.clone(),
        stdin: conf(data),
        wall: vec![],
        cpu: vec![],
        rss_kib: 0,
    };
    // Indexed below: OURS_TMPFS, GO_TMPFS, OURS_DISK, GO_DISK.
    let mut all = [
        series("ours (Rust)", "tmpfs", &ours, &tmpfs),
        series("Go", "tmpfs", &go, &tmpfs),
        series("ours (Rust)", "disk", &ours, &disk),
        series("Go", "disk", &go, &disk),
    ];
    const OURS_TMPFS: usize = 0;
    const GO_TMPFS: usize = 1;
    const OURS_DISK: usize = 2;
    const GO_DISK: usize = 3;

    // Warm the page cache for both binaries and both directories before measuring.
    for s in &all {
        call(&s.binary, &add, &s.stdin);
        call(&s.binary, &del, &s.stdin);
    }
    for i in 0..iters {
        // Rotate who goes first so drift and cache effects do not favour one.
        for k in 0..all.len() {
            let s = &mut all[(i + k) % all.len()];
            let a = call(&s.binary, &add, &s.stdin);
            let d = call(&s.binary, &del, &s.stdin);
            let both = a.then(d);
            s.wall.push(both.wall);
            s.cpu.push(both.cpu);
            s.rss_kib = s.rss_kib.max(both.max_rss_kib);
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

    println!("tuning ADD+DEL (mtu, promisc, one sysctl), {iters} rounds each, medians");
    println!("  ours: {}", ours.display());
    println!("  Go:   {}", go.display());
    println!(
        "  dataDir on tmpfs: {} ({})",
        tmpfs.path.display(),
        tmpfs.fs_type()
    );
    println!(
        "  dataDir on disk:  {} ({})",
        disk.path.display(),
        disk.fs_type()
    );
    let med: Vec<(Duration, Duration)> = all
        .iter()
        .map(|s| (median(&s.wall), median(&s.cpu)))
        .collect();
    println!(
        "{:<12} {:<8} {:>10} {:>10} {:>12}",
        "", "dataDir", "wall", "cpu", "peak RSS"
    );
    for (s, (wall, cpu)) in all.iter().zip(&med) {
        println!(
            "{:<12} {:<8} {:>8.2}ms {:>8.2}ms {:>8} KiB",
            s.implementation,
            s.storage,
            ms(*wall),
            ms(*cpu),
            s.rss_kib
        );
    }
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let verdict = |ok: bool| if ok { "meets goal" } else { "MISSES goal" };
    let wall_ratio = ratio(med[OURS_TMPFS].0, med[GO_TMPFS].0);
    let cpu_ratio = ratio(med[OURS_TMPFS].1, med[GO_TMPFS].1);
    println!(
        "tmpfs, wall ratio ours/Go: {wall_ratio:.2}x (goal <= 0.35x: {})",
        verdict(wall_ratio <= 0.35)
    );
    println!(
        "tmpfs, cpu ratio ours/Go:  {cpu_ratio:.2}x (goal <= 0.40x: {})",
        verdict(cpu_ratio <= 0.40)
    );
    println!(
        "disk,  wall ratio ours/Go: {:.2}x, cpu ratio ours/Go: {:.2}x",
        ratio(med[OURS_DISK].0, med[GO_DISK].0),
        ratio(med[OURS_DISK].1, med[GO_DISK].1)
    );
    // Signed: on a quiet machine the two are within noise of each other.
    let extra = |disk: Duration, tmpfs: Duration| ms(disk) - ms(tmpfs);
    println!(
        "disk over tmpfs, wall: ours {:+.2}ms, Go {:+.2}ms",
        extra(med[OURS_DISK].0, med[OURS_TMPFS].0),
        extra(med[GO_DISK].0, med[GO_TMPFS].0)
    );
    for (name, binary) in [("ours (Rust)", &ours), ("Go", &go)] {
        let size = std::fs::metadata(binary).map(|m| m.len()).unwrap_or(0);
        println!(
            "{name}: {size} bytes, peak RSS of a VERSION call {} KiB",
            version_rss(binary)
        );
    }
    let size = std::fs::metadata(&ours).map(|m| m.len()).unwrap_or(0);
    println!(
        "static binary: {size} bytes = {:.2} MB (goal <= 1.5 MB: {})",
        size as f64 / 1e6,
        verdict(size as f64 <= 1.5e6)
    );

    println!();
    println!(
        "| tuning ADD+DEL, medians of {iters} | wall, tmpfs | CPU, tmpfs | wall, disk | CPU, disk |"
    );
    println!("|---|---|---|---|---|");
    for (name, t, d) in [
        ("ours (Rust)", OURS_TMPFS, OURS_DISK),
        ("Go", GO_TMPFS, GO_DISK),
    ] {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
            ms(med[t].0),
            ms(med[t].1),
            ms(med[d].0),
            ms(med[d].1)
        );
    }
    println!(
        "| ours / Go | {:.2}x | {:.2}x | {:.2}x | {:.2}x |",
        wall_ratio,
        cpu_ratio,
        ratio(med[OURS_DISK].0, med[GO_DISK].0),
        ratio(med[OURS_DISK].1, med[GO_DISK].1)
    );
    // The directories go (the tmpfs unmounted) before the namespace.
    drop((tmpfs, disk));
}
