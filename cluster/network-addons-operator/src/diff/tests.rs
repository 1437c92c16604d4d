use super::*;

fn id(name: &str) -> Identity {
    Identity {
        api_version: "apps/v1".to_string(),
        kind: "DaemonSet".to_string(),
        namespace: "ns".to_string(),
        name: name.to_string(),
    }
}

#[test]
fn a_changed_field_shows_as_a_unified_diff() {
    let diff = unified("a: 1\nb: 2\n", "a: 1\nb: 3\n");
    assert!(diff.contains("-b: 2\n+b: 3\n"), "{diff}");
}

#[test]
fn the_report_lists_each_change_and_counts_them() {
    let report = report(&[
        (
            id("new"),
            Change::Create {
                yaml: "kind: DaemonSet\n".to_string(),
            },
        ),
        (id("same"), Change::Unchanged),
        (id("old"), Change::Delete),
    ]);
    assert!(
        report.contains("+ create DaemonSet ns/new\n+ kind: DaemonSet\n"),
        "{report}"
    );
    assert!(report.contains("- delete DaemonSet ns/old\n"), "{report}");
    assert!(
        report.ends_with("1 to create, 0 to change, 1 to delete, 0 refused, 1 unchanged\n"),
        "{report}"
    );
}
