//! The manager's life: start the watches and the server, claim a first block, and at SIGTERM
//! stop cleanly (unready first, then drain, then give the blocks back).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use http_endpoint::Authorizer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Api, Client};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn};

use crate::certs::{self, ServingCerts};
use crate::claims::{self, Claims};
use crate::cli::ManagerArgs;
use crate::error::{Context, Result};
use crate::pool::Pool;
use crate::range::MacRange;
use crate::state::Shared;
use crate::{random_u64, server, watch};

/// How long a stopping replica keeps serving while its endpoint is taken out of the Service.
const UNREADY_GRACE: Duration = Duration::from_secs(5);
/// The Deployment the operator runs the manager in.
const MANAGER_DEPLOYMENT: &str = "kubemacpool-mac-controller-manager";

fn env(name: &str) -> Result<String> {
    std::env::var(name).with_context(|| format!("{name} is not set"))
}

pub async fn run(args: ManagerArgs) -> Result<()> {
    let namespace = env("POD_NAMESPACE")?;
    let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "kubemacpool".into());
    // Handled from the first moment: as a container's first process, a signal without a
    // handler is ignored, and a replica deleted while it waits for its range would hold its
    // pod in Terminating for the whole grace period.
    let mut stop = Stop::install()?;
    let client = Client::try_default().await?;
    // Both reads at once: each is a round trip before anything is listed.
    let (range, owner) = tokio::select! {
        read = async {
            tokio::join!(initial_range(&client, &namespace), deployment(&client, &namespace))
        } => (read.0?, read.1),
        () = stop.requested() => {
            info!("stopped before it started");
            return Ok(());
        }
    };
    let identity = format!("{pod}-{:08x}", random_u64() as u32);
    info!(%identity, %range, wait_time_s = args.wait_time, "starting");

    let serving = Arc::new(ServingCerts::default());
    let pool = Pool::new(range, Duration::from_secs(args.wait_time), random_u64());
    let claims = Claims::new(client.clone(), &namespace, identity).owned_by(owner);
    let shared = Arc::new(Shared::new(client.clone(), pool, claims, serving.clone()));

    tokio::spawn(certs::follow_serving_secret(
        client.clone(),
        namespace.clone(),
        serving.clone(),
    ));
    // The VMs first: their list (whole custom objects) takes the API server the longest.
    tokio::spawn(watch::follow_vms(client.clone(), shared.clone()));
    tokio::spawn(watch::follow_pods(client.clone(), shared.clone()));
    tokio::spawn(watch::follow_running_pods(client.clone(), shared.clone()));
    tokio::spawn(watch::follow_range(
        client.clone(),
        namespace.clone(),
        pod.clone(),
        shared.clone(),
    ));
    tokio::spawn(watch::follow_vmis(client.clone(), shared.clone()));
    tokio::spawn(watch::follow_opt_mode(client.clone(), shared.clone()));
    tokio::spawn(watch::follow_namespaces(client.clone(), shared.clone()));
    tokio::spawn(watch::report_collisions(client.clone(), shared.clone()));
    tokio::spawn(watch::expire_pending(shared.clone()));
    {
        let shared = shared.clone();
        tokio::spawn(async move { shared.claims.keep_renewing().await });
    }
    {
        let shared = shared.clone();
        tokio::spawn(async move { shared.claims.give_back_when_asked(&shared.pool).await });
    }
    tokio::spawn(claim_first_block(shared.clone()));
    tokio::spawn(log_when_ready(shared.clone()));

    let tls_config = certs::server_config(
        serving,
        args.tls_min_version.as_deref(),
        args.tls_cipher_suites.as_deref(),
    )?;
    let tls = TlsAcceptor::from(Arc::new(tls_config.clone()));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let webhook = TcpListener::bind(("0.0.0.0", args.port)).await?;
    let metrics = TcpListener::bind(("0.0.0.0", args.metrics_port)).await?;
    let webhook_server = tokio::spawn(server::serve(webhook, tls, shared.clone(), stop_rx));
    let metrics_server = tokio::spawn(server::serve_metrics(
        metrics,
        tls_config,
        Arc::new(Authorizer::new(client.clone())),
        shared.clone(),
    ));

    stop.requested().await;
    info!("stopping: unready, then draining");
    shared.stopping.store(true, Ordering::Relaxed);
    tokio::time::sleep(UNREADY_GRACE).await;
    let _ = stop_tx.send(true);
    let _ = webhook_server.await;
    metrics_server.abort();
    server::drained(&shared, Duration::from_secs(10)).await;
    // The objects of the last admissions are stored by now; the other replicas' watches get
    // them within milliseconds. Give them that before they may claim these blocks.
    tokio::time::sleep(claims::QUIET).await;
    if let Err(e) = shared.claims.retire(&shared.pool).await {
        warn!(error = %e, "giving back the blocks; they free themselves once the Lease expires");
    }
    info!("stopped");
    Ok(())
}

/// The manager's Deployment, as the owner of what the replicas write (their Leases, the claims
/// ConfigMap): removing KubeMacPool removes them too. None when it runs outside one.
async fn deployment(client: &Client, namespace: &str) -> Option<OwnerReference> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(MANAGER_DEPLOYMENT).await {
        Ok(Some(d)) => Some(OwnerReference {
            api_version: "apps/v1".to_string(),
            kind: "Deployment".to_string(),
            name: MANAGER_DEPLOYMENT.to_string(),
            uid: d.metadata.uid?,
            ..OwnerReference::default()
        }),
        Ok(None) => None,
        Err(e) => {
            warn!(error = %e, "reading Deployment {MANAGER_DEPLOYMENT}; what this replica writes has no owner");
            None
        }
    }
}

/// SIGTERM (the kubelet stopping the pod) or SIGINT.
struct Stop {
    term: Signal,
    int: Signal,
}

impl Stop {
    fn install() -> std::io::Result<Stop> {
        Ok(Stop {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    async fn requested(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

/// `RANGE_START` and `RANGE_END` when set (upstream's manifests pass them), else the range
/// ConfigMap, waited for; [`watch::follow_range`] applies its later changes.
async fn initial_range(client: &Client, namespace: &str) -> Result<MacRange> {
    if let (Ok(start), Ok(end)) = (env("RANGE_START"), env("RANGE_END")) {
        return Ok(MacRange::parse(&start, &end)?);
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    loop {
        match api.get_opt(watch::RANGE_CONFIG).await {
            Ok(Some(cm)) => {
                let data = cm.data.unwrap_or_default();
                let get = |k: &str| data.get(k).cloned().unwrap_or_default();
                match MacRange::parse(&get("RANGE_START"), &get("RANGE_END")) {
                    Ok(range) => return Ok(range),
                    Err(e) => warn!(error = %e, "{}", watch::RANGE_CONFIG),
                }
            }
            Ok(None) => warn!("no {} yet", watch::RANGE_CONFIG),
            Err(e) => warn!(error = %e, "reading {}", watch::RANGE_CONFIG),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Logs the time from start to ready once (what the startup benchmark reads), and counts then
/// the duplicate MACs of the VMs listed at start, as upstream counts them at its start.
async fn log_when_ready(shared: Arc<Shared>) {
    let mut last = None;
    loop {
        match shared.not_ready() {
            None => {
                let duplicates = shared.pool().extra_holders_of_macs_of("vm/");
                shared.duplicate_macs.store(duplicates, Ordering::Relaxed);
                info!(
                    after_ms = shared.started.elapsed().as_millis() as u64,
                    duplicate_vm_macs = duplicates,
                    "ready"
                );
                return;
            }
            Some(why) => {
                if last.as_ref() != Some(&why) {
                    info!(
                        after_ms = shared.started.elapsed().as_millis() as u64,
                        waiting_for = %why,
                        "not ready"
                    );
                    last = Some(why);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The first admission should not wait for a claim: claim a block once the pool is known.
async fn claim_first_block(shared: Arc<Shared>) {
    loop {
        let synced = shared.pods_synced.load(Ordering::Relaxed)
            && shared.vms_synced.load(Ordering::Relaxed)
            && shared.claims.check_fresh().is_ok();
        if synced {
            match shared.claims.claim_block(&shared.pool).await {
                Ok(_) => return,
                Err(e) => warn!(error = %e, "claiming a first block"),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn run_cert_manager() -> Result<()> {
    let mut stop = Stop::install()?;
    let namespace = env("POD_NAMESPACE")?;
    let client = Client::try_default().await?;
    // Every write it makes is whole (a Secret, a caBundle): stopping between two is safe.
    tokio::select! {
        done = certs::run_cert_manager(client, namespace, certs::Intervals::from_env()?) => done,
        () = stop.requested() => {
            info!("stopped");
            Ok(())
        }
    }
}
