use super::*;

fn user(kind: &'static str, name: &str) -> User {
    User {
        kind,
        namespace: "ns".into(),
        name: name.into(),
        uid: String::new(),
    }
}

fn mac(s: &str) -> MacAddr {
    MacAddr::parse(s).expect("mac")
}

#[test]
fn one_mac_on_a_vmi_and_a_pod_is_a_collision_with_upstreams_message() {
    let c = Collisions::default();
    c.set_reporting(true);
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("pod", "b"), vec![mac("02:00:00:00:00:01")]);
    let now = c.current();
    let users = &now[&mac("02:00:00:00:00:01")];
    assert_eq!(
        message(&mac("02:00:00:00:00:01"), users),
        "MAC 02:00:00:00:00:01: Collision between pod/ns/b, vmi/ns/a"
    );
    assert!(c
        .render()
        .contains("kmp_mac_collisions{mac=\"02:00:00:00:00:01\"} 2"));
}

#[test]
fn a_replica_that_is_not_the_reporter_serves_the_gauge_without_samples() {
    let c = Collisions::default();
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("vmi", "b"), vec![mac("02:00:00:00:00:01")]);
    let out = c.render();
    assert!(out.contains("# TYPE kmp_mac_collisions gauge"), "{out}");
    assert!(!out.contains("kmp_mac_collisions{"), "{out}");
    c.set_reporting(true);
    assert!(c
        .render()
        .contains("kmp_mac_collisions{mac=\"02:00:00:00:00:01\"} 2"));
}

#[test]
fn a_collision_ends_when_one_user_stops() {
    let c = Collisions::default();
    c.set_reporting(true);
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("vmi", "b"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("vmi", "b"), vec![]);
    assert!(c.current().is_empty());
    assert!(!c.render().contains("kmp_mac_collisions{"));
}

#[test]
fn a_collision_is_reported_once_and_again_when_its_users_change() {
    let c = Collisions::default();
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("vmi", "b"), vec![mac("02:00:00:00:00:01")]);
    assert_eq!(c.unreported().len(), 1);
    assert!(c.unreported().is_empty());
    c.set(user("vmi", "c"), vec![mac("02:00:00:00:00:01")]);
    assert_eq!(c.unreported().len(), 1);
}

#[test]
fn users_in_namespaces_left_alone_raise_no_collision() {
    let c = Collisions::default();
    let configuration = serde_json::json!({
        "metadata": {"name": crate::opt_mode::WEBHOOK_CONFIGURATION},
        "webhooks": [{"name": crate::opt_mode::POD_WEBHOOK, "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "clientConfig": {},
            "namespaceSelector": {"matchLabels": {"mutatepods.kubemacpool.io": "allocate"}}}],
    });
    c.opt_mode.set_configuration(Some(
        &serde_json::from_value(configuration).expect("config"),
    ));
    c.opt_mode.set_namespace("ns", Some(BTreeMap::new()));
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("pod", "b"), vec![mac("02:00:00:00:00:01")]);
    assert!(c.current().is_empty(), "the pod's namespace did not opt in");
    let opted_in = [(
        "mutatepods.kubemacpool.io".to_string(),
        "allocate".to_string(),
    )];
    c.opt_mode.set_namespace("ns", Some(opted_in.into()));
    assert_eq!(c.current().len(), 1);
}

#[test]
fn looking_for_unreported_collisions_reports_none() {
    let c = Collisions::default();
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("vmi", "b"), vec![mac("02:00:00:00:00:01")]);
    assert!(c.has_unreported());
    assert!(c.has_unreported(), "a look is not a report");
    assert_eq!(c.unreported().len(), 1);
    assert!(!c.has_unreported());
}

#[test]
fn the_same_collision_reported_twice_names_one_event() {
    let users = BTreeSet::from([user("vmi", "a"), user("pod", "b")]);
    let text = message(&mac("02:00:00:00:00:01"), &users);
    let first = event_name(&user("vmi", "a"), &text);
    assert_eq!(first, event_name(&user("vmi", "a"), &text));
    assert!(
        first.starts_with("a.") && first.len() == "a.".len() + 16,
        "{first}"
    );
    assert_ne!(
        first,
        event_name(&user("pod", "b"), &text),
        "one event per user"
    );
    let more = BTreeSet::from([user("vmi", "a"), user("pod", "b"), user("pod", "c")]);
    let other = message(&mac("02:00:00:00:00:01"), &more);
    assert_ne!(
        first,
        event_name(&user("vmi", "a"), &other),
        "new users, a new event"
    );
}

#[test]
fn an_event_name_stays_a_dns_subdomain_for_the_longest_object_names() {
    let long = format!("{}-{}", "a".repeat(235), "b".repeat(17));
    let name = event_name(&user("pod", &long), "m");
    assert!(name.len() <= 253, "{}", name.len());
    let (base, hex) = name.rsplit_once('.').expect("a dot");
    assert!(
        base.ends_with(|c: char| c.is_ascii_alphanumeric()),
        "{base}"
    );
    assert_eq!(hex.len(), 16);
}

fn pod_meta(labels: &[(&str, &str)], attached: bool) -> ObjectMeta {
    let mut annotations = BTreeMap::from([(
        NETWORKS.to_string(),
        r#"[{"name":"br1","mac":"02:00:00:00:00:01"}]"#.to_string(),
    )]);
    if attached {
        annotations.insert(NETWORK_STATUS.to_string(), "[]".to_string());
    }
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    ObjectMeta {
        labels: Some(labels.collect()),
        annotations: Some(annotations),
        ..ObjectMeta::default()
    }
}

#[test]
fn a_succeeded_pod_and_a_running_pod_with_one_mac_are_no_collision() {
    let c = Collisions::default();
    let meta = pod_meta(&[], true);
    c.set(user("pod", "done"), pod_uses(Some("Succeeded"), &meta));
    c.set(user("pod", "runs"), pod_uses(Some("Running"), &meta));
    assert!(c.current().is_empty());
}

#[test]
fn two_running_pods_with_one_mac_are_one_collision() {
    let c = Collisions::default();
    let meta = pod_meta(&[], true);
    c.set(user("pod", "a"), pod_uses(Some("Running"), &meta));
    c.set(user("pod", "b"), pod_uses(Some("Running"), &meta));
    assert_eq!(c.current().len(), 1);
}

#[test]
fn a_pod_multus_has_not_attached_counts_no_mac() {
    assert!(pod_uses(Some("Running"), &pod_meta(&[], false)).is_empty());
}

#[test]
fn a_launcher_pod_counts_no_mac_as_its_vmi_counts() {
    let meta = pod_meta(&[LAUNCHER_LABEL], true);
    assert!(pod_uses(Some("Running"), &meta).is_empty());
}

#[test]
fn the_two_ends_of_a_decentralized_migration_are_no_collision() {
    let c = Collisions::default();
    let vmi = |source: Option<&str>, target: Option<&str>| {
        serde_json::json!({"status": {"migrationState": {
                "sourceState": {"migrationUID": source}, "targetState": {"migrationUID": target}}}})
    };
    let (source, target) = (vmi(Some("m1"), None), vmi(Some("m1"), Some("t1")));
    let m = mac("02:00:00:00:00:01");
    c.set_migrating(user("vmi", "a"), vec![m], Migration::of_vmi(&source));
    c.set_migrating(user("vmi", "b"), vec![m], Migration::of_vmi(&target));
    assert!(c.current().is_empty());
    c.set(user("vmi", "c"), vec![m]);
    assert_eq!(
        c.current()[&m].len(),
        3,
        "a third VMI collides with both ends"
    );
}

#[test]
fn a_relist_drops_the_users_that_are_gone() {
    let c = Collisions::default();
    c.set(user("vmi", "a"), vec![mac("02:00:00:00:00:01")]);
    c.set(user("pod", "b"), vec![mac("02:00:00:00:00:01")]);
    c.retain("vmi", &BTreeSet::new());
    assert!(c.current().is_empty());
}
