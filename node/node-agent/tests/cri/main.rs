//! The CRI client against a real containerd (a private instance of each test's own, started and
//! stopped by the test) and against sockets that fail in each way a runtime's can.

#[path = "../common/mod.rs"]
mod common;
mod containerd;
mod kubelet;

use containerd::*;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use node_agent::cri::{self, Sandbox};
use node_agent::error::CriError;
use node_agent::Error;

use common::TestDir;

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn containerd_names_itself_and_its_version() {
    netns_tests::skip_unless_root!();
    let containerd = Containerd::start();

    let version = cri::version(&containerd.socket(), TIMEOUT)
        .await
        .unwrap_or_else(|err| panic!("{}\n{}", err.report(), containerd.log()));

    let expected = containerd_version();
    assert_eq!(version, format!("containerd {expected}"));
}

#[tokio::test]
async fn a_fresh_containerd_has_no_sandboxes() {
    netns_tests::skip_unless_root!();
    let containerd = Containerd::start();

    let sandboxes = containerd.list().await;

    assert_eq!(sandboxes, []);
}

#[tokio::test]
async fn a_sandbox_is_listed_ready_then_not_ready_once_stopped_and_no_more_once_removed() {
    netns_tests::skip_unless_root!();
    let containerd = Containerd::start();
    containerd.import_pause_image();
    let before = nanos_since_epoch();

    let id = containerd.run_sandbox("web-0", "default", "uid-0").await;
    let listed = containerd.list().await;
    let created_at = listed.first().map_or(0, |s| s.created_at);
    let sandbox = |ready| Sandbox {
        id: id.clone(),
        name: "web-0".to_string(),
        namespace: "default".to_string(),
        uid: "uid-0".to_string(),
        ready,
        created_at,
    };
    assert_eq!(listed, [sandbox(true)]);
    assert!(
        (before..=nanos_since_epoch()).contains(&created_at),
        "created_at {created_at} is not between {before} and now"
    );

    kubelet::stop_pod_sandbox(&containerd.socket(), &id)
        .await
        .unwrap_or_else(|status| panic!("StopPodSandbox: {status}\n{}", containerd.log()));
    assert_eq!(containerd.list().await, [sandbox(false)]);

    kubelet::remove_pod_sandbox(&containerd.socket(), &id)
        .await
        .unwrap_or_else(|status| panic!("RemovePodSandbox: {status}\n{}", containerd.log()));
    assert_eq!(containerd.list().await, []);
}

#[tokio::test]
async fn a_missing_socket_is_an_error_naming_it() {
    let dir = TestDir::new("cri-missing");
    let socket = dir.path().join("containerd.sock");

    let err = cri::list_pod_sandboxes(&socket, TIMEOUT)
        .await
        .expect_err("no list without a runtime");

    assert!(
        matches!(&err, Error::Cri { source: CriError::Connect(io), .. }
            if io.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    assert_eq!(
        err.report(),
        format!(
            "CRI ListPodSandbox on {}: connecting: No such file or directory (os error 2)",
            socket.display()
        )
    );
}

#[tokio::test]
async fn a_socket_nobody_listens_on_is_refused() {
    let dir = TestDir::new("cri-refused");
    let socket = dir.path().join("containerd.sock");
    // Bound and closed: the file stays, with no one behind it, as after a runtime's crash.
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));

    let err = cri::version(&socket, TIMEOUT)
        .await
        .expect_err("no version from a dead socket");

    assert!(
        matches!(&err, Error::Cri { call: "Version", source: CriError::Connect(io), .. }
            if io.kind() == std::io::ErrorKind::ConnectionRefused),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_runtime_that_never_answers_times_out_within_the_timeout() {
    let dir = TestDir::new("cri-silent");
    let socket = dir.path().join("containerd.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    // Accepts, then holds the connection without a byte in answer.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let timeout = Duration::from_millis(500);

    let start = Instant::now();
    let err = cri::list_pod_sandboxes(&socket, timeout)
        .await
        .expect_err("no list from a silent runtime");

    let took = start.elapsed();
    assert!(
        matches!(&err, Error::Cri { source: CriError::Timeout(t), .. } if *t == timeout),
        "{err:?}"
    );
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(2),
        "took {took:?}"
    );
    assert_eq!(
        err.report(),
        format!(
            "CRI ListPodSandbox on {}: no answer in 500ms",
            socket.display()
        )
    );
}

#[tokio::test]
async fn a_runtime_that_hangs_up_is_an_error() {
    let dir = TestDir::new("cri-hangup");
    let socket = dir.path().join("containerd.sock");
    let listener = tokio::net::UnixListener::bind(&socket).expect("bind");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });

    let err = cri::list_pod_sandboxes(&socket, TIMEOUT)
        .await
        .expect_err("no list from a runtime that hangs up");

    assert!(
        matches!(
            &err,
            Error::Cri {
                source: CriError::Status(_) | CriError::Handshake(_),
                ..
            }
        ),
        "{err:?}"
    );
}
