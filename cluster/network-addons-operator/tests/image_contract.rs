#![allow(clippy::unwrap_used)]
//! The operator and the image agree: every command the operator renders for our image is one
//! the binary in that image accepts (the installer, KubeMacPool's allocator), at a path the
//! Containerfile puts there.

use std::path::Path;

use network_addons_operator::cluster::ClusterInfo;
use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::manifests::deploy_files;
use network_addons_operator::render::render;
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::NetworkAddonsConfig;
use serde_json::Value;

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path),
    )
    .unwrap()
}

/// The command and args of every container and init container of `object` using `image`.
fn commands_of(object: &Value, image: &str) -> Vec<Vec<String>> {
    let pod = &object["spec"]["template"]["spec"];
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod[*k].as_array())
        .flatten()
        .filter(|c| c["image"] == image)
        .map(|c| {
            let mut words: Vec<String> = serde_json::from_value(c["command"].clone()).unwrap();
            if let Some(args) = c["args"].as_array() {
                words.extend(args.iter().map(|a| a.as_str().unwrap().to_string()));
            }
            words
        })
        .collect()
}

/// The seed's full config, with the nmstate handler too.
fn full_config() -> NetworkAddonsConfig {
    let mut cr: NetworkAddonsConfig = serde_saphyr::from_str(&repo_file(
        "cluster/network-addons-operator/examples/full.yaml",
    ))
    .unwrap();
    cr.spec.nmstate = Some(Default::default());
    cr
}

#[test]
fn every_installer_command_rendered_parses_with_the_installer() {
    // The handler's probe timeout is rendered only when it is not the default.
    let short_probes = Settings {
        nmstate_probe_timeout: std::time::Duration::from_secs(15),
        ..Settings::defaults()
    };
    for settings in [Settings::defaults(), short_probes] {
        let applied = fill_defaults(&full_config().spec, None, [0x4a, 0xbe]);
        let mut checked = 0;
        for r in render(&applied, &settings, &ClusterInfo::WITH_CERT_MANAGER).unwrap() {
            for command in commands_of(&r.object, &settings.plugins_image) {
                match command[0].as_str() {
                    "/node-agent" => {
                        node_agent::cli::parse(&command[1..], Some("node-1"))
                            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
                    }
                    "/kubemacpool" => {
                        use clap::Parser;
                        kubemacpool::cli::Cli::try_parse_from(&command)
                            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
                    }
                    other => panic!("{other} is not in the image: {command:?}"),
                }
                let script = repo_file("scripts/build-plugins");
                assert!(
                    script.contains(&format!("\"$to{}\"", command[0])),
                    "scripts/build-plugins stages {}",
                    command[0]
                );
                checked += 1;
            }
        }
        // linuxBridge, ovs: install + run; macvtap: install; nmstate: the handler;
        // kubeMacPool: the manager and the cert manager.
        assert_eq!(checked, 8);
    }
}

#[test]
fn every_readiness_probe_rendered_parses_with_the_installer() {
    let settings = Settings::defaults();
    let applied = fill_defaults(&full_config().spec, None, [0x4a, 0xbe]);
    let mut probes = 0;
    for r in render(&applied, &settings, &ClusterInfo::WITH_CERT_MANAGER).unwrap() {
        let pod = &r.object["spec"]["template"]["spec"];
        for c in pod["containers"].as_array().into_iter().flatten() {
            if c["image"] != settings.plugins_image.as_str() {
                continue;
            }
            if let Some(cmd) = c["readinessProbe"]["exec"]["command"].as_array() {
                let words: Vec<String> = serde_json::from_value(Value::Array(cmd.clone())).unwrap();
                assert_eq!(words[0], "/node-agent");
                node_agent::cli::parse(&words[1..], Some("node-1"))
                    .unwrap_or_else(|e| panic!("{words:?}: {e}"));
                probes += 1;
            }
        }
    }
    assert_eq!(
        probes, 3,
        "linuxBridge, ovs and the nmstate handler report readiness through the installer"
    );
}

#[test]
fn the_operator_deployment_runs_the_binary_the_containerfile_copies() {
    let containerfile = repo_file("Containerfile");
    let files = deploy_files(&Settings::defaults()).unwrap();
    let (_, operator) = files.iter().find(|(n, _)| *n == "operator.yaml").unwrap();
    let deployment: Value = operator
        .split("---\n")
        .map(|d| serde_saphyr::from_str::<Value>(d).unwrap())
        .find(|d| d["kind"] == "Deployment")
        .unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], Settings::defaults().plugins_image);
    let binary = container["command"][0].as_str().unwrap();
    // The Containerfile copies the staged root; build-plugins stages the operator there.
    assert!(
        containerfile
            .lines()
            .any(|l| l == "COPY target/image/${TARGETARCH}/ /"),
        "the Containerfile copies the staged root"
    );
    let script = repo_file("scripts/build-plugins");
    assert!(
        script.contains(&format!("\"$to{binary}\"")),
        "scripts/build-plugins stages {binary}"
    );
}
