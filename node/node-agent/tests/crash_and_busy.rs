//! The two guarantees that motivate the installer: replacing a binary that is running never
//! fails with ETXTBSY and never shows a runtime a broken file, and SIGKILL at any moment leaves
//! the old binary or the new one, never a truncated one.

mod common;

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use node_agent::record::{Record, RECORD_FILE};

/// A process of `path` blocked reading its stdin (plugins read stdin to the end before anything
/// else), so the file is busy as long as it lives.
fn hold_running(path: &std::path::Path) -> Child {
    Command::new(path)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the old binary")
}

#[test]
fn installing_over_a_running_binary_never_hits_etxtbsy() {
    let t = TestDir::new("busy");
    let (src, dst, s, d) = t.src_dst();
    write_plugin(&src, "tuning", 0, 1000);
    run_ok(&["install", "--from", &s, "--to", &d, "--plugins", "tuning"]);
    let target = dst.join("tuning");

    // The old binary is running: writing into it is what `cp` would do, and the kernel refuses.
    let mut held = hold_running(&target);
    thread::sleep(Duration::from_millis(50));
    let naive = OpenOptions::new().write(true).open(&target);
    assert_eq!(
        naive.map(drop).map_err(|e| e.raw_os_error()),
        Err(Some(libc::ETXTBSY)),
        "the control: the installed binary must be busy"
    );

    // Meanwhile a runtime keeps exec'ing the installed path.
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = {
        let (stop, target) = (stop.clone(), target.clone());
        thread::spawn(move || {
            let (mut ok, mut failures) = (0u32, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                match version_of(&target) {
                    Ok(out) if out.contains("cniVersion") => ok += 1,
                    Ok(out) => failures.push(format!("bad answer {out:?}")),
                    Err(e) => failures.push(e.to_string()),
                }
            }
            (ok, failures)
        })
    };
    let mut last = String::new();
    for round in 1..=8u8 {
        last = write_plugin(&src, "tuning", round, 1000 + usize::from(round));
        run_ok(&["install", "--from", &s, "--to", &d, "--plugins", "tuning"]);
        assert_eq!(sha256(&target), last);
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let (ok, failures) = runtime.join().expect("runtime thread");
    drop(held.stdin.take());
    let status = held.wait().expect("old binary exits");
    assert!(
        status.success(),
        "the old binary ran on to the end: {status}"
    );
    assert!(
        failures.is_empty(),
        "{} execs failed: {failures:?}",
        failures.len()
    );
    assert!(ok > 20, "only {ok} execs ran during the installs");
    assert_eq!(sha256(&target), last);
    assert_eq!(mode(&target), 0o755);
    assert_eq!(listing(&dst), [".cni-installer.json", "tuning"]);
}

/// Watches `path` in a tight loop on a thread of its own until stopped: every sample must be a
/// file of mode 0755 with one of `sizes`. A runtime looking at the name sees no more than this.
struct Observer {
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<(u64, Vec<String>)>,
}

impl Observer {
    fn start(path: &std::path::Path, sizes: [u64; 2]) -> Observer {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, path) = (stop.clone(), path.to_path_buf());
            thread::spawn(move || {
                let (mut samples, mut anomalies) = (0u64, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    samples += 1;
                    match fs::metadata(&path) {
                        Ok(m)
                            if sizes.contains(&m.len())
                                && m.permissions().mode() & 0o7777 == 0o755 => {}
                        Ok(m) => anomalies.push(format!(
                            "size {} mode {:o}",
                            m.len(),
                            m.permissions().mode()
                        )),
                        Err(e) => anomalies.push(e.to_string()),
                    }
                }
                (samples, anomalies)
            })
        };
        Observer { stop, thread }
    }

    /// Stops watching; fails the test on any anomaly.
    fn finish(self, what: &str) {
        self.stop.store(true, Ordering::Relaxed);
        let (samples, anomalies) = self.thread.join().expect("observer");
        assert!(samples > 0, "{what}: never looked");
        assert!(
            anomalies.is_empty(),
            "{what}: the name was seen missing or partial {} times in {samples}: {:?}",
            anomalies.len(),
            &anomalies[..anomalies.len().min(5)]
        );
    }
}

/// A moment of an install of the big binary over the small one, recognised by what the install
/// has left in the destination directory so far. The test waits for the state, not for a time,
/// so the moments are the same however loaded the machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    /// Just started: nothing written yet.
    AtOnce,
    /// The temporary file exists (being written, fsynced, or run for VERSION).
    TempCreated,
    /// The temporary file holds the whole binary (its checks are running).
    TempComplete,
    /// The record names the new binary as pending: the rename is next.
    PendingRecorded,
    /// The new binary is in place; the record may not say so yet.
    Renamed,
}

impl Moment {
    fn reached(self, dst: &Path, new_size: u64) -> bool {
        let size = |name: &str| fs::metadata(dst.join(name)).map(|m| m.len()).ok();
        match self {
            Moment::AtOnce => true,
            Moment::TempCreated => size(".tuning.cni-installer.tmp").is_some(),
            Moment::TempComplete => size(".tuning.cni-installer.tmp") == Some(new_size),
            Moment::PendingRecorded => {
                fs::read_to_string(dst.join(RECORD_FILE)).is_ok_and(|r| r.contains("\"pending\""))
            }
            Moment::Renamed => size("tuning") == Some(new_size),
        }
    }

    /// Whether a kill at this moment must leave the temporary file; such a moment is tried
    /// again when the install got past it before the kill landed.
    fn leaves_the_temp(self) -> bool {
        matches!(self, Moment::TempCreated | Moment::TempComplete)
    }
}

/// Starts installing `from` into `dst`, waits until `moment` is reached (or the install is
/// over), and SIGKILLs it.
fn kill_install_at(moment: Moment, args: &[String], dst: &Path, new_size: u64) {
    let mut child = Command::new(installer())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start node-agent");
    while !moment.reached(dst, new_size) {
        if child.try_wait().expect("wait").is_some() {
            return;
        }
        thread::yield_now();
    }
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    let _ = kill(pid, Signal::SIGKILL);
    let _ = child.wait();
}

/// The installer is killed at each moment of an install of a large binary (a plugin with 8 MiB
/// of padding): whatever the moment, the target is the old file or the new one, whole and
/// executable, and the next install completes and removes the temporary file. Throughout, an
/// observer checks that the name is never missing nor a partial file.
#[test]
fn sigkill_mid_install_leaves_the_old_or_the_new_binary() {
    let t = TestDir::new("kill");
    let (small, big, dst) = (t.sub("small"), t.sub("big"), t.sub("dst"));
    let old = write_plugin(&small, "tuning", b'o', 10);
    let new = write_plugin(&big, "tuning", b'n', 8 << 20);
    let sizes = [small.join("tuning"), big.join("tuning")]
        .map(|p| fs::metadata(p).expect("stat source").len());
    let target = dst.join("tuning");
    let d = dst.display().to_string();
    let args = |from: &std::path::Path| {
        let from = from.display().to_string();
        [
            "install",
            "--from",
            &from,
            "--to",
            &d,
            "--plugins",
            "tuning",
        ]
        .map(String::from)
    };
    let install = |from: &std::path::Path| run_ok(&args(from).each_ref().map(String::as_str));

    for moment in [
        Moment::AtOnce,
        Moment::TempCreated,
        Moment::TempComplete,
        Moment::PendingRecorded,
        Moment::Renamed,
    ] {
        let mut attempts = 0;
        loop {
            attempts += 1;
            install(&small);
            assert_eq!(sha256(&target), old);
            let observer = Observer::start(&target, sizes);
            kill_install_at(moment, &args(&big), &dst, sizes[1]);

            let now = sha256(&target);
            assert!(
                now == old || now == new,
                "after a kill at {moment:?}: the target is neither the old nor the new binary"
            );
            assert_eq!(mode(&target), 0o755, "after a kill at {moment:?}");
            let answer = version_of(&target).expect("the target runs");
            assert!(answer.contains("cniVersion"), "{answer}");
            let temp_left = dst.join(".tuning.cni-installer.tmp").exists();
            match moment {
                Moment::AtOnce => assert_eq!(now, old, "killed before it wrote anything"),
                Moment::Renamed => assert_eq!(now, new, "killed after the rename"),
                _ if temp_left => assert_eq!(now, old, "a temporary file left: not renamed"),
                _ => {}
            }

            let log = install(&big);
            observer.finish(&format!("kill at {moment:?} and the install after it"));
            assert_eq!(sha256(&target), new);
            assert_eq!(
                log.contains("removed .tuning.cni-installer.tmp"),
                temp_left,
                "after a kill at {moment:?}: {log}"
            );
            assert_eq!(listing(&dst), [".cni-installer.json", "tuning"]);
            run_ok(&["probe", "--to", &d, "--plugins", "tuning"]);

            if temp_left || !moment.leaves_the_temp() {
                break;
            }
            assert!(
                attempts < 20,
                "{attempts} installs got past {moment:?} before the kill landed"
            );
        }
    }
}

/// A temporary file the installer cannot have written completely is never renamed into place:
/// a stale one in the way of the next install is removed, not used.
#[test]
fn a_stale_temp_file_is_not_mistaken_for_the_new_binary() {
    let t = TestDir::new("stale");
    let (src, dst, s, d) = t.src_dst();
    let new = write_plugin(&src, "tuning", b'n', 10);
    let stale = dst.join(".tuning.cni-installer.tmp");
    fs::write(&stale, b"truncated").expect("stale temp");
    run_ok(&["install", "--from", &s, "--to", &d, "--plugins", "tuning"]);
    assert_eq!(sha256(&dst.join("tuning")), new);
    assert_eq!(
        fs::metadata(&stale).map_err(|e| e.kind()).err(),
        Some(ErrorKind::NotFound)
    );
}

/// A plugin that answers VERSION, except under a name other than its temporary one: there it
/// SIGKILLs its parent first. The installer runs a plugin from its temporary file, renames it
/// into place, and runs it there once more before it records it, so this stops an install
/// exactly between its rename and its record. Its sha256.
fn write_plugin_killing_its_installer(dir: &Path, name: &str) -> String {
    let script = "#!/bin/sh\n\
                  case \"$0\" in\n\
                  *.cni-installer.tmp) ;;\n\
                  *) kill -KILL \"$PPID\" ;;\n\
                  esac\n\
                  echo '{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"1.1.0\"]}'\n";
    let path = dir.join(name);
    fs::write(&path, script).expect("write the plugin");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    sha256(&path)
}

/// Killed after renaming a new binary into place but before recording it, an install leaves
/// that binary pending in the record. The next install, of another source (a rollback, a newer
/// image), replaces it as ours: no `--replace-foreign` needed, and with it no `.orig` of our own
/// binary for uninstall to put back later. An uninstall in that state removes it as ours too.
#[test]
fn an_install_killed_between_its_rename_and_its_record_leaves_a_binary_still_ours() {
    for replace_foreign in [false, true] {
        let t = TestDir::new("pending");
        let (first, killer, other, dst) = (
            t.sub("first"),
            t.sub("killer"),
            t.sub("other"),
            t.sub("dst"),
        );
        let d = dst.display().to_string();
        let install = |from: &Path, extra: &[&str]| {
            let from = from.display().to_string();
            let mut args = vec![
                "install",
                "--from",
                &from,
                "--to",
                &d,
                "--plugins",
                "tuning",
            ];
            args.extend_from_slice(extra);
            run(&args)
        };
        let flag: &[&str] = if replace_foreign {
            &["--replace-foreign"]
        } else {
            &[]
        };
        let target = dst.join("tuning");
        write_plugin(&first, "tuning", b'1', 10);
        let stopped = write_plugin_killing_its_installer(&killer, "tuning");
        let next = write_plugin(&other, "tuning", b'2', 10);
        assert!(install(&first, &[]).status.success());
        let before = Record::load(&dst).expect("record");

        let out = install(&killer, &[]);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "the install must be killed by its plugin: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(sha256(&target), stopped, "killed after the rename");
        let record = Record::load(&dst).expect("record");
        assert_eq!(record.plugins, before.plugins, "killed before the record");
        assert_eq!(record.pending.get("tuning"), Some(&stopped));

        let out = install(&other, flag);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "--replace-foreign {replace_foreign}: {log}"
        );
        assert!(
            log.contains(&format!("tuning: upgraded from sha256 {}", &stopped[..12])),
            "{log}"
        );
        assert_eq!(sha256(&target), next);
        assert_eq!(
            listing(&dst),
            [RECORD_FILE, "tuning"],
            "no .orig of our own binary"
        );
        let record = Record::load(&dst).expect("record");
        assert!(record.pending.is_empty(), "{record:?}");
        assert_eq!(record.plugins["tuning"].sha256, next);
        assert_eq!(record.plugins["tuning"].original, None);
        run_ok(&["probe", "--to", &d, "--plugins", "tuning"]);

        // Stopped the same way again, then uninstalled: the pending binary is removed as ours.
        assert_eq!(install(&killer, &[]).status.signal(), Some(libc::SIGKILL));
        assert_eq!(sha256(&target), stopped);
        let log = run_ok(&["uninstall", "--to", &d]);
        assert!(log.contains("tuning: removed"), "{log}");
        assert!(listing(&dst).is_empty(), "{:?}", listing(&dst));
    }
}
