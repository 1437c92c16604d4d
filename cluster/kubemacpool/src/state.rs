//! What the manager's tasks share: the pool, the claims, what has synced, and the counters the
//! metrics report.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use net_types::MacAddr;

use crate::certs::ServingCerts;
use crate::claims::{ClaimError, Claims};
use crate::collisions::Collisions;
use crate::pool::{Pool, Shortage};

pub struct Shared {
    /// For what an admission must read live (a launcher pod's VM).
    pub client: kube::Client,
    pub pool: Mutex<Pool>,
    pub claims: Claims,
    pub certs: Arc<ServingCerts>,
    pub collisions: Collisions,
    pub pods_synced: AtomicBool,
    pub vms_synced: AtomicBool,
    /// Set at SIGTERM: `/readyz` fails so the endpoints drop this replica first.
    pub stopping: AtomicBool,
    pub in_flight: AtomicUsize,
    pub allocated: AtomicU64,
    pub denied: AtomicU64,
    pub range_full: AtomicU64,
    /// Admissions answered, and the microseconds spent on them from the request's headers to
    /// the response's body: the part of an admission's latency that is this process's.
    pub admissions: AtomicU64,
    pub admission_micros: AtomicU64,
    /// The MACs of the VMs listed at start that another stored object also named
    /// (`kubevirt_kmp_duplicate_macs`).
    pub duplicate_macs: AtomicU64,
    pub started: Instant,
}

impl Shared {
    pub fn new(
        client: kube::Client,
        pool: Pool,
        claims: Claims,
        certs: Arc<ServingCerts>,
    ) -> Shared {
        Shared {
            client,
            pool: Mutex::new(pool),
            claims,
            certs,
            collisions: Collisions::default(),
            pods_synced: AtomicBool::new(false),
            vms_synced: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            allocated: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            range_full: AtomicU64::new(0),
            admissions: AtomicU64::new(0),
            admission_micros: AtomicU64::new(0),
            duplicate_macs: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    pub fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What keeps this replica from serving, or None when it is ready.
    pub fn not_ready(&self) -> Option<String> {
        if self.stopping.load(Ordering::Relaxed) {
            return Some("stopping".into());
        }
        if !self.certs.is_loaded() {
            return Some("no serving certificate yet".into());
        }
        if !self.pods_synced.load(Ordering::Relaxed) {
            return Some("pods not listed yet".into());
        }
        if !self.vms_synced.load(Ordering::Relaxed) {
            return Some("virtual machines not listed yet".into());
        }
        self.claims.check_fresh().err().map(|e| e.to_string())
    }

    /// `count` MACs for one admission, claiming blocks as needed, and holds `requested`. A
    /// dry run holds nothing.
    pub async fn allocate(
        &self,
        count: usize,
        requested: &[MacAddr],
        dry_run: bool,
    ) -> Result<Vec<MacAddr>, ClaimError> {
        if count == 0 && (dry_run || requested.is_empty()) {
            return Ok(Vec::new());
        }
        self.claims.check_fresh()?;
        loop {
            {
                let now = Instant::now();
                let mut pool = self.pool();
                match pool.allocate(count, now, dry_run) {
                    Ok(macs) => {
                        if !dry_run {
                            pool.hold_requested(requested, now);
                            self.allocated
                                .fetch_add(macs.len() as u64, Ordering::Relaxed);
                        }
                        return Ok(macs);
                    }
                    Err(Shortage::NeedBlock) => {}
                }
            }
            if let Err(e) = self.claims.claim_block(&self.pool).await {
                if matches!(e, ClaimError::RangeFull) {
                    self.range_full.fetch_add(1, Ordering::Relaxed);
                }
                return Err(e);
            }
        }
    }
}

/// Counts one admission in flight while it lives, and its time when it ends.
pub struct InFlight<'a>(&'a Shared, Instant);

impl<'a> InFlight<'a> {
    pub fn start(shared: &'a Shared) -> InFlight<'a> {
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(shared, Instant::now())
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let took = self.1.elapsed().as_micros() as u64;
        self.0.admission_micros.fetch_add(took, Ordering::Relaxed);
        self.0.admissions.fetch_add(1, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
