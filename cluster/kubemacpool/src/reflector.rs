//! A list, then a watch from the list's resourceVersion, of every object of one kind, told as
//! kube's watcher tells it (`Init`, `InitApply`.., `InitDone`, then `Apply` and `Delete`), and
//! a new list whenever the watch cannot go on.
//!
//! Why not kube's watcher: its list decodes through `ObjectList`, whose flattened type fields
//! make serde buffer the whole answer as a generic tree before reading the items from it. At
//! 10,000 VirtualMachines that took the manager about 2 s of the API server's 0.6 s answer,
//! and the list is what a start waits for. Here the items are decoded straight from the text.
//!
//! Lists ask for any resourceVersion, so the API server answers from its watch cache, whole
//! (it does not page what it serves from the cache).

use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, WatchParams};
use kube::core::{Request, WatchEvent};
use kube::runtime::watcher::Event;
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use tracing::warn;

/// How long one watch request lasts before the API server ends it and it is made again.
const WATCH_SECONDS: u32 = 290;
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// A list's items and its resourceVersion, and nothing else.
#[derive(Deserialize)]
struct List<K> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default = "Vec::new")]
    items: Vec<K>,
}

/// Where a kind is listed and watched, and whether as metadata only.
pub struct Kind {
    pub path: String,
    pub metadata_only: bool,
    /// What the log calls it ("pods").
    pub what: &'static str,
}

/// Lists and watches `kind` for good, handing every event to `on`. A failed list or watch is
/// handed to `on_error` and tried again after a wait that doubles up to 30 s.
pub async fn reflect<K>(
    client: Client,
    kind: Kind,
    mut on: impl FnMut(Event<K>),
    mut on_error: impl FnMut(&kube::Error),
) where
    K: Resource + Clone + DeserializeOwned,
{
    let request = Request::new(&kind.path);
    let mut backoff = Duration::from_secs(1);
    loop {
        let list: List<K> = match list(&client, &request, kind.metadata_only).await {
            Ok(list) => list,
            Err(e) => {
                on_error(&e);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        backoff = Duration::from_secs(1);
        on(Event::Init);
        for item in list.items {
            on(Event::InitApply(item));
        }
        on(Event::InitDone);
        let mut version = list.metadata.resource_version.unwrap_or_default();
        // Watch from the last version seen until the API server says it is too old (or the
        // watch fails): then list again.
        while let Some(next) = watch(&client, &request, &kind, &version, &mut on).await {
            match next {
                Ok(v) => version = v,
                Err(e) => {
                    on_error(&e);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    break;
                }
            }
        }
    }
}

async fn list<K: DeserializeOwned>(
    client: &Client,
    request: &Request,
    metadata_only: bool,
) -> Result<List<K>, kube::Error> {
    let params = ListParams::default().match_any();
    let req = if metadata_only {
        request.list_metadata(&params)
    } else {
        request.list(&params)
    }
    .map_err(kube::Error::BuildRequest)?;
    let text = client.request_text(req).await?;
    serde_json::from_str(&text).map_err(kube::Error::SerdeError)
}

/// One watch request from `version`: the version to watch from next when it ended as the API
/// server ends every watch, an error when it failed, or None when the version is too old and
/// the kind must be listed again.
async fn watch<K>(
    client: &Client,
    request: &Request,
    kind: &Kind,
    version: &str,
    on: &mut impl FnMut(Event<K>),
) -> Option<Result<String, kube::Error>>
where
    K: Resource + Clone + DeserializeOwned,
{
    let params = WatchParams::default().timeout(WATCH_SECONDS);
    let req = if kind.metadata_only {
        request.watch_metadata(&params, version)
    } else {
        request.watch(&params, version)
    };
    let req = match req {
        Ok(req) => req,
        Err(e) => return Some(Err(kube::Error::BuildRequest(e))),
    };
    let events = match client.request_events::<K>(req).await {
        Ok(events) => events,
        Err(e) => return Some(Err(e)),
    };
    futures::pin_mut!(events);
    let mut version = version.to_string();
    loop {
        match events.try_next().await {
            Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                version = o.resource_version().unwrap_or(version);
                on(Event::Apply(o));
            }
            Ok(Some(WatchEvent::Deleted(o))) => {
                version = o.resource_version().unwrap_or(version);
                on(Event::Delete(o));
            }
            Ok(Some(WatchEvent::Bookmark(b))) => version = b.metadata.resource_version,
            Ok(Some(WatchEvent::Error(status))) => {
                // 410 Gone: the version left the API server's window.
                if status.code != 410 {
                    warn!(kind = kind.what, code = status.code, message = %status.message, "the watch ended");
                }
                return None;
            }
            Ok(None) => return Some(Ok(version)),
            Err(e) => return Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests;
