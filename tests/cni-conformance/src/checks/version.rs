//! VERSION: the libcni probe, the 1.1.0 probe, and stdin that must not matter.

use crate::invoke::Env;
use crate::report::{self, Outcome};
use crate::suite::Suite;
use crate::validate::version_reply::parse_version_reply;
use crate::validate::versions::KNOWN_VERSIONS;
use serde_json::Value;

impl Suite {
    pub(super) fn version_checks(&mut self) {
        let names: Vec<String> = [
            "version-probe",
            "version-probe-1.1.0",
            "version-ignores-stdin",
        ]
        .map(String::from)
        .to_vec();
        let Some(sb) = self.sandbox_for(&names) else {
            self.supported = vec!["0.1.0".into()];
            return;
        };
        let env: Env = vec![
            ("CNI_COMMAND", "VERSION".into()),
            ("CNI_CONTAINERID", String::new()),
            ("CNI_NETNS", "dummy".into()),
            ("CNI_ARGS", String::new()),
            ("CNI_IFNAME", "dummy".into()),
            ("CNI_PATH", "dummy".into()),
        ];
        let reply = self.call(
            "version-probe",
            &sb.host,
            &env,
            br#"{"cniVersion":"1.0.0"}"#,
        );
        let parsed = reply.expect_object().and_then(|v| {
            // Keep the known versions even if the reply is otherwise wrong.
            if let Some(list) = v.get("supportedVersions").and_then(Value::as_array) {
                self.supported = KNOWN_VERSIONS
                    .iter()
                    .filter(|k| list.iter().any(|s| s.as_str() == Some(k)))
                    .map(|k| k.to_string())
                    .collect();
            }
            parse_version_reply(&v)
        });
        let probe = match &parsed {
            Ok(r) if r.cni_version == "1.0.0" || !r.supported.iter().any(|s| s == "1.0.0") => {
                Outcome::Pass(None)
            }
            Ok(r) => Outcome::Fail(format!(
                "reply cniVersion {:?} does not echo the requested \"1.0.0\"",
                r.cni_version
            )),
            Err(e) => Outcome::Fail(e.clone()),
        };
        self.report.record("version-probe", probe);
        if self.supported.is_empty() {
            report::comment("VERSION gave no known supportedVersions: assuming [\"0.1.0\"], as libcni does for plugins without VERSION");
            self.supported = vec!["0.1.0".into()];
        }
        let reference = parsed.ok().map(|r| r.supported);

        let reply = self.call(
            "version-probe-1.1.0",
            &sb.host,
            &env,
            br#"{"cniVersion":"1.1.0"}"#,
        );
        let outcome = match reply.expect_object().and_then(|v| parse_version_reply(&v)) {
            Ok(r) if r.cni_version == "1.1.0" => Outcome::Pass(None),
            Ok(r) if r.supported.iter().any(|s| s == "1.1.0") => {
                Outcome::Fail(format!("plugin lists 1.1.0 but answered cniVersion {:?} instead of echoing it", r.cni_version))
            }
            Ok(r) => Outcome::Pass(Some(format!(
                "answered cniVersion {:?} to a 1.1.0 probe it does not implement (accepted: libcni only reads supportedVersions)",
                r.cni_version
            ))),
            Err(e) => Outcome::Fail(e),
        };
        self.report.record("version-probe-1.1.0", outcome);

        let mut outcome = Outcome::Pass(None);
        for (what, stdin) in [
            ("garbage stdin", &b"this is {not json"[..]),
            ("empty stdin", &b""[..]),
        ] {
            let reply = self.call("version-ignores-stdin", &sb.host, &env, stdin);
            match reply.expect_object().and_then(|v| parse_version_reply(&v)) {
                Ok(r) if reference.as_ref().is_none_or(|s| *s == r.supported) => {}
                Ok(r) => {
                    outcome = Outcome::Fail(format!(
                        "{what}: supportedVersions {:?} differ from the probe's",
                        r.supported
                    ));
                    break;
                }
                Err(e) => {
                    outcome = Outcome::Fail(format!("{what}: {e}"));
                    break;
                }
            }
        }
        self.report.record("version-ignores-stdin", outcome);
    }
}
