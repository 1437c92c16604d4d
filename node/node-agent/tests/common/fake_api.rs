//! A small fake Kubernetes API server holding the Node `node-1`, and how to start
//! `node-agent run --mark ...` against it in a network namespace.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use cni_common::netns::NetNs;
use serde_json::{json, Value};

use super::{installer, TestDir};

/// A PATCH of the Node's status: when it arrived (its body read), its content type, its body.
#[derive(Debug, Clone)]
pub struct Patch {
    pub at: Instant,
    pub content_type: String,
    pub body: Value,
}

/// The Node `node-1` as the fake API server holds it, every PATCH it received, and every
/// request it refused as RBAC would. With `hang`, a GET of the Node is never answered (and
/// counted in `hung`), as by an API server that went away without closing the connection.
#[derive(Default)]
pub struct Cluster {
    pub capacity: BTreeMap<String, String>,
    pub patches: Vec<Patch>,
    pub forbidden: Vec<String>,
    pub hang: bool,
    pub hung: usize,
}

/// Serves GET of /api/v1/nodes/node-1 and PATCH of /api/v1/nodes/node-1/status on 127.0.0.1
/// inside `ns`; its port. Like a server enforcing the marker's role (`get` on `nodes`, `patch`
/// on `nodes/status`), it refuses a GET of the status subresource with 403. A socket stays in
/// the namespace it was created in, whichever thread accepts on it.
pub fn fake_api_server(ns: &NetNs, cluster: Arc<Mutex<Cluster>>) -> u16 {
    let listener = ns
        .run(|| Ok(TcpListener::bind("127.0.0.1:0")?))
        .expect("listen in the namespace");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { break };
            let cluster = cluster.clone();
            thread::spawn(move || serve(conn, &cluster));
        }
    });
    port
}

/// HTTP/1.1 with keep-alive, one request at a time.
fn serve(conn: TcpStream, cluster: &Mutex<Cluster>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut conn = conn;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        );
        let (mut length, mut content_type) = (0usize, String::new());
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "content-type" => content_type = value.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let at = Instant::now();
        let path = path.split('?').next().unwrap_or_default().to_string();
        {
            let mut cluster = cluster.lock().expect("cluster");
            if cluster.hang && method == "GET" {
                cluster.hung += 1;
                drop(cluster);
                // Keeps the connection open and silent until the process ends.
                loop {
                    thread::park();
                }
            }
        }
        let (status, answer) = {
            let mut cluster = cluster.lock().expect("cluster");
            match (method.as_str(), path.as_str()) {
                ("GET", "/api/v1/nodes/node-1") => (200, node(&cluster.capacity)),
                ("GET", "/api/v1/nodes/node-1/status") => {
                    cluster.forbidden.push(format!("{method} {path}"));
                    (
                        403,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "reason": "Forbidden", "code": 403,
                               "message": "cannot get resource \"nodes/status\""}),
                    )
                }
                ("PATCH", "/api/v1/nodes/node-1/status") => {
                    let patch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    if let Some(changes) = patch["status"]["capacity"].as_object() {
                        for (key, value) in changes {
                            match value.as_str() {
                                Some(q) => cluster.capacity.insert(key.clone(), q.to_string()),
                                None => cluster.capacity.remove(key),
                            };
                        }
                    }
                    cluster.patches.push(Patch {
                        at,
                        content_type: content_type.clone(),
                        body: patch,
                    });
                    (200, node(&cluster.capacity))
                }
                _ => (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}),
                ),
            }
        };
        let body = answer.to_string();
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if conn.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn node(capacity: &BTreeMap<String, String>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "status": {"capacity": capacity}
    })
}

/// Writes `dir/kubeconfig`, pointing at the fake API server on `port`; its path.
pub fn kubeconfig(dir: &Path, port: u16) -> PathBuf {
    let path = dir.join("kubeconfig");
    fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
             current-context: fake\nusers:\n- name: fake\n  user: {{}}\n"
        ),
    )
    .expect("kubeconfig");
    path
}

/// `node-agent run <marking>` in `ns` as node `node-1`, installing `bridge` from the `src`
/// to the `dst` subdirectory of `t`, against the fake API server on `port` (its kubeconfig
/// written in `t`); the caller sets stdout and stderr and spawns it.
pub fn marking_command(t: &TestDir, ns: &NetNs, port: u16, marking: &[&str]) -> Command {
    let (.., src, dst) = t.src_dst();
    let kubeconfig = kubeconfig(t.path(), port);
    let mut command = Command::new("/usr/bin/nsenter");
    command
        .arg(format!(
            "--net=/proc/{}/fd/{}",
            std::process::id(),
            ns.as_raw_fd()
        ))
        .arg(installer())
        .args(["run", "--from", &src, "--to", &dst, "--plugins", "bridge"])
        .args(marking)
        .env_clear()
        .env("NODE_NAME", "node-1")
        .env("KUBECONFIG", &kubeconfig);
    command
}
