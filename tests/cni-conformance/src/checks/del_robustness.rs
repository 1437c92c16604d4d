//! DEL must succeed whatever is already gone: the netns path, the netns, the prevResult, the
//! interface. CHECK, by contrast, must notice the missing interface.

use crate::invoke::{set_var, to_bytes};
use crate::report::Outcome;
use crate::suite::Suite;
use crate::validate::versions::version_at_least;

impl Suite {
    pub(super) fn del_robustness_checks(&mut self) {
        let vmax = self.vmax();
        for (name, mode) in [
            ("del-empty-netns", 0),
            ("del-netns-gone", 1),
            ("del-without-prevresult", 2),
        ] {
            if mode == 2 && !version_at_least(&vmax, "0.4.0") {
                continue; // below 0.4.0 every DEL is without prevResult already
            }
            let ipam_name = format!("{name}-ipam-released");
            let mut names = vec![name.to_string()];
            if self.host_local() {
                names.push(ipam_name.clone());
            }
            if !self.report.wants_any(&names) {
                continue;
            }
            let Some(mut sb) = self.sandbox_for(&names) else {
                continue;
            };
            let result = match self.add_ok(name, &sb, &vmax) {
                Ok(r) => r,
                Err(e) => {
                    for n in &names {
                        self.report.record(n, Outcome::Fail(e.clone()));
                    }
                    self.del("cleanup", &sb, &vmax, None, None);
                    continue;
                }
            };
            let had_reservation = self.reservation_count(&sb) > 0;
            let mut env = self.env(&sb, "DEL");
            let mut prev = Some(&result);
            let mut verdict = Ok(());
            match mode {
                0 => set_var(&mut env, "CNI_NETNS", Some("")),
                1 => {
                    verdict = sb.ctr.delete().map_err(|e| {
                        format!("suite could not delete the container netns: {}", e.chain())
                    });
                }
                _ => prev = None,
            }
            let reply = self.del(name, &sb, &vmax, prev, Some(env));
            verdict = verdict.and_then(|_| reply.expect_empty_success());
            if mode == 2 {
                verdict = verdict.and_then(|_| self.iface_gone(&sb));
            }
            self.report.record(name, Outcome::from_result(verdict));
            if self.host_local() {
                let outcome = if had_reservation {
                    Outcome::from_result(self.reservation_gone(&sb))
                } else {
                    Outcome::Fail("no host-local reservation was found after ADD".into())
                };
                self.report.record(&ipam_name, outcome);
            }
            if mode != 1 {
                self.del("cleanup", &sb, &vmax, None, None);
            }
        }
    }

    pub(super) fn missing_interface_checks(&mut self) {
        if self.opts.chained {
            return; // the interface is not the chained plugin's own resource
        }
        let n_check = "check-detects-missing-interface".to_string();
        let n_del = "del-missing-interface".to_string();
        let names = vec![n_check.clone(), n_del.clone()];
        if !self.report.wants_any(&names) {
            return;
        }
        let version = self.check_version().unwrap_or_else(|| self.vmax());
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };
        let result = match self.add_ok(&n_check, &sb, &version) {
            Ok(r) => r,
            Err(e) => {
                for n in &names {
                    self.report.record(n, Outcome::Fail(e.clone()));
                }
                self.del("cleanup", &sb, &version, None, None);
                return;
            }
        };
        let removed = sb.ctr.ip(&["link", "del", &self.opts.ifname]);
        if let Err(e) = removed {
            for n in &names {
                self.report.record(
                    n,
                    Outcome::Fail(format!(
                        "suite could not delete {}: {}",
                        self.opts.ifname,
                        e.chain()
                    )),
                );
            }
            return;
        }
        if version_at_least(&version, "0.4.0") {
            let cfg = self.followup_config(&sb, &version, Some(&result));
            let env = self.env(&sb, "CHECK");
            let reply = self.call(&n_check, &sb.host, &env, &to_bytes(&cfg));
            let outcome = match reply.expect_error(None) {
                Ok(err) => Outcome::Pass(Some(format!("CHECK reported {err}"))),
                Err(e) => {
                    Outcome::Fail(format!("CHECK after {} was deleted: {e}", self.opts.ifname))
                }
            };
            self.report.record(&n_check, outcome);
        } else {
            self.report.record(
                &n_check,
                Outcome::Skip("VERSION lists no version >= 0.4.0, so CHECK is not offered".into()),
            );
        }
        let reply = self.del(&n_del, &sb, &version, Some(&result), None);
        let mut verdict = reply.expect_empty_success();
        if self.host_local() {
            verdict = verdict.and_then(|_| self.reservation_gone(&sb));
        }
        self.report.record(&n_del, Outcome::from_result(verdict));
    }
}
