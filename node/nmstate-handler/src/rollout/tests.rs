use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn no_selector_matches_every_node() {
    assert!(matches(&Value::Null, &labels(&[])));
    assert!(matches(&json!({}), &labels(&[("a", "b")])));
}

#[test]
fn every_pair_of_the_selector_must_be_on_the_node() {
    let selector = json!({"kubernetes.io/hostname": "node01", "role": "edge"});
    assert!(matches(
        &selector,
        &labels(&[
            ("kubernetes.io/hostname", "node01"),
            ("role", "edge"),
            ("x", "y")
        ])
    ));
    assert!(!matches(
        &selector,
        &labels(&[("kubernetes.io/hostname", "node01")])
    ));
    assert!(!matches(
        &selector,
        &labels(&[("kubernetes.io/hostname", "node02"), ("role", "edge")])
    ));
}

#[test]
fn the_default_is_half_of_the_nodes_rounded_up() {
    assert_eq!(max_unavailable(&Value::Null, 2).ok(), Some(1));
    assert_eq!(max_unavailable(&Value::Null, 3).ok(), Some(2));
    assert_eq!(max_unavailable(&Value::Null, 0).ok(), Some(1));
}

#[test]
fn counts_and_percentages_are_read_as_upstream_does() {
    assert_eq!(max_unavailable(&json!(1), 10).ok(), Some(1));
    assert_eq!(max_unavailable(&json!("3"), 10).ok(), Some(3));
    assert_eq!(max_unavailable(&json!("10%"), 15).ok(), Some(2));
    assert_eq!(max_unavailable(&json!(0), 10).ok(), Some(1));
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_holder_whose_node_is_gone_gives_its_slot_up() {
    let live = live_holders(
        &names(&["node01", "node03"]),
        &names(&["node01", "node02"]),
        &[],
    );
    assert_eq!(live, names(&["node01"]));
}

#[test]
fn a_holder_that_finished_without_releasing_gives_its_slot_up() {
    let matching = names(&["node01", "node02"]);
    let live = live_holders(
        &names(&["node01", "node02"]),
        &matching,
        &names(&["node02"]),
    );
    assert_eq!(live, names(&["node01"]));
}

#[test]
fn a_value_that_is_no_count_is_refused_as_the_policy_wrote_it() {
    let refusal = |value: Value| {
        max_unavailable(&value, 4)
            .expect_err("no count")
            .to_string()
    };
    assert_eq!(
        refusal(json!("half")),
        r#"maxUnavailable "half": neither a count nor a percentage"#
    );
    assert_eq!(
        refusal(json!("150%")),
        r#"maxUnavailable "150%": not a percentage from 0% to 100%"#
    );
    assert_eq!(
        refusal(json!(-1)),
        "maxUnavailable -1: not a count of nodes"
    );
}
