//! Requests a plugin must refuse without changing either namespace: an unknown version,
//! malformed JSON, a missing `CNI_*` variable, an invalid interface name or container ID.

use crate::invoke::{set_var, to_bytes, Env};
use crate::report::Outcome;
use crate::sandbox::Sandbox;
use crate::suite::Suite;
use crate::validate::stdout::Stdout;

/// What a rejected request is allowed to answer.
#[derive(Clone, Copy)]
pub(super) enum Judge {
    Code(u64),
    AnyError,
    /// Any error, or exit 0 with nothing on stdout (missing CNI_COMMAND).
    AnyErrorOrSilent,
}

/// The links that appeared and vanished between two listings.
fn diff(before: &[String], after: &[String]) -> String {
    let added: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    let removed: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
    format!("added {added:?}, removed {removed:?}")
}

impl Suite {
    /// Send a request the plugin must refuse; the namespaces must not change.
    pub(super) fn rejected(
        &mut self,
        name: &str,
        sb: &Sandbox,
        variants: Vec<(String, Env, Vec<u8>)>,
        judge: Judge,
    ) -> Outcome {
        let snapshot = |sb: &Sandbox| -> Result<(Vec<String>, Vec<String>), String> {
            Ok((sb.host.link_names()?, sb.ctr.link_names()?))
        };
        let before = match snapshot(sb) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(format!("suite could not list links: {e}")),
        };
        let mut notes = Vec::new();
        for (what, env, stdin) in variants {
            let reply = self.call(name, &sb.host, &env, &stdin);
            let verdict = match judge {
                Judge::Code(c) => reply.expect_error(Some(c)).map(|_| None),
                Judge::AnyError => reply
                    .expect_error(None)
                    .map(|e| Some(format!("code {}", e.code))),
                Judge::AnyErrorOrSilent if reply.success() && reply.stdout == Stdout::Empty => Ok(
                    Some("exit 0 with nothing on stdout (no operation; accepted)".to_string()),
                ),
                Judge::AnyErrorOrSilent => reply
                    .expect_error(None)
                    .map(|e| Some(format!("code {}", e.code))),
            };
            match verdict {
                Err(e) => {
                    return Outcome::Fail(if what.is_empty() {
                        e
                    } else {
                        format!("{what}: {e}")
                    })
                }
                Ok(Some(n)) => notes.push(if what.is_empty() {
                    n
                } else {
                    format!("{what}: {n}")
                }),
                Ok(None) => {}
            }
            match snapshot(sb) {
                Ok(after) if after == before => {}
                Ok(after) => {
                    return Outcome::Fail(format!(
                        "{what}{}request refused but namespaces changed: host {}; container {}",
                        if what.is_empty() { "" } else { ": " },
                        diff(&before.0, &after.0),
                        diff(&before.1, &after.1)
                    ))
                }
                Err(e) => return Outcome::Fail(format!("suite could not list links: {e}")),
            }
        }
        if notes.is_empty() {
            Outcome::Pass(None)
        } else {
            Outcome::Pass(Some(format!(
                "rejected ({}), nothing created",
                notes.join("; ")
            )))
        }
    }

    pub(super) fn request_error_checks(&mut self) {
        let vmax = self.vmax();
        for (name, stdin, code) in [
            ("add-unknown-version", true, 1u64),
            ("add-malformed-json", false, 6u64),
        ] {
            let names = vec![name.to_string()];
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&names) else {
                continue;
            };
            let stdin = if stdin {
                to_bytes(&self.add_config(&sb, Some("9.9.9"), &vmax))
            } else {
                let full = to_bytes(&self.add_config(&sb, Some(&vmax), &vmax));
                full[..full.len() / 2].to_vec()
            };
            let env = self.env(&sb, "ADD");
            let outcome = self.rejected(
                name,
                &sb,
                vec![(String::new(), env, stdin)],
                Judge::Code(code),
            );
            self.report.record(name, outcome);
        }
    }

    pub(super) fn missing_env_checks(&mut self) {
        let vmax = self.vmax();
        let cases: [(&str, &'static str, &str, Judge); 6] = [
            (
                "add-missing-CNI_CONTAINERID",
                "CNI_CONTAINERID",
                "ADD",
                Judge::Code(4),
            ),
            ("add-missing-CNI_NETNS", "CNI_NETNS", "ADD", Judge::Code(4)),
            (
                "add-missing-CNI_IFNAME",
                "CNI_IFNAME",
                "ADD",
                Judge::Code(4),
            ),
            (
                "add-missing-CNI_COMMAND",
                "CNI_COMMAND",
                "ADD",
                Judge::AnyErrorOrSilent,
            ),
            (
                "del-missing-CNI_CONTAINERID",
                "CNI_CONTAINERID",
                "DEL",
                Judge::Code(4),
            ),
            (
                "del-missing-CNI_IFNAME",
                "CNI_IFNAME",
                "DEL",
                Judge::Code(4),
            ),
        ];
        for (name, var, verb, judge) in cases {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let stdin = if verb == "ADD" {
                to_bytes(&self.add_config(&sb, Some(&vmax), &vmax))
            } else {
                to_bytes(&self.config(&sb, Some(&vmax)))
            };
            let mut unset = self.env(&sb, verb);
            set_var(&mut unset, var, None);
            let mut empty = self.env(&sb, verb);
            set_var(&mut empty, var, Some(""));
            let variants = vec![
                (format!("{var} unset"), unset, stdin.clone()),
                (format!("{var} empty"), empty, stdin),
            ];
            let outcome = self.rejected(name, &sb, variants, judge);
            self.report.record(name, outcome);
        }
    }

    pub(super) fn name_checks(&mut self) {
        let vmax = self.vmax();
        let cases: [(&str, &'static str, &str); 6] = [
            ("ifname-too-long", "CNI_IFNAME", "cnic0123456789ab"),
            ("ifname-slash", "CNI_IFNAME", "net/1"),
            ("ifname-colon", "CNI_IFNAME", "net:1"),
            ("ifname-whitespace", "CNI_IFNAME", "net 1"),
            ("ifname-dot", "CNI_IFNAME", "."),
            ("containerid-invalid", "CNI_CONTAINERID", "cnic/../x"),
        ];
        for (name, var, value) in cases {
            if !self.report.wants(name) {
                continue;
            }
            let Some(sb) = self.sandbox_for(&[name.to_string()]) else {
                continue;
            };
            let stdin = to_bytes(&self.add_config(&sb, Some(&vmax), &vmax));
            let mut env = self.env(&sb, "ADD");
            set_var(&mut env, var, Some(value));
            let outcome = self.rejected(
                name,
                &sb,
                vec![(String::new(), env, stdin)],
                Judge::AnyError,
            );
            self.report.record(name, outcome);
        }
    }
}
