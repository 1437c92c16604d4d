//! The project's image as the registry serves it: an index of an amd64 and an arm64 image,
//! each with that architecture's static binaries.

use std::process::Command;

use anyhow::{Context, Result};
use serde_json::Value;

use kube_tier::daemon::run;
use kube_tier::image::{REGISTRY_ADDR, REGISTRY_NAME};

use crate::{check, plugins_image, Ctx};

pub fn the_image_is_an_index_of_amd64_and_arm64(ctx: &mut Ctx) -> Result<()> {
    let tag = plugins_image(ctx)?;
    let reference = format!(
        "docker://{REGISTRY_ADDR}/{}",
        tag.strip_prefix(&format!("{REGISTRY_NAME}/"))
            .unwrap_or(&tag)
    );
    let raw =
        run(Command::new("skopeo").args(["inspect", "--raw", "--tls-verify=false", &reference]))?;
    let index: Value = serde_json::from_str(&raw).context("parse the index")?;
    let mut platforms: Vec<String> = index["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            format!(
                "{}/{}",
                m["platform"]["os"].as_str().unwrap_or_default(),
                m["platform"]["architecture"].as_str().unwrap_or_default()
            )
        })
        .collect();
    platforms.sort();
    check(platforms == ["linux/amd64", "linux/arm64"], || {
        format!("the image lists {platforms:?}: {raw}")
    })?;
    // The arm64 image's binaries are aarch64 ones, and run (under qemu-user here).
    let dir = ctx.cluster.base().join("arm64-image");
    let _ = std::fs::remove_dir_all(&dir);
    run(Command::new("skopeo")
        .args([
            "copy",
            "--quiet",
            "--override-arch",
            "arm64",
            "--src-tls-verify=false",
            &reference,
        ])
        .arg(format!("dir:{}", dir.display())))?;
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json"))?)?;
    let layer = manifest["layers"][0]["digest"]
        .as_str()
        .and_then(|d| d.strip_prefix("sha256:"))
        .context("no layer")?;
    let root = dir.join("root");
    std::fs::create_dir_all(&root)?;
    run(Command::new("tar")
        .arg("-xf")
        .arg(dir.join(layer))
        .arg("-C")
        .arg(&root))?;
    for binary in [
        "node-agent",
        "cni-installer",
        "plugins/bridge",
        "plugins/tuning",
        "network-addons-operator",
    ] {
        let kind = run(Command::new("file").arg(root.join(binary)))?;
        check(
            kind.contains("ARM aarch64") && kind.contains("statically linked"),
            || format!("{binary} in the arm64 image: {kind}"),
        )?;
    }
    // The node agent's earlier name, kept for one release for the previous operator's
    // DaemonSets, is the agent itself.
    let help = run(Command::new("qemu-aarch64-static")
        .arg(root.join("cni-installer"))
        .arg("help"))?;
    check(help.contains("Usage: node-agent"), || {
        format!("/cni-installer help in the arm64 image: {help}")
    })?;
    let version = run(Command::new("qemu-aarch64-static")
        .arg(root.join("network-addons-operator"))
        .arg("--version"))?;
    println!("    arm64 operator under qemu-user: {}", version.trim());
    Ok(())
}
