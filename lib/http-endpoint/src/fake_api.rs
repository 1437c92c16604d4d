//! An API server that answers TokenReviews and SubjectAccessReviews only, for the tests: it
//! knows two tokens, grants `get /metrics` only to a review that names exactly the user its
//! TokenReview returned, and never answers a review of [`HANGS`].

use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;

use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{json, Value};

/// The token of a user allowed to get /metrics.
pub const ALLOWED: &str = "token-of-the-scraper";
/// The token of a user who may not.
pub const FORBIDDEN: &str = "token-of-someone-else";
/// A token whose review is never answered.
pub const HANGS: &str = "token-never-reviewed";

#[derive(Clone, Default)]
pub struct Reviewer {
    requests: Arc<AtomicUsize>,
    fail_with: Arc<AtomicU16>,
}

impl Reviewer {
    /// Reviews asked so far (TokenReviews and SubjectAccessReviews).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Answers every request with this status (0: answer normally).
    pub fn fail_with(&self, status: u16) {
        self.fail_with.store(status, Ordering::SeqCst);
    }
}

fn scraper() -> Value {
    json!({
        "username": "system:serviceaccount:monitoring:prometheus-k8s",
        "uid": "4f1e0c2a",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
    })
}

fn someone_else() -> Value {
    json!({"username": "system:serviceaccount:default:default", "groups": ["system:authenticated"]})
}

fn token_review(token: &str) -> Value {
    let status = match token {
        ALLOWED => json!({"authenticated": true, "user": scraper()}),
        FORBIDDEN => json!({"authenticated": true, "user": someone_else()}),
        _ => json!({"authenticated": false, "error": "invalid bearer token"}),
    };
    json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "metadata": {},
        "spec": {"token": token},
        "status": status,
    })
}

fn access_review(spec: &Value) -> Value {
    let user = scraper();
    let allowed = spec["user"] == user["username"]
        && spec["uid"] == user["uid"]
        && spec["groups"] == user["groups"]
        && spec["extra"] == user["extra"]
        && spec["nonResourceAttributes"] == json!({"path": "/metrics", "verb": "get"})
        && spec.get("resourceAttributes").is_none();
    json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {},
        "spec": spec,
        "status": {"allowed": allowed},
    })
}

/// A client of a new fake API server.
pub fn start() -> (kube::Client, Reviewer) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let reviewer = Reviewer::default();
    let counted = reviewer.clone();
    tokio::spawn(async move {
        let mut never_answered = Vec::new();
        while let Some((request, respond)) = handle.next_request().await {
            counted.requests.fetch_add(1, Ordering::SeqCst);
            let path = request.uri().path().to_string();
            let body = match request.into_body().collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => continue,
            };
            let asked: Value = serde_json::from_slice(&body).unwrap_or_default();
            let status = counted.fail_with.load(Ordering::SeqCst);
            let (status, answer) = if status != 0 {
                (
                    status,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status}),
                )
            } else if path == "/apis/authentication.k8s.io/v1/tokenreviews" {
                let token = asked["spec"]["token"].as_str().unwrap_or_default();
                if token == HANGS {
                    never_answered.push(respond);
                    continue;
                }
                (201, token_review(token))
            } else if path == "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
                (201, access_review(&asked["spec"]))
            } else {
                (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "code": 404}),
                )
            };
            let response = Response::builder()
                .status(status)
                .body(Body::from(answer.to_string().into_bytes()))
                .expect("a response");
            respond.send_response(response);
        }
    });
    (kube::Client::new(service, "default"), reviewer)
}
