//! The lifecycle of an attachment in every supported version: ADD, the chained pass-through,
//! CHECK, DEL and DEL again; and ADD onto an interface name that is already taken.

use crate::invoke::to_bytes;
use crate::report::Outcome;
use crate::suite::Suite;
use crate::validate::chaining::check_passthrough;
use crate::validate::result::validate_result;
use crate::validate::versions::{family, version_at_least, Family};

impl Suite {
    /// A `check` line when no supported version has CHECK (the `check-<v>` lines are missing).
    pub(super) fn check_offered(&mut self) {
        if self.check_version().is_none() && self.report.wants("check") {
            self.report.record(
                "check",
                Outcome::Skip("VERSION lists no version >= 0.4.0, so CHECK is not offered".into()),
            );
        }
    }

    pub(super) fn version_lifecycle(&mut self, v: &str) {
        let n_add = format!("add-{v}");
        let n_chain = format!("chained-prevresult-{v}");
        let n_check = format!("check-{v}");
        let n_del = format!("del-{v}");
        let n_del2 = format!("del-again-{v}");
        let has_chain = self.opts.chained && version_at_least(v, "0.3.0");
        let has_check = version_at_least(v, "0.4.0");
        let mut names = vec![n_add.clone(), n_del.clone(), n_del2.clone()];
        if has_chain {
            names.push(n_chain.clone());
        }
        if has_check {
            names.push(n_check.clone());
        }
        if !self.report.wants_any(&names) {
            return;
        }
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };
        let (reply, add_cfg) = self.add(&n_add, &sb, v, None);
        let mut result = None;
        let add_outcome = match reply.expect_object() {
            Ok(r) => {
                let verdict = validate_result(v, &r).and_then(|_| self.verify_live(&sb, v, &r));
                result = Some(r);
                Outcome::from_result(verdict)
            }
            Err(e) if family(v) == Some(Family::V02) && self.l2_only() => match reply.expect_error(None) {
                Ok(err) => Outcome::Pass(Some(format!(
                    "ADD refused with {err}: accepted, a {v} result must carry an IP and this config has no IPAM"
                ))),
                Err(_) => Outcome::Fail(e),
            },
            Err(e) => Outcome::Fail(format!("ADD: {e}")),
        };
        self.report.record(&n_add, add_outcome);

        if has_chain {
            let outcome = match (&result, add_cfg.get("prevResult")) {
                (Some(r), Some(prev)) => Outcome::from_result(check_passthrough(prev, r)),
                _ => Outcome::Fail("not run: ADD returned no result".into()),
            };
            self.report.record(&n_chain, outcome);
        }

        if has_check {
            let outcome = match &result {
                Some(r) => {
                    let cfg = self.followup_config(&sb, v, Some(r));
                    let env = self.env(&sb, "CHECK");
                    let reply = self.call(&n_check, &sb.host, &env, &to_bytes(&cfg));
                    Outcome::from_result(
                        reply
                            .expect_empty_success()
                            .map_err(|e| format!("CHECK right after ADD: {e}")),
                    )
                }
                None => Outcome::Fail("not run: ADD returned no result".into()),
            };
            self.report.record(&n_check, outcome);
        }

        let reply = self.del(&n_del, &sb, v, result.as_ref(), None);
        let mut verdict = reply
            .expect_empty_success()
            .and_then(|_| self.iface_gone(&sb));
        if self.host_local() {
            verdict = verdict.and_then(|_| self.reservation_gone(&sb));
        }
        self.report.record(&n_del, Outcome::from_result(verdict));

        let reply = self.del(&n_del2, &sb, v, None, None);
        let verdict = reply
            .expect_empty_success()
            .map_err(|e| format!("second DEL (no prevResult): {e}"));
        self.report.record(&n_del2, Outcome::from_result(verdict));
    }

    pub(super) fn existing_ifname_check(&mut self) {
        if self.opts.chained {
            return; // for a chained plugin the interface is supposed to exist
        }
        let names = vec![
            "add-existing-ifname".to_string(),
            "del-after-failed-add".to_string(),
        ];
        if !self.report.wants_any(&names) {
            return;
        }
        let Some(sb) = self.sandbox_for(&names) else {
            return;
        };
        let vmax = self.vmax();
        let outcome = match self.prepare_interface(&sb, false) {
            Err(e) => Outcome::Fail(format!(
                "suite could not create {}: {}",
                self.opts.ifname,
                e.chain()
            )),
            Ok(mac) => {
                let before = sb.ctr.link_names();
                let (reply, _) = self.add("add-existing-ifname", &sb, &vmax, None);
                match reply.expect_error(None) {
                    Err(e) => Outcome::Fail(e),
                    Ok(err) => match (sb.ctr.link(&self.opts.ifname), sb.ctr.link_names()) {
                        (Ok(Some(l)), Ok(after)) if l.mac == mac && before.as_ref().ok() == Some(&after) => {
                            Outcome::Pass(Some(format!("refused with code {}, existing interface untouched", err.code)))
                        }
                        (Ok(l), after) => Outcome::Fail(format!(
                            "refused with {err}, but the container changed (existing {}: {:?}; links {:?} -> {:?})",
                            self.opts.ifname, l, before, after
                        )),
                        (Err(e), _) => Outcome::Fail(e.chain()),
                    },
                }
            }
        };
        self.report.record("add-existing-ifname", outcome);
        let reply = self.del("del-after-failed-add", &sb, &vmax, None, None);
        self.report.record(
            "del-after-failed-add",
            Outcome::from_result(reply.expect_empty_success()),
        );
    }
}
