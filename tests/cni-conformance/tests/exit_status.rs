//! The suite's exit status as scripts and CI read it: 2 for a run that could not start, before
//! any plugin is called.

use std::process::{Command, Output};

/// `cni-conformance` with the three required options, then `extra`.
fn conformance(config: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cni-conformance"))
        .args([
            "--plugin-dir",
            "/nonexistent",
            "--plugin",
            "bridge",
            "--config",
            config,
        ])
        .args(extra)
        .output()
        .expect("run cni-conformance")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_config_file_that_cannot_be_read_exits_2_and_names_it() {
    let out = conformance("/nonexistent/bridge.json", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/bridge.json"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_env_option_naming_a_cni_variable_exits_2() {
    let out = conformance("/c", &["--env", "CNI_COMMAND=DEL"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("CNI_COMMAND is set by the suite itself"),
        "{}",
        stderr(&out)
    );
}
