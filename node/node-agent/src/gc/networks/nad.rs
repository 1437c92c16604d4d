//! A NetworkAttachmentDefinition's `spec.config`, read as Multus reads it: a non-empty
//! `type` makes it a single plugin, otherwise it is a list; a missing or empty `name` becomes
//! the NAD's own name. An empty `spec.config` makes Multus load, from its own conf dir, the
//! file whose network is named like the NAD: a file on the node that this agent does not read.

use std::collections::BTreeSet;

use serde_json::Value;

use super::config::{ours_in, Form, Parsed};
use super::{Network, Source, Unreadable};

/// A NetworkAttachmentDefinition's spec.config, if it names one of `ours`.
pub fn nad_network(
    namespace: &str,
    name: &str,
    config: &str,
    ours: &BTreeSet<String>,
) -> Result<Option<Network>, Unreadable> {
    let unreadable = |why: String| Unreadable {
        source: format!("{namespace}/{name}"),
        why,
    };
    if config.is_empty() {
        return Err(unreadable(
            "config in a file on the node: Multus loads the network named after the NAD from its \
             conf dir when spec.config is empty"
                .to_string(),
        ));
    }
    let object = match serde_json::from_str(config) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err(unreadable("spec.config is not a JSON object".to_string())),
        Err(e) => return Err(unreadable(format!("spec.config is not JSON: {e}"))),
    };
    let parsed = match ours_in(&object, Form::Nad { name }, ours) {
        Ok(parsed) => parsed,
        Err(why) => return Err(unreadable(why.report())),
    };
    Ok(parsed.map(
        |Parsed {
             name: network,
             plugins,
         }| Network {
            name: network,
            source: Source::Nad {
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            plugins,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::networks::testing::ours;
    use serde_json::json;

    fn nad(config: &str) -> Result<Option<Network>, Unreadable> {
        nad_network("ns", "nad", config, &ours())
    }

    fn single_nad(config: &str) -> Network {
        nad(config).expect("readable").expect("ours")
    }

    #[test]
    fn a_nad_config_without_name_takes_the_nad_name() {
        for config in [
            r#"{"cniVersion":"1.0.0","type":"bridge"}"#,
            r#"{"cniVersion":"1.0.0","name":"","type":"bridge"}"#,
        ] {
            let network = single_nad(config);
            assert_eq!(network.name, "nad");
            assert_eq!(network.plugins[0].1["name"], "nad", "{config}");
        }
    }

    #[test]
    fn a_nad_config_keeps_its_own_name_over_the_nad_name() {
        let network = single_nad(r#"{"name":"blue","type":"bridge"}"#);
        assert_eq!(network.name, "blue");
        assert_eq!(
            network.source,
            Source::Nad {
                namespace: "ns".to_string(),
                name: "nad".to_string()
            }
        );
    }

    #[test]
    fn a_nad_config_with_plugins_and_no_type_is_a_conflist() {
        let network = single_nad(
            r#"{"cniVersion":"1.1.0","name":"blue","plugins":[{"type":"ovs","bridge":"br1"}]}"#,
        );
        assert_eq!(
            network.plugins,
            [(
                "ovs".to_string(),
                json!({"type":"ovs","bridge":"br1","name":"blue","cniVersion":"1.1.0"})
            )]
        );
    }

    #[test]
    fn a_nad_config_with_a_type_is_one_plugin_whatever_its_plugins() {
        let network = single_nad(r#"{"name":"blue","type":"bridge","plugins":[{"type":"ovs"}]}"#);
        assert_eq!(network.plugins.len(), 1);
        assert_eq!(network.plugins[0].0, "bridge");
        assert!(
            nad(r#"{"name":"blue","type":"macvlan","plugins":[{"type":"ovs"}]}"#)
                .expect("readable")
                .is_none()
        );
    }

    #[test]
    fn a_nad_with_an_empty_config_is_unreadable_as_a_file_on_the_node() {
        let unreadable = nad("").expect_err("unreadable");
        assert_eq!(unreadable.source, "ns/nad");
        assert!(unreadable.why.starts_with("config in a file on the node"));
    }

    #[test]
    fn a_nad_config_that_does_not_parse_is_unreadable() {
        for config in ["{", " ", "[]", r#""bridge""#] {
            assert!(nad(config).is_err(), "{config:?}");
        }
    }

    #[test]
    fn a_broken_nad_config_of_ours_is_unreadable_and_of_others_is_none() {
        for config in [
            r#"{"name":"a/b","type":"bridge"}"#,
            r#"{"name":7,"type":"bridge"}"#,
            r#"{"name":"blue","plugins":[{"type":"tuning"},{"mtu":1}]}"#,
            r#"{"name":"blue","cniVersion":1,"plugins":[{"type":"tuning"}]}"#,
        ] {
            assert!(nad(config).is_err(), "{config}");
        }
        for config in [r#"{"name":"a/b","type":"macvlan"}"#, r#"{"name":"x"}"#] {
            assert_eq!(nad(config), Ok(None), "{config}");
        }
    }
}
