//! The Containerfile at the repository root cannot be built here (no container engine), so its
//! shape is checked against scripts/build-plugins, which produces everything it copies, and
//! the README's DaemonSet snippet is checked against the command line parser.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use cni_installer::cli::{self, Command};

fn repo_file(path: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The instructions of a Containerfile (comments and blank lines dropped).
fn instructions(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.split_whitespace().map(str::to_string);
            let op = words.next().expect("an instruction").to_uppercase();
            (op, words.collect())
        })
        .collect()
}

/// `PLUGINS=(a b c)` in scripts/build-plugins.
fn built_plugins(script: &str) -> BTreeSet<String> {
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("PLUGINS=("))
        .expect("PLUGINS=( in scripts/build-plugins");
    line.trim_end_matches(')')
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_containerfile_copies_exactly_what_build_plugins_produces() {
    let text = repo_file("Containerfile");
    let script = repo_file("scripts/build-plugins");
    assert!(
        text.lines()
            .take(3)
            .any(|l| l.starts_with('#') && l.contains("scripts/build-plugins")),
        "the Containerfile says at the top to run scripts/build-plugins first"
    );
    let ins = instructions(&text);
    assert_eq!(
        ins.first().map(|(op, args)| (op.as_str(), args.clone())),
        Some(("FROM", vec!["scratch".to_string()]))
    );
    assert!(
        ins.iter()
            .all(|(op, _)| matches!(op.as_str(), "FROM" | "COPY" | "ENTRYPOINT" | "LABEL")),
        "a scratch image has no shell to RUN anything: {ins:?}"
    );
    assert_eq!(
        ins.last(),
        Some(&(
            "ENTRYPOINT".to_string(),
            vec!["[\"/cni-installer\"]".to_string()]
        ))
    );

    let plugins = built_plugins(&script);
    assert_eq!(
        plugins,
        ["bridge", "macvtap", "ovs", "tuning"]
            .map(String::from)
            .into()
    );
    let mut copied_plugins = BTreeSet::new();
    let mut copied_installer = false;
    let mut copied_operator = false;
    for (_, args) in ins.iter().filter(|(op, _)| op == "COPY") {
        let (dest, sources) = args.split_last().expect("COPY <src>... <dest>");
        for src in sources {
            if let Some(p) = src.strip_prefix("target/cni-bin/") {
                assert_eq!(dest, "/plugins/", "{src}");
                assert!(
                    plugins.contains(p),
                    "{src} is not built by scripts/build-plugins"
                );
                assert!(
                    script.contains("target/cni-bin/$p"),
                    "scripts/build-plugins installs the plugins into target/cni-bin/"
                );
                copied_plugins.insert(p.to_string());
            } else if src == "target/installer/cni-installer" {
                assert_eq!(dest, "/cni-installer");
                assert!(
                    script.contains("target/installer/cni-installer"),
                    "built by scripts/build-plugins"
                );
                assert!(
                    script.contains("check_static target/installer/cni-installer"),
                    "and checked static"
                );
                copied_installer = true;
            } else if src == "target/operator/network-addons-operator" {
                assert_eq!(dest, "/network-addons-operator");
                assert!(
                    script.contains("check_static target/operator/network-addons-operator"),
                    "built by scripts/build-plugins and checked static"
                );
                copied_operator = true;
            } else {
                panic!("COPY {src}: not something scripts/build-plugins produces");
            }
        }
    }
    assert!(copied_installer, "the image holds /cni-installer");
    assert!(copied_operator, "the image holds /network-addons-operator");
    assert_eq!(
        copied_plugins, plugins,
        "the image holds every plugin, and only those"
    );
}

#[test]
fn the_readme_daemonset_commands_parse() {
    let readme = repo_file("installer/README.md");
    let mut parsed = 0;
    for line in readme.lines() {
        let line = line.trim().trim_start_matches("- ");
        let Some(array) = line.strip_prefix("command: ") else {
            continue;
        };
        let words: Vec<String> =
            serde_json::from_str(array).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(
            words.first().map(String::as_str),
            Some("/cni-installer"),
            "{line}"
        );
        let command =
            cli::parse(&words[1..], Some("node-1")).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(!matches!(command, Command::Help(_)), "{line}");
        parsed += 1;
    }
    assert!(
        parsed >= 3,
        "the README's DaemonSet has install, run and probe commands"
    );
}
