#![allow(clippy::unwrap_used)]
use super::*;
use std::collections::BTreeMap;

const NS: &str = "cluster-network-addons";

fn meta(namespace: Option<&str>, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some("x".to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..ObjectMeta::default()
    }
}

fn ours(namespace: Option<&str>) -> ObjectMeta {
    meta(namespace, &[(labels::MANAGED_BY, labels::MANAGED_BY_VALUE)])
}

#[test]
fn nothing_of_kubernetes_nmstate_is_no_foreign_installation() {
    assert_eq!(foreign_nmstate(None, &[], NS), None);
}

#[test]
fn our_own_crd_and_handler_are_no_foreign_installation() {
    let crd = ours(None);
    assert_eq!(foreign_nmstate(Some(&crd), &[ours(Some(NS))], NS), None);
}

#[test]
fn what_the_upstream_operator_deployed_is_ours_to_take_over() {
    let crd = meta(None, &[(labels::UPSTREAM_VERSION, "0.79.0")]);
    let handler = meta(Some(NS), &[(labels::MANAGED_BY, UPSTREAM_MANAGED_BY_VALUE)]);
    assert_eq!(foreign_nmstate(Some(&crd), &[handler], NS), None);
}

#[test]
fn a_policy_crd_without_our_labels_is_a_foreign_installation() {
    let crd = meta(None, &[("app", "kubernetes-nmstate")]);
    assert_eq!(
        foreign_nmstate(Some(&crd), &[], NS),
        Some(ForeignNmstate::PolicyCrd)
    );
}

#[test]
fn a_handler_in_another_namespace_is_a_foreign_installation_even_labelled_like_ours() {
    let crd = ours(None);
    assert_eq!(
        foreign_nmstate(Some(&crd), &[ours(Some("nmstate"))], NS),
        Some(ForeignNmstate::Handler)
    );
}

#[test]
fn an_unlabelled_handler_in_the_operand_namespace_is_a_foreign_installation() {
    assert_eq!(
        foreign_nmstate(None, &[meta(Some(NS), &[])], NS),
        Some(ForeignNmstate::Handler)
    );
}
