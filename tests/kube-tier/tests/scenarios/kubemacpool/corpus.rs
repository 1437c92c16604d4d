//! A hostile corpus against the running webhook.

use super::*;

/// The pending MACs of every manager replica: what admissions hold that no stored object
/// names yet.
fn pending_macs(ctx: &Ctx) -> Result<u64> {
    let mut total = 0;
    for (name, body) in manager_metrics(ctx)? {
        total += body
            .lines()
            .find_map(|l| l.strip_prefix("kubemacpool_macs_pending "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .with_context(|| format!("no kubemacpool_macs_pending from {name}:\n{body}"))?;
    }
    Ok(total)
}

/// What the API server answered a create: "allowed" with the annotation as stored, or the
/// refusal's last line.
fn create_outcome(ctx: &Ctx, yaml: &str) -> String {
    match ctx
        .cluster
        .kubectl_stdin(&["create", "-o", "json", "-f", "-"], yaml)
    {
        Ok(out) => {
            let v: Value = serde_json::from_str(&out).unwrap_or_default();
            let text = v["metadata"]["annotations"][NETWORKS]
                .as_str()
                .map(|s| s.chars().take(120).collect::<String>())
                .unwrap_or_else(|| {
                    vm_macs(&v)
                        .iter()
                        .take(2)
                        .map(|(_, m)| m.clone())
                        .collect::<Vec<_>>()
                        .join(",")
                });
            format!("allowed: {text}")
        }
        Err(e) => {
            // The API server's words, without kubectl's command line before them.
            let e = format!("{e:#}");
            let words = e
                .split_once("denied the request: ")
                .map(|(_, w)| w)
                .or_else(|| e.split_once("Error from server").map(|(_, w)| w))
                .unwrap_or(&e);
            format!(
                "refused: {}",
                words.trim().chars().take(160).collect::<String>()
            )
        }
    }
}

/// A hostile corpus against the running webhook: each case is refused with a message or passed
/// through, no refused object holds a MAC, and the managers stay up.
pub fn a_hostile_corpus_is_refused_or_passed_and_the_webhook_stays_up(ctx: &mut Ctx) -> Result<()> {
    deploy(ctx)?;
    ctx.apply(&kubevirt_crds())?;
    opted_in_namespace(ctx, CORPUS_NAMESPACE)?;
    let outcome = (|| {
        let ten_thousand = format!(
            "[{}]",
            (0..10_000)
                .map(|i| format!(r#"{{"name":"n{i}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        let megabyte = format!(r#"[{{"name":"{}"}}]"#, "a".repeat(1 << 20));
        let pod_cases: Vec<(&str, String, &str)> = vec![
            ("malformed JSON", r#"[{"name":"br1""#.into(), "refused"),
            ("a list of 10,000 elements", ten_thousand, "refused"),
            ("a 1 MB annotation", megabyte, "refused"),
            (
                "a multicast MAC",
                r#"[{"name":"br1","mac":"01:00:5e:00:00:01"}]"#.into(),
                "refused",
            ),
            (
                "the broadcast MAC",
                r#"[{"name":"br1","mac":"ff:ff:ff:ff:ff:ff"}]"#.into(),
                "refused",
            ),
            (
                "a MAC outside the range",
                r#"[{"name":"br1","mac":"02:99:00:00:00:01"}]"#.into(),
                "allowed",
            ),
            (
                "unknown keys",
                r#"[{"name":"br1","x-unknown":{"a":[1,{"b":null}]}}]"#.into(),
                "allowed",
            ),
            (
                "a non-string mac",
                r#"[{"name":"br1","mac":42}]"#.into(),
                "refused",
            ),
            (
                "a non-string name",
                r#"[{"name":{"n":1}}]"#.into(),
                "refused",
            ),
            ("a list of strings", r#"["br1","br2"]"#.into(), "refused"),
            (
                "another namespace in the element",
                r#"[{"name":"br1","namespace":"kube-system"}]"#.into(),
                "allowed",
            ),
        ];
        let before = pending_macs(ctx)?;
        let mut rows = Vec::new();
        for (i, (case, networks, expected)) in pod_cases.iter().enumerate() {
            let yaml = pod_yaml(&format!("corpus-{i}"), CORPUS_NAMESPACE, "node01", networks);
            let got = create_outcome(ctx, &yaml);
            rows.push((case.to_string(), got.clone()));
            check(got.starts_with(expected), || {
                format!("{case}: expected {expected}, got {got}")
            })?;
        }
        let interfaces: Vec<(String, String)> = (0..1000)
            .map(|i| (format!("if{i}"), format!("net{i}")))
            .collect();
        let refs: Vec<(&str, &str, &str, Option<&str>)> = interfaces
            .iter()
            .map(|(i, n)| (i.as_str(), "bridge", n.as_str(), None))
            .collect();
        let got = create_outcome(ctx, &vm_yaml("corpus-vm-1000", &refs));
        rows.push(("a VM with 1,000 interfaces".into(), got.clone()));
        check(got.starts_with("refused"), || {
            format!("a VM with 1,000 interfaces: {got}")
        })?;
        let allowed_pods = pod_cases.iter().filter(|c| c.2 == "allowed").count() as u64;
        let after = pending_macs(ctx)?;
        println!("    | case | outcome |\n    |---|---|");
        for (case, got) in &rows {
            println!("    | {case} | {} |", got.replace('|', "\\|"));
        }
        println!("    pending MACs before {before}, after {after} ({allowed_pods} pods allowed)");
        check(after <= before + allowed_pods, || {
            format!("refused objects hold MACs: pending {before} then {after}")
        })?;
        let ready = ctx.get(&["get", "deployment", MANAGER, "-n", NAMESPACE])?;
        check(ready["status"]["readyReplicas"] == 2, || {
            format!("the managers are not both ready: {}", ready["status"])
        })
    })();
    ctx.kubectl(&["delete", "namespace", CORPUS_NAMESPACE, "--wait=false"])?;
    outcome
}
