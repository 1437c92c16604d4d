//! The Containerfile at the repository root cannot be built here (no container engine), so its
//! shape is checked against scripts/build-plugins, which produces everything it copies, and
//! the README's DaemonSet snippet is checked against the command line parser.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use node_agent::cli::{self, Command};

fn repo_file(path: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
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

/// `ALL_PLUGINS=(a b c)` in scripts/build-plugins: what it builds without arguments.
fn built_plugins(script: &str) -> BTreeSet<String> {
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("ALL_PLUGINS=("))
        .expect("ALL_PLUGINS=( in scripts/build-plugins");
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
        ins.iter().all(|(op, _)| matches!(
            op.as_str(),
            "FROM" | "ARG" | "COPY" | "ENTRYPOINT" | "LABEL"
        )),
        "a scratch image has no shell to RUN anything: {ins:?}"
    );
    assert_eq!(
        ins.last(),
        Some(&(
            "ENTRYPOINT".to_string(),
            vec!["[\"/node-agent\"]".to_string()]
        ))
    );
    // One COPY of the architecture's staged root, which build-plugins lays out.
    assert!(
        ins.iter()
            .any(|(op, args)| op == "ARG" && args[0].starts_with("TARGETARCH")),
        "the Containerfile takes the platform's TARGETARCH"
    );
    let copies: Vec<&Vec<String>> = ins
        .iter()
        .filter(|(op, _)| op == "COPY")
        .map(|(_, a)| a)
        .collect();
    assert_eq!(
        copies,
        [&vec![
            "target/image/${TARGETARCH}/".to_string(),
            "/".to_string()
        ]]
    );

    let plugins = built_plugins(&script);
    assert_eq!(
        plugins,
        ["bridge", "macvtap", "ovs", "tuning"]
            .map(String::from)
            .into()
    );
    for staged in [
        "install -m 0755 \"$from/node-agent/node-agent\" \"$to/node-agent\"",
        "for p in \"${PLUGINS[@]}\"; do install -m 0755 \"$from/cni-bin/$p\" \"$to/plugins/$p\"; done",
        "ln \"$to/node-agent\" \"$to/network-addons-operator\"",
        "ln \"$to/node-agent\" \"$to/kubemacpool\"",
        "stage amd64 target",
        "stage arm64 target/aarch64",
    ] {
        assert!(
            script.contains(staged),
            "scripts/build-plugins stages the image's root: {staged}"
        );
    }
    for checked in [
        "check_static \"$out/cni-bin/$p\"",
        "check_static \"$out/node-agent/node-agent\"",
    ] {
        assert!(script.contains(checked), "and checks it static: {checked}");
    }
}

/// What build-plugins staged for amd64 is the image's root: `/plugins/<each>` and the daemons'
/// one binary as `/node-agent`, `/cni-installer`, `/network-addons-operator` and `/kubemacpool`.
#[test]
fn the_staged_amd64_root_holds_the_node_agent_the_plugins_and_the_operator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/image/amd64");
    assert!(root.exists(), "run scripts/build-plugins first");
    for file in [
        "node-agent",
        "cni-installer",
        "plugins/bridge",
        "plugins/macvtap",
        "plugins/ovs",
        "plugins/tuning",
        "network-addons-operator",
        "kubemacpool",
    ] {
        assert!(root.join(file).is_file(), "{file} staged");
    }
    let inode = |name: &str| {
        let m = fs::metadata(root.join(name)).expect(name);
        (m.dev(), m.ino())
    };
    for name in ["cni-installer", "network-addons-operator", "kubemacpool"] {
        assert_eq!(
            inode(name),
            inode("node-agent"),
            "/{name} is a hard link to /node-agent"
        );
    }
}

/// `/cni-installer`, the node agent's name until this release, stays in the image for one
/// release: the DaemonSets the previous operator rendered run it with the new image until the
/// new operator replaces them.
#[test]
fn build_plugins_stages_the_node_agents_old_name_for_both_architectures() {
    let script = repo_file("scripts/build-plugins");
    let stage = script
        .find("\nstage() {\n")
        .expect("stage() in scripts/build-plugins");
    let body = &script[stage..stage + script[stage..].find("\n}\n").expect("stage's end")];
    let binary = body
        .find("install -m 0755 \"$from/node-agent/node-agent\" \"$to/node-agent\"")
        .expect("stage() stages /node-agent");
    // A hard link, not a symlink: copies of the staged root that take regular files keep it.
    let alias = body
        .find("ln \"$to/node-agent\" \"$to/cni-installer\"")
        .expect("stage() links /cni-installer to /node-agent");
    assert!(binary < alias, "linked once /node-agent is there");
}

#[test]
fn the_readme_daemonset_commands_parse() {
    let readme = repo_file("node/node-agent/README.md");
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
            Some("/node-agent"),
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
