#![allow(clippy::unwrap_used)]
use super::*;
use crate::cluster::ClusterInfo;
use crate::settings::Settings;
use crate::spec::{MultusDynamicNetworks, NetworkAddonsConfigSpec};

fn rendered(socket: &str) -> Vec<Rendered> {
    let spec = NetworkAddonsConfigSpec {
        multus_dynamic_networks: Some(MultusDynamicNetworks {
            host_cri_socket_path: socket.to_string(),
        }),
        ..NetworkAddonsConfigSpec::default()
    };
    let settings = Settings::defaults();
    render(&Ctx::new(&spec, &settings, &ClusterInfo::default())).unwrap()
}

#[test]
fn the_cri_socket_of_the_spec_is_mounted_and_configured() {
    let out = rendered("/run/containerd/containerd.sock");
    let cm = &out[3].object;
    let config: serde_json::Value =
        serde_json::from_str(cm["data"][CONFIG_FILE].as_str().unwrap()).unwrap();
    assert_eq!(
        config["criSocketPath"],
        "/host/run/containerd/containerd.sock"
    );
    let ds = &out[4].object;
    let volumes = ds["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let cri = volumes.iter().find(|v| v["name"] == "cri-socket").unwrap();
    assert_eq!(cri["hostPath"]["path"], "/run/containerd/containerd.sock");
    assert_eq!(cri["hostPath"]["type"], "Socket");
}
