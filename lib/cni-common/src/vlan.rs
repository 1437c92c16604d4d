//! VLAN IDs and trunk lists as CNI configs write them (the bridge plugin's `vlanTrunk`, ovs-cni's
//! `trunk`): `{"id": N}` and inclusive `{"minID": A, "maxID": B}` ranges, validated with errors
//! (code 7) that name the offending entry.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::error::{Error, Result};

/// Highest usable VLAN ID; 4095 is reserved by 802.1Q.
pub const MAX_VID: u16 = 4094;

/// One trunk entry. An entry may give an id, a range, or both (the reference plugins take both).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct TrunkEntry {
    #[serde(default)]
    pub id: Option<i64>,
    #[serde(default, rename = "minID")]
    pub min_id: Option<i64>,
    #[serde(default, rename = "maxID")]
    pub max_id: Option<i64>,
}

/// `v` as a VLAN ID from `lowest` to 4094; `field` names it in the error.
pub fn vlan_id(field: &str, v: i64, lowest: u16) -> Result<u16> {
    u16::try_from(v)
        .ok()
        .filter(|v| (lowest..=MAX_VID).contains(v))
        .ok_or_else(|| {
            Error::invalid_config(format!(
                "{field} {v} is out of range: VLAN IDs are {lowest} to {MAX_VID}"
            ))
        })
}

/// The VLAN IDs of the trunk list `field`, sorted and without duplicates. Entries are named
/// `field[i]` in errors.
pub fn collect_trunk(field: &str, entries: &[TrunkEntry], lowest: u16) -> Result<Vec<u16>> {
    let mut ids = BTreeSet::new();
    for (i, e) in entries.iter().enumerate() {
        let entry = format!("{field}[{i}]");
        if let Some(id) = e.id {
            ids.insert(vlan_id(&format!("{entry}.id"), id, lowest)?);
        }
        match (e.min_id, e.max_id) {
            (None, None) if e.id.is_none() => {
                return Err(Error::invalid_config(format!(
                    "{entry} has neither id nor minID and maxID"
                )))
            }
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => {
                return Err(Error::invalid_config(format!(
                    "{entry}: minID and maxID must be given together"
                )))
            }
            (Some(min), Some(max)) => {
                let min = vlan_id(&format!("{entry}.minID"), min, lowest)?;
                let max = vlan_id(&format!("{entry}.maxID"), max, lowest)?;
                if min > max {
                    return Err(Error::invalid_config(format!(
                        "{entry}: minID {min} is greater than maxID {max}"
                    )));
                }
                ids.extend(min..=max);
            }
        }
    }
    Ok(ids.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    fn entry(id: Option<i64>, min: Option<i64>, max: Option<i64>) -> TrunkEntry {
        TrunkEntry {
            id,
            min_id: min,
            max_id: max,
        }
    }

    #[test]
    fn ids_and_ranges_are_merged_sorted_and_deduplicated() {
        let trunk = [
            entry(Some(200), None, None),
            entry(None, Some(100), Some(102)),
            entry(Some(101), None, None),
            entry(Some(7), Some(8), Some(9)),
        ];
        assert_eq!(
            collect_trunk("vlanTrunk", &trunk, 1).expect("valid"),
            vec![7, 8, 9, 100, 101, 102, 200]
        );
    }

    #[test]
    fn bad_entries_are_code_7_naming_the_entry() {
        let cases = [
            (entry(None, Some(300), Some(200)), "t[0]: minID 300"),
            (entry(None, Some(10), None), "t[0]: minID and maxID"),
            (entry(None, None, Some(10)), "t[0]: minID and maxID"),
            (entry(Some(4095), None, None), "t[0].id 4095"),
            (entry(None, Some(1), Some(5000)), "t[0].maxID 5000"),
            (entry(None, Some(-2), Some(3)), "t[0].minID -2"),
            (entry(None, None, None), "t[0] has neither"),
        ];
        for (bad, start) in cases {
            let e = collect_trunk("t", std::slice::from_ref(&bad), 1).expect_err(start);
            assert_eq!(e.code(), Code::InvalidConfig);
            assert!(e.msg().starts_with(start), "{start}: {}", e.msg());
        }
    }

    #[test]
    fn the_lowest_id_is_the_callers() {
        assert!(collect_trunk("t", &[entry(Some(0), None, None)], 1).is_err());
        assert_eq!(
            collect_trunk("t", &[entry(Some(0), None, None)], 0).expect("0 allowed"),
            vec![0]
        );
        assert_eq!(vlan_id("vlan", 4094, 1).expect("valid"), 4094);
        assert!(vlan_id("vlan", 4095, 0)
            .expect_err("4095")
            .msg()
            .starts_with("vlan 4095"));
    }
}
