//! Against the kernel, each test in a network namespace of its own (unshared by its thread,
//! which the test harness gives every test), with `nft -j list ruleset` as the independent
//! witness of what was made.

use std::net::IpAddr;
use std::process::Command;

use nftables_netlink::matches::{self, Addr};
use nftables_netlink::{
    ifname_from_key, ifname_key, BaseChain, Batch, Chain, ChainType, CmpOp, Element, Expr, Family,
    Hook, KeyType, Nftables, Rule, Set, Table, Verdict,
};
use serde_json::Value;

/// Moves this test's thread into a new network namespace, and opens nf_tables there.
fn fresh_netns() -> Nftables {
    assert!(nix::unistd::geteuid().is_root(), "these tests need root");
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect("unshare(CLONE_NEWNET)");
    Nftables::new().expect("netfilter socket")
}

/// `nft ARGS` (with `script` on stdin): its stdout; the test fails if it does.
fn nft(args: &[&str], script: Option<&str>) -> String {
    let mut cmd = Command::new("nft");
    cmd.args(args);
    let out = netns_tests::run_command(cmd, script.unwrap_or_default().as_bytes());
    netns_tests::expect_success(&out, &format!("nft {args:?}"))
}

/// `nft -j list table`, objects only, without handles and with the table renamed to `T`, so
/// two tables' listings compare equal when they hold the same things.
fn listing(family: &str, table: &str) -> Vec<Value> {
    let doc: Value =
        serde_json::from_str(&nft(&["-j", "list", "table", family, table], None)).expect("json");
    let mut objects: Vec<Value> = doc["nftables"]
        .as_array()
        .expect("nftables array")
        .iter()
        .filter(|o| o.get("metainfo").is_none())
        .cloned()
        .collect();
    for o in &mut objects {
        for (_, body) in o.as_object_mut().expect("object").iter_mut() {
            let body = body.as_object_mut().expect("body");
            body.remove("handle");
            if body.contains_key("table") {
                body.insert("table".into(), "T".into());
            } else {
                body.insert("name".into(), "T".into());
            }
        }
    }
    objects
}

fn spoofchk_objects(table: &Table, port: &str, mac: [u8; 6]) -> Batch {
    let ports = Set::verdict_map(table, "ports", KeyType::Ifname);
    let base = Chain {
        base: Some(BaseChain {
            kind: ChainType::Filter,
            hook: Hook::Prerouting,
            priority: -300,
            policy: Verdict::Accept,
        }),
        ..Chain::new(table, "prerouting")
    };
    let att = Chain::new(table, "att-x");
    let mut accept_mac = matches::ether_saddr(mac);
    accept_mac.push(Expr::Verdict(Verdict::Return));
    let mut batch = Batch::new();
    batch
        .add_table(table)
        .add_set(&ports)
        .add_chain(&base)
        .add_chain(&att)
        .add_rule(&Rule::new(&base, matches::iifname_vmap("ports")))
        .add_rule(&Rule::new(&att, accept_mac).with_comment("n/c/i"))
        .add_rule(&Rule::new(&att, vec![Expr::Verdict(Verdict::Drop)]))
        .add_elements(
            &ports,
            &[Element::mapping(
                ifname_key(port),
                Verdict::Jump("att-x".into()),
            )],
        );
    batch
}

const MAC: [u8; 6] = [0x02, 0x42, 0xac, 0x11, 0x00, 0x02];

#[test]
fn a_bridge_spoof_check_is_what_nft_makes_from_the_same_text() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    nf.apply(&spoofchk_objects(
        &Table::new(Family::Bridge, "ours"),
        "veth1",
        MAC,
    ))
    .expect("applied");
    nft(
        &["-f", "-"],
        Some(
            "add table bridge theirs\n\
             add map bridge theirs ports { type ifname : verdict; }\n\
             add chain bridge theirs prerouting { type filter hook prerouting priority -300; policy accept; }\n\
             add chain bridge theirs att-x\n\
             add rule bridge theirs prerouting iifname vmap @ports\n\
             add rule bridge theirs att-x ether saddr 02:42:ac:11:00:02 return comment \"n/c/i\"\n\
             add rule bridge theirs att-x drop\n\
             add element bridge theirs ports { \"veth1\" : jump att-x }\n",
        ),
    );
    assert_eq!(listing("bridge", "ours"), listing("bridge", "theirs"));
}

#[test]
fn masquerade_rules_are_what_nft_makes_from_the_same_text() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Inet, "ours");
    let saddr4 = Set::verdict_map(&table, "saddr4", KeyType::Ipv4Addr);
    let saddr6 = Set::verdict_map(&table, "saddr6", KeyType::Ipv6Addr);
    let post = Chain {
        base: Some(BaseChain {
            kind: ChainType::Nat,
            hook: Hook::Postrouting,
            priority: 100,
            policy: Verdict::Accept,
        }),
        ..Chain::new(&table, "postrouting")
    };
    let att = Chain::new(&table, "att-x");
    let rule = |parts: Vec<Vec<Expr>>| Rule::new(&att, parts.concat());
    let ip = |s: &str| -> IpAddr { s.parse().expect("address") };
    let mut batch = Batch::new();
    batch
        .add_table(&table)
        .add_set(&saddr4)
        .add_set(&saddr6)
        .add_chain(&post)
        .add_chain(&att)
        .add_rule(&Rule::new(
            &post,
            [
                matches::nfproto(true),
                matches::ip_addr(Addr::Destination, ip("224.0.0.0"), 4, CmpOp::Eq),
                vec![Expr::Verdict(Verdict::Return)],
            ]
            .concat(),
        ))
        .add_rule(&Rule::new(
            &post,
            [
                matches::nfproto(false),
                matches::ip_addr_vmap(Addr::Source, false, "saddr6"),
            ]
            .concat(),
        ))
        .add_rule(
            &rule(vec![
                matches::nfproto(true),
                matches::ip_addr(Addr::Source, ip("10.1.0.2"), 32, CmpOp::Eq),
                matches::ip_addr(Addr::Destination, ip("10.1.0.0"), 20, CmpOp::Neq),
                vec![Expr::Masquerade],
            ])
            .with_comment("lbl"),
        )
        .add_rule(&rule(vec![
            matches::nfproto(false),
            matches::ip_addr(Addr::Source, ip("fd00::2"), 128, CmpOp::Eq),
            matches::ip_addr(Addr::Destination, ip("fd00::"), 64, CmpOp::Neq),
            vec![Expr::Masquerade],
        ]))
        .add_elements(
            &saddr4,
            &[Element::mapping(
                vec![10, 1, 0, 2],
                Verdict::Jump("att-x".into()),
            )],
        );
    nf.apply(&batch).expect("applied");
    nft(
        &["-f", "-"],
        Some(
            "add table inet theirs\n\
             add map inet theirs saddr4 { type ipv4_addr : verdict; }\n\
             add map inet theirs saddr6 { type ipv6_addr : verdict; }\n\
             add chain inet theirs postrouting { type nat hook postrouting priority srcnat; policy accept; }\n\
             add chain inet theirs att-x\n\
             add rule inet theirs postrouting ip daddr 224.0.0.0/4 return\n\
             add rule inet theirs postrouting ip6 saddr vmap @saddr6\n\
             add rule inet theirs att-x ip saddr 10.1.0.2 ip daddr != 10.1.0.0/20 masquerade comment \"lbl\"\n\
             add rule inet theirs att-x ip6 saddr fd00::2 ip6 daddr != fd00::/64 masquerade\n\
             add element inet theirs saddr4 { 10.1.0.2 : jump att-x }\n",
        ),
    );
    assert_eq!(listing("inet", "ours"), listing("inet", "theirs"));
}

#[test]
fn listing_reads_back_chains_rules_and_map_elements() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Bridge, "t");
    nf.apply(&spoofchk_objects(&table, "veth1", MAC))
        .expect("applied");
    let mut names: Vec<String> = nf
        .list_chains(&table)
        .expect("chains")
        .into_iter()
        .map(|c| c.name)
        .collect();
    names.sort();
    assert_eq!(names, ["att-x", "prerouting"]);
    let elements = nf
        .list_elements(&Set::verdict_map(&table, "ports", KeyType::Ifname))
        .expect("elements");
    assert_eq!(elements.len(), 1);
    assert_eq!(ifname_from_key(&elements[0].key), "veth1");
    assert_eq!(elements[0].verdict, Some(Verdict::Jump("att-x".into())));
    let rules = nf.list_rules(&table, Some("att-x")).expect("rules");
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].comment.as_deref(), Some("n/c/i"));
    assert!(rules[0]
        .exprs
        .iter()
        .any(|e| matches!(e, Expr::Cmp { data, .. } if data[..] == MAC)));
    assert!(rules.iter().all(|r| r.handle.is_some()));
}

#[test]
fn listing_a_missing_table_finds_nothing() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Inet, "absent");
    assert!(nf.list_chains(&table).expect("chains").is_empty());
    assert!(nf.list_rules(&table, None).expect("rules").is_empty());
    let set = Set::verdict_map(&table, "m", KeyType::Ipv4Addr);
    assert!(nf.list_elements(&set).expect("elements").is_empty());
}

#[test]
fn deleting_what_is_missing_is_not_found_and_undoes_the_whole_batch() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Inet, "t");
    let mut batch = Batch::new();
    batch
        .add_table(&table)
        .delete_chain(&Chain::new(&table, "absent"));
    let err = nf.apply(&batch).expect_err("the chain does not exist");
    assert!(err.is_not_found(), "{err}");
    assert_eq!(err.errno(), Some(libc::ENOENT));
    assert!(
        err.to_string().contains("delete chain inet t absent"),
        "{err}"
    );
    assert!(nf.list_tables(Family::Inet).expect("tables").is_empty());
}

#[test]
fn an_element_mapped_elsewhere_is_exists_and_the_same_one_is_no_error() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Bridge, "t");
    nf.apply(&spoofchk_objects(&table, "veth1", MAC))
        .expect("applied");
    // The same objects again: everything is there, nothing changes.
    nf.apply(&spoofchk_objects(&table, "veth1", MAC))
        .expect("idempotent");
    let ports = Set::verdict_map(&table, "ports", KeyType::Ifname);
    let mut batch = Batch::new();
    batch.add_chain(&Chain::new(&table, "other")).add_elements(
        &ports,
        &[Element::mapping(
            ifname_key("veth1"),
            Verdict::Jump("other".into()),
        )],
    );
    let err = nf.apply(&batch).expect_err("veth1 is mapped to att-x");
    assert!(err.is_exists(), "{err}");
}

#[test]
fn deleting_elements_rules_and_chains_leaves_the_rest() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Bridge, "t");
    nf.apply(&spoofchk_objects(&table, "veth1", MAC))
        .expect("applied");
    let ports = Set::verdict_map(&table, "ports", KeyType::Ifname);
    let att = Chain::new(&table, "att-x");
    let mut batch = Batch::new();
    batch
        .delete_elements(&ports, &[Element::key(ifname_key("veth1"))])
        .flush_chain(&att)
        .delete_chain(&att);
    nf.apply(&batch).expect("deleted");
    let listed = nft(&["-j", "list", "ruleset"], None);
    assert!(!listed.contains("att-x"), "{listed}");
    assert!(listed.contains("\"prerouting\""), "{listed}");

    let rule = nf
        .list_rules(&table, Some("prerouting"))
        .expect("rules")
        .remove(0);
    let mut batch = Batch::new();
    batch.delete_rule(&rule);
    nf.apply(&batch).expect("rule deleted");
    assert!(nf
        .list_rules(&table, Some("prerouting"))
        .expect("rules")
        .is_empty());

    let mut batch = Batch::new();
    batch.delete_table(&table);
    nf.apply(&batch).expect("table deleted");
    assert_eq!(nft(&["list", "ruleset"], None).trim(), "");
}

/// `count` rules, each its own message, appended to a new chain `c` of a new table.
fn many_rules(table: &Table, count: usize) -> Batch {
    let chain = Chain::new(table, "c");
    let mut batch = Batch::new();
    batch.add_table(table).add_chain(&chain);
    for i in 0..count {
        batch.add_rule(
            &Rule::new(&chain, vec![Expr::Verdict(Verdict::Return)]).with_comment(format!("r{i}")),
        );
    }
    batch
}

#[test]
fn a_batch_of_a_thousand_messages_applies_and_says_so() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Inet, "t");
    // Far more messages than answers fit in a socket's default receive buffer.
    let batch = many_rules(&table, 1000);
    let started = std::time::Instant::now();
    nf.apply(&batch).expect("applied");
    eprintln!(
        "a batch of {} messages applied in {:?}",
        batch.len(),
        started.elapsed()
    );
    let rules = nf.list_rules(&table, Some("c")).expect("rules");
    assert_eq!(rules.len(), 1000);
    assert_eq!(rules[999].comment.as_deref(), Some("r999"));
}

#[test]
fn a_batch_refused_on_hundreds_of_messages_names_the_first_one() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Inet, "t");
    let mut batch = Batch::new();
    batch.add_table(&table);
    for i in 0..600 {
        batch.delete_chain(&Chain::new(&table, format!("absent{i}")));
    }
    let err = nf.apply(&batch).expect_err("none of the chains exists");
    assert!(err.is_not_found(), "{err}");
    assert!(
        err.to_string().contains("delete chain inet t absent0:"),
        "{err}"
    );
    assert!(nf.list_tables(Family::Inet).expect("tables").is_empty());
}

/// linux/capability.h
const CAP_NET_ADMIN: u32 = 12;

/// Removes `cap` from the calling thread's effective capabilities (the others' stay).
fn drop_effective_capability(cap: u32) {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // _LINUX_CAPABILITY_VERSION_3: two words of each set.
    let mut header = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: header and data are the layouts capget(2) and capset(2) take, alive across
    // the calls.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()),
            0
        );
        data[(cap / 32) as usize].effective &= !(1 << (cap % 32));
        assert_eq!(
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()),
            0
        );
    }
}

#[test]
fn without_cap_net_admin_a_transaction_fails_at_once_with_eperm() {
    netns_tests::skip_unless_root!();
    // Capabilities belong to a thread: only this one loses CAP_NET_ADMIN.
    std::thread::spawn(|| {
        let mut nf = fresh_netns();
        drop_effective_capability(CAP_NET_ADMIN);
        let mut batch = Batch::new();
        batch.add_table(&Table::new(Family::Inet, "t"));
        let started = std::time::Instant::now();
        let err = nf.apply(&batch).expect_err("the kernel refuses");
        let took = started.elapsed();
        eprintln!("refused without CAP_NET_ADMIN in {took:?}: {err}");
        assert_eq!(err.errno(), Some(libc::EPERM), "{err}");
        assert!(err.to_string().contains("nftables transaction"), "{err}");
        assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
    })
    .join()
    .expect("the unprivileged thread");
}

#[test]
fn a_batch_bound_to_a_stale_generation_is_refused_whole() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let listed = nf.generation().expect("generation");
    // Another transaction commits after the listing.
    let mut other = Batch::new();
    other.add_table(&Table::new(Family::Inet, "other"));
    nf.apply(&other).expect("applied");
    assert_ne!(nf.generation().expect("generation"), listed);

    let table = Table::new(Family::Inet, "planned");
    let mut planned = Batch::new();
    planned.add_table(&table).if_generation(listed);
    let err = nf.apply(&planned).expect_err("the ruleset changed since");
    assert!(err.is_generation_changed(), "{err}");
    assert_eq!(err.errno(), Some(libc::ERESTART));
    assert!(
        err.to_string().starts_with("nftables transaction: "),
        "{err}"
    );
    assert_eq!(
        nf.list_tables(Family::Inet).expect("tables"),
        [Table::new(Family::Inet, "other")]
    );

    planned.if_generation(nf.generation().expect("generation"));
    nf.apply(&planned)
        .expect("applied at the current generation");
    assert_eq!(nf.list_tables(Family::Inet).expect("tables").len(), 2);
}

#[test]
fn a_planned_change_is_planned_again_when_the_ruleset_changed_meanwhile() {
    netns_tests::skip_unless_root!();
    let mut nf = fresh_netns();
    let table = Table::new(Family::Inet, "t");
    let mut batch = Batch::new();
    batch.add_table(&table).add_chain(&Chain::new(&table, "a"));
    nf.apply(&batch).expect("applied");
    let mut plans = 0;
    nf.apply_planned(|nf| {
        plans += 1;
        let chains = nf.list_chains(&table)?;
        if plans == 1 {
            // Something else adds a chain between the listing and the deletion.
            let mut other = Batch::new();
            other.add_chain(&Chain::new(&table, "b"));
            nf.apply(&other)?;
        }
        let mut delete = Batch::new();
        for chain in &chains {
            delete.delete_chain(chain);
        }
        Ok((delete, ()))
    })
    .expect("applied on the second plan");
    assert_eq!(plans, 2);
    assert!(nf.list_chains(&table).expect("chains").is_empty());
}
