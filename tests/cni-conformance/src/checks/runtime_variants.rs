//! What real runtimes send besides the bare spec: `CNI_ARGS` as containerd and Multus build it,
//! runtime keys in the config, and configs without cniVersion.

use crate::invoke::{set_var, to_bytes};
use crate::report::{excerpt, Outcome};
use crate::suite::Suite;
use crate::validate::result::validate_result;
use serde_json::json;

impl Suite {
    pub(super) fn variant_checks(&mut self) {
        let vmax = self.vmax();
        let cases: [(&str, Option<&str>, bool); 3] = [
            ("cni-args-containerd", Some("IgnoreUnknown=1;K8S_POD_NAMESPACE=cnic-ns;K8S_POD_NAME=cnic-pod;K8S_POD_INFRA_CONTAINER_ID={cid};K8S_POD_UID=8f3a2c1e-0b7d-4e55-9a1b-3c2d4e5f6a7b"), false),
            ("cni-args-multus", Some("IgnoreUnknown=true;K8S_POD_NAMESPACE=cnic-ns;K8S_POD_NAME=cnic-pod;K8S_POD_INFRA_CONTAINER_ID={cid};K8S_POD_UID=8f3a2c1e-0b7d-4e55-9a1b-3c2d4e5f6a7b"), false),
            ("config-runtime-keys", None, true),
        ];
        for (name, args, keys) in cases {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let args = args.map(|a| a.replace("{cid}", &sb.cid));
            let mut add_env = self.env(&sb, "ADD");
            let mut del_env = self.env(&sb, "DEL");
            set_var(&mut add_env, "CNI_ARGS", args.as_deref());
            set_var(&mut del_env, "CNI_ARGS", args.as_deref());
            let mut cfg = self.add_config(&sb, Some(&vmax), &vmax);
            if keys {
                // Kept by libcni / injected by runtimes: plugins must tolerate them.
                cfg.entry("capabilities").or_insert(json!({"mac": false}));
                cfg.entry("args")
                    .or_insert(json!({"cni": {"labels": [{"key": "app", "value": "cnic"}]}}));
            }
            let reply = self.call(name, &sb.host, &add_env, &to_bytes(&cfg));
            let result = reply.expect_object().map_err(|e| format!("ADD: {e}"));
            let verdict = result.as_ref().map_err(Clone::clone).and_then(|r| {
                validate_result(&vmax, r)
                    .and_then(|_| self.verify_live(&sb, &vmax, r))
                    .map_err(|e| format!("ADD: {e}"))
            });
            let mut del_cfg = self.followup_config(&sb, &vmax, result.as_ref().ok());
            if keys {
                del_cfg
                    .entry("capabilities")
                    .or_insert(json!({"mac": false}));
                del_cfg
                    .entry("args")
                    .or_insert(json!({"cni": {"labels": [{"key": "app", "value": "cnic"}]}}));
            }
            let reply = self.call(name, &sb.host, &del_env, &to_bytes(&del_cfg));
            let verdict = verdict.and_then(|_| {
                reply
                    .expect_empty_success()
                    .and_then(|_| self.iface_gone(&sb))
                    .map_err(|e| format!("DEL: {e}"))
            });
            self.report.record(name, Outcome::from_result(verdict));
        }
    }

    pub(super) fn no_cniversion_checks(&mut self) {
        for (name, version) in [
            ("add-empty-cniversion", Some("")),
            ("add-absent-cniversion", None),
        ] {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let cfg = self.add_config(&sb, version, "0.1.0");
            let env = self.env(&sb, "ADD");
            let reply = self.call(name, &sb.host, &env, &to_bytes(&cfg));
            let v01 = self.supported.iter().any(|s| s == "0.1.0");
            let mut outcome = match reply.expect_object() {
                Ok(mut r) if v01 => {
                    // A result without cniVersion is read as 0.1.0 by libcni too.
                    if let Some(o) = r.as_object_mut() {
                        o.entry("cniVersion").or_insert(json!("0.1.0"));
                    }
                    Outcome::from_result(
                        validate_result("0.1.0", &r)
                            .and_then(|_| self.verify_live(&sb, "0.1.0", &r))
                            .map_err(|e| format!("a config without cniVersion means 0.1.0: {e}")),
                    )
                }
                Ok(r) => Outcome::Fail(format!(
                    "a config without cniVersion means 0.1.0, which the plugin does not list; expected error code 1, got result {}",
                    excerpt(&r.to_string())
                )),
                Err(e) => match reply.expect_error(if v01 { None } else { Some(1) }) {
                    Ok(err) if !v01 => Outcome::Pass(Some(format!("refused with {err} (0.1.0 not supported)"))),
                    Ok(err) if self.l2_only() => Outcome::Pass(Some(format!(
                        "refused with {err}: accepted, a 0.1.0 result must carry an IP and this config has no IPAM"
                    ))),
                    Ok(err) => Outcome::Fail(format!("a config without cniVersion means 0.1.0, which the plugin lists, but ADD failed with {err}")),
                    Err(_) => Outcome::Fail(e),
                },
            };
            let del_cfg = self.config(&sb, version);
            let env = self.env(&sb, "DEL");
            let reply = self.call(name, &sb.host, &env, &to_bytes(&del_cfg));
            if let Err(e) = reply
                .expect_empty_success()
                .and_then(|_| self.iface_gone(&sb))
            {
                if !matches!(outcome, Outcome::Fail(_)) {
                    outcome = Outcome::Fail(format!("DEL: {e}"));
                }
            }
            self.report.record(name, outcome);
        }
    }
}
