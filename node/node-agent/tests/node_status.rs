//! Publishing bridges on the Node against a mock API server: what is requested, with which
//! patch type and body, and that nothing is patched when nothing changed. The mock refuses a
//! GET of the status subresource with 403, as a server enforcing the marker's RBAC (`get` on
//! `nodes`, `patch` on `nodes/status`) does.

use std::collections::BTreeSet;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use node_agent::marker::Mark;
use node_agent::node::NodeStatus;
use serde_json::{json, Value};
use tower_test::mock::{self, Handle};

type ApiServer = Handle<Request<Body>, Response<Body>>;

fn node_with_capacity(capacity: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "status": {"capacity": capacity, "allocatable": capacity}
    })
}

fn reply(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string().into_bytes()))
        .expect("response")
}

/// What an API server answers a service account without `get` on `nodes/status`.
fn forbidden(path: &str) -> Response<Body> {
    reply(
        StatusCode::FORBIDDEN,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Forbidden",
            "message": format!("GET {path}: cannot get resource \"nodes/status\""),
            "code": 403
        }),
    )
}

/// Answers the next request, which must be `method path`; returns its content type and body.
async fn expect(
    api: &mut ApiServer,
    method: Method,
    path: &str,
    answer: &Value,
) -> (String, Value) {
    let (request, send) = api.next_request().await.expect("a request");
    let asked = request.uri().path().to_string();
    if request.method() == Method::GET
        && asked.starts_with("/api/v1/nodes/")
        && asked.ends_with("/status")
    {
        send.send_response(forbidden(&asked));
        panic!("GET {asked}: the marker's role has no get on nodes/status");
    }
    assert_eq!(request.method(), method);
    assert_eq!(request.uri().path(), path);
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = request.into_body().collect_bytes().await.expect("body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("json body")
    };
    send.send_response(reply(StatusCode::OK, answer));
    (content_type, body)
}

fn bridges(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn new_and_vanished_bridges_are_one_merge_patch_of_the_status() {
    let (service, mut api) = mock::pair::<Request<Body>, Response<Body>>();
    let node = NodeStatus::new(kube::Client::new(service, "default"), "node-1");
    let capacity = json!({
        "cpu": "4",
        "bridge.network.kubevirt.io/br-old": "1k",
        "bridge.network.kubevirt.io/br0": "1k",
        "ovs-cni.network.kubevirt.io/br-ex": "1k"
    });
    let server = tokio::spawn(async move {
        let node = node_with_capacity(capacity);
        expect(&mut api, Method::GET, "/api/v1/nodes/node-1", &node).await;
        let patch = expect(
            &mut api,
            Method::PATCH,
            "/api/v1/nodes/node-1/status",
            &node,
        )
        .await;
        (patch, api)
    });
    let plan = node
        .publish(Mark::LinuxBridge, &bridges(&["br0", "br1"]))
        .await
        .expect("publish");
    assert_eq!(plan.added, ["br1"]);
    assert_eq!(plan.removed, ["br-old"]);
    let ((content_type, body), _api) = server.await.expect("server");
    assert_eq!(content_type, "application/merge-patch+json");
    assert_eq!(
        body,
        json!({"status": {"capacity": {
            "bridge.network.kubevirt.io/br1": "1k",
            "bridge.network.kubevirt.io/br-old": null
        }}})
    );
}

#[tokio::test]
async fn nothing_is_patched_when_the_node_already_says_it() {
    let (service, mut api) = mock::pair::<Request<Body>, Response<Body>>();
    let node = NodeStatus::new(kube::Client::new(service, "default"), "node-1");
    let server = tokio::spawn(async move {
        let node = node_with_capacity(json!({
            "cpu": "4",
            "ovs-cni.network.kubevirt.io/br-ex": "1k",
            "bridge.network.kubevirt.io/br0": "1k"
        }));
        expect(&mut api, Method::GET, "/api/v1/nodes/node-1", &node).await;
        api
    });
    let plan = node
        .publish(Mark::Ovs, &bridges(&["br-ex"]))
        .await
        .expect("publish");
    assert!(plan.is_empty(), "{plan:?}");
    let mut api = server.await.expect("server");
    // The client is dropped with the node; a PATCH would have been queued before.
    drop(node);
    assert!(api.next_request().await.is_none(), "no second request");
}
