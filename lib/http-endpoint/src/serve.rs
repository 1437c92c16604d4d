//! The server: HTTPS, HTTP/1.1, one request per connection, GET and HEAD of fixed paths.
//! `/metrics` is answered only to a caller the [`Authorizer`] grants; the probes' paths to
//! anyone (the kubelet sends no token).
//!
//! What a hostile or broken client gets: a TLS handshake or a request head not done within
//! 10 s has its connection closed; a head over [`MAX_HEADER_BYTES`] is answered 431; no
//! connection lives past [`CONNECTION_LIMIT`]. A client holds a task and a socket, nothing
//! else, and the server keeps accepting.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::review::{Access, Authorizer, METRICS_PATH};
use crate::Reply;

/// The time a client has for its TLS handshake, and again for its request's head.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head (request line and headers) answered: a ServiceAccount token is
/// about 1 KiB, an OIDC one a few.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// The most of a head hyper reads (and answers 431 past). Between the two the head is read
/// whole and refused by [`respond`]: a server that stops reading in the middle of a request
/// and closes makes the kernel reset the connection, and the client may lose the 431.
const READ_HEADER_BYTES: usize = 64 * 1024;
/// The longest one connection is served: handshake, head, the token's review and the answer.
pub const CONNECTION_LIMIT: Duration = Duration::from_secs(30);

/// Serves `answer` (a path's reply) on `listener` over TLS with `tls` until the task is
/// dropped. HTTP/1.1 only: the configuration's ALPN is set to it.
pub async fn serve<F>(
    listener: TcpListener,
    mut tls: ServerConfig,
    authorizer: Arc<Authorizer>,
    answer: F,
) where
    F: Fn(&str) -> Reply + Clone + Send + Sync + 'static,
{
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let answer = answer.clone();
        let authorizer = authorizer.clone();
        tokio::spawn(async move {
            let served = tokio::time::timeout(CONNECTION_LIMIT, async move {
                let stream = match tokio::time::timeout(CLIENT_TIMEOUT, acceptor.accept(tcp)).await
                {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake"),
                    Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
                };
                let service = service_fn(move |request: Request<Incoming>| {
                    let answer = answer.clone();
                    let authorizer = authorizer.clone();
                    async move {
                        Ok::<_, Infallible>(respond(&request, &authorizer, &answer).await)
                    }
                });
                let served = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(CLIENT_TIMEOUT)
                    .max_header_size(READ_HEADER_BYTES)
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "probe or metrics connection failed");
                }
            })
            .await;
            if served.is_err() {
                tracing::debug!(%peer, "connection closed after {} s", CONNECTION_LIMIT.as_secs());
            }
        });
    }
}

async fn respond<F>(
    request: &Request<Incoming>,
    authorizer: &Authorizer,
    answer: &F,
) -> Response<Full<Bytes>>
where
    F: Fn(&str) -> Reply,
{
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return response(Reply::text(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and HEAD\n",
        ));
    }
    if head_bytes(request) > MAX_HEADER_BYTES {
        return response(Reply::text(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request headers too large\n",
        ));
    }
    let path = request.uri().path();
    if path == METRICS_PATH {
        let access = authorizer
            .check(request.headers().get(http::header::AUTHORIZATION))
            .await;
        if let Some((status, why)) = access.refusal() {
            let mut refused = response(Reply::text(status, why));
            if access == Access::NoToken || status == StatusCode::UNAUTHORIZED {
                refused.headers_mut().insert(
                    http::header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer"),
                );
            }
            return refused;
        }
    }
    response(answer(path))
}

/// The size of a request's head as sent: its target and each header line.
fn head_bytes<B>(request: &Request<B>) -> usize {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    target + headers
}

fn response(reply: Reply) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(reply.body)));
    *r.status_mut() = reply.status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(reply.content_type),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{get, request};
    use crate::fake_api::{self, ALLOWED, FORBIDDEN};
    use crate::tls::self_signed;
    use std::net::SocketAddr;
    use tokio::io::AsyncWriteExt;
    use tokio_rustls::rustls::pki_types::CertificateDer;

    struct Running {
        address: SocketAddr,
        certificate: CertificateDer<'static>,
        reviewer: fake_api::Reviewer,
        server: tokio::task::JoinHandle<()>,
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.server.abort();
        }
    }

    async fn start() -> Running {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let made = self_signed(&["localhost".to_string()]).expect("certificate");
        let (client, reviewer) = fake_api::start();
        let server = tokio::spawn(serve(
            listener,
            made.config,
            Arc::new(Authorizer::new(client)),
            |path: &str| match path {
                "/metrics" => Reply::metrics("up 1\n".to_string()),
                "/healthz" => Reply::text(StatusCode::OK, "ok\n"),
                _ => Reply::not_found(),
            },
        ));
        Running {
            address,
            certificate: made.certificate,
            reviewer,
            server,
        }
    }

    impl Running {
        async fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
            get(self.address, &self.certificate, path, token)
                .await
                .expect("request")
        }
    }

    #[tokio::test]
    async fn metrics_without_a_token_are_refused_with_401() {
        let server = start().await;
        assert_eq!(server.get("/metrics", None).await.0, 401);
    }

    #[tokio::test]
    async fn metrics_with_a_token_the_api_server_does_not_know_are_refused_with_401() {
        let server = start().await;
        assert_eq!(server.get("/metrics", Some("garbage")).await.0, 401);
    }

    #[tokio::test]
    async fn metrics_for_a_user_without_the_permission_are_refused_with_403() {
        let server = start().await;
        assert_eq!(server.get("/metrics", Some(FORBIDDEN)).await.0, 403);
    }

    #[tokio::test]
    async fn metrics_are_served_to_a_user_allowed_to_get_them() {
        let server = start().await;
        assert_eq!(
            server.get("/metrics", Some(ALLOWED)).await,
            (200, "up 1\n".to_string())
        );
    }

    #[tokio::test]
    async fn repeated_scrapes_are_reviewed_once() {
        let server = start().await;
        for _ in 0..10 {
            assert_eq!(server.get("/metrics", Some(ALLOWED)).await.0, 200);
        }
        assert_eq!(server.reviewer.requests(), 2);
    }

    #[tokio::test]
    async fn probes_need_no_token_and_other_paths_are_not_found() {
        let server = start().await;
        assert_eq!(
            server.get("/healthz", None).await,
            (200, "ok\n".to_string())
        );
        assert_eq!(server.get("/other", None).await.0, 404);
        assert_eq!(server.reviewer.requests(), 0);
    }

    #[tokio::test]
    async fn other_methods_are_refused() {
        let server = start().await;
        let head =
            "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        let answer = request(server.address, &server.certificate, head)
            .await
            .expect("request");
        assert_eq!(answer.0, 405);
    }

    #[tokio::test]
    async fn a_header_over_the_limit_is_answered_431_and_the_server_goes_on() {
        let server = start().await;
        let head = format!(
            "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(MAX_HEADER_BYTES + 1)
        );
        let answer = request(server.address, &server.certificate, &head)
            .await
            .expect("request");
        assert_eq!(answer.0, 431);
        assert_eq!(server.reviewer.requests(), 0, "refused before any review");
        assert_eq!(server.get("/metrics", Some(ALLOWED)).await.0, 200);
    }

    #[tokio::test]
    async fn a_head_too_large_to_read_is_refused_and_the_server_goes_on() {
        let server = start().await;
        let head = format!(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(READ_HEADER_BYTES)
        );
        let answer = request(server.address, &server.certificate, &head).await;
        // The server stops reading mid-request: its 431 may be lost to the reset that follows.
        if let Ok((status, _)) = answer {
            assert!(status == 431 || status == 0, "{status}");
        }
        assert_eq!(server.get("/healthz", None).await.0, 200);
    }

    #[tokio::test]
    async fn plain_http_gets_no_metrics() {
        use tokio::io::AsyncReadExt;
        let server = start().await;
        let mut tcp = tokio::net::TcpStream::connect(server.address)
            .await
            .expect("connect");
        tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer).await;
        assert!(!String::from_utf8_lossy(&answer).contains("up 1"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_stalls_in_its_handshake_is_cut_off_after_10_s() {
        use tokio::io::AsyncReadExt;
        let server = start().await;
        let mut tcp = tokio::net::TcpStream::connect(server.address)
            .await
            .expect("connect");
        let started = tokio::time::Instant::now();
        // Says nothing: the server closes the connection once the handshake times out.
        let mut buf = [0u8; 16];
        let read = tcp.read(&mut buf).await;
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert!(started.elapsed() >= CLIENT_TIMEOUT);
        assert_eq!(server.get("/healthz", None).await.0, 200);
    }
}
