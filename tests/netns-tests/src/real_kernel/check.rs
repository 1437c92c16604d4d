//! `real-kernel check`, inside the guest only: creates network namespaces and checks, each of
//! which must really succeed, the kernel features the project's tests need: a bridge with
//! vlan_filtering 1, access ports (`bridge vlan add ... pvid untagged`), a tagged trunk port,
//! `bridge vlan show`, 802.1Q sub-interfaces, the openvswitch module (its genetlink families), the
//! nftables bridge family, ping on one access VLAN, through the trunk, and none across VLANs.
//!
//! Every program started in the guest costs 0.1-0.5 s (software emulation, root on 9p without
//! cache), so plumbing that is not itself a check is batched (`ip -batch`, `bridge -batch`).

use std::io::Write;
use std::process::{Command, Stdio};

use regex_lite::Regex;

use super::{Error, Result, GUEST_ENV};

/// The switch namespace, holding the bridge.
const SW: &str = "rkc-sw";

/// Runs every check, reporting each on `out` (`ok    <what>` / `FAIL  <what>` with evidence) and
/// a closing summary line; returns whether all passed.
///
/// # Errors
/// Outside the guest, when not root, or when a namespace cannot be created.
pub fn check(out: &mut dyn Write) -> Result<bool> {
    // It loads modules and builds bridges: only in the throwaway guest, never on a real machine.
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if std::env::var(GUEST_ENV).as_deref() != Ok("1") || !cmdline.contains("virtme") {
        return Err(Error::msg(
            "check runs inside the real-kernel guest only: real-kernel run -- real-kernel check",
        ));
    }
    if !crate::is_root() {
        return Err(Error::msg("check must run as root"));
    }
    let mut c = Checker {
        out,
        passed: 0,
        failed: 0,
    };
    c.run_all()?;
    let kver = kernel_release();
    let total = c.passed + c.failed;
    if c.failed == 0 {
        c.line(&format!(
            "== real-kernel check: all {total} checks passed on {kver}"
        ));
    } else {
        c.line(&format!(
            "== real-kernel check: {} of {total} checks FAILED on {kver}",
            c.failed
        ));
    }
    Ok(c.failed == 0)
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// A command's exit status (None: it could not start) and its stdout and stderr together.
struct Ran {
    status: Option<i32>,
    output: String,
}

impl Ran {
    fn ok(&self) -> bool {
        self.status == Some(0)
    }
}

fn sh(argv: &[&str], stdin: Option<&str>) -> Ran {
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Ran {
                status: None,
                output: format!("cannot run {}: {e}", argv[0]),
            }
        }
    };
    let mut child = child;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(text.as_bytes());
    }
    match child.wait_with_output() {
        Ok(out) => Ran {
            status: out.status.code(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        },
        Err(e) => Ran {
            status: None,
            output: format!("waiting for {}: {e}", argv[0]),
        },
    }
}

/// Whether a line of `text` matches `pattern`.
pub fn has_line(text: &str, pattern: &str) -> bool {
    Regex::new(pattern).is_ok_and(|re| text.lines().any(|l| re.is_match(l)))
}

/// `bridge vlan show` as one `PORT VID FLAGS...` line per VLAN: iproute2 names the port on its
/// first VLAN's line only, and pads the rest.
pub fn vlan_table(bridge_vlan_show: &str) -> Vec<String> {
    let mut port = String::new();
    let mut rows = Vec::new();
    for line in bridge_vlan_show.lines().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let rest = if line.starts_with(char::is_whitespace) {
            line
        } else {
            let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            port = name.to_owned();
            rest
        };
        rows.push(format!("{port} {}", rest.trim()));
    }
    rows
}

/// Two pings from namespace `from` to `to`, each given 3 s: for a path that must work.
fn ping_replies<'a>(from: &'a str, to: &'a str) -> [&'a str; 13] {
    [
        "ip", "netns", "exec", from, "ping", "-c", "2", "-i", "0.2", "-W", "3", "-q", to,
    ]
}

/// One ping given 1 s: for a path that must not work (its failure costs no more than that).
fn ping_once_briefly<'a>(from: &'a str, to: &'a str) -> [&'a str; 11] {
    [
        "ip", "netns", "exec", from, "ping", "-c", "1", "-W", "1", "-q", to,
    ]
}

struct Checker<'a> {
    out: &'a mut dyn Write,
    passed: usize,
    failed: usize,
}

impl Checker<'_> {
    fn line(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
    }

    /// TEXT, indented, as evidence.
    fn show(&mut self, text: &str) {
        for l in text.lines() {
            let _ = writeln!(self.out, "      | {l}");
        }
    }

    fn pass(&mut self, what: &str) {
        self.passed += 1;
        self.line(&format!("ok    {what}"));
    }

    fn fail(&mut self, what: &str, evidence: &str) {
        self.failed += 1;
        self.line(&format!("FAIL  {what}"));
        self.show(evidence);
    }

    /// `argv` must succeed; returns whether it did.
    fn must(&mut self, what: &str, argv: &[&str], stdin: Option<&str>) -> bool {
        let ran = sh(argv, stdin);
        if ran.ok() {
            self.pass(what);
        } else {
            let status = ran
                .status
                .map_or_else(|| "did not run".to_owned(), |s| s.to_string());
            self.fail(
                what,
                &format!(
                    "$ {} (exit status {status})\n{}",
                    argv.join(" "),
                    ran.output
                ),
            );
        }
        ran.ok()
    }

    /// `argv` must fail.
    fn must_not(&mut self, what: &str, argv: &[&str]) {
        let ran = sh(argv, None);
        if ran.status.is_some() && !ran.ok() {
            self.pass(what);
        } else {
            self.fail(
                what,
                &format!(
                    "$ {} succeeded but must not\n{}",
                    argv.join(" "),
                    ran.output
                ),
            );
        }
    }

    fn expect_line(&mut self, what: &str, text: &str, pattern: &str) {
        if has_line(text, pattern) {
            self.pass(what);
        } else {
            self.fail(what, &format!("no line matches /{pattern}/ in:\n{text}"));
        }
    }

    fn expect_no_line(&mut self, what: &str, text: &str, pattern: &str) {
        if has_line(text, pattern) {
            self.fail(what, &format!("a line matches /{pattern}/ in:\n{text}"));
        } else {
            self.pass(what);
        }
    }

    fn run_all(&mut self) -> Result<()> {
        let kver = kernel_release();
        let kversion = std::fs::read_to_string("/proc/sys/kernel/version").unwrap_or_default();
        self.line(&format!(
            "== real-kernel check on {kver} ({})",
            kversion.trim()
        ));
        if kver.starts_with("6.1.") {
            self.pass(&format!("the guest runs Debian's 6.1 kernel ({kver})"));
        } else {
            self.fail(
                "the guest runs Debian's 6.1 kernel",
                &format!("kernel release: {kver}"),
            );
        }

        // Everything below happens in namespaces created here; the guest's own network is
        // untouched (it has none anyway: QEMU runs with -net none), and traffic stays between
        // these namespaces. A second check in the same boot starts afresh.
        let listed = sh(&["ip", "netns", "list"], None).output;
        for old in listed
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with("rkc-"))
        {
            sh(&["ip", "netns", "del", old], None);
        }
        for ns in [SW, "rkc-a", "rkc-b", "rkc-c", "rkc-t"] {
            let ran = sh(&["ip", "netns", "add", ns], None);
            if !ran.ok() {
                return Err(Error::msg(format!(
                    "cannot create network namespace {ns}: {}",
                    ran.output.trim()
                )));
            }
        }

        self.line("== kernel modules");
        self.must("modprobe 8021q", &["modprobe", "8021q"], None);
        self.must("modprobe openvswitch", &["modprobe", "openvswitch"], None);
        let genl = sh(&["genl", "ctrl", "list"], None).output;
        self.expect_line(
            "the openvswitch datapath's genetlink family is registered (ovs_datapath)",
            &genl,
            "Name: ovs_datapath$",
        );
        self.expect_line(
            "the openvswitch datapath's genetlink family is registered (ovs_vport)",
            &genl,
            "Name: ovs_vport$",
        );
        if super::exec::on_path("ovs-dpctl") {
            if self.must(
                "ovs-dpctl add-dp creates a kernel datapath",
                &["ip", "netns", "exec", SW, "ovs-dpctl", "add-dp", "rkc-dp"],
                None,
            ) {
                self.must(
                    "ovs-dpctl del-dp removes it",
                    &["ip", "netns", "exec", SW, "ovs-dpctl", "del-dp", "rkc-dp"],
                    None,
                );
            }
        } else {
            self.line("      (ovs-dpctl is not installed: creating a datapath is not tried)");
        }

        self.line(&format!(
            "== bridge with VLAN filtering (in namespace {SW})"
        ));
        self.must(
            "ip link add br0 type bridge vlan_filtering 1",
            &[
                "ip",
                "-n",
                SW,
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "vlan_filtering",
                "1",
            ],
            None,
        );
        let br0 = sh(&["ip", "-n", SW, "-d", "link", "show", "br0"], None).output;
        self.expect_line(
            "br0 reports vlan_filtering 1",
            &br0,
            "vlan_filtering 1( |$)",
        );
        // Ports: a and b access ports of VLAN 100, c of VLAN 200, t a trunk carrying VLAN 100
        // tagged.
        let mut batch = String::from("link set lo up\nlink set br0 up\n");
        for p in ["a", "b", "c", "t"] {
            batch.push_str(&format!(
                "link add v{p} type veth peer name eth0 netns rkc-{p}\nlink set v{p} master br0 up\n"
            ));
        }
        self.must(
            "veths va, vb, vc, vt enslaved to br0, their peers eth0 in rkc-a, rkc-b, rkc-c, rkc-t",
            &["ip", "-n", SW, "-batch", "-"],
            Some(&batch),
        );
        for p in ["a", "b", "c", "t"] {
            let ns = format!("rkc-{p}");
            sh(
                &["ip", "-n", &ns, "-batch", "-"],
                Some("link set lo up\nlink set eth0 up\n"),
            );
        }
        self.must(
            "bridge vlan add dev va vid 100 pvid untagged",
            &[
                "bridge", "-n", SW, "vlan", "add", "dev", "va", "vid", "100", "pvid", "untagged",
            ],
            None,
        );
        self.must(
            "the other ports: vb VLAN 100 and vc VLAN 200 pvid untagged, vt VLAN 100 tagged; \
             VLAN 1 off all four",
            &["bridge", "-n", SW, "-batch", "-"],
            Some(
                "vlan add dev vb vid 100 pvid untagged\n\
                 vlan add dev vc vid 200 pvid untagged\n\
                 vlan add dev vt vid 100\n\
                 vlan del dev va vid 1\n\
                 vlan del dev vb vid 1\n\
                 vlan del dev vc vid 1\n\
                 vlan del dev vt vid 1\n",
            ),
        );
        let vlans = sh(&["bridge", "-n", SW, "vlan", "show"], None).output;
        self.line("      $ bridge vlan show");
        self.show(&vlans);
        let table = vlan_table(&vlans).join("\n");
        self.expect_line(
            "bridge vlan show: va is an untagged access port of VLAN 100",
            &table,
            "^va 100 PVID Egress Untagged$",
        );
        self.expect_line(
            "bridge vlan show: vb is an untagged access port of VLAN 100",
            &table,
            "^vb 100 PVID Egress Untagged$",
        );
        self.expect_line(
            "bridge vlan show: vc is an untagged access port of VLAN 200",
            &table,
            "^vc 200 PVID Egress Untagged$",
        );
        self.expect_line(
            "bridge vlan show: vt carries VLAN 100 tagged",
            &table,
            "^vt 100$",
        );
        self.expect_no_line(
            "bridge vlan show: no port is left in VLAN 1",
            &table,
            "^v[abct] 1( |$)",
        );

        self.line("== 802.1Q sub-interface (in namespace rkc-t)");
        self.must(
            "ip link add link eth0 name eth0.100 type vlan id 100",
            &[
                "ip", "-n", "rkc-t", "link", "add", "link", "eth0", "name", "eth0.100", "type",
                "vlan", "id", "100",
            ],
            None,
        );
        let sub = sh(
            &["ip", "-n", "rkc-t", "-d", "link", "show", "eth0.100"],
            None,
        )
        .output;
        self.expect_line(
            "eth0.100 is an 802.1Q VLAN 100 interface",
            &sub,
            r"vlan protocol 802\.1Q id 100 ",
        );

        self.line(&format!("== nftables bridge family (in namespace {SW})"));
        self.must(
            "nft: add table bridge t, a forward-hook chain, rules 'vlan id 100 counter' and \
             'counter'",
            &["ip", "netns", "exec", SW, "nft", "-f", "-"],
            Some(
                "add table bridge t\n\
                 add chain bridge t forward_chain { type filter hook forward priority 0; policy accept; }\n\
                 add rule bridge t forward_chain vlan id 100 counter\n\
                 add rule bridge t forward_chain counter\n",
            ),
        );

        self.line(
            "== traffic between namespaces (192.0.2.0/24, only between the namespaces above)",
        );
        sh(
            &[
                "ip",
                "-n",
                "rkc-a",
                "addr",
                "add",
                "192.0.2.1/24",
                "dev",
                "eth0",
            ],
            None,
        );
        sh(
            &[
                "ip",
                "-n",
                "rkc-b",
                "addr",
                "add",
                "192.0.2.2/24",
                "dev",
                "eth0",
            ],
            None,
        );
        sh(
            &[
                "ip",
                "-n",
                "rkc-c",
                "addr",
                "add",
                "192.0.2.3/24",
                "dev",
                "eth0",
            ],
            None,
        );
        sh(
            &["ip", "-n", "rkc-t", "-batch", "-"],
            Some("link set eth0.100 up\naddr add 192.0.2.4/24 dev eth0.100\n"),
        );
        self.must(
            "rkc-a pings rkc-b: both access ports of VLAN 100",
            &ping_replies("rkc-a", "192.0.2.2"),
            None,
        );
        self.must(
            "rkc-t pings rkc-a through the trunk (eth0.100, tagged 100 -> untagged access port)",
            &ping_replies("rkc-t", "192.0.2.1"),
            None,
        );
        self.must_not(
            "rkc-a cannot ping rkc-c: VLAN 100 and VLAN 200 are isolated",
            &ping_once_briefly("rkc-a", "192.0.2.3"),
        );
        let brief = sh(&["ip", "-n", "rkc-b", "-br", "link", "show", "eth0"], None).output;
        let mac_b = brief
            .split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .to_owned();
        let fdb = sh(&["bridge", "-n", SW, "fdb", "show", "br", "br0"], None).output;
        self.expect_line(
            &format!("the bridge learned rkc-b's MAC ({mac_b}) on port vb in VLAN 100"),
            &fdb,
            &format!("^{} dev vb vlan 100 ", regex_lite::escape(&mac_b)),
        );
        // Control: the same ping works once vc is moved to VLAN 100, so the failure above was
        // the VLAN isolation and not a broken setup.
        sh(
            &["bridge", "-n", SW, "-batch", "-"],
            Some("vlan add dev vc vid 100 pvid untagged\nvlan del dev vc vid 200\n"),
        );
        self.must(
            "control: rkc-a pings rkc-c once vc is moved to VLAN 100",
            &ping_replies("rkc-a", "192.0.2.3"),
            None,
        );

        let counters = sh(
            &[
                "ip",
                "netns",
                "exec",
                SW,
                "nft",
                "list",
                "chain",
                "bridge",
                "t",
                "forward_chain",
            ],
            None,
        )
        .output;
        self.line("      $ nft list chain bridge t forward_chain");
        self.show(&counters);
        self.expect_line(
            "nftables: the bridge forward hook saw the traffic",
            &counters,
            r"^\s*counter packets [1-9]",
        );
        self.expect_line(
            "nftables: 'vlan id 100' matched the VLAN 100 traffic",
            &counters,
            "vlan id 100 counter packets [1-9]",
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRIDGE_VLAN_SHOW: &str = "\
port              vlan-id  
va                100 PVID Egress Untagged
vb                100 PVID Egress Untagged
vc                200 PVID Egress Untagged
vt                100
                  300
br0               1 PVID Egress Untagged

";

    #[test]
    fn vlan_table_names_the_port_on_every_vlan_line() {
        assert_eq!(
            vlan_table(BRIDGE_VLAN_SHOW),
            vec![
                "va 100 PVID Egress Untagged",
                "vb 100 PVID Egress Untagged",
                "vc 200 PVID Egress Untagged",
                "vt 100",
                "vt 300",
                "br0 1 PVID Egress Untagged",
            ]
        );
    }

    #[test]
    fn has_line_matches_whole_lines_of_the_table() {
        let table = vlan_table(BRIDGE_VLAN_SHOW).join("\n");
        assert!(has_line(&table, "^vt 100$"));
        assert!(has_line(&table, "^va 100 PVID Egress Untagged$"));
        assert!(!has_line(&table, "^v[abct] 1( |$)"));
        assert!(has_line(&table, "^br0 1( |$)"));
    }

    #[test]
    fn has_line_is_false_for_an_invalid_pattern() {
        assert!(!has_line("anything", "(unclosed"));
    }
}
