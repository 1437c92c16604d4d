use super::*;
use kube::Resource;

#[test]
fn pods_are_listed_at_the_core_apis_path() {
    assert_eq!(HeldPod::url_path(&(), None), "/api/v1/pods");
}
