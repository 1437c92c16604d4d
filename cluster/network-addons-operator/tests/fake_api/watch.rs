//! Watches: recognised, logged with the method `WATCH`, and never answered.

use http::Request;
use kube::client::Body;
use serde_json::Value;

use super::log::Seen;
use super::request::parse_query;
use super::FakeApi;

pub(super) fn is_watch(request: &Request<Body>) -> bool {
    parse_query(request.uri().query())
        .get("watch")
        .is_some_and(|w| w == "true" || w == "1")
}

impl FakeApi {
    pub(super) fn log_watch(&self, request: &Request<Body>) {
        self.lock().seen.push(Seen {
            method: "WATCH".to_string(),
            path: request.uri().path().to_string(),
            query: parse_query(request.uri().query()),
            content_type: String::new(),
            body: Value::Null,
            code: 200,
        });
    }
}
