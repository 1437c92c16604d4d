//! What the operator's ServiceAccount may do: nothing outside its namespace but its
//! cluster-scoped kinds.

use super::*;

/// The operator's ServiceAccount, as `kubectl --as` names it.
fn as_operator() -> String {
    format!("--as=system:serviceaccount:{NAMESPACE}:{OPERATOR}")
}

/// Whether the operator's ServiceAccount may `verb` `resource` in `namespace`, as the API
/// server decides. `kubectl auth can-i` answers `yes` (exit 0) or `no` (exit 1, which
/// [`Ctx::kubectl`] reports as a failure), so it runs here with its exit code read; anything
/// else is an error. A `resource/subresource` is passed as `--subresource`: can-i reads
/// `pods/exec` as the pod named `exec`.
fn operator_may(ctx: &Ctx, verb: &str, resource: &str, namespace: &str) -> Result<bool> {
    let (kind, subresource) = match resource.split_once('/') {
        Some((k, s)) => (k, Some(s)),
        None => (resource, None),
    };
    let mut cmd = std::process::Command::new(ctx.cluster.kubectl_path());
    cmd.arg("--kubeconfig")
        .arg(ctx.cluster.kubeconfig())
        // The tier's kubectl cache, not the user's ~/.kube/cache.
        .arg("--cache-dir")
        .arg(ctx.cluster.base().join("kubectl-cache"))
        .args(["auth", "can-i", verb, kind, "-n", namespace, &as_operator()]);
    if let Some(s) = subresource {
        cmd.arg(format!("--subresource={s}"));
    }
    let out = cmd.output().context("run kubectl auth can-i")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match (out.status.code(), stdout.split_whitespace().next()) {
        (Some(0), Some("yes")) => Ok(true),
        (Some(1), Some("no")) => Ok(false),
        _ => bail!(
            "kubectl auth can-i {verb} {resource} -n {namespace} ({}): {} {}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// What the operator must not write outside its namespace: other workloads' code, credentials,
/// configuration, traffic, leader elections and access rights.
const GUARDED: [&str; 10] = [
    "leases.coordination.k8s.io",
    "secrets",
    "pods",
    "configmaps",
    "services",
    "serviceaccounts",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "daemonsets.apps",
    "deployments.apps",
];

const WRITES: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// With the seed's full config applied (its ClusterRoles and bindings written through the
/// operator's `escalate` and `bind` on them by name): the API server lets the operator write
/// none of [`GUARDED`] nor exec into pods in kube-system and default, and lets it update its
/// Lease in its own namespace. Its rules as `kubectl auth can-i --list` shows them are printed.
pub fn least_privilege(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.apply_nac(FULL_SPEC)?;
    // Progressing=True for this generation is written only once a converge of it applied
    // every object (a failed one writes Progressing=False); the upstream images cannot be
    // pulled here, so the config stays Progressing.
    ctx.wait_nac("Progressing", "True", Duration::from_secs(120))?;
    let mut allowed = Vec::new();
    let mut asked = 0;
    for namespace in ["kube-system", "default"] {
        let list = ctx.kubectl(&["auth", "can-i", "--list", "-n", namespace, &as_operator()])?;
        println!(
            "    as the operator in {namespace}:\n      {}",
            list.trim_end().replace('\n', "\n      ")
        );
        let asks = GUARDED
            .iter()
            .flat_map(|r| WRITES.iter().map(move |v| (*v, *r)))
            .chain([("create", "pods/exec")]);
        for (verb, resource) in asks {
            asked += 1;
            if operator_may(ctx, verb, resource, namespace)? {
                allowed.push(format!("{verb} {resource} in {namespace}"));
            }
        }
    }
    println!(
        "    {asked} writes asked of the API server, {} allowed",
        allowed.len()
    );
    check(allowed.is_empty(), || {
        format!("the operator may {}", allowed.join(", "))
    })?;
    check(
        operator_may(ctx, "update", "leases.coordination.k8s.io", NAMESPACE)?,
        || format!("the operator may not update its Lease in {NAMESPACE}"),
    )
}
