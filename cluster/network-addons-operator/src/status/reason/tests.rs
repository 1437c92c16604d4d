use super::*;

#[test]
fn reasons_are_spelled_as_upstream_spells_them() {
    let all = [
        Reason::FailedToValidate,
        Reason::UnsafeChange,
        Reason::FailedToGetPreviousConfigSpec,
        Reason::FailedToRender,
        Reason::FailedToApply,
        Reason::FailedToDeleteObjects,
        Reason::RolloutHung,
    ];
    let spelled: Vec<String> = all.iter().map(Reason::to_string).collect();
    assert_eq!(spelled, all.map(|r| format!("{r:?}")));
    assert!(all.iter().all(|r| r.to_string() == r.as_str()));
}

#[test]
fn only_an_invalid_spec_or_an_unsafe_change_needs_a_spec_change() {
    let needs: Vec<Reason> = [
        Reason::FailedToValidate,
        Reason::UnsafeChange,
        Reason::FailedToGetPreviousConfigSpec,
        Reason::FailedToRender,
        Reason::FailedToApply,
        Reason::FailedToDeleteObjects,
        Reason::RolloutHung,
    ]
    .into_iter()
    .filter(|r| r.needs_a_spec_change())
    .collect();
    assert_eq!(needs, [Reason::FailedToValidate, Reason::UnsafeChange]);
}
