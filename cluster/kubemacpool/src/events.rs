//! Warning events, as `kubectl describe` shows them on the object they are about: collisions
//! on the VMIs and pods involved, a refused range on the manager pod.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};

/// How an event is named: by the caller (so that reporting the same thing twice makes one
/// event), or by the API server from a prefix.
pub enum EventName {
    Exactly(String),
    Generated(String),
}

/// A Warning event about `about`, first and last seen now, from KubeMacPool.
pub fn warning(about: ObjectReference, name: EventName, reason: &str, message: String) -> Event {
    let now = Time(Timestamp::now());
    let (name, generate_name) = match name {
        EventName::Exactly(n) => (Some(n), None),
        EventName::Generated(prefix) => (None, Some(prefix)),
    };
    Event {
        metadata: ObjectMeta {
            name,
            generate_name,
            namespace: about.namespace.clone(),
            ..ObjectMeta::default()
        },
        involved_object: about,
        reason: Some(reason.to_string()),
        message: Some(message),
        type_: Some("Warning".to_string()),
        source: Some(EventSource {
            component: Some("kubemacpool".to_string()),
            host: None,
        }),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        ..Event::default()
    }
}

/// Stores `event` in its object's namespace.
pub async fn record(client: &Client, event: &Event) -> Result<(), kube::Error> {
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    events.create(&PostParams::default(), event).await.map(drop)
}

#[cfg(test)]
mod tests;
