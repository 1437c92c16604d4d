use super::*;

#[test]
fn host_paths_are_under_host() {
    assert_eq!(host_path("/opt/cni/bin"), "/host/opt/cni/bin");
    assert_eq!(host_path("/var/lib/cni/bin"), "/host/var/lib/cni/bin");
    assert_eq!(host_path("relative"), "/host/relative");
}
