//! VLAN settings of a port, ovs-cni's way: `vlan` makes an access port with that tag, `trunk`
//! makes a trunk port carrying the listed VLANs, and a port with neither is a trunk port
//! carrying every VLAN. When both are given the port is a trunk and `vlan` is not used.

pub use cni_common::vlan::TrunkEntry;
use cni_common::vlan::{collect_trunk, vlan_id};
use cni_common::Result;
use serde_json::{json, Value};

/// What a port's `vlan_mode`, `tag` and `trunks` columns say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortVlan {
    /// `vlan_mode=access` with `tag` (0 for `"vlan": 0`, as ovs-cni writes it; OVS takes an
    /// access port without a tag as VLAN 0 too).
    Access { tag: u16 },
    /// `vlan_mode=trunk`; an empty list carries every VLAN.
    Trunk { trunks: Vec<u16> },
}

impl PortVlan {
    /// Resolves the config's `vlan` and `trunk`, refusing anything out of range (code 7).
    pub fn from_config(vlan: Option<i64>, trunk: Option<&[TrunkEntry]>) -> Result<PortVlan> {
        let vlan = vlan.map(|v| vlan_id("vlan", v, 0)).transpose()?;
        match trunk {
            Some(entries) if !entries.is_empty() => {
                let trunks = collect_trunk("trunk", entries, 0)?;
                if vlan.is_some() {
                    tracing::warn!(
                        "both vlan and trunk are set: the port is a trunk and vlan is not used"
                    );
                }
                Ok(PortVlan::Trunk { trunks })
            }
            _ => match vlan {
                Some(tag) => Ok(PortVlan::Access { tag }),
                None => Ok(PortVlan::Trunk { trunks: Vec::new() }),
            },
        }
    }

    /// The Port columns to insert.
    pub fn columns(&self) -> Vec<(&'static str, Value)> {
        match self {
            // `tag` even when 0: ovs-cni's CHECK wants the tag it wrote.
            PortVlan::Access { tag } => vec![("vlan_mode", json!("access")), ("tag", json!(tag))],
            PortVlan::Trunk { trunks } => vec![
                ("vlan_mode", json!("trunk")),
                ("trunks", ovsdb::set(trunks.iter().map(|t| json!(t)))),
            ],
        }
    }

    /// Reads a Port row's columns back; None when they describe something else (a mode this
    /// plugin never writes, such as native-untagged, or no mode with a tag).
    pub fn from_row(row: &Value) -> Option<PortVlan> {
        let mode = row
            .get("vlan_mode")
            .map(ovsdb::set_items)
            .unwrap_or_default();
        let ints = |col: &str| -> Option<Vec<u16>> {
            row.get(col)
                .map(ovsdb::set_items)
                .unwrap_or_default()
                .into_iter()
                .map(|v| v.as_u64().and_then(|n| u16::try_from(n).ok()))
                .collect()
        };
        let tag = ints("tag")?;
        let mut trunks = ints("trunks")?;
        trunks.sort_unstable();
        match mode.as_slice() {
            // No tag (earlier versions of this plugin for `"vlan": 0`) is VLAN 0 to OVS.
            [m] if *m == "access" => Some(PortVlan::Access {
                tag: tag.first().copied().unwrap_or(0),
            }),
            [m] if *m == "trunk" && tag.is_empty() => Some(PortVlan::Trunk { trunks }),
            // No mode: OVS makes a port with a tag an access port, one without a trunk.
            [] if tag.is_empty() => Some(PortVlan::Trunk { trunks }),
            [] if trunks.is_empty() => Some(PortVlan::Access {
                tag: tag.first().copied().unwrap_or(0),
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for PortVlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PortVlan::Access { tag } => write!(f, "access port with tag {tag}"),
            PortVlan::Trunk { trunks } if trunks.is_empty() => {
                write!(f, "trunk port carrying every VLAN")
            }
            PortVlan::Trunk { trunks } => write!(f, "trunk port carrying VLANs {trunks:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_common::Code;

    fn entry(id: Option<i64>, min: Option<i64>, max: Option<i64>) -> TrunkEntry {
        TrunkEntry {
            id,
            min_id: min,
            max_id: max,
        }
    }

    #[test]
    fn vlan_alone_is_an_access_port_and_zero_is_tag_0() {
        assert_eq!(
            PortVlan::from_config(Some(100), None).expect("valid"),
            PortVlan::Access { tag: 100 }
        );
        assert_eq!(
            PortVlan::from_config(Some(0), None).expect("valid"),
            PortVlan::Access { tag: 0 }
        );
        // An access port without a tag, as earlier versions made for `"vlan": 0`.
        let row = json!({"vlan_mode": "access", "tag": ["set", []], "trunks": ["set", []]});
        assert_eq!(PortVlan::from_row(&row), Some(PortVlan::Access { tag: 0 }));
    }

    #[test]
    fn neither_vlan_nor_trunk_is_a_trunk_of_every_vlan() {
        assert_eq!(
            PortVlan::from_config(None, None).expect("valid"),
            PortVlan::Trunk { trunks: vec![] }
        );
        assert_eq!(
            PortVlan::from_config(None, Some(&[])).expect("valid"),
            PortVlan::Trunk { trunks: vec![] }
        );
    }

    #[test]
    fn trunk_ids_and_ranges_are_merged_sorted_and_deduplicated() {
        let trunk = [
            entry(Some(30), None, None),
            entry(None, Some(10), Some(12)),
            entry(Some(11), None, None),
        ];
        assert_eq!(
            PortVlan::from_config(None, Some(&trunk)).expect("valid"),
            PortVlan::Trunk {
                trunks: vec![10, 11, 12, 30]
            }
        );
    }

    #[test]
    fn trunk_wins_over_vlan_as_in_ovs_cni() {
        let trunk = [entry(Some(5), None, None)];
        assert_eq!(
            PortVlan::from_config(Some(100), Some(&trunk)).expect("valid"),
            PortVlan::Trunk { trunks: vec![5] }
        );
    }

    #[test]
    fn out_of_range_and_malformed_entries_are_code_7_naming_the_field() {
        let cases: Vec<(Option<i64>, Vec<TrunkEntry>, &str)> = vec![
            (Some(4095), vec![], "vlan"),
            (Some(-1), vec![], "vlan"),
            (None, vec![entry(Some(5000), None, None)], "trunk[0].id"),
            (None, vec![entry(None, Some(20), Some(10))], "trunk[0]"),
            (None, vec![entry(None, Some(20), None)], "trunk[0]"),
            (
                None,
                vec![entry(Some(1), None, None), entry(None, None, Some(3))],
                "trunk[1]",
            ),
            (None, vec![entry(None, None, None)], "trunk[0]"),
            (None, vec![entry(None, Some(-2), Some(3))], "trunk[0].minID"),
        ];
        for (vlan, trunk, field) in cases {
            let e = PortVlan::from_config(vlan, Some(&trunk)).expect_err(field);
            assert_eq!(e.code(), Code::InvalidConfig);
            assert!(e.msg().starts_with(field), "{field}: {}", e.msg());
        }
    }

    #[test]
    fn columns_read_back_as_the_same_setting() {
        for vlan in [
            PortVlan::Access { tag: 7 },
            PortVlan::Access { tag: 0 },
            PortVlan::Trunk { trunks: vec![] },
            PortVlan::Trunk {
                trunks: vec![1, 2, 4094],
            },
        ] {
            let row: serde_json::Map<String, Value> = vlan
                .columns()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            assert_eq!(PortVlan::from_row(&Value::Object(row)), Some(vlan));
        }
    }

    #[test]
    fn rows_as_ovsdb_returns_them_are_understood() {
        let row = json!({"vlan_mode": "trunk", "tag": ["set", []], "trunks": ["set", [20, 10]]});
        assert_eq!(
            PortVlan::from_row(&row),
            Some(PortVlan::Trunk {
                trunks: vec![10, 20]
            })
        );
        let row = json!({"vlan_mode": ["set", []], "tag": 100, "trunks": ["set", []]});
        assert_eq!(
            PortVlan::from_row(&row),
            Some(PortVlan::Access { tag: 100 })
        );
        let row = json!({"vlan_mode": "native-untagged", "tag": 1, "trunks": 2});
        assert_eq!(PortVlan::from_row(&row), None);
    }
}
