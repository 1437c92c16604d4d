//! The command line: `run`, `render`, `crd` and `deploy`, parsed with clap and carried out
//! here, so [`crate::entry`] only sets up logging and reports the outcome.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use kube::ResourceExt;

use crate::cluster::ClusterInfo;
use crate::defaults::{fill_defaults, random_prefix};
use crate::error::{Context, Error, Result};
use crate::render;
use crate::settings::Settings;
use crate::spec::{NetworkAddonsConfig, NetworkAddonsConfigSpec};
use crate::{crd, leader, manifests, metrics, reconcile, validate};

const ENVIRONMENT: &str = "\
run and render read their settings from the environment: OPERAND_NAMESPACE (else
OPERATOR_NAMESPACE), OPERATOR_VERSION, PLUGINS_IMAGE, MULTUS_IMAGE, KUBEMACPOOL_IMAGE,
MACVTAP_CNI_IMAGE, MULTUS_DYNAMIC_NETWORKS_CONTROLLER_IMAGE, KUBE_SECONDARY_DNS_IMAGE,
CORE_DNS_IMAGE, KUBEVIRT_IPAM_CONTROLLER_IMAGE, MONITORING_NAMESPACE, MONITORING_SERVICE_ACCOUNT,
RUNBOOK_URL_TEMPLATE, CNI_BIN_DIR, CNI_CONF_DIR, POD_NAME; deploy
writes their defaults into the operator's Deployment. run logs to stderr at the level RUST_LOG
sets (default info), connecting in cluster or through KUBECONFIG.";

/// Turns the secondary-network components on from one NetworkAddonsConfig.
#[derive(Debug, Parser)]
#[command(
    name = "network-addons-operator",
    version,
    after_help = ENVIRONMENT,
    // a flag given twice takes its last value, as an override appended to a command line should
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Reconcile the NetworkAddonsConfig named `cluster`; serve /healthz, /readyz and /metrics
    Run {
        /// Where the probes and metrics are served: `:PORT` (every address) or `IP:PORT`
        #[arg(
            long,
            value_name = "A",
            default_value = metrics::DEFAULT_ADDRESS,
            value_parser = metrics::parse_address
        )]
        metrics_bind_address: SocketAddr,
    },
    /// Print every object a NetworkAddonsConfig produces, offline
    Render {
        /// The CR as YAML (`-` or none: stdin)
        #[arg(short = 'f', value_name = "FILE")]
        file: Option<PathBuf>,
        /// A previously applied spec (JSON or YAML) whose defaults carry over
        #[arg(long, value_name = "F")]
        previous: Option<PathBuf>,
        /// The two octets after 02 of a new kubeMacPool range (default: random offline, the
        /// cluster's own with --diff)
        #[arg(long, value_name = "XX:XX", value_parser = parse_mac_prefix)]
        mac_prefix: Option<[u8; 2]>,
        /// Render for a cluster with cert-manager (which the operator finds by itself)
        #[arg(long)]
        cert_manager: bool,
        /// Render for OpenShift (which the operator finds by itself)
        #[arg(long)]
        openshift: bool,
        /// Render for a cluster with the Prometheus operator's CRDs (found by itself too)
        #[arg(long)]
        monitoring: bool,
        /// Render PodDisruptionBudgets as policy/v1beta1, for Kubernetes before 1.21 (found by
        /// itself too)
        #[arg(long)]
        pdb_v1beta1: bool,
        /// Compare with the live cluster (through KUBECONFIG) instead of printing: what applying
        /// the CR would create, change and delete, from a server-side dry run; nothing is
        /// changed. The applied record and the cluster's capabilities are read from it.
        #[arg(long, conflicts_with_all = ["previous", "cert_manager", "openshift", "monitoring", "pdb_v1beta1"])]
        diff: bool,
    },
    /// Print the CustomResourceDefinition
    Crd,
    /// Write the CRD, the operator's manifests and an example CR
    Deploy {
        /// The directory to write them to (created if missing)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

impl Cli {
    /// Carries out the command.
    pub fn execute(self) -> Result<()> {
        match self.command {
            Command::Run {
                metrics_bind_address,
            } => run(Settings::from_env(), metrics_bind_address),
            Command::Render {
                file,
                previous,
                mac_prefix,
                cert_manager,
                openshift,
                monitoring,
                pdb_v1beta1,
                diff,
            } => {
                let input = match file.as_deref() {
                    None => read_stdin()?,
                    Some(path) if path == Path::new("-") => read_stdin()?,
                    Some(path) => read_file(path)?,
                };
                if diff {
                    return diff_cr(&input, mac_prefix, &Settings::from_env());
                }
                let previous = previous.as_deref().map(read_file).transpose()?;
                // Offline there is no other kubernetes-nmstate to find: `--diff` reads the
                // cluster for that.
                let cluster = ClusterInfo {
                    openshift,
                    cert_manager,
                    monitoring,
                    foreign_nmstate: None,
                    pdb_v1beta1,
                };
                let out = render_cr(
                    &input,
                    previous.as_deref(),
                    mac_prefix,
                    &Settings::from_env(),
                    &cluster,
                )?;
                for note in &out.notes {
                    eprintln!("note: {note}");
                }
                print_out(&out.yaml)
            }
            Command::Crd => print_out(&manifests::to_yaml(&crd::crd())?),
            Command::Deploy { out } => {
                std::fs::create_dir_all(&out)
                    .with_context(|| format!("create {}", out.display()))?;
                for (name, content) in manifests::deploy_files(&Settings::defaults())? {
                    let path = out.join(name);
                    std::fs::write(&path, content)
                        .with_context(|| format!("write {}", path.display()))?;
                }
                Ok(())
            }
        }
    }
}

fn run(settings: Settings, address: SocketAddr) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    runtime.block_on(async {
        let state = std::sync::Arc::new(metrics::State::default());
        let client = kube::Client::try_default()
            .await
            .context("connect to the API server")?;
        let listener = metrics::bind(address).await?;
        tracing::info!(%address, "serving /healthz, /readyz and /metrics over HTTPS");
        tokio::spawn(metrics::serve(
            listener,
            metrics::self_signed_tls()?,
            client.clone(),
            state.clone(),
        ));
        tokio::spawn(reconcile::mark_ready_when_readable(
            kube::Api::all(client.clone()),
            state.clone(),
        ));
        let lead = reconcile::run(client.clone(), settings.clone(), state);
        leader::while_leading(client, &settings, lead).await
    })
}

/// `render --diff`: the report of [`crate::diff`] on stdout.
fn diff_cr(cr_yaml: &str, prefix: Option<[u8; 2]>, settings: &Settings) -> Result<()> {
    let cr: NetworkAddonsConfig =
        crate::yaml::from_str(cr_yaml).context("parse the NetworkAddonsConfig")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    let report = runtime.block_on(crate::diff::diff_live(&cr, settings, prefix))?;
    print_out(&report)
}

fn read_stdin() -> Result<String> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .context("read the CR from stdin")?;
    Ok(s)
}

fn read_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn print_out(text: &str) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::wrap("write to stdout", e))
        }
        _ => Ok(()),
    }
}

/// `4a:be` → `[0x4a, 0xbe]`: the two random bytes of a generated kubeMacPool range.
pub fn parse_mac_prefix(s: &str) -> Result<[u8; 2]> {
    let bad = || Error::other(format!("{s:?}: expected two hex octets, e.g. 4a:be"));
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let byte = |x: &str| {
        if x.len() == 2 {
            // The parser's own text would only repeat that it is not hex.
            u8::from_str_radix(x, 16).map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    Ok([byte(a)?, byte(b)?])
}

pub struct RenderOutput {
    /// Multi-document YAML of every object.
    pub yaml: String,
    /// What the user should know: components not deployed.
    pub notes: Vec<String>,
}

/// Parses a NetworkAddonsConfig (YAML), validates it, fills defaults (from `previous`, an
/// applied spec, when given) and renders it, as a reconcile would.
pub fn render_cr(
    cr_yaml: &str,
    previous: Option<&str>,
    prefix: Option<[u8; 2]>,
    settings: &Settings,
    cluster: &ClusterInfo,
) -> Result<RenderOutput> {
    let cr: NetworkAddonsConfig =
        crate::yaml::from_str(cr_yaml).context("parse the NetworkAddonsConfig")?;
    let errors = validate::validate(&cr.spec);
    if !errors.is_empty() {
        return Err(Error::InvalidConfig(validate::message(&errors)));
    }
    let prev: Option<NetworkAddonsConfigSpec> = match previous {
        Some(text) => {
            Some(crate::yaml::from_str(text).context("parse the previously applied spec")?)
        }
        None => None,
    };
    let applied = fill_defaults(
        &cr.spec,
        prev.as_ref(),
        prefix.unwrap_or_else(random_prefix),
    );
    if let Some(prev) = &prev {
        let unsafe_changes = crate::defaults::check_change_safe(prev, &applied);
        if !unsafe_changes.is_empty() {
            return Err(Error::InvalidConfig(unsafe_changes.join("\n")));
        }
    }
    let mut objects = render::render(&applied, settings, cluster)?;
    render::common::relationship_labels(&mut objects, cr.labels());
    let yaml = render::to_yaml(&objects)?;
    let notes = cr
        .spec
        .not_deployed(cluster)
        .into_iter()
        .map(|n| format!("{}: {}", n.component, n.reason))
        .collect();
    Ok(RenderOutput { yaml, notes })
}

#[cfg(test)]
mod tests;
