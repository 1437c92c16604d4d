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
//! [`GC_REQUESTS`] requests later. Meanwhile it is listed and read, and an apply updates it
//! (which is lost when it goes), as on the real server. Any other DELETE removes it at once.
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

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use http::{Request, Response};
use kube::client::Body;
use kube::Client;
use serde_json::{json, Map, Value};

use crate::k8s_1_20;

/// One request the server answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub content_type: String,
    pub body: Value,
    pub code: u16,
}

impl Seen {
    /// A write: anything but a read or a watch.
    pub fn is_write(&self) -> bool {
        self.method != "GET" && self.method != "WATCH"
    }

    pub fn is_status(&self) -> bool {
        self.path.ends_with("/status")
    }

    pub fn is_event(&self) -> bool {
        self.path.contains("/events")
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    group_version: String,
    plural: String,
    namespace: String,
    name: String,
}

/// A failure to answer instead of serving a matching request.
struct Injected {
    method: String,
    path_suffix: String,
    code: u16,
    times: usize,
}

/// How many requests an object deleted with finalizers stays after its DELETE.
pub const GC_REQUESTS: usize = 2;

#[derive(Default)]
struct State {
    objects: BTreeMap<Key, Value>,
    seen: Vec<Seen>,
    revision: u64,
    uids: u64,
    injected: Vec<Injected>,
    /// Objects being deleted, with the requests left until the garbage collector removes them.
    terminating: Vec<(Key, usize)>,
}

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
            if is_watch(&request) {
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

fn is_watch(request: &Request<Body>) -> bool {
    parse_query(request.uri().query())
        .get("watch")
        .is_some_and(|w| w == "true" || w == "1")
}

/// Where a request points.
#[derive(Debug)]
struct Target {
    group_version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    subresource: Option<String>,
}

fn parse_path(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group_version, rest) = match segments.first().copied() {
        Some("api") if segments.len() >= 3 => (segments[1].to_string(), &segments[2..]),
        Some("apis") if segments.len() >= 4 => {
            (format!("{}/{}", segments[1], segments[2]), &segments[3..])
        }
        _ => return None,
    };
    let (namespace, rest) = if rest.len() >= 3 && rest[0] == "namespaces" {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    Some(Target {
        group_version,
        namespace,
        plural: rest.first()?.to_string(),
        name: rest.get(1).map(|s| s.to_string()),
        subresource: rest.get(2).map(|s| s.to_string()),
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: Option<&str>) -> BTreeMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// Whether `labels` match a selector of `k=v`, `k==v`, `k!=v`, `k in (v,w)`, `k notin (v,w)`
/// and `k` terms.
pub fn selector_matches(selector: &str, labels: &Value) -> bool {
    selector_terms(selector).iter().all(|term| {
        if let Some((k, values)) = set_term(term, " notin ") {
            labels[k].as_str().is_none_or(|v| !values.contains(&v))
        } else if let Some((k, values)) = set_term(term, " in ") {
            labels[k].as_str().is_some_and(|v| values.contains(&v))
        } else if let Some((k, v)) = term.split_once("!=") {
            labels[k.trim()].as_str() != Some(v.trim())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels[k.trim()].as_str() == Some(v.trim())
        } else {
            labels.get(term.as_str()).is_some()
        }
    })
}

/// The terms of a selector: split on the commas outside parentheses.
fn selector_terms(selector: &str) -> Vec<String> {
    let mut terms = vec![String::new()];
    let mut depth = 0;
    for c in selector.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(t) = terms.last_mut() {
            t.push(c);
        }
    }
    terms
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// `key` and the values of a `key in (a,b)` term (`op` is `" in "` or `" notin "`).
fn set_term<'a>(term: &'a str, op: &str) -> Option<(&'a str, Vec<&'a str>)> {
    let (key, values) = term.split_once(op)?;
    let values = values.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some((key.trim(), values.split(',').map(str::trim).collect()))
}

fn field_selector_matches(selector: &str, object: &Value) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        let Some((k, v)) = term.split_once('=') else {
            return false;
        };
        match k {
            "metadata.name" => object["metadata"]["name"].as_str() == Some(v),
            "metadata.namespace" => object["metadata"]["namespace"].as_str() == Some(v),
            _ => false,
        }
    })
}

/// RFC 7386: objects merge, null removes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(target) = target.as_object_mut() else {
        return;
    };
    for (k, v) in patch {
        if v.is_null() {
            target.remove(k);
        } else {
            merge_patch(target.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn status(code: u16, reason: &str, message: String) -> (u16, Value) {
    (
        code,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": if code < 300 { "Success" } else { "Failure" },
            "message": message,
            "reason": reason,
            "code": code,
        }),
    )
}

fn not_found(t: &Target, name: &str) -> (u16, Value) {
    status(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", t.plural),
    )
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

    fn log_watch(&self, request: &Request<Body>) {
        self.lock().seen.push(Seen {
            method: "WATCH".to_string(),
            path: request.uri().path().to_string(),
            query: parse_query(request.uri().query()),
            content_type: String::new(),
            body: Value::Null,
            code: 200,
        });
    }

    // ---- for tests ----

    /// The stored object, if any (`namespace` empty for cluster-scoped objects).
    pub fn get(
        &self,
        group_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        self.lock()
            .objects
            .get(&Key {
                group_version: group_version.to_string(),
                plural: plural.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
            .cloned()
    }

    pub fn daemonset(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get("apps/v1", "daemonsets", namespace, name)
    }

    pub fn configmap(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get("v1", "configmaps", namespace, name)
    }

    /// Every stored object of a kind, in all namespaces.
    pub fn list(&self, group_version: &str, plural: &str) -> Vec<Value> {
        self.lock()
            .objects
            .iter()
            .filter(|(k, _)| k.group_version == group_version && k.plural == plural)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Stores an object as if someone else had created it.
    pub fn put(&self, group_version: &str, plural: &str, object: Value) {
        let mut state = self.lock();
        let key = Key {
            group_version: group_version.to_string(),
            plural: plural.to_string(),
            namespace: object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        };
        let old = state.objects.get(&key).cloned();
        let stored = state.stamp(old.as_ref(), object);
        state.objects.insert(key, stored);
    }

    /// Removes an object at once, as if someone else had deleted it.
    pub fn remove(&self, group_version: &str, plural: &str, namespace: &str, name: &str) {
        self.lock().objects.remove(&Key {
            group_version: group_version.to_string(),
            plural: plural.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
    }

    /// Replaces the status of a stored object, as its controller would.
    pub fn set_status(
        &self,
        group_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        status: Value,
    ) {
        let Some(mut object) = self.get(group_version, plural, namespace, name) else {
            panic!("no {plural} {namespace}/{name} to set the status of");
        };
        object["status"] = status;
        let mut state = self.lock();
        state.revision += 1;
        object["metadata"]["resourceVersion"] = json!(state.revision.to_string());
        state.objects.insert(
            Key {
                group_version: group_version.to_string(),
                plural: plural.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            object,
        );
    }

    /// The next `times` requests with `method` on a path ending in `path_suffix` fail with
    /// `code` (409 as a Conflict, anything else as an internal error).
    pub fn fail_next(&self, method: &str, path_suffix: &str, code: u16, times: usize) {
        self.lock().injected.push(Injected {
            method: method.to_string(),
            path_suffix: path_suffix.to_string(),
            code,
            times,
        });
    }

    /// Every request answered so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    pub fn clear_requests(&self) {
        self.lock().seen.clear();
    }

    /// `(path, propagationPolicy)` of every DELETE answered, in order (the policy empty when the
    /// request named none).
    pub fn deletes(&self) -> Vec<(String, String)> {
        self.requests()
            .iter()
            .filter(|s| s.method == "DELETE")
            .map(|s| {
                let policy = s.body["propagationPolicy"].as_str().unwrap_or_default();
                (s.path.clone(), policy.to_string())
            })
            .collect()
    }

    /// `(type, reason)` of every event written (created, or counted again), in order.
    pub fn events(&self) -> Vec<(String, String)> {
        self.requests()
            .iter()
            .filter(|s| s.is_event() && (s.method == "POST" || s.method == "PATCH") && s.code < 300)
            .map(|s| {
                // a PATCH counts an event again: its type and reason are the stored event's
                let event = match (s.method.as_str(), parse_path(&s.path)) {
                    ("PATCH", Some(t)) => self
                        .get(
                            &t.group_version,
                            &t.plural,
                            t.namespace.as_deref().unwrap_or_default(),
                            t.name.as_deref().unwrap_or_default(),
                        )
                        .unwrap_or_default(),
                    _ => s.body.clone(),
                };
                (
                    event["type"].as_str().unwrap_or_default().to_string(),
                    event["reason"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// Every stored core/v1 Event, in all namespaces.
    pub fn stored_events(&self) -> Vec<Value> {
        self.list("v1", "events")
    }
}

impl State {
    /// One request has passed: objects whose deletion is done go.
    fn collect_garbage(&mut self) {
        for (_, left) in &mut self.terminating {
            *left = left.saturating_sub(1);
        }
        let (gone, left): (Vec<_>, Vec<_>) = std::mem::take(&mut self.terminating)
            .into_iter()
            .partition(|(_, left)| *left == 0);
        self.terminating = left;
        for (key, _) in gone {
            self.objects.remove(&key);
        }
    }

    fn injected_failure(&mut self, method: &str, path: &str) -> Option<(u16, Value)> {
        let i = self
            .injected
            .iter()
            .position(|f| f.times > 0 && f.method == method && path.ends_with(&f.path_suffix))?;
        self.injected[i].times -= 1;
        let code = self.injected[i].code;
        Some(match code {
            409 => status(409, "Conflict", "the object has been modified".to_string()),
            _ => status(code, "InternalError", "injected failure".to_string()),
        })
    }

    fn handle(
        &mut self,
        method: &str,
        t: &Target,
        query: &BTreeMap<String, String>,
        content_type: &str,
        body: &Value,
    ) -> (u16, Value) {
        let key = |name: &str| Key {
            group_version: t.group_version.clone(),
            plural: t.plural.clone(),
            namespace: t.namespace.clone().unwrap_or_default(),
            name: name.to_string(),
        };
        match (method, t.name.as_deref()) {
            ("GET", None) => {
                let labels = query.get("labelSelector").cloned().unwrap_or_default();
                let fields = query.get("fieldSelector").cloned().unwrap_or_default();
                let items: Vec<Value> = self
                    .objects
                    .iter()
                    .filter(|(k, _)| {
                        k.group_version == t.group_version
                            && k.plural == t.plural
                            && t.namespace.as_ref().is_none_or(|ns| *ns == k.namespace)
                    })
                    .map(|(_, v)| v)
                    .filter(|v| selector_matches(&labels, &v["metadata"]["labels"]))
                    .filter(|v| field_selector_matches(&fields, v))
                    .cloned()
                    .collect();
                (
                    200,
                    json!({
                        "apiVersion": t.group_version,
                        "kind": "List",
                        "metadata": {"resourceVersion": self.revision.to_string()},
                        "items": items,
                    }),
                )
            }
            ("GET", Some(name)) => match self.objects.get(&key(name)) {
                Some(o) => (200, o.clone()),
                None => not_found(t, name),
            },
            ("POST", None) => {
                if t.plural == "events" {
                    if let Some(refused) = invalid_event(t, body) {
                        return refused;
                    }
                }
                let Some(name) = body["metadata"]["name"].as_str() else {
                    return status(422, "Invalid", "metadata.name: Required value".to_string());
                };
                let k = key(name);
                if self.objects.contains_key(&k) {
                    return status(
                        409,
                        "AlreadyExists",
                        format!("{} \"{name}\" already exists", t.plural),
                    );
                }
                let mut object = body.clone();
                if let Some(ns) = &t.namespace {
                    object["metadata"]["namespace"] = json!(ns);
                }
                let stored = self.stamp(None, object);
                self.objects.insert(k, stored.clone());
                (201, stored)
            }
            ("PUT", Some(name)) => {
                let k = key(name);
                let Some(old) = self.objects.get(&k).cloned() else {
                    return not_found(t, name);
                };
                if let Some(conflict) = precondition(&old, body, t, name) {
                    return conflict;
                }
                let mut object = body.clone();
                if t.subresource.as_deref() == Some("status") {
                    let mut whole = old.clone();
                    whole["status"] = object["status"].take();
                    object = whole;
                } else {
                    keep_status(&old, &mut object);
                }
                let stored = self.stamp(Some(&old), object);
                self.objects.insert(k, stored.clone());
                (200, stored)
            }
            ("PATCH", Some(name)) if content_type.starts_with("application/apply-patch") => {
                if query.get("fieldManager").is_none_or(String::is_empty) {
                    return status(
                        400,
                        "BadRequest",
                        "PATCH with apply requires a field manager".to_string(),
                    );
                }
                if body["metadata"]["name"].as_str() != Some(name) {
                    return status(
                        400,
                        "BadRequest",
                        "the name of the object does not match the name on the URL".to_string(),
                    );
                }
                if k8s_1_20::covers(body) {
                    let problems = k8s_1_20::problems(body);
                    if !problems.is_empty() {
                        return status(
                            500,
                            "InternalError",
                            format!(
                                "failed to create typed patch object: {}",
                                problems.join("; ")
                            ),
                        );
                    }
                }
                let k = key(name);
                let old = self.objects.get(&k).cloned();
                match t.subresource.as_deref() {
                    // the applier owns the whole status: it becomes the one applied
                    Some("status") => {
                        let Some(mut object) = old.clone() else {
                            return not_found(t, name);
                        };
                        object["status"] = body["status"].clone();
                        let stored = self.stamp(old.as_ref(), object);
                        self.objects.insert(k, stored.clone());
                        return (200, stored);
                    }
                    Some(other) => {
                        return status(404, "NotFound", format!("no subresource {other}"))
                    }
                    None => {}
                }
                let mut object = body.clone();
                if let Some(ns) = &t.namespace {
                    object["metadata"]["namespace"] = json!(ns);
                }
                if let Some(refused) = old.as_ref().and_then(|o| immutable(t, name, o, &object)) {
                    return refused;
                }
                match &old {
                    Some(old) => keep_status(old, &mut object),
                    None => {
                        if let Some(m) = object.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
                object["metadata"]["managedFields"] =
                    applied_managed_fields(old.as_ref(), &object, &query["fieldManager"]);
                let created = old.is_none();
                let stored = self.stamp(old.as_ref(), object);
                self.objects.insert(k, stored.clone());
                (if created { 201 } else { 200 }, stored)
            }
            ("PATCH", Some(name)) if content_type.starts_with("application/merge-patch") => {
                let k = key(name);
                let Some(old) = self.objects.get(&k).cloned() else {
                    return not_found(t, name);
                };
                if let Some(conflict) = precondition(&old, body, t, name) {
                    return conflict;
                }
                let mut object = old.clone();
                let mut patch = body.clone();
                if let Some(m) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("resourceVersion");
                }
                match t.subresource.as_deref() {
                    Some("status") => {
                        merge_patch(&mut object["status"], &patch["status"]);
                    }
                    Some(other) => {
                        return status(404, "NotFound", format!("no subresource {other}"))
                    }
                    None => {
                        // the status moves only through its subresource
                        if let Some(m) = patch.as_object_mut() {
                            m.remove("status");
                        }
                        merge_patch(&mut object, &patch);
                    }
                }
                let stored = self.stamp(Some(&old), object);
                self.objects.insert(k, stored.clone());
                (200, stored)
            }
            ("PATCH", Some(_)) => status(
                415,
                "UnsupportedMediaType",
                format!("patch type {content_type} is not served"),
            ),
            ("DELETE", Some(name)) => {
                let k = key(name);
                let Some(mut object) = self.objects.get(&k).cloned() else {
                    return not_found(t, name);
                };
                let finalizer = match body["propagationPolicy"].as_str() {
                    Some("Orphan") => "orphan",
                    Some("Foreground") => "foregroundDeletion",
                    _ => {
                        self.objects.remove(&k);
                        let (code, mut answer) = status(200, "", String::new());
                        answer["details"] = json!({"name": name, "kind": t.plural});
                        return (code, answer);
                    }
                };
                if !self.terminating.iter().any(|(t, _)| *t == k) {
                    object["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
                    object["metadata"]["finalizers"] = json!([finalizer]);
                    self.revision += 1;
                    object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
                    self.objects.insert(k.clone(), object.clone());
                    self.terminating.push((k, GC_REQUESTS));
                }
                (200, object)
            }
            _ => status(
                405,
                "MethodNotAllowed",
                format!("{method} is not served here"),
            ),
        }
    }

    /// System fields: uid and creation time kept from `old` (or made), a new resourceVersion,
    /// the generation bumped when the spec changed.
    fn stamp(&mut self, old: Option<&Value>, mut object: Value) -> Value {
        self.revision += 1;
        if !object["metadata"].is_object() {
            object["metadata"] = json!({});
        }
        // Core and RBAC objects have no generation: a change shows in their resourceVersion.
        let generation = !matches!(
            object["apiVersion"].as_str(),
            Some("v1" | "rbac.authorization.k8s.io/v1")
        );
        let meta = &mut object["metadata"];
        meta["resourceVersion"] = json!(self.revision.to_string());
        match old {
            Some(old) => {
                meta["uid"] = old["metadata"]["uid"].clone();
                meta["creationTimestamp"] = old["metadata"]["creationTimestamp"].clone();
                if generation {
                    let before = old["metadata"]["generation"].as_i64().unwrap_or(1);
                    let changed = old.get("spec") != object.get("spec");
                    object["metadata"]["generation"] =
                        json!(if changed { before + 1 } else { before });
                }
            }
            None => {
                self.uids += 1;
                meta["uid"] = json!(format!("00000000-0000-0000-0000-{:012}", self.uids));
                meta["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
                if generation {
                    meta["generation"] = json!(1);
                }
            }
        }
        object
    }
}

/// The managedFields after an apply by `manager`: the other managers' entries kept (this fake
/// does not track which fields each holds), the applier's own entry replaced.
fn applied_managed_fields(old: Option<&Value>, object: &Value, manager: &str) -> Value {
    let mut entries: Vec<Value> = old
        .and_then(|o| o["metadata"]["managedFields"].as_array())
        .into_iter()
        .flatten()
        .filter(|e| !(e["manager"] == manager && e["operation"] == "Apply"))
        .cloned()
        .collect();
    entries.push(json!({"manager": manager, "operation": "Apply",
                        "apiVersion": object["apiVersion"], "fieldsType": "FieldsV1",
                        "fieldsV1": {}}));
    Value::Array(entries)
}

/// Kubernetes 1.20's `legacyValidateEvent`, which every event passes whatever API it is created
/// through (pkg/apis/core/validation/events.go), on a core/v1 or events.k8s.io event.
fn invalid_event(t: &Target, body: &Value) -> Option<(u16, Value)> {
    let namespace = t.namespace.clone().unwrap_or_default();
    let involved = if t.group_version == "v1" {
        &body["involvedObject"]
    } else {
        &body["regarding"]
    };
    let involved_ns = involved["namespace"].as_str().unwrap_or_default();
    let has_event_time = body["eventTime"].as_str().is_some_and(|s| !s.is_empty());
    let mismatch = if has_event_time {
        involved_ns.is_empty() && namespace != "kube-system"
    } else if involved_ns.is_empty() {
        !namespace.is_empty() && namespace != "default"
    } else {
        namespace != involved_ns
    };
    if !mismatch {
        return None;
    }
    let name = body["metadata"]["name"].as_str().unwrap_or_default();
    Some(status(
        422,
        "Invalid",
        format!(
            "Event \"{name}\" is invalid: involvedObject.namespace: Invalid value: \"{involved_ns}\": does not match event.namespace"
        ),
    ))
}

/// 409 when the body names a resourceVersion other than the stored one.
fn precondition(old: &Value, body: &Value, t: &Target, name: &str) -> Option<(u16, Value)> {
    let wanted = body["metadata"]["resourceVersion"].as_str()?;
    if wanted.is_empty() || Some(wanted) == old["metadata"]["resourceVersion"].as_str() {
        return None;
    }
    Some(status(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            t.plural
        ),
    ))
}

/// Writes to the main resource leave the status as it was.
fn keep_status(old: &Value, object: &mut Value) {
    if let Some(m) = object.as_object_mut() {
        match old.get("status") {
            Some(s) => {
                m.insert("status".to_string(), s.clone());
            }
            None => {
                m.remove("status");
            }
        }
    }
}

/// The real server's 422 for a change of a field that cannot change: a workload's selector, a
/// binding's roleRef.
fn immutable(t: &Target, name: &str, old: &Value, new: &Value) -> Option<(u16, Value)> {
    let message = match t.plural.as_str() {
        "daemonsets" | "deployments" if old["spec"]["selector"] != new["spec"]["selector"] => {
            format!(
                "spec.selector: Invalid value: {}: field is immutable",
                new["spec"]["selector"]
            )
        }
        "clusterrolebindings" | "rolebindings" if old["roleRef"] != new["roleRef"] => {
            format!(
                "roleRef: Invalid value: {}: cannot change roleRef",
                new["roleRef"]
            )
        }
        _ => return None,
    };
    Some(status(
        422,
        "Invalid",
        format!("{} \"{name}\" is invalid: {message}", t.plural),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_like_the_real_server() {
        let t = parse_path("/apis/apps/v1/namespaces/ns/daemonsets/a/status").expect("path");
        assert_eq!(t.group_version, "apps/v1");
        assert_eq!(t.namespace.as_deref(), Some("ns"));
        assert_eq!(t.plural, "daemonsets");
        assert_eq!(t.name.as_deref(), Some("a"));
        assert_eq!(t.subresource.as_deref(), Some("status"));
        let t = parse_path("/api/v1/namespaces/ns").expect("path");
        assert_eq!((t.namespace, t.plural.as_str()), (None, "namespaces"));
        let t = parse_path("/api/v1/namespaces/ns/configmaps").expect("path");
        assert_eq!(t.namespace.as_deref(), Some("ns"));
        assert_eq!(t.name, None);
    }

    #[test]
    fn selectors() {
        let labels = json!({"a": "b", "c": "d"});
        assert!(selector_matches("a=b,c=d", &labels));
        assert!(selector_matches("a==b", &labels));
        assert!(!selector_matches("a=x", &labels));
        assert!(selector_matches("a!=x,c", &labels));
        assert!(!selector_matches("e", &labels));
        assert!(selector_matches("a in (x, b),c", &labels));
        assert!(!selector_matches("a in (x,y)", &labels));
        assert!(selector_matches("a notin (x,y)", &labels));
        assert!(!selector_matches("c notin (d)", &labels));
        assert_eq!(
            percent_decode("app.kubernetes.io%2Fmanaged-by%3Dx"),
            "app.kubernetes.io/managed-by=x"
        );
    }
}
