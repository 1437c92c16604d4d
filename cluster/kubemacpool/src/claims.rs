//! Block claims through the API server, so that replicas never hand out the same MAC.
//!
//! - Every replica process is an allocator with an identity of its own (`<pod>-<random>`: a
//!   restarted container is a new allocator) and a Lease `kubemacpool-allocator-<identity>` it
//!   renews every [`RENEW_EVERY`].
//! - The ConfigMap [`CLAIMS`] maps blocks (`<start>-<end>` in hex) to allocators. A claim is
//!   written with the ConfigMap's resourceVersion, so of two replicas claiming at once one
//!   fails and looks again: the API server is the one arbiter, no process's memory is.
//! - An allocator is dead when its Lease is gone (deleted at a clean stop, after the last
//!   admission was answered) or not renewed for [`DEAD_AFTER`]: longer than the webhook's
//!   timeout, so every admission it answered is stored, and seen by the others' watches, before
//!   its blocks can be claimed again.
//! - An allocator whose own renewal has failed for [`STOP_AFTER`] stops allocating: the others
//!   may soon take its blocks.
//! - Near the range's end, the last free MACs may all sit in other replicas' blocks. An
//!   allocator that finds no unclaimed block with a free MAC, while others' blocks have some,
//!   asks for one: it writes `want.<identity>` into [`CLAIMS`] and waits up to
//!   [`HANDOFF_WAIT`]. Each allocator watches [`CLAIMS`] and, asked, gives back its blocks that
//!   have a free MAC, none pending and have been quiet for [`QUIET`]
//!   ([`Pool::take_back_releasable`]). Only when no block anywhere has a free MAC, or none
//!   came back in time, is the answer `the range is full`, as upstream's.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::watcher::{self, watcher};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use tracing::{info, warn};

use crate::pool::{block_of, block_size, Block, Pool};

pub const CLAIMS: &str = "kubemacpool-mac-claims";
const LEASE_PREFIX: &str = "kubemacpool-allocator-";
const ALLOCATOR_LABEL: &str = "kubemacpool.io/allocator";
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
const LEASE_SECONDS: i32 = 15;
/// The webhook's timeout is 10 s (the API server's default; at most 30 s): past this, nothing
/// a dead allocator answered can still be on its way to etcd.
pub const DEAD_AFTER: Duration = Duration::from_secs(45);
pub const STOP_AFTER: Duration = Duration::from_secs(25);
/// How long an allocator that asked for a block waits for one to be given back.
pub const HANDOFF_WAIT: Duration = Duration::from_secs(3);
/// How long a block must have been unused (no claim, no MAC given) before it is given back:
/// by then every replica's watch has seen the objects its MACs went to, in milliseconds.
pub const QUIET: Duration = Duration::from_secs(2);
/// A request for a block older than this is over (its allocator gave up or died).
const WANT_FRESH: Duration = Duration::from_secs(10);
const WANT_PREFIX: &str = "want.";

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("the range is full")]
    RangeFull,
    #[error(
        "this allocator's Lease has not been renewed for {0:?}: it hands out nothing until it is"
    )]
    Stale(Duration),
    #[error("claiming a block: {0}")]
    Api(#[from] kube::Error),
}

pub struct Claims {
    identity: String,
    leases: Api<Lease>,
    config_maps: Api<ConfigMap>,
    /// When the Lease was last written.
    renewed: Mutex<Option<Instant>>,
    /// Set on the Lease and the claims ConfigMap: the manager's Deployment, so they go with it.
    owner: Option<OwnerReference>,
    /// One claim at a time from this process.
    claiming: tokio::sync::Mutex<()>,
}

impl Claims {
    pub fn new(client: Client, namespace: &str, identity: String) -> Claims {
        Claims {
            identity,
            leases: Api::namespaced(client.clone(), namespace),
            config_maps: Api::namespaced(client, namespace),
            renewed: Mutex::new(None),
            owner: None,
            claiming: tokio::sync::Mutex::new(()),
        }
    }

    /// The object whose deletion takes the Lease and the claims ConfigMap along.
    pub fn owned_by(self, owner: Option<OwnerReference>) -> Claims {
        Claims { owner, ..self }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn lease_name(&self) -> String {
        format!("{LEASE_PREFIX}{}", self.identity)
    }

    /// Whether this allocator may hand out MACs now.
    pub fn check_fresh(&self) -> Result<(), ClaimError> {
        let renewed = *self.renewed.lock().unwrap_or_else(|e| e.into_inner());
        match renewed {
            Some(t) if t.elapsed() < STOP_AFTER => Ok(()),
            Some(t) => Err(ClaimError::Stale(t.elapsed())),
            None => Err(ClaimError::Stale(Duration::ZERO)),
        }
    }

    /// Creates or renews this allocator's Lease.
    pub async fn renew(&self) -> Result<(), kube::Error> {
        let now = MicroTime(Timestamp::now());
        let name = self.lease_name();
        let lease = match self.leases.get_opt(&name).await? {
            Some(mut lease) => {
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                spec.renew_time = Some(now);
                self.leases
                    .replace(&name, &PostParams::default(), &lease)
                    .await?
            }
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name),
                        labels: Some(BTreeMap::from([
                            ("app".to_string(), "kubemacpool".to_string()),
                            (ALLOCATOR_LABEL.to_string(), String::new()),
                        ])),
                        owner_references: self.owner.clone().map(|o| vec![o]),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.identity.clone()),
                        lease_duration_seconds: Some(LEASE_SECONDS),
                        acquire_time: Some(now.clone()),
                        renew_time: Some(now),
                        ..LeaseSpec::default()
                    }),
                };
                self.leases.create(&PostParams::default(), &lease).await?
            }
        };
        drop(lease);
        *self.renewed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(())
    }

    /// Renews the Lease forever.
    pub async fn keep_renewing(&self) {
        loop {
            if let Err(e) = self.renew().await {
                warn!(error = %e, "renewing this allocator's Lease");
            }
            tokio::time::sleep(RENEW_EVERY).await;
        }
    }

    /// Claims one more block with free MACs for `pool`, or says the range is full. When the
    /// only free MACs are in other replicas' blocks, asks them for one and waits.
    pub async fn claim_block(&self, pool: &Mutex<Pool>) -> Result<Block, ClaimError> {
        let _one = self.claiming.lock().await;
        let want = self.want_key();
        let mut asked: Option<Instant> = None;
        loop {
            self.check_fresh()?;
            let live = self.live_allocators(DEAD_AFTER).await?;
            let mut cm = self.claims_map().await?;
            let mut data = cm.data.take().unwrap_or_default();
            data.retain(|k, holder| match k.strip_prefix(WANT_PREFIX) {
                Some(asker) => live.iter().any(|l| l == asker),
                None => live.contains(holder),
            });
            let claimed: Vec<Block> = data.keys().filter_map(|k| parse_key(k)).collect();
            let next = next_block(&lock(pool), &claimed);
            let write = match next {
                Some(block) => {
                    data.insert(key(&block), self.identity.clone());
                    data.remove(&want);
                    Some(block)
                }
                None => {
                    let others: Vec<Block> = data
                        .iter()
                        .filter(|(_, holder)| **holder != self.identity)
                        .filter_map(|(k, _)| parse_key(k))
                        .collect();
                    let elsewhere = others.iter().any(|b| lock(pool).free_in(b) > 0);
                    if !elsewhere || asked.is_some_and(|t| t.elapsed() >= HANDOFF_WAIT) {
                        if asked.is_some() {
                            self.withdraw(&want).await;
                        }
                        return Err(ClaimError::RangeFull);
                    }
                    if asked.is_some() {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    data.insert(want.clone(), Timestamp::now().to_string());
                    None
                }
            };
            cm.data = Some(data);
            match self
                .config_maps
                .replace(CLAIMS, &PostParams::default(), &cm)
                .await
            {
                Ok(_) => {
                    match write {
                        Some(block) => {
                            lock(pool).add_block(block);
                            info!(block = %key(&block), "claimed a block");
                            return Ok(block);
                        }
                        None => {
                            info!("no unclaimed block has a free MAC: asked the other replicas for one");
                            asked = Some(Instant::now());
                        }
                    }
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn want_key(&self) -> String {
        format!("{WANT_PREFIX}{}", self.identity)
    }

    /// Takes back a request for a block that no one answered in time.
    async fn withdraw(&self, want: &str) {
        loop {
            let mut cm = match self.claims_map().await {
                Ok(cm) => cm,
                Err(e) => return warn!(error = %e, "withdrawing the request for a block"),
            };
            let mut data = cm.data.take().unwrap_or_default();
            if data.remove(want).is_none() {
                return;
            }
            cm.data = Some(data);
            match self
                .config_maps
                .replace(CLAIMS, &PostParams::default(), &cm)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return warn!(error = %e, "withdrawing the request for a block"),
            }
        }
    }

    /// Watches [`CLAIMS`] and gives blocks back whenever another allocator asks for one.
    pub async fn give_back_when_asked(&self, pool: &Mutex<Pool>) {
        let config = watcher::Config::default().fields(&format!("metadata.name={CLAIMS}"));
        let mut changes = watcher(self.config_maps.clone(), config)
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            match changes.try_next().await {
                Ok(Some(cm)) => {
                    let asking = askers(&cm.data.unwrap_or_default(), &self.identity);
                    if asking.is_empty() {
                        continue;
                    }
                    let blocks = lock(pool).take_back_releasable(Instant::now(), QUIET);
                    if blocks.is_empty() {
                        continue;
                    }
                    match self.release(&blocks).await {
                        Ok(()) => info!(blocks = blocks.len(), ?asking, "gave blocks back"),
                        Err(e) => {
                            warn!(error = %e, "giving blocks back; kept");
                            let mut pool = lock(pool);
                            for b in blocks {
                                pool.add_block(b);
                            }
                        }
                    }
                }
                Ok(None) => return,
                Err(e) => warn!(error = %e, "watching {CLAIMS}"),
            }
        }
    }

    /// Gives blocks back (a range change, a clean stop).
    pub async fn release(&self, blocks: &[Block]) -> Result<(), kube::Error> {
        if blocks.is_empty() {
            return Ok(());
        }
        loop {
            let mut cm = self.claims_map().await?;
            let mut data = cm.data.take().unwrap_or_default();
            for b in blocks {
                if data.get(&key(b)) == Some(&self.identity) {
                    data.remove(&key(b));
                }
            }
            cm.data = Some(data);
            match self
                .config_maps
                .replace(CLAIMS, &PostParams::default(), &cm)
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// At a clean stop, once no admission is in flight: the blocks and the Lease go, so the
    /// other replicas may claim the blocks at once.
    pub async fn retire(&self, pool: &Mutex<Pool>) -> Result<(), kube::Error> {
        let blocks = lock(pool).blocks();
        self.release(&blocks).await?;
        match self
            .leases
            .delete(&self.lease_name(), &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn claims_map(&self) -> Result<ConfigMap, kube::Error> {
        if let Some(cm) = self.config_maps.get_opt(CLAIMS).await? {
            return Ok(cm);
        }
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(CLAIMS.to_string()),
                labels: Some(BTreeMap::from([(
                    "app".to_string(),
                    "kubemacpool".to_string(),
                )])),
                owner_references: self.owner.clone().map(|o| vec![o]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        match self.config_maps.create(&PostParams::default(), &cm).await {
            Ok(cm) => Ok(cm),
            Err(kube::Error::Api(e)) if e.code == 409 => self.config_maps.get(CLAIMS).await,
            Err(e) => Err(e),
        }
    }

    /// The identities of the allocators whose Lease was renewed within `within` ([`DEAD_AFTER`]
    /// before another may take their blocks).
    pub async fn live_allocators(&self, within: Duration) -> Result<Vec<String>, kube::Error> {
        let leases = self
            .leases
            .list(&ListParams::default().labels(ALLOCATOR_LABEL))
            .await?;
        let cutoff = Timestamp::now() - SignedDuration::try_from(within).unwrap_or_default();
        Ok(leases
            .items
            .into_iter()
            .filter_map(|l| {
                let spec = l.spec?;
                let renewed = spec.renew_time?.0;
                (renewed > cutoff).then_some(spec.holder_identity?)
            })
            .collect())
    }
}

fn lock(pool: &Mutex<Pool>) -> std::sync::MutexGuard<'_, Pool> {
    pool.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(b: &Block) -> String {
    format!("{:012x}-{:012x}", b.start, b.end)
}

/// The other allocators asking for a block now.
fn askers(data: &BTreeMap<String, String>, me: &str) -> Vec<String> {
    let now = Timestamp::now();
    data.iter()
        .filter_map(|(k, at)| {
            let asker = k.strip_prefix(WANT_PREFIX)?;
            let at: Timestamp = at.parse().ok()?;
            let fresh = now.duration_since(at) < SignedDuration::try_from(WANT_FRESH).ok()?;
            (asker != me && fresh).then(|| asker.to_string())
        })
        .collect()
}

fn parse_key(k: &str) -> Option<Block> {
    let (s, e) = k.split_once('-')?;
    Some(Block {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
    })
}

/// The first block of the range, from the pool's cursor on and wrapping, that overlaps no
/// claim and has a free MAC.
fn next_block(pool: &Pool, claimed: &[Block]) -> Option<Block> {
    let range = pool.range();
    let size = block_size(&range);
    let count = range.span().div_ceil(size);
    let first = (pool.cursor().saturating_sub(range.start()) / size) % count;
    (0..count)
        .map(|i| block_of(&range, range.start() + ((first + i) % count) * size))
        .find(|b| !claimed.iter().any(|c| c.overlaps(b)) && pool.free_in(b) > 0)
}

#[cfg(test)]
mod tests;
