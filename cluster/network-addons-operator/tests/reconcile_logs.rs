//! What a reconcile logs. A test binary of its own: tracing caches, per call site, whether
//! anyone listens, so a subscriber set for one test thread misses events while other tests'
//! threads log with none.

#![allow(clippy::unwrap_used)]

mod fake_api;
mod k8s_1_20;

use std::sync::{Arc, Mutex};

use kube::api::PostParams;
use kube::Api;
use network_addons_operator::reconcile::{reconcile_once, Ctx};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec};

/// Log lines as `run` prints them to stderr, captured.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

#[tokio::test]
async fn every_log_line_of_a_reconcile_names_the_config_and_its_generation() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("network_addons_operator=debug")
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let (client, _fake) = fake_api::start();
    let spec: NetworkAddonsConfigSpec = serde_saphyr::from_str("linuxBridge: {}\n").unwrap();
    let nac = Api::<NetworkAddonsConfig>::all(client.clone())
        .create(
            &PostParams::default(),
            &NetworkAddonsConfig::new("cluster", spec),
        )
        .await
        .unwrap();
    let ctx = Ctx::new(client, Settings::defaults());
    reconcile_once(&ctx, &nac).await.unwrap();

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("applied configuration recorded"), "{text}");
    for line in text.lines() {
        assert!(
            line.contains("reconcile{name=cluster generation=1}"),
            "{line}"
        );
    }
}
