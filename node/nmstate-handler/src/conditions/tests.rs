use super::*;

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-01T00:01:00Z";

fn true_of(conditions: &Value) -> Vec<(String, String)> {
    conditions
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] == "True")
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn an_enactment_carries_every_type_with_one_true() {
    let c = Enactment::Available.conditions(&Value::Null, T0);
    assert_eq!(c.as_array().map(Vec::len), Some(5));
    assert_eq!(
        true_of(&c),
        [(
            "Available".to_string(),
            "SuccessfullyConfigured".to_string()
        )]
    );
}

#[test]
fn a_failed_enactment_reads_back_with_its_message() {
    let c =
        Enactment::Failing("interface br0: no port eth9".to_string()).conditions(&Value::Null, T0);
    assert_eq!(
        Enactment::read(&c),
        Some(Enactment::Failing(
            "interface br0: no port eth9".to_string()
        ))
    );
}

#[test]
fn transition_times_are_kept_while_the_status_holds() {
    let first = Enactment::Available.conditions(&Value::Null, T0);
    let again = Enactment::Available.conditions(&first, T1);
    let available = previous(&again, "Available").cloned().unwrap_or_default();
    assert_eq!(available["lastTransitionTime"], T0);
    assert_eq!(available["lastHeartbeatTime"], T1);
    let failed = Enactment::Failing("x".to_string()).conditions(&first, T1);
    assert_eq!(
        previous(&failed, "Available").map(|c| c["lastTransitionTime"].clone()),
        Some(json!(T1))
    );
}

#[test]
fn a_policy_matching_no_node_is_ignored() {
    let c = Rollout::default().conditions(&Value::Null, T0);
    assert_eq!(
        true_of(&c),
        [("Ignored".to_string(), "NoMatchingNode".to_string())]
    );
}

#[test]
fn a_policy_is_progressing_until_every_matching_node_finished() {
    let r = Rollout {
        matching: 2,
        available: 1,
        ..Rollout::default()
    };
    let c = r.conditions(&Value::Null, T0);
    assert_eq!(
        true_of(&c),
        [(
            "Progressing".to_string(),
            "ConfigurationProgressing".to_string()
        )]
    );
}

#[test]
fn a_policy_configured_everywhere_is_available() {
    let r = Rollout {
        matching: 2,
        available: 2,
        ..Rollout::default()
    };
    let c = r.conditions(&Value::Null, T0);
    assert_eq!(
        true_of(&c),
        [(
            "Available".to_string(),
            "SuccessfullyConfigured".to_string()
        )]
    );
    assert_eq!(
        previous(&c, "Available").map(|c| c["message"].clone()),
        Some(json!("2/2 nodes successfully configured"))
    );
}

#[test]
fn one_failed_node_makes_the_policy_degraded() {
    let r = Rollout {
        matching: 2,
        available: 1,
        failing: 1,
        ..Rollout::default()
    };
    let c = r.conditions(&Value::Null, T0);
    assert_eq!(
        true_of(&c),
        [("Degraded".to_string(), "FailedToConfigure".to_string())]
    );
}

#[test]
fn heartbeats_alone_are_not_a_change() {
    let a = Enactment::Available.conditions(&Value::Null, T0);
    let b = Enactment::Available.conditions(&Value::Null, T1);
    assert!(same(&a, &b));
    assert!(!same(
        &a,
        &Enactment::Progressing.conditions(&Value::Null, T1)
    ));
}
