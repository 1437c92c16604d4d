//! install, uninstall and probe against real directories, through the binary a DaemonSet runs.

mod common;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use common::*;
use node_agent::install::{self, Action};
use node_agent::record::{Record, RECORD_FILE};

/// `--from <src> --to <dst> --plugins <list>`, as the DaemonSet passes them.
fn flags<'a>(src: &'a str, dst: &'a str, plugins: &'a str) -> Vec<&'a str> {
    vec!["--from", src, "--to", dst, "--plugins", plugins]
}

fn install(src: &str, dst: &str, plugins: &str, extra: &[&str]) -> String {
    let mut args = vec!["install"];
    args.extend(flags(src, dst, plugins));
    args.extend_from_slice(extra);
    run_ok(&args)
}

#[test]
fn install_verifies_records_and_a_rerun_writes_nothing() {
    let t = TestDir::new("rerun");
    let (src, dst) = (t.sub("src"), t.sub("dst"));
    let bridge = write_plugin(&src, "bridge", b'b', 100);
    let tuning = write_plugin(&src, "tuning", b't', 100);
    let (s, d) = (src.display().to_string(), dst.display().to_string());

    let log = install(&s, &d, "bridge,tuning", &[]);
    assert!(log.contains("bridge: installed"), "{log}");
    assert!(log.contains("tuning: installed"), "{log}");
    assert_eq!(sha256(&dst.join("bridge")), bridge);
    assert_eq!(sha256(&dst.join("tuning")), tuning);
    assert_eq!(mode(&dst.join("bridge")), 0o755);
    assert_eq!(listing(&dst), [RECORD_FILE, "bridge", "tuning"]);
    let record = Record::load(&dst).expect("record");
    assert_eq!(record.plugins["bridge"].sha256, bridge);
    assert_eq!(record.plugins["tuning"].cni_version, "1.1.0");
    assert!(!record.plugins["tuning"].supported_versions.is_empty());

    let watched = [
        dst.clone(),
        dst.join("bridge"),
        dst.join("tuning"),
        dst.join(RECORD_FILE),
    ];
    let before: Vec<Stamp> = watched.iter().map(|p| stamp(p)).collect();
    // Through the binary, then through the library to read its report.
    let log = install(&s, &d, "bridge,tuning", &[]);
    assert!(
        log.contains("bridge: unchanged") && log.contains("tuning: unchanged"),
        "{log}"
    );
    let report = install::install(&install::Options {
        from: src.clone(),
        to: dst.clone(),
        plugins: Some(vec![
            install::Plugin::named("bridge"),
            install::Plugin::named("tuning"),
        ]),
        replace_foreign: false,
        node_policy: None,
    })
    .expect("install again");
    assert!(!report.wrote_anything(), "{report:?}");
    assert!(report.plugins.iter().all(|p| p.action == Action::Unchanged));
    // Same inodes, same mtime and ctime; the directory's own times say that no temporary file
    // was created in it either.
    let after: Vec<Stamp> = watched.iter().map(|p| stamp(p)).collect();
    assert_eq!(before, after);
    assert_eq!(listing(&dst), [RECORD_FILE, "bridge", "tuning"]);
    run_ok(&["probe", "--to", &d, "--plugins", "bridge,tuning"]);
}

#[test]
fn allow_options_write_the_plugins_node_policy_and_a_plain_install_leaves_it() {
    let t = TestDir::new("policy");
    let (src, dst) = (t.sub("src"), t.sub("dst"));
    write_plugin(&src, "tuning", b't', 100);
    let (s, d) = (src.display().to_string(), dst.display().to_string());
    let allow = [
        "--allow-state-dir",
        "/data/cni",
        "--allow-ovsdb",
        "tcp:127.0.0.1:6640",
    ];
    install(&s, &d, "tuning", &allow);
    let path = dst.join("node-policy.json");
    let policy: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).expect("node-policy.json")).expect("json");
    assert_eq!(
        policy,
        serde_json::json!({"stateDirs": ["/data/cni"], "ovsdbEndpoints": ["tcp:127.0.0.1:6640"]})
    );
    assert_eq!(mode(&path), 0o644);
    install(&s, &d, "tuning", &[]);
    assert!(
        path.exists(),
        "an install without --allow-* leaves the policy alone"
    );
}

#[test]
fn the_node_policy_beside_a_build_is_not_installed_as_a_plugin() {
    let t = TestDir::new("policy-not-plugin");
    let (src, dst) = (t.sub("src"), t.sub("dst"));
    write_plugin(&src, "tuning", b't', 100);
    fs::write(src.join("node-policy.json"), "{}").expect("policy beside the plugins");
    run_ok(&[
        "install",
        "--from",
        &src.display().to_string(),
        "--to",
        &dst.display().to_string(),
    ]);
    assert_eq!(listing(&dst), [RECORD_FILE, "tuning"]);
}

#[test]
fn a_new_version_replaces_ours_and_stale_temp_files_are_swept() {
    let t = TestDir::new("upgrade");
    let (src, dst, s, d) = t.src_dst();
    let old = write_plugin(&src, "bridge", b'1', 10);
    install(&s, &d, "bridge", &[]);
    let old_inode = stamp(&dst.join("bridge")).ino;
    // Left by an install that was killed.
    fs::write(dst.join(".bridge.cni-installer.tmp"), b"half a binary").expect("stale");
    fs::write(dst.join(".cni-installer.json.cni-installer.tmp"), b"{").expect("stale");
    let new = write_plugin(&src, "bridge", b'2', 10);
    let log = install(&s, &d, "bridge", &[]);
    assert!(
        log.contains(&format!("upgraded from sha256 {}", &old[..12])),
        "{log}"
    );
    assert!(log.contains("removed .bridge.cni-installer.tmp"), "{log}");
    assert_eq!(sha256(&dst.join("bridge")), new);
    assert_ne!(
        stamp(&dst.join("bridge")).ino,
        old_inode,
        "renamed over, not written into"
    );
    assert_eq!(listing(&dst), [RECORD_FILE, "bridge"]);
    assert_eq!(
        Record::load(&dst).expect("record").plugins["bridge"].sha256,
        new
    );
}

#[test]
fn a_foreign_file_is_left_alone_without_the_flag_and_put_back_by_uninstall() {
    let t = TestDir::new("foreign");
    let (src, dst, s, d) = t.src_dst();
    let ours = write_plugin(&src, "bridge", b'o', 10);
    write_plugin(&src, "tuning", b't', 10);
    // Debian's Go bridge, say.
    let go = dst.join("bridge");
    fs::write(&go, b"#!/bin/sh\necho vendor bridge\n").expect("foreign");
    fs::set_permissions(&go, fs::Permissions::from_mode(0o700)).expect("chmod");
    let go_sha = sha256(&go);
    let go_stamp = stamp(&go);

    let mut args = vec!["install"];
    args.extend(flags(&s, &d, "bridge,tuning"));
    let err = run_err(&args);
    assert!(err.contains("--replace-foreign"), "{err}");
    assert!(err.contains(&go.display().to_string()), "{err}");
    assert!(err.contains(&go_sha), "{err}");
    assert_eq!(sha256(&go), go_sha);
    assert_eq!(stamp(&go), go_stamp, "content, inode and mode untouched");
    // Refused before anything was written: not even the other plugin.
    assert_eq!(listing(&dst), ["bridge"]);

    let log = install(&s, &d, "bridge,tuning", &["--replace-foreign"]);
    assert!(
        log.contains("bridge: replaced a foreign file, kept as .bridge.orig"),
        "{log}"
    );
    assert_eq!(sha256(&go), ours);
    assert_eq!(sha256(&dst.join(".bridge.orig")), go_sha);
    let record = Record::load(&dst).expect("record");
    assert_eq!(
        record.plugins["bridge"].original.as_deref(),
        Some(".bridge.orig")
    );
    assert_eq!(
        record.plugins["bridge"].original_sha256.as_deref(),
        Some(go_sha.as_str())
    );
    // Now ours: a re-run without the flag is fine.
    install(&s, &d, "bridge,tuning", &[]);

    let log = run_ok(&["uninstall", "--to", &d]);
    assert!(log.contains("bridge: .bridge.orig put back"), "{log}");
    assert!(log.contains("tuning: removed"), "{log}");
    assert_eq!(sha256(&go), go_sha);
    let back = stamp(&go);
    assert_eq!(
        (back.ino, back.mode),
        (go_stamp.ino, go_stamp.mode),
        "the very same file"
    );
    assert_eq!(
        listing(&dst),
        ["bridge"],
        "no record, no .orig, no tuning left"
    );
}

#[test]
fn a_symlink_is_foreign_and_never_written_through() {
    let t = TestDir::new("symlink");
    let (src, dst, vendor) = (t.sub("src"), t.sub("dst"), t.sub("vendor"));
    let (s, d) = (src.display().to_string(), dst.display().to_string());
    write_plugin(&src, "tuning", b't', 10);
    let vendor_tuning = vendor.join("tuning");
    fs::write(&vendor_tuning, b"vendor tuning").expect("vendor file");
    let link = dst.join("tuning");
    symlink(&vendor_tuning, &link).expect("symlink");

    let mut args = vec!["install"];
    args.extend(flags(&s, &d, "tuning"));
    let err = run_err(&args);
    assert!(err.contains("is a symlink to"), "{err}");
    assert!(err.contains("--replace-foreign"), "{err}");
    assert!(fs::symlink_metadata(&link)
        .expect("lstat")
        .file_type()
        .is_symlink());

    install(&s, &d, "tuning", &["--replace-foreign"]);
    assert!(fs::symlink_metadata(&link)
        .expect("lstat")
        .file_type()
        .is_file());
    assert_eq!(
        fs::read(&vendor_tuning).expect("read"),
        b"vendor tuning",
        "not written through"
    );
    let kept = dst.join(".tuning.orig");
    assert_eq!(
        fs::read_link(&kept).expect("kept as the symlink"),
        vendor_tuning
    );

    run_ok(&["uninstall", "--to", &d, "--plugins", "tuning"]);
    assert_eq!(
        fs::read_link(&link).expect("symlink restored"),
        vendor_tuning
    );
    assert_eq!(listing(&dst), ["tuning"]);
}

#[test]
fn a_file_changed_after_install_is_foreign_and_kept_by_uninstall() {
    let t = TestDir::new("changed");
    let (src, dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    write_plugin(&src, "tuning", b't', 10);
    install(&s, &d, "bridge,tuning", &[]);
    // Someone puts their own tuning in place.
    let edited = dst.join("tuning");
    fs::remove_file(&edited).expect("rm");
    fs::write(&edited, b"someone else's tuning").expect("write");
    let edited_sha = sha256(&edited);
    // A new version of ours must not replace it without the flag.
    write_plugin(&src, "tuning", b'u', 10);
    let mut args = vec!["install"];
    args.extend(flags(&s, &d, "tuning"));
    let err = run_err(&args);
    assert!(
        err.contains("changed since node-agent installed it"),
        "{err}"
    );
    assert!(err.contains(&edited_sha), "{err}");
    assert_eq!(sha256(&edited), edited_sha);

    let log = run_ok(&["uninstall", "--to", &d, "--plugins", "bridge,tuning"]);
    assert!(log.contains("bridge: removed"), "{log}");
    assert!(
        log.contains("tuning: kept, changed since it was installed"),
        "{log}"
    );
    assert!(!dst.join("bridge").exists());
    assert_eq!(sha256(&edited), edited_sha, "the changed file stays");
    assert_eq!(
        listing(&dst),
        ["tuning"],
        "and the record is gone with its last entry"
    );
}

#[test]
fn uninstall_of_some_plugins_keeps_the_others_recorded() {
    let t = TestDir::new("partial");
    let (src, dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    write_plugin(&src, "tuning", b't', 10);
    install(&s, &d, "bridge,tuning", &[]);
    let log = run_ok(&["uninstall", "--to", &d, "--plugins", "bridge,macvtap"]);
    assert!(
        log.contains("macvtap: not installed by node-agent"),
        "{log}"
    );
    assert_eq!(listing(&dst), [RECORD_FILE, "tuning"]);
    run_ok(&["probe", "--to", &d, "--plugins", "tuning"]);
    run_err(&["probe", "--to", &d, "--plugins", "bridge"]);
    // Nothing recorded, nothing to do.
    run_ok(&["uninstall", "--to", &d]);
    run_ok(&["uninstall", "--to", &d]);
    assert!(listing(&dst).is_empty());
}

#[test]
fn probe_fails_when_a_file_is_missing_or_altered() {
    let t = TestDir::new("probe");
    let (src, dst, s, d) = t.src_dst();
    let probe = ["probe", "--to", &d, "--plugins", "bridge,tuning"];
    let err = run_err(&probe);
    assert!(
        err.contains("bridge was not installed by node-agent"),
        "{err}"
    );

    write_plugin(&src, "bridge", b'b', 10);
    write_plugin(&src, "tuning", b't', 10);
    install(&s, &d, "bridge,tuning", &[]);
    run_ok(&probe);
    run_ok(&["probe", "--to", &d]);

    fs::remove_file(dst.join("tuning")).expect("rm");
    let err = run_err(&probe);
    assert!(err.contains("tuning is missing"), "{err}");
    install(&s, &d, "bridge,tuning", &[]);
    run_ok(&probe);

    // Same size, one byte different, mode kept.
    let bridge = dst.join("bridge");
    let mut bytes = fs::read(&bridge).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&bridge, &bytes).expect("alter");
    let err = run_err(&probe);
    assert!(err.contains("bridge has sha256"), "{err}");
    assert!(err.contains("not the installed"), "{err}");

    let err = run_err(&["probe", "--to", &d, "--plugins", "macvtap"]);
    assert!(err.contains("macvtap was not installed"), "{err}");
}

#[test]
fn errors_are_one_line_and_exit_non_zero() {
    let t = TestDir::new("errors");
    let (src, dst) = (t.str("src"), t.str("dst"));
    let err = run_err(&[
        "install",
        "--from",
        &src,
        "--to",
        &dst,
        "--plugins",
        "bridge",
    ]);
    assert!(err.contains("bridge"), "{err}");
    let err = run_err(&["install", "--from", &src, "--to", &dst]);
    assert!(err.contains("no plugins to install"), "{err}");
    let err = run_err(&["install", "--bogus"]);
    assert!(err.contains("install does not take --bogus"), "{err}");
    // A record that is not ours is not guessed at.
    write_plugin(Path::new(&src), "bridge", b'b', 10);
    fs::write(Path::new(&dst).join(RECORD_FILE), b"not json").expect("write");
    let err = run_err(&["install", "--from", &src, "--to", &dst]);
    assert!(err.contains("is not a record of node-agent"), "{err}");
    // A plugin that does not answer VERSION is never put in place.
    fs::remove_file(Path::new(&dst).join(RECORD_FILE)).expect("rm");
    let broken = Path::new(&src).join("broken");
    fs::write(&broken, b"#!/bin/sh\nexit 3\n").expect("write");
    fs::set_permissions(&broken, fs::Permissions::from_mode(0o755)).expect("chmod");
    let err = run_err(&[
        "install",
        "--from",
        &src,
        "--to",
        &dst,
        "--plugins",
        "broken",
    ]);
    assert!(err.contains("CNI_COMMAND=VERSION"), "{err}");
    assert!(
        listing(Path::new(&dst)).is_empty(),
        "{:?}",
        listing(Path::new(&dst))
    );
    assert!(run(&["help"]).status.success());
}

#[test]
fn what_was_installed_before_a_failure_is_recorded_and_a_lost_record_is_rebuilt() {
    let t = TestDir::new("halfway");
    let (src, dst, s, d) = t.src_dst();
    let bridge = write_plugin(&src, "bridge", b'b', 10);
    let broken = src.join("broken");
    fs::write(&broken, b"#!/bin/sh\nexit 3\n").expect("write");
    fs::set_permissions(&broken, fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut args = vec!["install"];
    args.extend(flags(&s, &d, "bridge,broken"));
    let err = run_err(&args);
    assert!(err.contains("installing broken"), "{err}");
    assert_eq!(listing(&dst), [RECORD_FILE, "bridge"]);
    assert_eq!(
        Record::load(&dst).expect("record").plugins["bridge"].sha256,
        bridge
    );

    // As if an install had been killed between its rename and its record: the binary is found
    // in place and recorded, not written again.
    fs::remove_file(dst.join(RECORD_FILE)).expect("rm record");
    let before = stamp(&dst.join("bridge"));
    let log = install(&s, &d, "bridge", &[]);
    assert!(
        log.contains("bridge: already in place, now recorded"),
        "{log}"
    );
    assert_eq!(stamp(&dst.join("bridge")), before);
    run_ok(&["probe", "--to", &d, "--plugins", "bridge"]);
}

#[test]
fn a_replaced_foreign_file_stays_the_original_through_later_replacements() {
    let t = TestDir::new("orig-kept");
    let (src, dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'1', 10);
    fs::write(dst.join("bridge"), b"vendor bridge").expect("vendor");
    let vendor = sha256(&dst.join("bridge"));
    install(&s, &d, "bridge", &["--replace-foreign"]);
    // Someone swaps in their own build; replaced again, the vendor's file stays the original.
    fs::remove_file(dst.join("bridge")).expect("rm");
    fs::write(dst.join("bridge"), b"someone's bridge").expect("write");
    let log = install(&s, &d, "bridge", &["--replace-foreign"]);
    assert!(log.contains("the original kept earlier stays"), "{log}");
    assert_eq!(sha256(&dst.join(".bridge.orig")), vendor);
    run_ok(&["uninstall", "--to", &d]);
    assert_eq!(sha256(&dst.join("bridge")), vendor);
    assert_eq!(listing(&dst), ["bridge"]);
}

/// Configs written for the cluster-network-addons-operator say `"type": "cnv-bridge"` and
/// `"cnv-tuning"`: the same binaries under second names, each installed, recorded, verified,
/// probed and uninstalled like any plugin, and a file another installer left at such a name
/// (CNAO's copy, or its symlink to the vendor's binary) is foreign like any other.
#[test]
fn second_names_install_copies_under_the_same_guarantees() {
    let t = TestDir::new("second-names");
    let (src, dst, s, d) = t.src_dst();
    let bridge = write_plugin(&src, "bridge", b'b', 10);
    let tuning = write_plugin(&src, "tuning", b't', 10);
    let list = "bridge,tuning,cnv-bridge=bridge,cnv-tuning=tuning";
    // What CNAO leaves on a node: its own cnv-bridge, and cnv-tuning a symlink to the vendor's.
    let cnao_bridge = dst.join("cnv-bridge");
    fs::write(&cnao_bridge, b"#!/bin/sh\necho cnao bridge\n").expect("cnao bridge");
    let cnao_sha = sha256(&cnao_bridge);
    symlink("/usr/lib/cni/tuning", dst.join("cnv-tuning")).expect("cnao symlink");

    let mut args = vec!["install"];
    args.extend(flags(&s, &d, list));
    let err = run_err(&args);
    assert!(err.contains("cnv-bridge has sha256"), "{err}");
    assert!(err.contains("cnv-tuning is a symlink"), "{err}");
    assert_eq!(
        listing(&dst),
        ["cnv-bridge", "cnv-tuning"],
        "nothing written"
    );

    let log = install(&s, &d, list, &["--replace-foreign"]);
    assert!(log.contains("bridge: installed"), "{log}");
    assert!(
        log.contains("cnv-bridge: replaced a foreign file, kept as .cnv-bridge.orig"),
        "{log}"
    );
    assert!(log.contains("a copy of tuning)"), "{log}");
    for (name, sha) in [
        ("bridge", &bridge),
        ("cnv-bridge", &bridge),
        ("tuning", &tuning),
        ("cnv-tuning", &tuning),
    ] {
        let path = dst.join(name);
        assert_eq!(&sha256(&path), sha, "{name}");
        assert_eq!(mode(&path), 0o755, "{name}");
        assert!(
            !fs::symlink_metadata(&path)
                .expect("lstat")
                .file_type()
                .is_symlink(),
            "{name} is a file of its own"
        );
    }
    assert_ne!(
        stamp(&dst.join("bridge")).ino,
        stamp(&dst.join("cnv-bridge")).ino,
        "a copy, not a link: replacing one name never changes the other"
    );
    let record = Record::load(&dst).expect("record");
    assert_eq!(record.plugins["cnv-bridge"].sha256, bridge);
    assert_eq!(record.plugins["cnv-tuning"].cni_version, "1.1.0");
    assert!(record.pending.is_empty());

    // Re-run without the flag: everything is ours now, nothing is written.
    let before = stamp(&dst.join("cnv-bridge"));
    let log = install(&s, &d, list, &[]);
    assert!(log.contains("cnv-bridge: unchanged"), "{log}");
    assert_eq!(stamp(&dst.join("cnv-bridge")), before);
    run_ok(&["probe", "--to", &d, "--plugins", list]);
    run_ok(&["probe", "--to", &d, "--plugins", "cnv-bridge"]);

    // An upgrade of the source upgrades every name installed from it.
    let bridge2 = write_plugin(&src, "bridge", b'c', 10);
    let log = install(&s, &d, list, &[]);
    assert!(log.contains("cnv-bridge: upgraded from sha256"), "{log}");
    assert_eq!(sha256(&dst.join("cnv-bridge")), bridge2);

    // An altered second name fails the probe like any plugin.
    fs::remove_file(dst.join("cnv-tuning")).expect("rm");
    let err = run_err(&["probe", "--to", &d, "--plugins", list]);
    assert!(err.contains("cnv-tuning is missing"), "{err}");
    install(&s, &d, list, &[]);

    let log = run_ok(&["uninstall", "--to", &d, "--plugins", list]);
    assert!(
        log.contains("cnv-bridge: .cnv-bridge.orig put back"),
        "{log}"
    );
    assert!(
        log.contains("cnv-tuning: .cnv-tuning.orig put back"),
        "{log}"
    );
    assert!(log.contains("bridge: removed"), "{log}");
    assert_eq!(sha256(&cnao_bridge), cnao_sha);
    assert_eq!(
        fs::read_link(dst.join("cnv-tuning")).expect("symlink back"),
        Path::new("/usr/lib/cni/tuning")
    );
    assert_eq!(listing(&dst), ["cnv-bridge", "cnv-tuning"]);
}

/// The image keeps `/cni-installer`, the node agent's earlier name, for one release, and the
/// previous operator's DaemonSets run it during the rollout: by that name the binary does what
/// it does as `node-agent`, and names itself `node-agent` in its help and mistakes.
#[test]
fn the_binary_does_the_same_under_its_earlier_name() {
    let t = TestDir::new("earlier-name");
    let (src, dst, s, d) = t.src_dst();
    write_plugin(&src, "bridge", b'b', 10);
    let earlier = t.path().join("cni-installer");
    if fs::hard_link(installer(), &earlier).is_err() {
        fs::copy(installer(), &earlier).expect("copy the binary");
    }
    let run_as = |bin: &Path, args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(args)
            .output()
            .expect("run the binary");
        (out.status.code(), out.stdout, out.stderr)
    };
    let probe = ["probe", "--to", &d, "--plugins", "bridge"];
    for args in [&["help"][..], &["install", "--bogus"], &probe] {
        assert_eq!(
            run_as(&earlier, args),
            run_as(installer(), args),
            "{args:?}"
        );
    }

    let (status, _, stderr) = run_as(
        &earlier,
        &["install", "--from", &s, "--to", &d, "--plugins", "bridge"],
    );
    assert_eq!(status, Some(0), "{}", String::from_utf8_lossy(&stderr));
    run_ok(&probe);
    let (status, _, stderr) = run_as(&earlier, &["uninstall", "--to", &d, "--plugins", "bridge"]);
    assert_eq!(status, Some(0), "{}", String::from_utf8_lossy(&stderr));
    assert!(!dst.join("bridge").exists());
}
