use super::*;

fn nac() -> NetworkAddonsConfig {
    let mut nac = NetworkAddonsConfig::new("cluster", Default::default());
    nac.metadata.uid = Some("u-1".to_string());
    nac
}

#[test]
fn long_notes_are_cut_on_a_character_boundary() {
    let note = "é".repeat(600);
    let cut = truncate(&note, 1024);
    assert!(cut.len() <= 1024);
    assert!(cut.ends_with("..."));
    assert_eq!(truncate("short", 1024), "short");
}

/// Kubernetes 1.20's legacyValidateEvent (pkg/apis/core/validation/events.go) for a
/// core/v1 Event: without an eventTime, an event about an object without a namespace must
/// be in "" or "default"; with one, only "kube-system" is accepted and reportingController,
/// reportingInstance and action are required.
fn accepted_by_kubernetes_1_20(e: &Event) -> Result<(), String> {
    let namespace = e.metadata.namespace.as_deref().unwrap_or_default();
    let involved = e.involved_object.namespace.as_deref().unwrap_or_default();
    if e.event_time.is_none() {
        let ok = if involved.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved
        };
        if !ok {
            return Err(format!(
                    "involvedObject.namespace: Invalid value: {involved:?}: does not match event.namespace"
                ));
        }
        return Ok(());
    }
    if involved.is_empty() && namespace != "kube-system" {
        return Err(format!(
            "involvedObject.namespace: Invalid value: {involved:?}: does not match event.namespace"
        ));
    }
    for (field, value) in [
        ("reportingController", &e.reporting_component),
        ("reportingInstance", &e.reporting_instance),
        ("action", &e.action),
    ] {
        if value.as_deref().unwrap_or_default().is_empty() {
            return Err(format!("{field}: Required value"));
        }
    }
    Ok(())
}

#[test]
fn the_event_is_a_legacy_core_event_in_default_that_kubernetes_1_20_accepts() {
    let e = example_event(&nac(), "Warning", "Failed: FailedToApply", "apply x: y");
    assert_eq!(accepted_by_kubernetes_1_20(&e), Ok(()));
    assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    assert!(
        e.event_time.is_none(),
        "an eventTime makes it a new-style event"
    );
    assert!(e.series.is_none() && e.action.is_none());
    assert_eq!(e.count, Some(1));
    assert!(e.first_timestamp.is_some() && e.last_timestamp.is_some());
    assert_eq!(
        e.source.as_ref().and_then(|s| s.component.as_deref()),
        Some(REPORTER)
    );
    let o = &e.involved_object;
    assert_eq!(o.kind.as_deref(), Some("NetworkAddonsConfig"));
    assert_eq!(
        o.api_version.as_deref(),
        Some("networkaddonsoperator.network.kubevirt.io/v1")
    );
    assert_eq!(o.name.as_deref(), Some("cluster"));
    assert_eq!(o.uid.as_deref(), Some("u-1"));
    assert_eq!(o.namespace, None);
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reason.as_deref(), Some("Failed: FailedToApply"));
}

#[test]
fn the_rule_that_refused_the_previous_events_is_modelled() {
    // what kube's events.k8s.io recorder sent: an eventTime, in the default namespace
    let mut e = example_event(&nac(), "Normal", "Available", "ok");
    e.event_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        Timestamp::UNIX_EPOCH,
    ));
    assert!(accepted_by_kubernetes_1_20(&e)
        .is_err_and(|m| m.contains("does not match event.namespace")));
}
