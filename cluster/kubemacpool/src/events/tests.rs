use super::*;

fn pod(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some("u-1".into()),
        ..ObjectReference::default()
    }
}

#[test]
fn a_warning_lives_in_the_namespace_of_the_object_it_is_about() {
    let e = warning(
        pod("p"),
        EventName::Generated("p.".into()),
        "InvalidRange",
        "why".into(),
    );
    assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(e.metadata.generate_name.as_deref(), Some("p."));
    assert_eq!(e.metadata.name, None);
    assert_eq!(e.involved_object.uid.as_deref(), Some("u-1"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reason.as_deref(), Some("InvalidRange"));
}
