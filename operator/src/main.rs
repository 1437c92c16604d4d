//! `network-addons-operator run | render | crd | deploy`.

use std::io::Read;
use std::process::ExitCode;

use network_addons_operator::error::{Context, Error, Result};
use network_addons_operator::settings::Settings;
use network_addons_operator::{cli, crd, manifests, metrics, reconcile};

const USAGE: &str = "\
usage: network-addons-operator <command>

  run [--metrics-bind-address A]   reconcile the NetworkAddonsConfig named `cluster`; serve
                                   /healthz, /readyz and /metrics on A (default :8080)
  render [-f FILE] [--previous F]  print every object a NetworkAddonsConfig produces, offline;
         [--mac-prefix XX:XX]      FILE is the CR as YAML (`-` or none: stdin), F a previously
                                   applied spec (JSON or YAML) whose defaults carry over
  crd                              print the CustomResourceDefinition
  deploy --out DIR                 write the CRD, the operator's manifests and an example CR

run and render read their settings from the environment: OPERAND_NAMESPACE (else
OPERATOR_NAMESPACE), OPERATOR_VERSION, PLUGINS_IMAGE, MULTUS_IMAGE, KUBEMACPOOL_IMAGE,
MACVTAP_CNI_IMAGE, CNI_BIN_DIR, CNI_CONF_DIR, POD_NAME; deploy writes their defaults into the
operator's Deployment. run logs to stderr at the level RUST_LOG sets (default info), connecting
in cluster or through KUBECONFIG.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let running = args.first().is_some_and(|c| c == "run");
    if running {
        init_logging();
    }
    match dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if running => {
            tracing::error!(error = ?e.to_string(), "stopped");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("network-addons-operator: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Structured logs on stderr, at the level `RUST_LOG` sets (`info` when unset or invalid).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn dispatch(args: &[String]) -> Result<()> {
    let (command, rest) = args
        .split_first()
        .ok_or_else(|| Error::new(format!("no command\n{USAGE}")))?;
    let flags = cli::Flags::parse(rest)?;
    let settings = Settings::from_env();
    match command.as_str() {
        "run" => {
            let address = flags
                .value("--metrics-bind-address")?
                .unwrap_or(metrics::DEFAULT_ADDRESS);
            let address = metrics::parse_address(address)?;
            flags.expect_only(&["--metrics-bind-address"])?;
            run(settings, address)
        }
        "render" => {
            let input = match flags.value("-f")? {
                None | Some("-") => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .context("read the CR from stdin")?;
                    s
                }
                Some(path) => std::fs::read_to_string(path).context(format!("read {path}"))?,
            };
            let previous = match flags.value("--previous")? {
                Some(path) => Some(std::fs::read_to_string(path).context(format!("read {path}"))?),
                None => None,
            };
            let prefix = match flags.value("--mac-prefix")? {
                Some(p) => Some(cli::parse_mac_prefix(p)?),
                None => None,
            };
            flags.expect_only(&["-f", "--previous", "--mac-prefix"])?;
            let out = cli::render_cr(&input, previous.as_deref(), prefix, &settings)?;
            for note in &out.notes {
                eprintln!("note: {note}");
            }
            print_out(&out.yaml)
        }
        "crd" => {
            flags.expect_none()?;
            print_out(&manifests::to_yaml(&crd::crd())?)
        }
        "deploy" => {
            let dir = flags
                .value("--out")?
                .ok_or_else(|| Error::new("deploy needs --out DIR"))?;
            flags.expect_only(&["--out"])?;
            std::fs::create_dir_all(dir).context(format!("create {dir}"))?;
            for (name, content) in manifests::deploy_files(&Settings::defaults())? {
                let path = std::path::Path::new(dir).join(name);
                std::fs::write(&path, content).context(format!("write {}", path.display()))?;
            }
            Ok(())
        }
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(Error::new(format!("unknown command {other:?}\n{USAGE}"))),
    }
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn print_out(text: &str) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::with("write to stdout", e))
        }
        _ => Ok(()),
    }
}

fn run(settings: Settings, address: std::net::SocketAddr) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    runtime.block_on(async {
        let state = std::sync::Arc::new(metrics::State::default());
        let listener = metrics::bind(address).await?;
        tracing::info!(%address, "serving /healthz, /readyz and /metrics");
        tokio::spawn(metrics::serve(listener, state.clone()));
        let client = kube::Client::try_default()
            .await
            .context("connect to the API server")?;
        reconcile::run(client, settings, state).await
    })
}
