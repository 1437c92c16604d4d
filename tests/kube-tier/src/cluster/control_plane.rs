//! The control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use super::{kubectl_clone, Cluster, ETCD_CLIENT};
use crate::daemon::{run, wait_for};
use crate::network::APISERVER_PORT;
use crate::network::{CONTROL_PLANE_IP, SERVICE_SUBNET};
use crate::pki::Pki;

/// What the API server records: every write by a service account (what the operator and the
/// node agents send), one line each when it is answered; nothing else.
const AUDIT_POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  userGroups: [\"system:serviceaccounts\"]
  verbs: [create, update, patch, delete, deletecollection]
# The KubeMacPool benchmark's pod creates: their time in the API server, webhook included.
- level: Metadata
  verbs: [create]
  resources: [{group: \"\", resources: [pods]}]
  namespaces: [kmp-admission-with, kmp-admission-passed, kmp-admission-without]
- level: None
";

impl Cluster {
    fn audit_policy(&self) -> std::path::PathBuf {
        self.base.join("audit-policy.yaml")
    }

    /// The API server's audit log (JSON lines): every write a service account made.
    pub fn audit_log(&self) -> std::path::PathBuf {
        self.base.join("audit.log")
    }

    /// Starts etcd, the API server (and waits until it is ready), the controller-manager and
    /// the scheduler.
    pub(super) fn start_control_plane(&mut self, pki: &Pki, logs: &Path) -> Result<()> {
        let mut etcd = Command::new("etcd");
        etcd.arg("--data-dir")
            .arg(self.base.join("etcd"))
            .args([
                "--listen-client-urls",
                ETCD_CLIENT,
                "--advertise-client-urls",
                ETCD_CLIENT,
            ])
            .args(["--listen-peer-urls", "http://127.0.0.1:2380"])
            .args(["--initial-advertise-peer-urls", "http://127.0.0.1:2380"])
            .args(["--initial-cluster", "default=http://127.0.0.1:2380"])
            .args(["--log-level", "warn"]);
        self.spawn("etcd", etcd, logs)?;
        wait_for("etcd to listen", Duration::from_secs(30), || {
            Ok(std::net::TcpStream::connect("127.0.0.1:2379")
                .ok()
                .map(drop))
        })?;

        std::fs::write(self.audit_policy(), AUDIT_POLICY)?;
        let mut api = Command::new(self.bin.join("kube-apiserver"));
        // On every address of the control plane's namespace: its loopback and the cluster bridge.
        api.args(["--etcd-servers", ETCD_CLIENT, "--bind-address", "0.0.0.0"])
            .arg(format!("--secure-port={APISERVER_PORT}"))
            .arg(format!("--advertise-address={CONTROL_PLANE_IP}"))
            .arg("--tls-cert-file")
            .arg(&pki.apiserver_cert)
            .arg("--tls-private-key-file")
            .arg(&pki.apiserver_key)
            .arg("--client-ca-file")
            .arg(&pki.ca_cert)
            .arg("--token-auth-file")
            .arg(&pki.token_file)
            .arg("--service-account-key-file")
            .arg(&pki.sa_pub)
            .arg("--service-account-signing-key-file")
            .arg(&pki.sa_key)
            .args(["--service-account-issuer", "https://kubernetes.default.svc"])
            .args(["--authorization-mode", "RBAC", "--allow-privileged=true"])
            // Pods reach the API through their node's DNAT, not through Endpoints.
            .args(["--endpoint-reconciler-type", "none"])
            // No kube-proxy: the API server calls a webhook's Service at one of its ready
            // endpoints (pod addresses, routed from the control plane), not at its ClusterIP.
            .arg("--enable-aggregator-routing=true")
            .arg(format!("--service-cluster-ip-range={SERVICE_SUBNET}"))
            // Node names do not resolve here; each kubelet serves on its node's address.
            .args(["--kubelet-preferred-address-types", "InternalIP,Hostname"])
            .arg("--audit-policy-file")
            .arg(self.audit_policy())
            .arg("--audit-log-path")
            .arg(self.audit_log())
            .args(["--v", "1"]);
        self.spawn("kube-apiserver", api, logs)?;
        let kubectl = self.kubectl_command();
        wait_for(
            "the API server to be ready",
            Duration::from_secs(90),
            || {
                self.check_daemons()?;
                let mut k = kubectl_clone(&kubectl);
                Ok(run(k.args(["get", "--raw", "/readyz"])).ok().map(drop))
            },
        )?;

        let mut cm = Command::new(self.bin.join("kube-controller-manager"));
        cm.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--service-account-private-key-file")
            .arg(&pki.sa_key)
            .arg("--root-ca-file")
            .arg(&pki.ca_cert)
            .args([
                "--controllers",
                "*",
                "--leader-elect=false",
                "--bind-address",
                "127.0.0.1",
            ])
            // A node that stops reporting is NotReady in ~20 s rather than 40.
            .args([
                "--node-monitor-grace-period=20s",
                "--node-monitor-period=2s",
            ])
            .args([
                "--port",
                "0",
                "--use-service-account-credentials=false",
                "--v",
                "1",
            ]);
        self.spawn("kube-controller-manager", cm, logs)?;
        let mut sched = Command::new(self.bin.join("kube-scheduler"));
        sched.arg("--kubeconfig").arg(&self.kubeconfig).args([
            "--leader-elect=false",
            "--bind-address",
            "127.0.0.1",
            "--port",
            "0",
            "--v",
            "1",
        ]);
        self.spawn("kube-scheduler", sched, logs)?;
        Ok(())
    }
}
