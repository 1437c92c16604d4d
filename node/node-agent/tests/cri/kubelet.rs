//! What the kubelet asks of the runtime to start and end a sandbox, which the installer never
//! does: a client of the test's own, with the CRI v1 messages it needs.

use std::path::Path;

use http::uri::{PathAndQuery, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::UnixStream;

/// A sandbox in the node's network namespace (no CNI), under `cgroup_parent`; its ID.
pub async fn run_pod_sandbox(
    socket: &Path,
    name: &str,
    namespace: &str,
    uid: &str,
    cgroup_parent: &str,
) -> Result<String, tonic::Status> {
    let request = RunPodSandboxRequest {
        config: Some(PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: name.to_string(),
                uid: uid.to_string(),
                namespace: namespace.to_string(),
                attempt: 0,
            }),
            linux: Some(LinuxPodSandboxConfig {
                cgroup_parent: cgroup_parent.to_string(),
                security_context: Some(LinuxSandboxSecurityContext {
                    namespace_options: Some(NamespaceOption {
                        network: NODE,
                        pid: POD,
                        ipc: NODE,
                    }),
                }),
            }),
        }),
    };
    let answer: RunPodSandboxResponse = unary(socket, "RunPodSandbox", request).await?;
    Ok(answer.pod_sandbox_id)
}

pub async fn stop_pod_sandbox(socket: &Path, id: &str) -> Result<(), tonic::Status> {
    let request = PodSandboxId {
        pod_sandbox_id: id.to_string(),
    };
    let _: Empty = unary(socket, "StopPodSandbox", request).await?;
    Ok(())
}

pub async fn remove_pod_sandbox(socket: &Path, id: &str) -> Result<(), tonic::Status> {
    let request = PodSandboxId {
        pod_sandbox_id: id.to_string(),
    };
    let _: Empty = unary(socket, "RemovePodSandbox", request).await?;
    Ok(())
}

async fn unary<Req, Resp>(socket: &Path, method: &str, request: Req) -> Result<Resp, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    let unavailable = |err: &dyn std::fmt::Display| tonic::Status::unavailable(err.to_string());
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|e| unavailable(&e))?;
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| unavailable(&e))?;
    let connection = tokio::spawn(connection);
    let transport = tower::service_fn(move |req| {
        let mut sender = sender.clone();
        async move { sender.send_request(req).await }
    });
    let mut grpc =
        tonic::client::Grpc::with_origin(transport, Uri::from_static("http://localhost"));
    let path =
        PathAndQuery::try_from(format!("/runtime.v1.RuntimeService/{method}")).expect("a path");
    let answer = grpc
        .unary(
            tonic::Request::new(request),
            path,
            tonic_prost::ProstCodec::default(),
        )
        .await;
    connection.abort();
    answer.map(tonic::Response::into_inner)
}

/// NamespaceMode
const POD: i32 = 0;
const NODE: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
struct RunPodSandboxRequest {
    #[prost(message, optional, tag = "1")]
    config: Option<PodSandboxConfig>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PodSandboxConfig {
    #[prost(message, optional, tag = "1")]
    metadata: Option<PodSandboxMetadata>,
    #[prost(message, optional, tag = "8")]
    linux: Option<LinuxPodSandboxConfig>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PodSandboxMetadata {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    uid: String,
    #[prost(string, tag = "3")]
    namespace: String,
    #[prost(uint32, tag = "4")]
    attempt: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LinuxPodSandboxConfig {
    #[prost(string, tag = "1")]
    cgroup_parent: String,
    #[prost(message, optional, tag = "2")]
    security_context: Option<LinuxSandboxSecurityContext>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LinuxSandboxSecurityContext {
    #[prost(message, optional, tag = "1")]
    namespace_options: Option<NamespaceOption>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct NamespaceOption {
    #[prost(int32, tag = "1")]
    network: i32,
    #[prost(int32, tag = "2")]
    pid: i32,
    #[prost(int32, tag = "3")]
    ipc: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct RunPodSandboxResponse {
    #[prost(string, tag = "1")]
    pod_sandbox_id: String,
}

/// StopPodSandboxRequest and RemovePodSandboxRequest alike.
#[derive(Clone, PartialEq, prost::Message)]
struct PodSandboxId {
    #[prost(string, tag = "1")]
    pod_sandbox_id: String,
}

/// StopPodSandboxResponse and RemovePodSandboxResponse.
#[derive(Clone, PartialEq, prost::Message)]
struct Empty {}
