//! `real-kernel run`: boots the kernel with virtme-ng, runs one command as root in the guest with
//! the repository as working directory, streams its stdout and stderr, powers off and returns the
//! command's exit status ([`NO_STATUS`] if the guest never reported one: boot failure, crash,
//! timeout).
//!
//! The guest sees the host's files, read-only but for writable overlays that vanish at power-off
//! on /etc, /lib, /usr, /var, /tmp, /home, /opt, /srv and the repository (/run is the guest's
//! own). The kernel console is kept out of the command's stderr; on failure it is saved with the
//! whole dmesg under `<tier dir>/logs/` and the part worth seeing is shown.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use wait_timeout::ChildExt;

use super::console::{copy_streaming, keep_console, say, split_console};
use super::exec::{is_executable, on_path};
use super::setup::{is_our_guest_init, virtme_guest_bin};
use super::{cache_dir, repo_root, require_root, Context, Error, Result, TMPFS_IN_GUEST};

// The run's parts that have modules of their own are part of `run`'s API all the same.
pub use super::cli::{resolve_env, RunOptions};
pub use super::console::{console_excerpt, is_console_line, utc_stamp};
pub use super::guest::{guest_script, shquote, vng_args};
pub use super::report::{outcome, GuestReport, VngEnd, NO_STATUS};

/// Boots the guest and runs `options.command` in it; the command's stdout goes to `stdout`, its
/// stderr and our own report lines (`real-kernel: ...`) to `stderr`. Returns the exit status.
///
/// # Errors
/// When not root, when the tier is not set up, or when the guest cannot be started.
pub fn run(
    options: &RunOptions,
    stdout: &mut (dyn Write + Send),
    stderr: &mut (dyn Write + Send),
) -> Result<i32> {
    if options.command.is_empty() {
        return Err(Error::msg(
            "run: no command (usage: real-kernel run [OPTIONS] -- COMMAND [ARG...])",
        ));
    }
    require_root("it boots a VM and runs the command as root")?;
    let dir = cache_dir()?;
    let repo = repo_root();
    if TMPFS_IN_GUEST.iter().any(|d| repo.starts_with(d)) {
        return Err(Error::msg(format!(
            "run: the guest mounts a tmpfs over {}, so it cannot see the repository at {}: move it",
            repo.parent().unwrap_or(&repo).display(),
            repo.display()
        )));
    }
    let env = options
        .env
        .iter()
        .map(|spec| resolve_env(spec, |name| std::env::var(name).ok()))
        .collect::<Result<Vec<_>>>()?;
    let shared = |option: &str, dirs: &[PathBuf]| {
        dirs.iter()
            .map(|d| {
                if d.is_dir() {
                    fs::canonicalize(d).map_err(|e| Error::io(&format!("run: {option}"), d, e))
                } else {
                    Err(Error::msg(format!(
                        "run: {option} {} is not a directory",
                        d.display()
                    )))
                }
            })
            .collect::<Result<Vec<_>>>()
    };
    let rwdirs = shared("--rwdir", &options.rwdirs)?;
    let rodirs = shared("--rodir", &options.rodirs)?;
    let (kernel, abi) = installed_kernel(&dir)?;

    // Under /tmp (not $TMPDIR): the guest sees the host's /tmp, where the script lives.
    let tmp = tempfile::Builder::new()
        .prefix("cni-real-kernel.")
        .tempdir_in("/tmp")
        .context("cannot create a directory in /tmp")?;
    let out_dir = tmp.path().join("out");
    fs::create_dir(&out_dir).map_err(|e| Error::io("cannot create", &out_dir, e))?;
    let script = tmp.path().join("guest.sh");
    fs::write(
        &script,
        guest_script(&out_dir, &repo, &env, &options.command),
    )
    .map_err(|e| Error::io("cannot write", &script, e))?;
    let console_path = tmp.path().join("console.log");

    let venv_bin = dir.join("venv/bin");
    let mut path = OsString::from(&venv_bin);
    if let Some(host_path) = std::env::var_os("PATH") {
        path.push(":");
        path.push(host_path);
    }
    let mut cmd = Command::new(venv_bin.join("vng"));
    cmd.args(vng_args(
        options,
        &repo,
        &out_dir,
        &kernel,
        &script,
        (&rwdirs, &rodirs),
    ))
    .current_dir(&repo)
    .env("PATH", path)
    // QEMU reopens its stdout and stderr by /proc/self/fd/N and sets O_NONBLOCK on them: give it
    // pipes of its own, never our terminal or the caller's files.
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    // Its own process group, so that a timeout stops QEMU too.
    .process_group(0);

    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", venv_bin.join("vng").display()))?;
    let child_stdout = child.stdout.take();
    let child_stderr = child.stderr.take();
    let mut console = fs::File::create(&console_path)
        .map_err(|e| Error::io("cannot create", &console_path, e))?;
    let verbose = options.verbose;
    let vng = std::thread::scope(|scope| {
        if let Some(pipe) = child_stdout {
            let stdout = &mut *stdout;
            scope.spawn(move || copy_streaming(pipe, stdout));
        }
        let filter = child_stderr.map(|pipe| {
            let stderr = &mut *stderr;
            let console = &mut console;
            scope.spawn(move || split_console(pipe, stderr, console, verbose))
        });
        let end = wait_or_kill(&mut child, Duration::from_secs(options.timeout_secs));
        if let Some(f) = filter {
            let _ = f.join();
        }
        end
    })?;
    let wall = started.elapsed().as_secs_f64();

    let read = |name: &str| fs::read_to_string(out_dir.join(name)).unwrap_or_default();
    let report = GuestReport::parse(&read("times"), &read("exit"));
    let (status, notes) = outcome(vng, &report, options.timeout_secs, wall, &abi);
    for note in notes {
        say(stderr, &note);
    }
    if status != 0 {
        keep_console(
            &dir,
            &console_path,
            &out_dir.join("dmesg"),
            report.exit.is_some(),
            verbose,
            stderr,
        );
        say(stderr, &format!("exit status {status}"));
    }
    Ok(status)
}

/// The installed kernel image and its ABI, after checking that setup is complete.
fn installed_kernel(dir: &Path) -> Result<(PathBuf, String)> {
    let not_set_up = |what: String| {
        Error::msg(format!(
            "the real-kernel tier is not set up on this machine: run `real-kernel setup` (as \
             root) ({what})"
        ))
    };
    let venv = dir.join("venv");
    let vng = venv.join("bin/vng");
    if !is_executable(&vng) {
        return Err(not_set_up(format!("{} is missing", vng.display())));
    }
    if !on_path("qemu-system-x86_64") {
        return Err(not_set_up("qemu-system-x86_64 is missing".to_owned()));
    }
    if !is_executable(Path::new("/bin/busybox")) {
        return Err(not_set_up("/bin/busybox is missing".to_owned()));
    }
    let current = dir.join("current");
    if !current.join(".complete").exists() {
        return Err(not_set_up(format!("no kernel under {}", current.display())));
    }
    let guest_bin = virtme_guest_bin(&venv)?;
    if !is_our_guest_init(&guest_bin.join("virtme-ng-init")) {
        return Err(not_set_up(
            "the guest init wrapper is not installed".to_owned(),
        ));
    }
    let kdir = fs::canonicalize(&current).map_err(|e| Error::io("cannot resolve", &current, e))?;
    let abi = kdir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("kernel-"))
        .ok_or_else(|| {
            not_set_up(format!(
                "{} is not a kernel-<abi> directory",
                kdir.display()
            ))
        })?
        .to_owned();
    Ok((kdir.join(format!("boot/vmlinuz-{abi}")), abi))
}

/// Waits for virtme-ng; past `timeout` stops its whole process group (QEMU included), first
/// politely, then after 10 s for good.
fn wait_or_kill(child: &mut Child, timeout: Duration) -> Result<VngEnd> {
    const WAITING: &str = "waiting for virtme-ng";
    if let Some(status) = child.wait_timeout(timeout).context(WAITING)? {
        return Ok(VngEnd::Exited(exit_code(status)));
    }
    // The group's id is the child's pid (process_group(0)).
    let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let _ = killpg(group, Signal::SIGTERM);
    if child
        .wait_timeout(Duration::from_secs(10))
        .context(WAITING)?
        .is_none()
    {
        let _ = killpg(group, Signal::SIGKILL);
        child.wait().context(WAITING)?;
    }
    Ok(VngEnd::TimedOut)
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(NO_STATUS)
}
