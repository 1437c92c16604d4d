//! What every reconcile shares: the client, the settings, the clock and MAC prefix tests fix,
//! and what one reconcile leaves the next (rollouts, what was applied, events, metrics).

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::Client;

use crate::apply;
use crate::defaults::random_prefix;
use crate::events::Events;
use crate::metrics;
use crate::settings::Settings;
use crate::status::RolloutTracker;

/// The current time; tests move it.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;
/// The two bytes a new MAC range starts with: the cluster's own once it runs, fixed by tests.
pub type PrefixSource = Arc<dyn Fn() -> [u8; 2] + Send + Sync>;

/// What every reconcile shares.
pub struct Ctx {
    pub client: Client,
    pub settings: Settings,
    pub clock: Clock,
    pub prefix: PrefixSource,
    /// When each progressing DaemonSet or Deployment last changed.
    pub rollouts: RolloutTracker,
    /// The objects applied so far, known to be ours.
    pub ours: apply::Ours,
    pub events: Events,
    /// What the probes and `/metrics` report.
    pub metrics: Arc<metrics::State>,
    /// Failed reconciles in a row, for the retry's backoff.
    pub(crate) failures: AtomicU32,
}

impl Ctx {
    /// The real clock, and a random MAC prefix until [`Ctx::with_prefix`] gives the cluster's.
    pub fn new(client: Client, settings: Settings) -> Ctx {
        Ctx {
            events: Events::new(client.clone(), &settings.pod_name),
            metrics: Arc::default(),
            client,
            settings,
            clock: Arc::new(Timestamp::now),
            prefix: Arc::new(random_prefix),
            rollouts: RolloutTracker::default(),
            ours: apply::Ours::default(),
            failures: AtomicU32::new(0),
        }
    }

    pub fn with_clock(mut self, clock: Clock) -> Ctx {
        self.clock = clock;
        self
    }

    pub fn with_prefix(mut self, prefix: PrefixSource) -> Ctx {
        self.prefix = prefix;
        self
    }

    pub fn with_metrics(mut self, metrics: Arc<metrics::State>) -> Ctx {
        self.metrics = metrics;
        self
    }
}
