use super::*;
use serde_json::json;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn report(health: Health, secs: i64) -> Report {
    Report {
        health,
        generation: Some(3),
        version: "1.2.3".to_string(),
        containers: None,
        not_deployed: None,
        components: None,
        now: at(secs),
    }
}

fn condition<'a>(s: &'a NetworkAddonsConfigStatus, t: &str) -> &'a Condition {
    s.conditions
        .iter()
        .find(|c| c.type_ == t)
        .unwrap_or_else(|| panic!("no {t} condition"))
}

#[test]
fn transition_time_stays_while_the_status_does_and_heartbeat_moves() {
    let deploying = Health::Deploying {
        progressing: vec!["DaemonSet \"ns/a\" update is rolling out".to_string()],
        hung: vec![],
    };
    let first = next_status(
        &NetworkAddonsConfigStatus::default(),
        &report(deploying.clone(), 0),
    );
    let second = next_status(&first, &report(deploying, 60));
    let p1 = condition(&first, PROGRESSING);
    let p2 = condition(&second, PROGRESSING);
    assert_eq!(p1.last_transition_time, p2.last_transition_time);
    assert_ne!(p1.last_heartbeat_time, p2.last_heartbeat_time);
    assert!(same_ignoring_heartbeat(&first, &second));

    let third = next_status(&second, &report(Health::Available, 120));
    assert_eq!(condition(&third, AVAILABLE).status, "True");
    assert_ne!(
        condition(&third, AVAILABLE).last_transition_time,
        p1.last_transition_time
    );
    assert_eq!(third.observed_version.as_deref(), Some("1.2.3"));
    assert_eq!(second.observed_version, None);
}

fn component(key: &str, progressing: &[&str], not_deployed: Option<&str>) -> ComponentHealth {
    ComponentHealth {
        key: key.to_string(),
        progressing: progressing.iter().map(|s| s.to_string()).collect(),
        not_deployed: not_deployed.map(|reason| Absent {
            reason: reason.to_string(),
            message: format!("because {reason}"),
        }),
    }
}

#[test]
fn each_component_has_its_own_available_condition() {
    let line = "DaemonSet \"ns/ovs-cni-amd64\" update is rolling out";
    let mut r = report(
        Health::Deploying {
            progressing: vec![line.to_string()],
            hung: vec![],
        },
        0,
    );
    r.components = Some(vec![
        component("linuxBridge", &[], None),
        component("ovs", &[line], None),
        component("macvtap", &[], Some("NotDeployed")),
        component("nmstate", &[], Some("UpstreamInstalled")),
    ]);
    let next = next_status(&NetworkAddonsConfigStatus::default(), &r);
    let bridge = condition(&next, "LinuxBridgeAvailable");
    assert_eq!(
        (bridge.status.as_str(), bridge.reason.as_str()),
        ("True", "AsExpected")
    );
    let ovs = condition(&next, "OvsAvailable");
    assert_eq!(
        (ovs.status.as_str(), ovs.reason.as_str()),
        ("False", "Deploying")
    );
    assert_eq!(ovs.message, line);
    let macvtap = condition(&next, "MacvtapAvailable");
    assert_eq!(
        (macvtap.status.as_str(), macvtap.reason.as_str()),
        ("False", "NotDeployed")
    );
    let nmstate = condition(&next, "NmstateAvailable");
    assert_eq!(
        (nmstate.status.as_str(), nmstate.reason.as_str()),
        ("False", "UpstreamInstalled")
    );
    assert_eq!(nmstate.message, "because UpstreamInstalled");
}

#[test]
fn a_component_turned_off_loses_its_condition() {
    let mut r = report(Health::Available, 0);
    r.components = Some(vec![component("ovs", &[], None)]);
    let first = next_status(&NetworkAddonsConfigStatus::default(), &r);
    r.components = Some(vec![]);
    let next = next_status(&first, &r);
    assert!(next.conditions.iter().all(|c| c.type_ != "OvsAvailable"));
}

#[test]
fn a_failed_apply_keeps_the_components_conditions_of_what_runs() {
    let mut r = report(Health::Available, 0);
    r.components = Some(vec![component("ovs", &[], None)]);
    let first = next_status(&NetworkAddonsConfigStatus::default(), &r);
    let failing = report(
        Health::Failing {
            reason: Reason::FailedToValidate,
            message: "invalid configuration:\nx".to_string(),
        },
        60,
    );
    let next = next_status(&first, &failing);
    let ovs = condition(&next, "OvsAvailable");
    assert_eq!(ovs.status, "True");
    assert_eq!(
        ovs.last_transition_time,
        condition(&first, "OvsAvailable").last_transition_time
    );
}

#[test]
fn the_retired_failing_condition_is_dropped() {
    let old = NetworkAddonsConfigStatus {
        conditions: vec![Condition {
            type_: "Failing".to_string(),
            status: "True".to_string(),
            ..Condition::default()
        }],
        ..Default::default()
    };
    let next = next_status(&old, &report(Health::Available, 0));
    let types: Vec<&str> = next.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, [AVAILABLE, PROGRESSING, DEGRADED]);
}

#[test]
fn a_failure_is_degraded_and_not_available() {
    let next = next_status(
        &NetworkAddonsConfigStatus::default(),
        &report(
            Health::Failing {
                reason: Reason::FailedToValidate,
                message: "invalid configuration:\nx".to_string(),
            },
            0,
        ),
    );
    assert_eq!(condition(&next, DEGRADED).status, "True");
    assert_eq!(condition(&next, DEGRADED).reason, "FailedToValidate");
    assert_eq!(condition(&next, AVAILABLE).reason, "Failing");
    assert_eq!(condition(&next, PROGRESSING).reason, "InvalidConfiguration");
    assert_eq!(next.operator_version.as_deref(), Some("1.2.3"));
    assert_eq!(next.target_version.as_deref(), Some("1.2.3"));
    assert_eq!(next.observed_generation, Some(3));
}

#[test]
fn a_failure_the_operator_retries_asks_for_no_human_interaction() {
    let next = next_status(
        &NetworkAddonsConfigStatus::default(),
        &report(
            Health::Failing {
                reason: Reason::FailedToApply,
                message: "apply DaemonSet ns/a: connection refused".to_string(),
            },
            0,
        ),
    );
    let progressing = condition(&next, PROGRESSING);
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_str()),
        ("False", "Failing")
    );
    assert_eq!(
        progressing.message,
        "Retrying: apply DaemonSet ns/a: connection refused"
    );
    assert_eq!(condition(&next, DEGRADED).reason, "FailedToApply");
}

#[test]
fn degraded_is_news_when_it_turns_true_or_changes_reason() {
    let failing = |reason: Reason| {
        next_status(
            &NetworkAddonsConfigStatus::default(),
            &report(
                Health::Failing {
                    reason,
                    message: "m".to_string(),
                },
                0,
            ),
        )
    };
    assert!(degraded_anew(
        &NetworkAddonsConfigStatus::default(),
        Reason::FailedToApply
    ));
    assert!(!degraded_anew(
        &failing(Reason::FailedToApply),
        Reason::FailedToApply
    ));
    assert!(degraded_anew(
        &failing(Reason::FailedToApply),
        Reason::FailedToDeleteObjects
    ));
    let available = next_status(
        &NetworkAddonsConfigStatus::default(),
        &report(Health::Available, 0),
    );
    assert!(degraded_anew(&available, Reason::FailedToApply));
}

#[test]
fn containers_include_init_containers() {
    let ds = json!({"kind": "DaemonSet", "metadata": {"name": "a"}, "spec": {"template": {"spec": {
            "initContainers": [{"name": "install", "image": "img:1"}],
            "containers": [{"name": "main", "image": "img:2"}]}}}});
    let cm = json!({"kind": "ConfigMap", "metadata": {"name": "c"}});
    let list = containers(&[ds, cm]);
    let names: Vec<(&str, &str)> = list
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_str()))
        .collect();
    assert_eq!(names, [("main", "img:2"), ("install", "img:1")]);
    assert_eq!(list[0].parent_kind, "DaemonSet");
    assert_eq!(list[0].parent_name, "a");
}
