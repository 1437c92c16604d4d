//! A dropped `Netlink` closes its socket at once, so it does not keep a namespace alive.

mod common;

use common::{ip, isolate, new_netns};
use std::time::{Duration, Instant};

use cni_common::netlink::{Netlink, Veth};

#[test]
fn a_dropped_netlink_does_not_keep_its_namespace_alive() {
    netns_tests::skip_unless_root!();
    // Our own thread goes to a throwaway namespace first, so nothing can reach the host.
    isolate();
    let (a, b) = (new_netns(), new_netns());
    let nl_a = Netlink::in_netns(&a).expect("nl a");
    nl_a.link_add_veth(&Veth {
        name: "cnit-life0",
        peer_name: "cnit-life1",
        peer_netns: Some(&b),
        ..Veth::default()
    })
    .expect("veth");
    // The socket was the last reference to `a` besides the file; once both are gone the
    // kernel destroys `a`, and the veth with it, so the peer vanishes from `b`.
    drop(nl_a);
    drop(a);
    // Watch with iproute2, which holds no reference to either namespace.
    let deadline = Instant::now() + Duration::from_secs(10);
    while ip(&b, &["link", "show"]).contains("cnit-life1") {
        assert!(
            Instant::now() < deadline,
            "namespace a is still alive: socket leaked"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
