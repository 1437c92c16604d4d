//! The operator's HTTPS endpoint, on one port (`--metrics-bind-address`, default `:8080`), with a
//! self-signed certificate made at start:
//! - `/healthz`: liveness, 200 while the process serves requests;
//! - `/readyz`: readiness, 200 once the operator reads NetworkAddonsConfigs from the API server
//!   (its first list succeeded, or a reconcile ran), 503 before;
//! - `/metrics`, only to a bearer token allowed to `get` the non-resource URL `/metrics` (401
//!   without a valid token, 403 without the permission; the ClusterRole
//!   `cluster-network-addons-operator-metrics-reader` grants it): Prometheus text format, with
//!   the upstream operator's names where it has one:
//!   `kubevirt_cnao_operator_up`, `kubevirt_cnao_cr_ready`,
//!   `kubevirt_cnao_cr_kubemacpool_deployed`, and the reconciles by result.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use http::StatusCode;
use http_endpoint::{Authorizer, Reply, ServerConfig};
use tokio::net::TcpListener;

use crate::error::{Context, Result};

/// The default address of the endpoint: every interface (the kubelet probes the pod's IP).
pub const DEFAULT_ADDRESS: &str = ":8080";
/// The port of [`DEFAULT_ADDRESS`], which the operator's Deployment names `metrics`.
pub const METRICS_PORT: i32 = 8080;

/// What the endpoint reports; shared by the controller, which updates it, and the server.
#[derive(Debug, Default)]
pub struct State {
    ready: AtomicBool,
    leading: AtomicBool,
    cr_ready: AtomicBool,
    kubemacpool_deployed: AtomicBool,
    reconciles_ok: AtomicU64,
    reconciles_failed: AtomicU64,
}

impl State {
    /// The operator reads its configuration: ready.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// This replica reconciles: the config's gauges are its to report.
    pub fn set_leading(&self) {
        self.leading.store(true, Ordering::Relaxed);
    }

    /// Whether the NetworkAddonsConfig is Available (`kubevirt_cnao_cr_ready`).
    pub fn set_cr_ready(&self, available: bool) {
        self.cr_ready.store(available, Ordering::Relaxed);
    }

    /// Whether kubemacpool is deployed (`kubevirt_cnao_cr_kubemacpool_deployed`).
    pub fn set_kubemacpool_deployed(&self, deployed: bool) {
        self.kubemacpool_deployed.store(deployed, Ordering::Relaxed);
    }

    /// The NetworkAddonsConfig is gone: nothing is ready or deployed.
    pub fn reset(&self) {
        self.set_cr_ready(false);
        self.set_kubemacpool_deployed(false);
    }

    pub fn count_reconcile(&self, ok: bool) {
        let counter = if ok {
            &self.reconciles_ok
        } else {
            &self.reconciles_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.set_ready();
    }

    /// The metrics in Prometheus' text exposition format (0.0.4).
    pub fn render(&self) -> String {
        let flag = |b: &AtomicBool| u8::from(b.load(Ordering::Relaxed));
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, value: u8| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        };
        gauge(
            "kubevirt_cnao_operator_up",
            "Total count of running CNAO operators",
            1,
        );
        // A replica that is not leading knows nothing of the config: the leader reports it.
        if self.leading.load(Ordering::Relaxed) {
            gauge(
                "kubevirt_cnao_cr_ready",
                "CNAO CR Ready",
                flag(&self.cr_ready),
            );
            gauge(
                "kubevirt_cnao_cr_kubemacpool_deployed",
                "KubeMacpool is deployed by CNAO CR",
                flag(&self.kubemacpool_deployed),
            );
        }
        let name = "network_addons_operator_reconcile_total";
        out.push_str(&format!(
            "# HELP {name} Reconciles of the NetworkAddonsConfig, by result\n# TYPE {name} counter\n"
        ));
        for (result, counter) in [
            ("success", &self.reconciles_ok),
            ("error", &self.reconciles_failed),
        ] {
            let n = counter.load(Ordering::Relaxed);
            out.push_str(&format!("{name}{{result=\"{result}\"}} {n}\n"));
        }
        out
    }
}

/// `:8080` (every interface), `127.0.0.1:8080` or `[::1]:8080` as a socket address.
pub use http_endpoint::parse_address;

/// Listens on `address`.
pub async fn bind(address: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(address)
        .await
        .with_context(|| format!("listen on {address} for probes and metrics"))
}

/// Serves the endpoint on `listener` over TLS with `tls` until the task is dropped; `client`
/// reviews the tokens of `/metrics` requests.
pub async fn serve(
    listener: TcpListener,
    tls: ServerConfig,
    client: kube::Client,
    state: Arc<State>,
) {
    let authorizer = Arc::new(Authorizer::new(client));
    http_endpoint::serve(listener, tls, authorizer, move |path: &str| {
        answer(path, &state)
    })
    .await
}

/// The endpoint's TLS configuration: a self-signed certificate for the pod's names.
pub fn self_signed_tls() -> Result<ServerConfig> {
    let made = http_endpoint::self_signed(&http_endpoint::tls::local_names())?;
    Ok(made.config)
}

fn answer(path: &str, state: &State) -> Reply {
    match path {
        "/healthz" | "/livez" => Reply::text(StatusCode::OK, "ok\n"),
        "/readyz" if state.is_ready() => Reply::text(StatusCode::OK, "ok\n"),
        "/readyz" => Reply::text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: NetworkAddonsConfigs not read yet\n",
        ),
        "/metrics" => Reply::metrics(state.render()),
        _ => Reply::not_found(),
    }
}

#[cfg(test)]
mod tests;
