use super::*;
use crate::vm::held_macs;

#[test]
fn the_watchs_partial_decode_holds_what_the_whole_object_holds() {
    let vm = serde_json::json!({"spec": {"running": false, "template": {"spec": {
            "domain": {"devices": {"interfaces": [
                {"name": "a", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
                {"name": "b", "masquerade": {}},
                {"name": "c", "bridge": {}, "macAddress": "02:00:00:00:00:01"},
                {"name": "d", "bridge": {}, "macAddress": "not a mac"},
                {"name": "e", "bridge": {}, "macAddress": "02:00:00:00:00:02"}]}},
            "networks": [{"name": "a", "pod": {}}]}}}});
    let partial: HeldSpec = serde_json::from_value(vm["spec"].clone()).expect("decodes");
    assert_eq!(partial.macs(), held_macs(&vm));
    assert_eq!(partial.macs().len(), 2);
    let empty: HeldSpec = serde_json::from_value(serde_json::json!({})).expect("decodes");
    assert!(empty.macs().is_empty());
}
