use super::*;

fn route(dst: &str, gw: Option<&str>, table: u32) -> RouteInfo {
    RouteInfo {
        dst: dst.parse().expect("network"),
        gw: gw.map(|g| g.parse().expect("address")),
        oif: Some(2),
        multipath: false,
        table,
        metric: None,
        protocol: 3,
        scope: 0,
    }
}

#[test]
fn the_default_gateway_is_the_main_tables_ipv4_default_route() {
    let routes = [
        route("172.31.255.0/24", None, RT_TABLE_MAIN),
        route("0.0.0.0/0", Some("10.0.0.9"), 100),
        route("::/0", Some("fe80::1"), RT_TABLE_MAIN),
        route("0.0.0.0/0", Some("172.31.255.1"), RT_TABLE_MAIN),
    ];
    assert_eq!(gateway_of(&routes), Some(Ipv4Addr::new(172, 31, 255, 1)));
}

#[test]
fn no_default_route_is_no_gateway() {
    assert_eq!(
        gateway_of(&[route("172.31.255.0/24", None, RT_TABLE_MAIN)]),
        None
    );
}

#[test]
fn only_the_reply_to_this_request_counts() {
    let request = echo_request(0x1234, 7);
    let mut reply = vec![0x45u8];
    reply.extend_from_slice(&[0; 11]);
    reply.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let mut icmp = request.clone();
    icmp[0] = 0;
    reply.extend_from_slice(&icmp);
    let gw = Ipv4Addr::new(10, 0, 0, 1);
    assert!(is_echo_reply(&reply, gw, &request));
    assert!(!is_echo_reply(&reply, Ipv4Addr::new(10, 0, 0, 9), &request));
    assert!(!is_echo_reply(&reply, gw, &echo_request(0x1234, 8)));
}

#[test]
fn an_echo_request_checksums_to_zero() {
    let p = echo_request(0x1234, 1);
    assert_eq!(checksum(&p), 0);
}

#[test]
fn probes_are_named_as_on_the_command_line() {
    for p in ALL {
        assert_eq!(p.as_str().parse::<Probe>(), Ok(p));
    }
    assert!("dns".parse::<Probe>().is_err());
}

#[test]
fn the_loopback_answers_an_echo() {
    // As root, as the handler runs; loopback is there in every namespace.
    assert!(ping(Ipv4Addr::LOCALHOST, Duration::from_secs(2)).is_ok());
}
