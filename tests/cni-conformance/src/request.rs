//! Requests built the way libcni builds them: the configuration on stdin (with `${CNIC_TMP}`
//! expanded, the network name and cniVersion set, host-local's dataDir redirected and, for a
//! chained plugin, a prevResult) and the `CNI_*` environment.

use crate::invoke::Env;
use crate::sandbox::Sandbox;
use crate::suite::Suite;
use crate::validate::chaining::synth_prev_result;
use crate::validate::versions::version_at_least;
use serde_json::{json, Map, Value};

/// Network name used when the configuration has none (Multus would inject the NAD name).
pub const DEFAULT_NET_NAME: &str = "cnic-net";

/// What `${CNIC_TMP}` in the config stands for.
pub const TMP_PLACEHOLDER: &str = "${CNIC_TMP}";

/// Replaces `${CNIC_TMP}` in every string of `value` (object keys too) by `tmp`.
fn expand_tmp(value: Value, tmp: &str) -> Value {
    match value {
        Value::String(s) if s.contains(TMP_PLACEHOLDER) => {
            Value::String(s.replace(TMP_PLACEHOLDER, tmp))
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| expand_tmp(v, tmp)).collect())
        }
        Value::Object(map) => Value::Object(expand_tmp_map(map, tmp)),
        other => other,
    }
}

fn expand_tmp_map(map: Map<String, Value>, tmp: &str) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| (k.replace(TMP_PLACEHOLDER, tmp), expand_tmp(v, tmp)))
        .collect()
}

/// `cfg` with `prev` as its prevResult, or without one.
fn with_prev(mut cfg: Map<String, Value>, prev: Option<&Value>) -> Map<String, Value> {
    match prev {
        Some(p) => {
            cfg.insert("prevResult".into(), p.clone());
        }
        None => {
            cfg.remove("prevResult");
        }
    }
    cfg
}

impl Suite {
    /// The plugin configuration as a runtime would send it, `${CNIC_TMP}` expanded.
    pub(crate) fn config(&self, sb: &Sandbox, version: Option<&str>) -> Map<String, Value> {
        let tmp = sb.dir.path().display().to_string();
        let mut cfg = expand_tmp_map(self.opts.config.clone(), &tmp);
        cfg.insert("type".into(), json!(self.opts.plugin));
        if cfg
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            cfg.insert("name".into(), json!(DEFAULT_NET_NAME));
        }
        match version {
            Some(v) => {
                cfg.insert("cniVersion".into(), json!(v));
            }
            None => {
                cfg.remove("cniVersion");
            }
        }
        if self.host_local() {
            if let Some(ipam) = cfg.get_mut("ipam").and_then(Value::as_object_mut) {
                ipam.insert("dataDir".into(), json!(sb.ipam_dir().display().to_string()));
            }
        }
        cfg
    }

    /// The synthesized prevResult of a chained plugin in `version`'s format.
    fn prev_result(&self, sb: &Sandbox, version: &str) -> Option<Value> {
        let mac = sb.prepared_mac.as_deref()?;
        Some(synth_prev_result(
            version,
            &self.opts.ifname,
            mac,
            &sb.ctr_path,
        ))
    }

    /// ADD configuration: the config plus, when chained, the prevResult.
    pub(crate) fn add_config(
        &self,
        sb: &Sandbox,
        version: Option<&str>,
        prev_version: &str,
    ) -> Map<String, Value> {
        let cfg = self.config(sb, version);
        let prev = self.prev_result(sb, prev_version);
        with_prev(cfg, prev.as_ref())
    }

    /// DEL/CHECK configuration: libcni passes the ADD result as prevResult from 0.4.0 on.
    pub(crate) fn followup_config(
        &self,
        sb: &Sandbox,
        version: &str,
        add_result: Option<&Value>,
    ) -> Map<String, Value> {
        let prev = if version_at_least(version, "0.4.0") {
            add_result
        } else {
            None
        };
        with_prev(self.config(sb, Some(version)), prev)
    }

    /// The environment of ADD/CHECK/DEL, as libcni builds it.
    pub(crate) fn env(&self, sb: &Sandbox, verb: &str) -> Env {
        vec![
            ("CNI_COMMAND", verb.to_string()),
            ("CNI_CONTAINERID", sb.cid.clone()),
            ("CNI_NETNS", sb.ctr_path.clone()),
            ("CNI_ARGS", String::new()),
            ("CNI_IFNAME", self.opts.ifname.clone()),
            ("CNI_PATH", self.cni_path.clone()),
        ]
    }

    /// The environment of STATUS/GC, as libcni builds it.
    pub(crate) fn env_runtime_wide(&self, verb: &str) -> Env {
        vec![
            ("CNI_COMMAND", verb.to_string()),
            ("CNI_CONTAINERID", String::new()),
            ("CNI_NETNS", String::new()),
            ("CNI_ARGS", String::new()),
            ("CNI_IFNAME", String::new()),
            ("CNI_PATH", self.cni_path.clone()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cnic_tmp_is_expanded_in_every_string_at_any_depth() {
        let config = json!({
            "socket_file": "unix:${CNIC_TMP}/db.sock",
            "list": ["${CNIC_TMP}", 5, {"deep": "a${CNIC_TMP}b${CNIC_TMP}"}],
            "${CNIC_TMP}/key": true,
            "untouched": "$CNIC_TMP {CNIC_TMP}",
            "number": 1
        });
        let expanded = expand_tmp(config, "/tmp/cnic-1-2");
        assert_eq!(
            expanded,
            json!({
                "socket_file": "unix:/tmp/cnic-1-2/db.sock",
                "list": ["/tmp/cnic-1-2", 5, {"deep": "a/tmp/cnic-1-2b/tmp/cnic-1-2"}],
                "/tmp/cnic-1-2/key": true,
                "untouched": "$CNIC_TMP {CNIC_TMP}",
                "number": 1
            })
        );
    }
}
