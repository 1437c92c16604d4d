//! `real-kernel`: the real-kernel test tier's command line (see `netns_tests::real_kernel`).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use netns_tests::real_kernel::{self, run::RunOptions};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Runs commands under Debian's own 6.1 kernel, booted with virtme-ng in QEMU, for what the host
/// kernel cannot do (bridge VLAN filtering, 802.1Q, the openvswitch datapath).
#[derive(Debug, Parser)]
#[command(name = "real-kernel", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Installs, as root and idempotently, Debian packages, virtme-ng in a venv and Debian's
    /// current 6.1 kernel (the ABI linux-image-amd64 depends on), under /var/lib/cni-real-kernel
    /// (CNI_REAL_KERNEL_DIR moves it; CNI_REAL_KERNEL_PACKAGE pins the kernel package).
    Setup,
    /// Boots the kernel, runs COMMAND as root in the guest with the repository as working
    /// directory, streams its output, powers off and exits with COMMAND's status (125 if the
    /// guest never reported one: boot failure, crash, timeout). Inside, REAL_KERNEL_GUEST=1.
    Run(RunOptions),
    /// Inside the guest only (`real-kernel run -- real-kernel check`): checks, loudly, the kernel
    /// features the project's tests need.
    Check,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .event_format(Prefixed)
        .init();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("real-kernel: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    Ok(match cli.command {
        Cmd::Setup => {
            real_kernel::setup::setup()?;
            ExitCode::SUCCESS
        }
        Cmd::Run(options) => {
            let status =
                real_kernel::run::run(&options, &mut std::io::stdout(), &mut std::io::stderr())?;
            ExitCode::from(u8::try_from(status).unwrap_or(1))
        }
        Cmd::Check => {
            let mut out = std::io::stdout();
            let passed = real_kernel::check::check(&mut out)?;
            out.flush()?;
            if passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    })
}

/// Log lines as `real-kernel: <message>` (`real-kernel: warning: ...` for warnings), like the
/// tier's other reports.
struct Prefixed;

impl<S, N> FormatEvent<S, N> for Prefixed
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let level = *event.metadata().level();
        let prefix = if level <= Level::WARN {
            "real-kernel: warning: "
        } else {
            "real-kernel: "
        };
        write!(writer, "{prefix}")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
