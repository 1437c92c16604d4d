//! STATUS and GC (spec 1.1.0): their answers, their version gate, and what GC keeps and
//! releases.

use super::rejected::Judge;
use crate::invoke::to_bytes;
use crate::report::Outcome;
use crate::sandbox::Sandbox;
use crate::suite::Suite;
use serde_json::{json, Value};

impl Suite {
    pub(super) fn status_gc_checks(&mut self) {
        let mut names: Vec<String> = [
            "status",
            "status-version-gate",
            "gc",
            "gc-keeps-valid",
            "gc-version-gate",
        ]
        .map(String::from)
        .to_vec();
        if self.host_local() {
            names.push("gc-releases-stale-ipam".into());
        }
        if !self.report.wants_any(&names) {
            return;
        }
        if !self.supported.iter().any(|s| s == "1.1.0") {
            for n in &names {
                self.report.record(
                    n,
                    Outcome::Skip(
                        "VERSION does not list 1.1.0, which introduced STATUS and GC".into(),
                    ),
                );
            }
            return;
        }
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };

        let status_env = self.env_runtime_wide("STATUS");
        let cfg = self.config(&sb, Some("1.1.0"));
        let reply = self.call("status", &sb.host, &status_env, &to_bytes(&cfg));
        self.report
            .record("status", Outcome::from_result(reply.expect_empty_success()));

        let cfg = self.config(&sb, Some("1.0.0"));
        let outcome = self.rejected(
            "status-version-gate",
            &sb,
            vec![(String::new(), status_env, to_bytes(&cfg))],
            Judge::Code(1),
        );
        self.report.record("status-version-gate", outcome);

        let gc_env = self.env_runtime_wide("GC");
        let gc_config = |suite: &Self, sb: &Sandbox, version: &str, valid: Value| {
            let mut cfg = suite.config(sb, Some(version));
            // libcni >= 1.2.3 sends both spellings of the key.
            cfg.insert("cni.dev/valid-attachments".into(), valid.clone());
            cfg.insert("cni.dev/attachments".into(), valid);
            cfg
        };
        let cfg = gc_config(self, &sb, "1.1.0", json!([]));
        let reply = self.call("gc", &sb.host, &gc_env, &to_bytes(&cfg));
        self.report
            .record("gc", Outcome::from_result(reply.expect_empty_success()));

        let cfg = gc_config(self, &sb, "1.0.0", json!([]));
        let outcome = self.rejected(
            "gc-version-gate",
            &sb,
            vec![(String::new(), gc_env.clone(), to_bytes(&cfg))],
            Judge::Code(1),
        );
        self.report.record("gc-version-gate", outcome);

        // GC must leave attachments listed as valid alone.
        if self.report.wants("gc-keeps-valid") {
            let outcome = match self.add_ok("gc-keeps-valid", &sb, "1.1.0") {
                Err(e) => Outcome::Fail(e),
                Ok(result) => {
                    let valid = json!([{"containerID": sb.cid, "ifname": self.opts.ifname}]);
                    let cfg = gc_config(self, &sb, "1.1.0", valid);
                    let reply = self.call("gc-keeps-valid", &sb.host, &gc_env, &to_bytes(&cfg));
                    let mut verdict = reply.expect_empty_success().map_err(|e| format!("GC: {e}"));
                    if verdict.is_ok() && self.host_local() && self.reservation_count(&sb) == 0 {
                        verdict = Err(
                            "GC released the host-local reservation of a valid attachment".into(),
                        );
                    }
                    if verdict.is_ok() {
                        let cfg = self.followup_config(&sb, "1.1.0", Some(&result));
                        let env = self.env(&sb, "CHECK");
                        let reply = self.call("gc-keeps-valid", &sb.host, &env, &to_bytes(&cfg));
                        verdict = reply
                            .expect_empty_success()
                            .map_err(|e| format!("CHECK after GC: {e}"));
                    }
                    Outcome::from_result(verdict)
                }
            };
            self.report.record("gc-keeps-valid", outcome);
            self.del("cleanup", &sb, "1.1.0", None, None);
        }

        // GC with an empty valid list must release stale IPAM reservations.
        if self.host_local() && self.report.wants("gc-releases-stale-ipam") {
            let Some(sb) = self.sandbox_for(&["gc-releases-stale-ipam".to_string()]) else {
                return;
            };
            let outcome = match self.add_ok("gc-releases-stale-ipam", &sb, "1.1.0") {
                Err(e) => Outcome::Fail(e),
                Ok(_) if self.reservation_count(&sb) == 0 => {
                    Outcome::Fail("no host-local reservation was found after ADD".into())
                }
                Ok(_) => {
                    let cfg = gc_config(self, &sb, "1.1.0", json!([]));
                    let reply =
                        self.call("gc-releases-stale-ipam", &sb.host, &gc_env, &to_bytes(&cfg));
                    Outcome::from_result(
                        reply
                            .expect_empty_success()
                            .and_then(|_| self.reservation_gone(&sb)),
                    )
                }
            };
            self.report.record("gc-releases-stale-ipam", outcome);
            self.del("cleanup", &sb, "1.1.0", None, None);
        }
    }
}
