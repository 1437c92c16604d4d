//! The values an ADD replaced, saved before anything changes, so DEL (or a failed ADD) can put
//! them back.
//!
//! The link fields use the reference plugin's backup names, so a DEL by this plugin also restores
//! an attachment that the reference plugin set up. The sysctls and the attachment's identity
//! (used by GC) are additions.

use std::collections::BTreeMap;

use cni_common::mac::MacAddr;
use cni_common::netlink::Link;
use serde::{Deserialize, Serialize};

use crate::config::Settings;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Backup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promisc: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allmulti: Option<bool>,
    #[serde(default, rename = "txQLen", skip_serializing_if = "Option::is_none")]
    pub tx_qlen: Option<u32>,
    /// Original values by path relative to /proc/sys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctl: BTreeMap<String, String>,
    #[serde(
        default,
        rename = "containerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ifname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

impl Backup {
    /// Records the current value of everything `settings` is about to change.
    pub fn capture(settings: &Settings, link: &Link, sysctl: BTreeMap<String, String>) -> Backup {
        Backup {
            mac: settings.mac.and(link.mac).map(|m: MacAddr| m.to_string()),
            promisc: settings.promisc.then_some(link.promisc),
            mtu: settings.mtu.map(|_| link.mtu),
            allmulti: settings.allmulti.map(|_| link.allmulti),
            tx_qlen: settings.tx_qlen.map(|_| link.txqlen),
            sysctl,
            ..Backup::default()
        }
    }

    /// A repeated ADD must not lose the true originals: what an earlier backup holds wins.
    pub fn keep_originals_from(mut self, earlier: Backup) -> Backup {
        self.mac = earlier.mac.or(self.mac);
        self.promisc = earlier.promisc.or(self.promisc);
        self.mtu = earlier.mtu.or(self.mtu);
        self.allmulti = earlier.allmulti.or(self.allmulti);
        self.tx_qlen = earlier.tx_qlen.or(self.tx_qlen);
        for (path, value) in earlier.sysctl {
            self.sysctl.insert(path, value);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_reference_plugins_backup_format() {
        let go = r#"{"mac":"aa:bb:cc:dd:ee:ff","promisc":false,"mtu":1500,"allmulti":true,"txQLen":1000}"#;
        let b: Backup = serde_json::from_str(go).expect("parses");
        assert_eq!(b.mac.as_deref(), Some("aa:bb:cc:dd:ee:ff"));
        assert_eq!(b.mtu, Some(1500));
        assert_eq!(b.tx_qlen, Some(1000));
        assert!(b.sysctl.is_empty());
    }

    #[test]
    fn earlier_originals_win_over_a_repeated_capture() {
        let earlier = Backup {
            mtu: Some(1500),
            sysctl: [("net/ipv4/ip_forward".to_string(), "0".to_string())].into(),
            ..Backup::default()
        };
        let again = Backup {
            mtu: Some(9000),
            promisc: Some(false),
            sysctl: [("net/ipv4/ip_forward".to_string(), "1".to_string())].into(),
            ..Backup::default()
        };
        let merged = again.keep_originals_from(earlier);
        assert_eq!(merged.mtu, Some(1500));
        assert_eq!(merged.promisc, Some(false));
        assert_eq!(merged.sysctl["net/ipv4/ip_forward"], "0");
    }
}
