//! The HTTP endpoint of a long-running process, for probes and Prometheus: GET and HEAD of a few
//! fixed paths, each answered with a text body. One request per connection and a bounded header
//! read: the kubelet and Prometheus need no more, and a client that stalls holds nothing. The
//! operator (`/healthz`, `/readyz`, `/metrics`) and the node agent (`/metrics`) serve theirs
//! with it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

/// Prometheus' text exposition format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const PLAIN_TEXT: &str = "text/plain; charset=utf-8";

/// The answer to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: StatusCode,
    pub body: String,
    pub content_type: &'static str,
}

impl Reply {
    pub fn text(status: StatusCode, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
            content_type: PLAIN_TEXT,
        }
    }

    /// 200 with metrics in Prometheus' text format.
    pub fn metrics(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            body,
            content_type: PROMETHEUS_TEXT,
        }
    }

    pub fn not_found() -> Reply {
        Reply::text(StatusCode::NOT_FOUND, "not found\n")
    }
}

/// `:8080` (every interface), `127.0.0.1:8080` or `[::1]:8080` as a socket address.
pub fn parse_address(s: &str) -> Result<SocketAddr, String> {
    let full = match s.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => s.to_string(),
    };
    full.parse()
        .map_err(|_| format!("{s:?} is not an address (e.g. :8080 or 127.0.0.1:8080)"))
}

/// Serves `answer` (a path's reply) on `listener` until the task is dropped.
pub async fn serve<F>(listener: TcpListener, answer: F)
where
    F: Fn(&str) -> Reply + Clone + Send + Sync + 'static,
{
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let answer = answer.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let reply = if request.method() == Method::GET || request.method() == Method::HEAD {
                    answer(request.uri().path())
                } else {
                    Reply::text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n")
                };
                async move { Ok::<_, Infallible>(response(reply)) }
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

fn response(reply: Reply) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(reply.body)));
    *r.status_mut() = reply.status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(reply.content_type),
    );
    r
}

/// The names of the samples in Prometheus text `text` that no `# TYPE` line declared before them:
/// none in a well-formed exposition.
pub fn undeclared_samples(text: &str) -> Vec<String> {
    let mut declared = Vec::new();
    let mut undeclared = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            declared.push(rest.split_whitespace().next().unwrap_or_default());
        } else if !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            if !declared.contains(&name) {
                undeclared.push(name.to_string());
            }
        }
    }
    undeclared
}

/// `GET path` on `address`: the status code and the body. For tests of what a process serves.
pub async fn get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn paths_are_answered_and_other_methods_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let server = tokio::spawn(serve(listener, |path: &str| match path {
            "/metrics" => Reply::metrics("up 1\n".to_string()),
            _ => Reply::not_found(),
        }));
        assert_eq!(
            get(address, "/metrics").await.expect("get"),
            (200, "up 1\n".to_string())
        );
        assert_eq!(get(address, "/other").await.expect("get").0, 404);
        server.abort();
    }

    #[test]
    fn samples_must_follow_their_type() {
        assert!(undeclared_samples("# TYPE up gauge\nup 1\nup{a=\"b\"} 1\n").is_empty());
        assert_eq!(undeclared_samples("up 1\n# TYPE up gauge\n"), ["up"]);
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
