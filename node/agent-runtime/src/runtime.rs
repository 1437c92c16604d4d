//! What every long-running command shares: its runtime, its API client and its stop signals.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::error::{Context, Result};

/// The one-threaded runtime `run` and `gc` work on: their work is requests and waits.
pub fn current_thread_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// The API server of the cluster this runs in (or of KUBECONFIG).
pub async fn api_client() -> Result<kube::Client> {
    kube::Client::try_default()
        .await
        .context("connecting to the API server")
}

/// Returns when SIGTERM or SIGINT arrives (or arrived since the last call).
pub async fn stop_signal(term: &mut Signal, int: &mut Signal) {
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Starts catching the signal `kind`.
pub fn catch(kind: SignalKind, action: &'static str) -> Result<Signal> {
    signal(kind).context(action)
}
