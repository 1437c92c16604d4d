//! The container runtime's pod sandboxes, over CRI: the kubelet's gRPC API on the runtime's unix
//! socket (containerd's `/run/containerd/containerd.sock`, CRI-O's `/var/run/crio/crio.sock`).
//! Garbage collection keeps the attachments of the sandboxes listed here; so every failure is an
//! error, never an empty list, which would let it collect everything.
//!
//! The few messages needed are prost derives carrying the field numbers of CRI v1's api.proto,
//! not bindings generated at build time (k8s-cri): those need protoc on every build machine, for
//! six small messages whose field numbers a published protobuf API never changes. Fields not declared here are skipped when
//! decoding, so a newer runtime's additions do no harm. tonic does the gRPC part (framing,
//! status, trailers); the transport is one HTTP/2 connection per call, made by hyper (already
//! linked for kube) straight on the socket: tonic's own channel would add reconnects and load
//! balancing that a single local call has no use for. All of it is pure Rust, for the static
//! musl builds.

use std::path::Path;
use std::time::Duration;

use http::uri::{PathAndQuery, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::UnixStream;
use tokio::task::JoinSet;
use tonic_prost::ProstCodec;

use crate::error::{CriError, Error, Result};

/// One pod sandbox as the runtime reports it (CRI v1 PodSandbox).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The sandbox's container ID: CNI_CONTAINERID of its attachments.
    pub id: String,
    /// metadata.name (the pod's name).
    pub name: String,
    /// metadata.namespace.
    pub namespace: String,
    /// metadata.uid (the pod's UID).
    pub uid: String,
    /// state == SANDBOX_READY.
    pub ready: bool,
    /// Nanoseconds since the epoch.
    pub created_at: i64,
}

/// Every pod sandbox of the runtime at `socket`, ready or not
/// (runtime.v1.RuntimeService/ListPodSandbox, no filter).
pub async fn list_pod_sandboxes(socket: &Path, timeout: Duration) -> Result<Vec<Sandbox>> {
    let answer: ListPodSandboxResponse = call(
        socket,
        timeout,
        &LIST_POD_SANDBOX,
        ListPodSandboxRequest::default(),
    )
    .await?;
    Ok(answer.items.into_iter().map(Sandbox::from).collect())
}

/// The runtime's name and version (runtime.v1.RuntimeService/Version), e.g.
/// "containerd 1.6.20~ds1".
pub async fn version(socket: &Path, timeout: Duration) -> Result<String> {
    let answer: VersionResponse =
        call(socket, timeout, &VERSION, VersionRequest::default()).await?;
    Ok(format!(
        "{} {}",
        answer.runtime_name, answer.runtime_version
    ))
}

/// One method of runtime.v1.RuntimeService.
struct Rpc {
    name: &'static str,
    path: &'static str,
}

const LIST_POD_SANDBOX: Rpc = Rpc {
    name: "ListPodSandbox",
    path: "/runtime.v1.RuntimeService/ListPodSandbox",
};

const VERSION: Rpc = Rpc {
    name: "Version",
    path: "/runtime.v1.RuntimeService/Version",
};

/// The largest answer taken: the kubelet's limit, and containerd's default for what it sends.
/// A node with very many sandboxes gets an error past it, never a truncated list.
const MAX_ANSWER: usize = 16 << 20;

/// One unary call of `rpc` on the runtime at `socket`, connection included, within `timeout`.
async fn call<Req, Resp>(socket: &Path, timeout: Duration, rpc: &Rpc, request: Req) -> Result<Resp>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let answer = match tokio::time::timeout(timeout, unary(socket, timeout, rpc, request)).await {
        Ok(answer) => answer,
        Err(_) => Err(CriError::Timeout(timeout)),
    };
    // A variant of its own rather than a context: callers tell the call and the failure apart.
    answer.map_err(|source| Error::Cri {
        call: rpc.name,
        socket: socket.to_path_buf(),
        source,
    })
}

async fn unary<Req, Resp>(
    socket: &Path,
    timeout: Duration,
    rpc: &Rpc,
    request: Req,
) -> std::result::Result<Resp, CriError>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let stream = UnixStream::connect(socket)
        .await
        .map_err(CriError::Connect)?;
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(CriError::Handshake)?;
    // The connection runs beside the call and no longer: dropping the set ends it.
    let mut connections = JoinSet::new();
    connections.spawn(connection);
    // Always ready: each request goes to the connection, which queues it.
    let transport = tower::service_fn(move |req| {
        let mut sender = sender.clone();
        async move { sender.send_request(req).await }
    });
    // The authority means nothing on a unix socket, but HTTP/2 requests must carry one.
    let mut grpc =
        tonic::client::Grpc::with_origin(transport, Uri::from_static("http://localhost"))
            .max_decoding_message_size(MAX_ANSWER);
    let mut request = tonic::Request::new(request);
    // Tells the runtime too, which may then give up on its side.
    request.set_timeout(timeout);
    let answer = grpc
        .unary(
            request,
            PathAndQuery::from_static(rpc.path),
            ProstCodec::<Req, Resp>::default(),
        )
        .await
        .map_err(CriError::Status)?;
    Ok(answer.into_inner())
}

impl From<PodSandbox> for Sandbox {
    fn from(sandbox: PodSandbox) -> Sandbox {
        let metadata = sandbox.metadata.unwrap_or_default();
        Sandbox {
            id: sandbox.id,
            name: metadata.name,
            namespace: metadata.namespace,
            uid: metadata.uid,
            ready: sandbox.state == SANDBOX_READY,
            created_at: sandbox.created_at,
        }
    }
}

// The messages, with CRI v1's field numbers. Only what the calls above send or read is declared.

#[derive(Clone, PartialEq, prost::Message)]
struct VersionRequest {
    /// The client's CRI version, for the runtime's information only: left empty.
    #[prost(string, tag = "1")]
    version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct VersionResponse {
    #[prost(string, tag = "2")]
    runtime_name: String,
    #[prost(string, tag = "3")]
    runtime_version: String,
}

/// Without a filter (field 1): every sandbox.
#[derive(Clone, PartialEq, prost::Message)]
struct ListPodSandboxRequest {}

#[derive(Clone, PartialEq, prost::Message)]
struct ListPodSandboxResponse {
    #[prost(message, repeated, tag = "1")]
    items: Vec<PodSandbox>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PodSandbox {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(message, optional, tag = "2")]
    metadata: Option<PodSandboxMetadata>,
    /// A PodSandboxState: an enum, which is an int32 on the wire.
    #[prost(int32, tag = "3")]
    state: i32,
    #[prost(int64, tag = "4")]
    created_at: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PodSandboxMetadata {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    uid: String,
    #[prost(string, tag = "3")]
    namespace: String,
}

/// PodSandboxState.SANDBOX_READY (SANDBOX_NOTREADY is 1).
const SANDBOX_READY: i32 = 0;

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::path::PathBuf;

    use bytes::Bytes;
    use http_body_util::combinators::BoxBody;
    use http_body_util::{BodyExt, Empty, Full};

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(10);

    type Reply = http::Response<BoxBody<Bytes, Infallible>>;

    /// A runtime on a socket in `dir` that answers calls of `method` (its path) with `reply`
    /// (protobuf bytes), and any other call with Unimplemented, as a gRPC server does.
    fn fake_runtime(dir: &Path, method: &'static str, reply: Vec<u8>) -> PathBuf {
        let socket = dir.join("runtime.sock");
        let listener = tokio::net::UnixListener::bind(&socket).expect("bind the fake runtime");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let reply = reply.clone();
                let serve = hyper::service::service_fn(move |req: http::Request<_>| {
                    let answer = if req.uri().path() == method {
                        answer(&reply)
                    } else {
                        status(tonic::Code::Unimplemented, "unknown method")
                    };
                    async move { Ok::<_, Infallible>(answer) }
                });
                tokio::spawn(
                    hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), serve),
                );
            }
        });
        socket
    }

    /// `message` (protobuf bytes) as one gRPC frame, then status OK in the trailers.
    fn answer(message: &[u8]) -> Reply {
        let mut frame = vec![0]; // not compressed
        let len = u32::try_from(message.len()).expect("a small message");
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(message);
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        let body = Full::new(Bytes::from(frame))
            .with_trailers(async move { Some(Ok(trailers)) })
            .boxed();
        http::Response::builder()
            .header("content-type", "application/grpc")
            .body(body)
            .expect("a response")
    }

    /// A trailers-only answer: the status in the headers, no message.
    fn status(code: tonic::Code, message: &'static str) -> Reply {
        http::Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", (code as i32).to_string())
            .header("grpc-message", message)
            .body(Empty::new().boxed())
            .expect("a response")
    }

    // Protobuf written out by hand from api.proto's field numbers, so that the declarations above
    // are checked against the wire format rather than against themselves.

    fn varint(mut value: u64, out: &mut Vec<u8>) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }

    /// Field `tag` of wire type LEN: a string, bytes or a nested message.
    fn len_field(tag: u64, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(tag << 3 | 2, &mut out);
        varint(value.len() as u64, &mut out);
        out.extend_from_slice(value);
        out
    }

    /// Field `tag` of wire type VARINT: int32, int64, an enum.
    fn varint_field(tag: u64, value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(tag << 3, &mut out);
        varint(value, &mut out);
        out
    }

    /// A PodSandbox with every field of CRI v1, labels, annotations and runtime handler included.
    fn pod_sandbox(id: &str, name: &str, uid: &str, namespace: &str, state: u64) -> Vec<u8> {
        let metadata = [
            len_field(1, name.as_bytes()),
            len_field(2, uid.as_bytes()),
            len_field(3, namespace.as_bytes()),
            varint_field(4, 2), // attempt
        ]
        .concat();
        let label = [len_field(1, b"app"), len_field(2, b"web")].concat();
        let annotation = [
            len_field(1, b"k8s.v1.cni.cncf.io/networks"),
            len_field(2, b"br1"),
        ]
        .concat();
        [
            len_field(1, id.as_bytes()),
            len_field(2, &metadata),
            varint_field(3, state),
            varint_field(4, 1_700_000_000_123_456_789),
            len_field(5, &label),
            len_field(6, &annotation),
            len_field(7, b"runc"),
        ]
        .concat()
    }

    #[tokio::test]
    async fn sandboxes_decode_from_cri_v1_list_pod_sandbox() {
        let dir = tempfile::tempdir().expect("temp dir");
        let list = [
            len_field(1, &pod_sandbox("c0ffee", "web-0", "uid-0", "default", 0)),
            len_field(1, &pod_sandbox("dead01", "job-1", "uid-1", "batch", 1)),
        ]
        .concat();
        let socket = fake_runtime(
            dir.path(),
            "/runtime.v1.RuntimeService/ListPodSandbox",
            list,
        );

        let sandboxes = list_pod_sandboxes(&socket, TIMEOUT).await.expect("listed");

        let sandbox = |id: &str, name: &str, uid: &str, namespace: &str, ready| Sandbox {
            id: id.to_string(),
            name: name.to_string(),
            namespace: namespace.to_string(),
            uid: uid.to_string(),
            ready,
            created_at: 1_700_000_000_123_456_789,
        };
        assert_eq!(
            sandboxes,
            [
                sandbox("c0ffee", "web-0", "uid-0", "default", true),
                sandbox("dead01", "job-1", "uid-1", "batch", false),
            ]
        );
    }

    #[tokio::test]
    async fn the_version_is_the_runtime_name_then_its_version() {
        let dir = tempfile::tempdir().expect("temp dir");
        let answer = [
            len_field(1, b"0.1.0"),
            len_field(2, b"cri-o"),
            len_field(3, b"1.31.2"),
            len_field(4, b"v1"),
        ]
        .concat();
        let socket = fake_runtime(dir.path(), "/runtime.v1.RuntimeService/Version", answer);

        assert_eq!(
            version(&socket, TIMEOUT).await.expect("version"),
            "cri-o 1.31.2"
        );
    }

    #[tokio::test]
    async fn a_runtime_without_the_method_is_an_error_not_an_empty_list() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Serves another method only: ListPodSandbox is Unimplemented.
        let socket = fake_runtime(dir.path(), "/runtime.v1.RuntimeService/Version", Vec::new());

        let err = list_pod_sandboxes(&socket, TIMEOUT)
            .await
            .expect_err("no list from a runtime without ListPodSandbox");

        assert!(
            matches!(&err, Error::Cri { call: "ListPodSandbox", source: CriError::Status(s), .. }
                if s.code() == tonic::Code::Unimplemented),
            "{err:?}"
        );
        assert_eq!(
            err.report(),
            format!(
                "CRI ListPodSandbox on {}: Unimplemented: unknown method",
                socket.display()
            )
        );
    }
}
