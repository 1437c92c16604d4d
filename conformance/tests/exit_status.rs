//! The suite's exit status as scripts and CI read it: 2 for a run that could not start, before
//! any plugin is called.

use std::process::Command;

fn conformance(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cni-conformance"))
        .args(args)
        .output()
        .expect("run cni-conformance")
}

#[test]
fn a_config_file_that_cannot_be_read_exits_2_and_names_it() {
    let out = conformance(&[
        "--plugin-dir",
        "/nonexistent",
        "--plugin",
        "bridge",
        "--config",
        "/nonexistent/bridge.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/bridge.json"), "{stderr}");
}

#[test]
fn an_env_option_naming_a_cni_variable_exits_2() {
    let out = conformance(&[
        "--plugin-dir",
        "/d",
        "--plugin",
        "bridge",
        "--config",
        "/c",
        "--env",
        "CNI_COMMAND=DEL",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CNI_COMMAND is set by the suite itself"),
        "{stderr}"
    );
}
