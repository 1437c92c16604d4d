use super::*;

#[test]
fn a_launcher_pod_whose_vm_exists_is_left_to_it() {
    assert!(left_to_its_vm::<()>(&Ok(true)));
}

#[test]
fn a_launcher_pod_of_a_vmi_without_a_vm_gets_macs_from_the_pool() {
    assert!(!left_to_its_vm::<()>(&Ok(false)));
}

#[test]
fn a_launcher_pod_whose_vm_cannot_be_read_passes_unchanged() {
    assert!(left_to_its_vm(&Err("connection refused")));
}
