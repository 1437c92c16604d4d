//! An in-memory Kubernetes API server behind a `kube::Client`, for reconcile tests.
//!
//! It answers the requests kube builds on the real paths (`/api/v1/...`,
//! `/apis/<group>/<version>/[namespaces/<ns>/]<plural>[/<name>[/status]]`): GET and LIST (label
//! selectors `a=b,c!=d,e`, field selectors on name and namespace), POST, PUT, DELETE,
//! server-side apply and JSON merge patches (also on `/status`), with the real server's 404,
//! 409 and 422 answers. Objects get a uid, a resourceVersion on every write and a generation
//! that moves when their spec does. Server-side apply is modelled for a single field manager:
//! the applied body replaces the object, keeping its status and system fields (so a test can
//! check the operator, not the fake, drops the fields another manager set). Changing the
//! `spec.selector` of a DaemonSet or Deployment is refused as immutable, and so is changing the
//! `roleRef` of a (Cluster)RoleBinding, as the real server does.
//!
//! A DELETE with `propagationPolicy` `Orphan` or `Foreground` leaves the object in place, marked
//! with a deletionTimestamp and a finalizer, until the garbage collector would be done with it:
//! [`delete::GC_REQUESTS`] requests later. Meanwhile it is listed and read, and an apply updates
//! it (which is lost when it goes), as on the real server. Any other DELETE removes it at once.
//!
//! Kubernetes 1.20's rules that newer servers relaxed are enforced: a server-side apply whose
//! body has a field 1.20 does not know, or an element of an associative list without one of the
//! list's keys (a port without `protocol`), is refused as 1.20 refuses it; and an event is
//! validated as 1.20's `legacyValidateEvent` does (an event with an `eventTime` about a
//! cluster-scoped object is only accepted in `kube-system`).
//!
//! A watch is held open and never sees an event, so a controller started on the fake server
//! reconciles what its first list returned. Every request is logged (a watch with the method
//! `WATCH`) so tests can check what the operator did and in which order.
//!
//! `store` holds the objects and system fields, `request` and `selectors` read a request,
//! `reads`, `writes`, `apply`, `patch` and `delete` answer its verb, `events` and `answers` give
//! the real server's refusals, `watch`, `log` and `failures` hold open watches, record requests
//! and inject failures.

#![allow(dead_code)]

mod answers;
mod apply;
mod delete;
mod events;
mod failures;
mod log;
mod patch;
mod reads;
mod request;
mod selectors;
mod store;
mod watch;
mod writes;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use http::{Request, Response};
use kube::client::Body;
use kube::Client;
use serde_json::Value;

use answers::status;
use request::{parse_path, parse_query, Target};
use store::State;

pub use log::Seen;

/// The server's store and request log; clones share them.
#[derive(Clone, Default)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
}

/// A client talking to a new, empty fake server.
pub fn start() -> (Client, FakeApi) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let fake = FakeApi::default();
    let server = fake.clone();
    tokio::spawn(async move {
        // Watches are answered with nothing, ever: an open watch on which no event comes.
        let mut watches = Vec::new();
        while let Some((request, respond)) = handle.next_request().await {
            if watch::is_watch(&request) {
                server.log_watch(&request);
                watches.push(respond);
                continue;
            }
            let response = server.serve(request).await;
            respond.send_response(response);
        }
    });
    (Client::new(service, "default"), fake)
}

impl FakeApi {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    async fn serve(&self, request: Request<Body>) -> Response<Body> {
        let method = request.method().to_string();
        let path = request.uri().path().to_string();
        let query = parse_query(request.uri().query());
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let bytes = request
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        let (code, answer) = {
            let mut state = self.lock();
            state.collect_garbage();
            let result = match (state.injected_failure(&method, &path), parse_path(&path)) {
                (Some(failure), _) => failure,
                (None, Some(t)) => state.handle(&method, &t, &query, &content_type, &body),
                (None, None) => status(404, "NotFound", format!("no route for {path}")),
            };
            state.seen.push(Seen {
                method,
                path,
                query,
                content_type,
                body,
                code: result.0,
            });
            result
        };
        let bytes = serde_json::to_vec(&answer).unwrap_or_default();
        let mut response = Response::new(Body::from(bytes));
        *response.status_mut() = http::StatusCode::from_u16(code).unwrap_or_default();
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        response
    }
}

impl State {
    /// The answer to `method` on `t`, by verb.
    fn handle(
        &mut self,
        method: &str,
        t: &Target,
        query: &BTreeMap<String, String>,
        content_type: &str,
        body: &Value,
    ) -> (u16, Value) {
        match (method, t.name.as_deref()) {
            ("GET", None) => self.list(t, query),
            ("GET", Some(name)) => self.read(t, name),
            ("POST", None) => self.create(t, body),
            ("PUT", Some(name)) => self.replace(t, name, body),
            ("PATCH", Some(name)) if content_type.starts_with("application/apply-patch") => {
                self.apply(t, name, query, body)
            }
            ("PATCH", Some(name)) if content_type.starts_with("application/merge-patch") => {
                self.merge(t, name, body)
            }
            ("PATCH", Some(_)) => status(
                415,
                "UnsupportedMediaType",
                format!("patch type {content_type} is not served"),
            ),
            ("DELETE", Some(name)) => self.delete(t, name, body),
            _ => status(
                405,
                "MethodNotAllowed",
                format!("{method} is not served here"),
            ),
        }
    }
}
