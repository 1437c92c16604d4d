//! The operator's HTTP endpoint, on one port (`--metrics-bind-address`, default `:8080`):
//! - `/healthz`: liveness, 200 while the process serves requests;
//! - `/readyz`: readiness, 200 once the operator reads NetworkAddonsConfigs from the API server
//!   (its first list succeeded, or a reconcile ran), 503 before;
//! - `/metrics`: Prometheus text format, with the upstream operator's names where it has one:
//!   `kubevirt_cnao_operator_up`, `kubevirt_cnao_cr_ready`,
//!   `kubevirt_cnao_cr_kubemacpool_deployed`, and the reconciles by result.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::error::{Error, Result};

/// The default address of the endpoint: every interface (the kubelet probes the pod's IP).
pub const DEFAULT_ADDRESS: &str = ":8080";

/// What the endpoint reports; shared by the controller, which updates it, and the server.
#[derive(Debug, Default)]
pub struct State {
    ready: AtomicBool,
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
pub fn parse_address(s: &str) -> Result<SocketAddr> {
    let full = match s.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => s.to_string(),
    };
    full.parse().map_err(|_| {
        Error::other(format!(
            "{s:?} is not an address (e.g. :8080 or 127.0.0.1:8080)"
        ))
    })
}

/// Listens on `address`.
pub async fn bind(address: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(address)
        .await
        .map_err(|e| Error::wrap(format!("listen on {address} for probes and metrics"), e))
}

/// Serves the endpoint on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, state: Arc<State>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(answer(&request, &state)) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "probe or metrics connection failed");
            }
        });
    }
}

fn answer(request: &Request<Incoming>, state: &State) -> Response<Full<Bytes>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    }
    match request.uri().path() {
        "/healthz" | "/livez" => text(StatusCode::OK, "ok\n"),
        "/readyz" if state.is_ready() => text(StatusCode::OK, "ok\n"),
        "/readyz" => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: NetworkAddonsConfigs not read yet\n",
        ),
        "/metrics" => {
            let mut r = text(StatusCode::OK, &state.render());
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn text(code: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = code;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(address: SocketAddr, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        let code = response
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (code, body)
    }

    #[tokio::test]
    async fn probes_and_metrics_over_http() {
        let listener = bind(parse_address("127.0.0.1:0").expect("address"))
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let state = Arc::new(State::default());
        let server = tokio::spawn(serve(listener, state.clone()));

        assert_eq!(get(address, "/healthz").await.0, 200);
        assert_eq!(get(address, "/readyz").await.0, 503);
        let (code, body) = get(address, "/metrics").await;
        assert_eq!(code, 200);
        assert!(body.contains("\nkubevirt_cnao_operator_up 1\n"), "{body}");
        assert!(body.contains("\nkubevirt_cnao_cr_ready 0\n"), "{body}");

        state.count_reconcile(true);
        state.set_cr_ready(true);
        state.set_kubemacpool_deployed(true);
        assert_eq!(get(address, "/readyz").await.0, 200);
        let (_, body) = get(address, "/metrics").await;
        assert!(body.contains("\nkubevirt_cnao_cr_ready 1\n"), "{body}");
        assert!(
            body.contains("\nkubevirt_cnao_cr_kubemacpool_deployed 1\n"),
            "{body}"
        );
        assert!(body.contains("network_addons_operator_reconcile_total{result=\"success\"} 1\n"));
        assert_eq!(get(address, "/other").await.0, 404);
        server.abort();
    }

    #[test]
    fn every_metric_has_help_and_type_before_its_samples() {
        let text = State::default().render();
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.push(
                    rest.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                );
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap_or_default();
                assert!(declared.iter().any(|d| d == name), "{name} has no TYPE");
            }
        }
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn addresses() {
        assert_eq!(
            parse_address(":8080").ok(),
            "0.0.0.0:8080".parse::<SocketAddr>().ok()
        );
        assert!(parse_address("127.0.0.1:9").is_ok());
        assert!(parse_address("nowhere").is_err());
    }
}
