//! The webhook port's HTTPS server (8000): the webhooks, `/healthz` and `/readyz`. `/metrics`
//! is not served here but on the metrics port (8443, [`serve_metrics`]), and only to a caller
//! whose token may `get` it, as upstream serves it.
//!
//! Limits: a request body past [`admission::MAX_BODY_BYTES`] is answered 413; a TLS handshake
//! must end within 10 s. The API server gives up on a webhook after its `timeoutSeconds`
//! (10 s by default); an admission here takes microseconds, or one API write when a block must
//! be claimed.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use http_endpoint::{Authorizer, Reply};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

use crate::admission;
use crate::metrics;
use crate::state::{InFlight, Shared};
use crate::webhook;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until `stop` turns true, then lets open connections finish their requests.
pub async fn serve(
    listener: TcpListener,
    tls: TlsAcceptor,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, peer)) = accepted else { continue };
                let tls = tls.clone();
                let shared = shared.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => return debug!(%peer, error = %e, "TLS handshake"),
                        Err(_) => return debug!(%peer, "TLS handshake timed out"),
                    };
                    let service = service_fn(move |req| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(route(&shared, req).await) }
                    });
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    if let Err(e) = watcher.watch(conn.into_owned()).await {
                        debug!(%peer, error = %e, "connection");
                    }
                });
            }
            _ = stop.changed() => break,
        }
    }
    graceful.shutdown().await;
}

async fn route(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    match (req.method(), path.as_str()) {
        (&Method::POST, "/mutate-pods") | (&Method::POST, "/mutate-virtualmachines") => {
            let _counted = InFlight::start(shared);
            let body = match Limited::new(req.into_body(), admission::MAX_BODY_BYTES)
                .collect()
                .await
            {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    warn!(error = %e, "request body");
                    return text(StatusCode::PAYLOAD_TOO_LARGE, "body too large or broken\n");
                }
            };
            let review = match admission::parse(&body) {
                Ok(r) => r,
                Err(e) => {
                    return text(
                        StatusCode::BAD_REQUEST,
                        &format!("not an AdmissionReview: {e}\n"),
                    )
                }
            };
            let out = if path == "/mutate-pods" {
                webhook::mutate_pod(shared, &review).await
            } else {
                webhook::mutate_vm(shared, &review).await
            };
            Response::builder()
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(out.to_string())))
                .unwrap_or_default()
        }
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz") => match shared.not_ready() {
            None => text(StatusCode::OK, "ok\n"),
            Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, &format!("{why}\n")),
        },
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r
}

/// Serves `/metrics` on the metrics port until the task is dropped: over TLS with `tls` (the
/// webhook's, whose certificate follows the serving Secret), to callers `authorizer` grants.
pub async fn serve_metrics(
    listener: TcpListener,
    tls: ServerConfig,
    authorizer: Arc<Authorizer>,
    shared: Arc<Shared>,
) {
    http_endpoint::serve(listener, tls, authorizer, move |path: &str| match path {
        http_endpoint::METRICS_PATH => Reply::metrics(metrics::render(&shared)),
        _ => Reply::not_found(),
    })
    .await
}

/// Waits until no admission is being answered (at most `limit`).
pub async fn drained(shared: &Shared, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while shared.in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
