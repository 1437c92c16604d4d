//! bridge ADD and DEL: ours against the Go reference plugin and against iproute2 doing the same
//! netlink work, side by side in one run.
//!
//! The Go plugin comes from `$GO_PLUGINS_DIR` when set (the current release, 1.9.1, from
//! `scripts/go-plugins-1.9.1`), else from Debian's package in /usr/lib/cni (1.1.1 on Debian 12);
//! the output names the release measured, as the binary or its Debian changelog gives it.
//!
//! Both plugins get the same L2 config (no IPAM) in the newest cniVersion both speak, as their
//! answers to `CNI_COMMAND=VERSION` say (1.1.0 with Go 1.9.1, 1.0.0 with Go 1.1.1):
//! `{"cniVersion":"1.1.0","name":"benchnet","type":"bridge","bridge":"cnibench0","ipam":{}}`,
//! CNI_IFNAME net1, CNI_PATH /usr/lib/cni. Ours runs a second time with `"macspoofchk": true`
//! added, which puts the spoof check in nftables on ADD and takes it out on DEL: its ratio to
//! ours without it is what the check costs.
//!
//! Setup, not timed: two throwaway "host" namespaces, each with the bridge `cnibench0` made by one
//! warm ADD+DEL of ours. One bridge gets 10 ports, the other 1000: plain veth pairs added by
//! `ip -batch`, both ends in that namespace and up, the host ends enslaved, IPv6 off on them so
//! they send nothing. Each contender has a container namespace of its own, reused: every ADD is
//! undone by its DEL before the next one, so a namespace never holds more than one attachment.
//!
//! Every call, plugin or `ip`, is spawned the same way: fork, then a pre_exec hook that setns()es
//! into the host namespace through an fd opened before timing, then exec. Entering costs every
//! contender the same single syscall (`ip netns exec` would also remount /sys). The child is
//! reaped with wait4, which gives its own CPU time (user + system, so the kernel's netlink work
//! done on its behalf and its exec are included, alike for all) and peak RSS.
//!
//! The iproute2 floor is the fewest `ip` processes doing our ADD's netlink work:
//! - ADD: `ip -batch -` in the host namespace, with the two host-side requests
//!   `link add <veth> master cnibench0 up type veth peer name net1 address <mac> netns <ctr>` and
//!   `link set <veth> alias <44 characters, as long as ours>`, then `ip link set net1 up` in the
//!   container namespace (entered by the same pre_exec setns). The kernel refuses a veth peer
//!   created up (ENOTCONN), hence the second process. It does not wait for the carrier.
//! - DEL: `ip link del <veth>`.
//!
//! A round runs ADD, an untimed pause of 20 to 70 ms (the attachment settles, as on a node; see
//! `settle`), then DEL for every (contender, bridge) pair, in an order that rotates from
//! round to round, so machine noise and drift hit all alike, the 10- and 1000-port cases
//! included. Prints medians, ratios against the goals and a markdown table; it never fails on a
//! ratio (machines are noisy): it fails only when a call fails.
//!
//! `cargo bench -p netns-tests --bench bridge` (as root; BENCH_ITERS sets the rounds, default
//! 100; GO_PLUGINS_DIR the Go plugins, see above).

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use netns_tests::bench::{iterations, measure, median, Sample};
use netns_tests::{
    go_reference, go_release_label, newest_common_cni_version, our_plugin, require_root,
    unique_name, Netns, Release,
};
use serde_json::json;

const IFNAME: &str = "net1";
const BRIDGE: &str = "cnibench0";
/// The PATH every child gets (the rest of the environment is cleared).
const CHILD_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Ports on the bridge of each host namespace.
const PORTS: [usize; 2] = [10, 1000];
/// The iproute2 floor's host end, its container end's MAC and its alias (as long as ours).
const FLOOR_VETH: &str = "vethbenchfloor0";
const FLOOR_MAC: &str = "02:42:ac:11:00:02";
const FLOOR_ALIAS: &str = "cni-bridge-0123456789abcdef-0123456789abcdef";

/// A namespace of the benchmark's, deleted on drop, and an fd on it for setns() in children.
struct Ns {
    file: File,
    netns: Netns,
}

impl Ns {
    fn new(tag: &str) -> Ns {
        let netns = Netns::new(tag);
        let file = File::open(netns.path())
            .unwrap_or_else(|e| panic!("opening {}: {e}", netns.path().display()));
        Ns { file, netns }
    }

    fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// Runs `program args` with only PATH and `env`, inside the namespace `netns` (setns() between
/// fork and exec), measured. Panics, with its output, unless it exits 0.
fn call(program: &Path, args: &[&str], env: &[(&str, &str)], stdin: &[u8], netns: RawFd) -> Sample {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("PATH", CHILD_PATH)
        .envs(env.iter().copied());
    // SAFETY: between fork and exec the hook makes one async-signal-safe syscall, on an fd that
    // stays open for the whole run (close-on-exec closes the child's copy only at the exec).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(netns, libc::CLONE_NEWNET) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    measure(cmd, stdin)
}

/// The first `name` on PATH, resolved once so that no spawn searches for it.
fn which(name: &str) -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_else(|_| CHILD_PATH.to_string())
        .split(':')
        .chain(CHILD_PATH.split(':'))
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{name}` is not on PATH (install iproute2)"))
}

/// Sets net.ipv6.conf.default.disable_ipv6 inside `host` (nothing to do without IPv6).
fn default_ipv6_disabled(host: &Ns, disabled: bool) {
    let script = format!(
        "f=/proc/sys/net/ipv6/conf/default/disable_ipv6; [ ! -e $f ] || echo {} > $f",
        u8::from(disabled)
    );
    call(Path::new("/bin/sh"), &["-c", &script], &[], b"", host.fd());
}

/// Adds `count` ports to the bridge in `host`: veth pairs `bp<i>a`/`bp<i>b`, both ends up in
/// `host`, `bp<i>a` enslaved. IPv6 is off on them, so they stay silent.
fn fill_bridge(ip: &Path, host: &Ns, count: usize) {
    default_ipv6_disabled(host, true);
    let mut batch = String::new();
    for i in 0..count {
        batch.push_str(&format!(
            "link add bp{i}a master {BRIDGE} up type veth peer name bp{i}b\nlink set bp{i}b up\n"
        ));
    }
    call(ip, &["-batch", "-"], &[], batch.as_bytes(), host.fd());
    default_ipv6_disabled(host, false);
}

/// The untimed pause between an ADD and its DEL, 20 to 70 ms, spread evenly over the rounds:
/// on a node an attachment is deleted long after it was made. The kernel's teardown of a veth
/// that came up a few milliseconds ago costs differently from that of a settled one (IPv6 and
/// multicast timers just armed, RCU callbacks in flight), and it waits in whole scheduler ticks,
/// so deleting right after the ADD would measure when each contender's ADD happened to end
/// within a tick rather than its DEL. Every contender gets the same sequence of pauses.
fn settle(round: usize, bridge: usize) -> Duration {
    // A multiplicative hash of (round, bridge): spread out, and the same for every contender.
    let x = (round as u64 * 64 + bridge as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    Duration::from_millis(20 + (x >> 32) % 51)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plugin,
    Floor,
}

struct Contender {
    name: String,
    kind: Kind,
    /// The plugin, or `ip`.
    binary: PathBuf,
    ctr: Ns,
    container_id: String,
    /// The network config on the plugin's stdin.
    conf: Vec<u8>,
}

impl Contender {
    fn plugin_env<'a>(&'a self, verb: &'a str) -> [(&'a str, &'a str); 5] {
        [
            ("CNI_COMMAND", verb),
            ("CNI_CONTAINERID", &self.container_id),
            ("CNI_NETNS", self.ctr.netns.path_str()),
            ("CNI_IFNAME", IFNAME),
            ("CNI_PATH", "/usr/lib/cni"),
        ]
    }

    fn add(&self, host: &Ns) -> Sample {
        match self.kind {
            Kind::Plugin => call(
                &self.binary,
                &[],
                &self.plugin_env("ADD"),
                &self.conf,
                host.fd(),
            ),
            Kind::Floor => {
                let batch = format!(
                    "link add {FLOOR_VETH} master {BRIDGE} up type veth peer name {IFNAME} \
                     address {FLOOR_MAC} netns {ctr}\nlink set {FLOOR_VETH} alias {FLOOR_ALIAS}\n",
                    ctr = self.ctr.netns.name()
                );
                let host_side = call(
                    &self.binary,
                    &["-batch", "-"],
                    &[],
                    batch.as_bytes(),
                    host.fd(),
                );
                let ctr_side = call(
                    &self.binary,
                    &["link", "set", IFNAME, "up"],
                    &[],
                    b"",
                    self.ctr.fd(),
                );
                host_side.then(ctr_side)
            }
        }
    }

    fn del(&self, host: &Ns) -> Sample {
        match self.kind {
            Kind::Plugin => call(
                &self.binary,
                &[],
                &self.plugin_env("DEL"),
                &self.conf,
                host.fd(),
            ),
            Kind::Floor => call(
                &self.binary,
                &["link", "del", FLOOR_VETH],
                &[],
                b"",
                host.fd(),
            ),
        }
    }
}

/// Everything measured for one contender on one bridge.
#[derive(Default)]
struct Stats {
    add_wall: Vec<Duration>,
    add_cpu: Vec<Duration>,
    del_wall: Vec<Duration>,
    del_cpu: Vec<Duration>,
    max_rss_kib: i64,
}

impl Stats {
    fn push(&mut self, add: Sample, del: Sample) {
        self.add_wall.push(add.wall);
        self.add_cpu.push(add.cpu);
        self.del_wall.push(del.wall);
        self.del_cpu.push(del.cpu);
        self.max_rss_kib = self.max_rss_kib.max(add.max_rss_kib).max(del.max_rss_kib);
    }
}

/// Medians of one contender on one bridge.
#[derive(Clone, Copy)]
struct Medians {
    add_wall: Duration,
    add_cpu: Duration,
    del_wall: Duration,
    del_cpu: Duration,
    max_rss_kib: i64,
}

impl Stats {
    fn medians(&self) -> Medians {
        Medians {
            add_wall: median(&self.add_wall),
            add_cpu: median(&self.add_cpu),
            del_wall: median(&self.del_wall),
            del_cpu: median(&self.del_cpu),
            max_rss_kib: self.max_rss_kib,
        }
    }
}

/// RssAnon of this process: what a child forked from it holds before its exec, so the floor of
/// any ru_maxrss measured here.
fn own_anon_rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "meets goal"
    } else {
        "MISSES goal"
    }
}

fn main() {
    require_root();
    let iters = iterations(100).max(1);
    let ip = which("ip");
    let (ours_bin, go_bin) = (our_plugin("bridge"), go_reference("bridge"));
    let go_release = go_release_label(&go_bin);
    let cni_version = newest_common_cni_version(&[&ours_bin, &go_bin]);
    assert!(
        Release::find_in(&cni_version) >= Some(Release::new(1, 0, 0)),
        "ours and Go {go_release} ({}) speak no common cniVersion from 1.0.0 on, only {cni_version}",
        go_bin.display()
    );
    let conf = json!({
        "cniVersion": cni_version,
        "name": "benchnet",
        "type": "bridge",
        "bridge": BRIDGE,
        "ipam": {}
    });
    let mut spoofchk_conf = conf.clone();
    spoofchk_conf["macspoofchk"] = json!(true);

    // Guards: dropped (namespaces deleted, with every link in them) also when a call panics.
    let hosts: Vec<Ns> = PORTS
        .iter()
        .map(|n| Ns::new(&format!("bench-bridge-host{n}")))
        .collect();
    let contender = |name: &str, kind, binary, tag: &str, conf: &serde_json::Value| Contender {
        name: name.to_string(),
        kind,
        binary,
        ctr: Ns::new(&format!("bench-bridge-ctr-{tag}")),
        container_id: unique_name(&format!("bench-{tag}")),
        conf: conf.to_string().into_bytes(),
    };
    let contenders = [
        contender("ours (Rust)", Kind::Plugin, ours_bin.clone(), "ours", &conf),
        contender(
            &format!("Go {go_release}"),
            Kind::Plugin,
            go_bin.clone(),
            "go",
            &conf,
        ),
        contender("iproute2 floor", Kind::Floor, ip.clone(), "ip", &conf),
        contender(
            "ours, macspoofchk",
            Kind::Plugin,
            ours_bin.clone(),
            "spoof",
            &spoofchk_conf,
        ),
    ];
    const OURS: usize = 0;
    const GO: usize = 1;
    const FLOOR: usize = 2;
    const SPOOFCHK: usize = 3;

    // Our first ADD+DEL creates the bridge; then its ports; then one warm ADD+DEL each, which
    // also brings both binaries and `ip` into the page cache.
    let setup = Instant::now();
    for (host, ports) in hosts.iter().zip(PORTS) {
        contenders[OURS].add(host);
        contenders[OURS].del(host);
        fill_bridge(&ip, host, ports);
        for c in &contenders {
            c.add(host);
            c.del(host);
        }
    }
    eprintln!(
        "setup (bridges with {:?} ports, warm calls): {:.1} s",
        PORTS,
        setup.elapsed().as_secs_f64()
    );

    let mut stats: Vec<Vec<Stats>> = contenders
        .iter()
        .map(|_| PORTS.iter().map(|_| Stats::default()).collect())
        .collect();
    let mut tasks: Vec<(usize, usize)> = (0..contenders.len())
        .flat_map(|c| (0..hosts.len()).map(move |h| (c, h)))
        .collect();
    let timed = Instant::now();
    for i in 0..iters {
        // Rotate who goes first, and reverse the order every other cycle, so that drift and cache
        // effects favour nobody.
        tasks.rotate_left(1);
        let order: Vec<(usize, usize)> = if (i / tasks.len()) % 2 == 0 {
            tasks.clone()
        } else {
            tasks.iter().rev().copied().collect()
        };
        for (c, h) in order {
            let add = contenders[c].add(&hosts[h]);
            std::thread::sleep(settle(i, h));
            let del = contenders[c].del(&hosts[h]);
            stats[c][h].push(add, del);
        }
    }
    eprintln!(
        "{iters} rounds of {} ADD+DEL: {:.1} s",
        tasks.len(),
        timed.elapsed().as_secs_f64()
    );

    let med: Vec<[Medians; 2]> = stats
        .iter()
        .map(|s| [s[0].medians(), s[1].medians()])
        .collect();
    let sizes: Vec<u64> = contenders
        .iter()
        .map(|c| std::fs::metadata(&c.binary).map(|m| m.len()).unwrap_or(0))
        .collect();

    println!(
        "bridge L2 ADD and DEL (cniVersion {cni_version}, no IPAM, CNI_IFNAME {IFNAME}), {iters} \
         rounds, medians; every call spawned into the host netns by a pre_exec setns():"
    );
    println!("  ours: {}", ours_bin.display());
    println!("  Go {go_release}: {}", go_bin.display());
    for (h, ports) in PORTS.iter().enumerate() {
        println!("bridge with {ports} ports:");
        println!(
            "  {:<20} {:>10} {:>10} {:>10} {:>10} {:>12}",
            "", "ADD wall", "ADD cpu", "DEL wall", "DEL cpu", "peak RSS"
        );
        for (c, m) in contenders.iter().zip(&med) {
            let m = m[h];
            println!(
                "  {:<20} {:>10} {:>10} {:>10} {:>10} {:>8} KiB",
                c.name,
                ms(m.add_wall),
                ms(m.add_cpu),
                ms(m.del_wall),
                ms(m.del_cpu),
                m.max_rss_kib
            );
        }
    }
    println!(
        "  iproute2 floor: ADD = `ip -batch -` (link add ... master up, peer net1 address netns; \
         link set alias) + `ip link set net1 up` in the container netns; DEL = `ip link del`; \
         its RSS is the larger of its processes'."
    );
    println!(
        "  peak RSS is the child's ru_maxrss; a forked child starts with this process's anonymous \
         memory ({} KiB now), below every figure above.",
        own_anon_rss_kib()
    );
    println!(
        "  DEL wall is dominated by the kernel's veth teardown (unregistering both ends, RCU \
         grace periods), which no plugin can avoid."
    );

    let (ours, go, floor) = (med[OURS][0], med[GO][0], med[FLOOR][0]);
    let spoof = med[SPOOFCHK][0];
    let spoof_add = ratio(spoof.add_wall, ours.add_wall);
    let spoof_del = ratio(spoof.del_wall, ours.del_wall);
    let vs_floor = ratio(ours.add_wall, floor.add_wall);
    let vs_go = ratio(ours.add_wall, go.add_wall);
    let cpu_vs_go = ratio(ours.add_cpu, go.add_cpu);
    let rss_vs_go = ours.max_rss_kib as f64 / go.max_rss_kib as f64;
    let scale = |c: usize| ratio(med[c][1].add_wall, med[c][0].add_wall);
    let scale_del = |c: usize| ratio(med[c][1].del_wall, med[c][0].del_wall);
    println!("goals (10-port bridge unless said otherwise):");
    println!(
        "  ADD wall ours/iproute2 floor: {vs_floor:.2}x (goal <= 1.05x: {})",
        verdict(vs_floor <= 1.05)
    );
    println!(
        "  ADD wall ours/Go:             {vs_go:.2}x (goal <= 0.85x: {})",
        verdict(vs_go <= 0.85)
    );
    println!(
        "  CPU per ADD ours/Go:          {cpu_vs_go:.2}x (goal <= 0.40x: {})",
        verdict(cpu_vs_go <= 0.40)
    );
    println!(
        "  peak RSS ours/Go:             {rss_vs_go:.2}x (goal <= 0.50x: {})",
        verdict(rss_vs_go <= 0.50)
    );
    println!(
        "  ADD wall 1000 ports/10 ports: ours {:.2}x (goal <= 1.20x: {}); Go {:.2}x, iproute2 \
         {:.2}x for context",
        scale(OURS),
        verdict(scale(OURS) <= 1.20),
        scale(GO),
        scale(FLOOR)
    );
    let added =
        |c: usize| (med[c][1].add_wall.as_secs_f64() - med[c][0].add_wall.as_secs_f64()) * 1e3;
    println!(
        "  ADD wall added by the 990 extra ports: ours {:+.2} ms, Go {:+.2} ms, iproute2 {:+.2} ms \
         (kernel work: enslaving a port walks every port of the bridge)",
        added(OURS),
        added(GO),
        added(FLOOR)
    );
    println!(
        "  DEL wall 1000 ports/10 ports: ours {:.2}x, Go {:.2}x, iproute2 {:.2}x",
        scale_del(OURS),
        scale_del(GO),
        scale_del(FLOOR)
    );
    println!(
        "  macspoofchk ADD wall / ours without it: {spoof_add:.2}x (goal <= 1.50x: {})",
        verdict(spoof_add <= 1.50)
    );
    println!(
        "  macspoofchk DEL wall / ours without it: {spoof_del:.2}x (goal <= 1.50x: {})",
        verdict(spoof_del <= 1.50)
    );
    println!(
        "  (after an nf_tables commit the kernel holds the release of the netlink socket, at the \
         latest at exit, until an RCU grace period has passed; `nft` waits the same. What of it \
         the rest of the call does not cover shows as macspoofchk wall beyond its CPU.)"
    );
    println!(
        "  binary size: ours {} bytes ({:.2} MB, static), Go {} bytes ({:.2} MB, dynamic)",
        sizes[OURS],
        sizes[OURS] as f64 / 1e6,
        sizes[GO],
        sizes[GO] as f64 / 1e6
    );

    let mib = |kib: i64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let x = |r: f64| format!("{r:.2}x");
    let goal = |r: f64, limit: f64| {
        format!(
            "{r:.2}x (goal <= {limit:.2}x{})",
            if r <= limit { "" } else { ": missed" }
        )
    };
    println!();
    println!(
        "| bridge L2, medians of {iters} | ADD wall | CPU per ADD | peak RSS | DEL wall | ADD wall, \
         1000 ports | 1000 / 10 ports | binary |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let row = |c: usize, scale_cell: String, size: String| {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            contenders[c].name,
            ms(med[c][0].add_wall),
            ms(med[c][0].add_cpu),
            mib(med[c][0].max_rss_kib),
            ms(med[c][0].del_wall),
            ms(med[c][1].add_wall),
            scale_cell,
            size
        );
    };
    row(
        OURS,
        goal(scale(OURS), 1.20),
        format!("{:.2} MB (static)", sizes[OURS] as f64 / 1e6),
    );
    row(
        GO,
        x(scale(GO)),
        format!("{:.2} MB (dynamic)", sizes[GO] as f64 / 1e6),
    );
    row(FLOOR, x(scale(FLOOR)), "2 `ip` runs (dynamic)".to_string());
    row(SPOOFCHK, x(scale(SPOOFCHK)), "as ours".to_string());
    println!(
        "| ours / Go | {} | {} | {} | {} | {} | | {} |",
        goal(vs_go, 0.85),
        goal(cpu_vs_go, 0.40),
        goal(rss_vs_go, 0.50),
        x(ratio(ours.del_wall, go.del_wall)),
        x(ratio(med[OURS][1].add_wall, med[GO][1].add_wall)),
        x(sizes[OURS] as f64 / sizes[GO] as f64)
    );
    println!(
        "| ours / iproute2 | {} | {} | | {} | {} | | |",
        goal(vs_floor, 1.05),
        x(ratio(ours.add_cpu, floor.add_cpu)),
        x(ratio(ours.del_wall, floor.del_wall)),
        x(ratio(med[OURS][1].add_wall, med[FLOOR][1].add_wall))
    );
    println!(
        "| macspoofchk / ours | {} | {} | | {} | {} | | |",
        goal(spoof_add, 1.50),
        x(ratio(spoof.add_cpu, ours.add_cpu)),
        goal(spoof_del, 1.50),
        x(ratio(med[SPOOFCHK][1].add_wall, med[OURS][1].add_wall))
    );
}
