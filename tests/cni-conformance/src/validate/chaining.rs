//! Chained plugins: the prevResult the suite hands them, and the rule that they pass it on.

use super::result::Problems;
use super::summary::{summarize, ResultSummary};
use super::versions::{family, Family};
use serde_json::{json, Value};

/// Address and gateway the suite puts into a synthesized prevResult (TEST-NET-1).
pub const PREV_ADDRESS: &str = "192.0.2.10/24";
pub const PREV_GATEWAY: &str = "192.0.2.1";

/// Chaining rule: a plugin given a prevResult must output it, possibly
/// modified. The suite checks that every interface of `prev` is still listed
/// (same name and sandbox) and every address is still listed (same address,
/// same gateway, attached to an interface of the same name).
pub fn check_passthrough(prev: &Value, result: &Value) -> Result<(), String> {
    let before = summarize(prev);
    let after = summarize(result);
    let mut p = Problems::default();
    for iface in &before.interfaces {
        if !after
            .interfaces
            .iter()
            .any(|a| a.name == iface.name && a.sandbox == iface.sandbox)
        {
            p.push(format!(
                "prevResult interface {} (sandbox {}) is missing from the result",
                iface.name,
                iface.sandbox.as_deref().unwrap_or("none")
            ));
        }
    }
    let name_of = |s: &ResultSummary, idx: Option<usize>| {
        idx.and_then(|i| s.interfaces.get(i))
            .map(|i| i.name.clone())
    };
    for ip in &before.ips {
        let found = after.ips.iter().find(|a| a.address == ip.address);
        match found {
            None => p.push(format!(
                "prevResult address {} is missing from the result",
                ip.text
            )),
            Some(a) => {
                if a.gateway != ip.gateway {
                    p.push(format!(
                        "address {}: gateway changed from {:?} to {:?}",
                        ip.text, ip.gateway, a.gateway
                    ));
                }
                let want = name_of(&before, ip.interface);
                if want.is_some() && name_of(&after, a.interface) != want {
                    p.push(format!(
                        "address {} is no longer attached to interface {}",
                        ip.text,
                        want.unwrap_or_default()
                    ));
                }
            }
        }
    }
    p.into_result()
}

/// A prevResult in the format of `version` for one container interface
/// carrying PREV_ADDRESS, as the previous plugin of a chain would return it.
pub fn synth_prev_result(version: &str, ifname: &str, mac: &str, sandbox: &str) -> Value {
    match family(version) {
        Some(Family::V02) | None => json!({
            "cniVersion": version,
            "ip4": {"ip": PREV_ADDRESS, "gateway": PREV_GATEWAY},
        }),
        Some(Family::V04) => json!({
            "cniVersion": version,
            "interfaces": [{"name": ifname, "mac": mac, "sandbox": sandbox}],
            "ips": [{"version": "4", "address": PREV_ADDRESS, "gateway": PREV_GATEWAY, "interface": 0}],
        }),
        Some(Family::V1) => json!({
            "cniVersion": version,
            "interfaces": [{"name": ifname, "mac": mac, "sandbox": sandbox}],
            "ips": [{"address": PREV_ADDRESS, "gateway": PREV_GATEWAY, "interface": 0}],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::result::validate_result;
    use crate::validate::versions::KNOWN_VERSIONS;
    use serde_json::json;

    fn prev() -> Value {
        synth_prev_result("1.0.0", "net1", "0e:d9:68:95:2c:30", "/run/netns/x")
    }

    #[test]
    fn an_unchanged_or_extended_result_passes_the_prev_result_on() {
        let prev = prev();
        assert_eq!(check_passthrough(&prev, &prev), Ok(()));
        let mut extended = prev.clone();
        extended["interfaces"] = json!([
            {"name": "net1", "mac": "02:00:00:00:00:01", "sandbox": "/run/netns/x"},
            {"name": "other"}
        ]);
        extended["dns"] = json!({});
        assert_eq!(check_passthrough(&prev, &extended), Ok(()));
    }

    #[test]
    fn a_result_dropping_or_moving_a_prev_result_entry_breaks_the_chain() {
        let prev = prev();
        let mut r = prev.clone();
        r["interfaces"] = json!([]);
        r["ips"][0].as_object_mut().map(|o| o.remove("interface"));
        assert!(check_passthrough(&prev, &r).is_err());
        let mut r = prev.clone();
        r["ips"] = json!([]);
        assert!(check_passthrough(&prev, &r).is_err());
        let mut r = prev.clone();
        r["interfaces"] = json!([{"name": "x"}, {"name": "net1", "sandbox": "/run/netns/x"}]);
        assert!(check_passthrough(&prev, &r).is_err());
        let mut r = prev.clone();
        r["ips"][0]["gateway"] = json!("192.0.2.254");
        assert!(check_passthrough(&prev, &r).is_err());
    }

    #[test]
    fn synthesized_prev_results_are_valid_in_every_version() {
        for v in KNOWN_VERSIONS {
            let prev = synth_prev_result(v, "net1", "0e:d9:68:95:2c:30", "/run/netns/x");
            assert_eq!(validate_result(v, &prev), Ok(()), "{v}");
            assert_eq!(summarize(&prev).ips.len(), 1, "{v}");
        }
    }
}
