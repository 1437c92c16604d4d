use super::*;
use crate::held_vm::HeldVm;

#[test]
fn a_list_is_read_as_its_items_and_its_version() {
    let text = r#"{"kind":"VirtualMachineList","apiVersion":"kubevirt.io/v1",
            "metadata":{"resourceVersion":"42"},
            "items":[{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine",
                "metadata":{"name":"a","namespace":"ns","resourceVersion":"41",
                    "managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]},
                "spec":{"template":{"spec":{"domain":{"devices":{"interfaces":[
                    {"name":"br1","bridge":{},"macAddress":"02:00:00:00:00:01"}]}}}}}}]}"#;
    let list: List<HeldVm> = serde_json::from_str(text).expect("a list");
    assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].name_any(), "a");
    assert_eq!(list.items[0].spec.macs().len(), 1);
}

#[test]
fn a_list_without_items_is_empty() {
    let list: List<HeldVm> =
        serde_json::from_str(r#"{"metadata":{"resourceVersion":"7"}}"#).expect("a list");
    assert!(list.items.is_empty());
}
