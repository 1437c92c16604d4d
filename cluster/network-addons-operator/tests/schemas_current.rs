#![allow(clippy::unwrap_used)]
//! Everything the operator sends today's Kubernetes is valid there: every object a reconcile
//! applies, for every example configuration on every kind of cluster the operator tells apart,
//! the applied-configuration record and the events it records, and everything in deploy/. Checked against
//! the JSON schemas of Kubernetes 1.33, 1.34, 1.35, 1.36 and 1.37 by PyPI's kubernetes-validate
//! in strict mode: no API version a release no longer serves, no field it does not know, no
//! value of another type. Kinds that CustomResourceDefinitions define are in no release's
//! schemas; those alone are skipped, and named.
//!
//! One python process validates everything, on every version, for all the tests here. Its path
//! is `$KUBERNETES_VALIDATE_PYTHON`, else the virtualenv `scripts/kubernetes-validate` installed
//! (`--print` says where); without either, every test here fails saying to run that script.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Value};

use network_addons_operator::cluster::ClusterInfo;
use network_addons_operator::crd::crd;
use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::desired::{objects_for, owner_reference};
use network_addons_operator::events::example_event;
use network_addons_operator::render::render;
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::{Component, NetworkAddonsConfig};

/// The newest five releases, all that kubernetes-validate 1.37.0 has schemas for from 1.33 on.
const VERSIONS: [&str; 5] = ["1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0"];

const PYTHON_ENV: &str = "KUBERNETES_VALIDATE_PYTHON";

/// Kinds the operator renders whose CustomResourceDefinitions come from elsewhere, by API group:
/// cert-manager's, the Prometheus operator's, and OpenShift 4's SCCs (a CRD there too).
const FOREIGN_CRD_KINDS: [(&str, &str); 5] = [
    ("cert-manager.io", "Issuer"),
    ("cert-manager.io", "Certificate"),
    ("monitoring.coreos.com", "ServiceMonitor"),
    ("monitoring.coreos.com", "PrometheusRule"),
    ("security.openshift.io", "SecurityContextConstraints"),
];

/// The API group and kind of our own CRD (NetworkAddonsConfig), computed once: building the
/// CRD takes a while.
fn our_crd_kind() -> &'static (String, String) {
    static KIND: OnceLock<(String, String)> = OnceLock::new();
    KIND.get_or_init(|| {
        let ours = crd();
        (ours.spec.group, ours.spec.names.kind)
    })
}

/// The clusters the operator renders differently for.
fn clusters() -> [(&'static str, ClusterInfo); 3] {
    let plain = ClusterInfo::default();
    [
        (
            "with cert-manager and the Prometheus operator",
            ClusterInfo::WITH_CERT_MANAGER,
        ),
        ("plain Kubernetes", plain),
        (
            "OpenShift",
            ClusterInfo {
                openshift: true,
                monitoring: true,
                ..plain
            },
        ),
    ]
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example configurations (cluster/network-addons-operator/examples/), by file stem.
fn examples() -> Vec<(String, NetworkAddonsConfig)> {
    let mut files: Vec<PathBuf> =
        fs::read_dir(repo().join("cluster/network-addons-operator/examples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let mut cr: NetworkAddonsConfig =
                serde_saphyr::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
            // as a live object has one: the owner references carry it
            cr.metadata.uid = Some("00000000-0000-0000-0000-000000000001".to_string());
            (p.file_stem().unwrap().to_string_lossy().into_owned(), cr)
        })
        .collect()
}

/// What a reconcile of `cr` on `cluster` applies, as it applies it, the record last.
fn applied_objects(cr: &NetworkAddonsConfig, cluster: &ClusterInfo) -> Vec<Value> {
    let applied = fill_defaults(&cr.spec, None, [0x4a, 0xbe]);
    let owner = owner_reference(cr).unwrap();
    let (mut objects, record) =
        objects_for(cr, &applied, &Settings::defaults(), cluster, Some(&owner)).unwrap();
    objects.extend(record);
    objects
}

/// Which part of the operator's output a document is.
#[derive(Clone, Copy, Debug)]
enum Set {
    /// What reconciles apply.
    Applied,
    /// A file of deploy/.
    Deploy,
    /// An object made invalid on purpose: the validator must refuse it.
    Control,
}

/// What the validator is given: objects as JSON (as the operator sends them) and the files of
/// deploy/, which it reads as YAML the way kubectl does.
#[derive(Default)]
struct Request {
    objects: Vec<Value>,
    files: Vec<PathBuf>,
}

impl Request {
    /// `copies`: how many times the operator sends it.
    fn object(&mut self, set: Set, place: String, copies: usize, object: Value) {
        self.objects.push(
            json!({"set": format!("{set:?}"), "where": place, "copies": copies, "object": object}),
        );
    }
}

/// The invalid objects of the controls, by name: each must be refused on every version.
fn controls() -> Vec<(&'static str, Value)> {
    let (_, cr) = examples()
        .into_iter()
        .find(|(name, _)| name == "linux-bridge")
        .unwrap();
    let daemon_set = applied_objects(&cr, &ClusterInfo::WITH_CERT_MANAGER)
        .into_iter()
        .find(|o| o["kind"] == "DaemonSet")
        .unwrap();
    let mut unknown_field = daemon_set.clone();
    unknown_field["spec"]["template"]["spec"]["hostNetwrok"] = Value::Bool(true);
    let mut wrong_type = daemon_set;
    wrong_type["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!("30");
    let selector = json!({"matchLabels": {"app": "a"}});
    vec![
        ("unknown field", unknown_field),
        ("wrong type", wrong_type),
        (
            "policy/v1beta1 PodDisruptionBudget",
            json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "a"}, "spec": {"minAvailable": 1, "selector": selector}}),
        ),
        (
            "batch/v1beta1 CronJob",
            json!({"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": {"name": "a"},
                   "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                       "spec": {"restartPolicy": "Never",
                                "containers": [{"name": "a", "image": "a"}]}}}}}}),
        ),
        (
            "flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
                   "metadata": {"name": "a"},
                   "spec": {"priorityLevelConfiguration": {"name": "a"}}}),
        ),
    ]
}

/// Everything to validate. Identical objects (most examples share most of them) are sent
/// once, with every place they come from.
fn request() -> Request {
    let mut request = Request::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut applied: Vec<(Value, Vec<String>)> = Vec::new();
    let mut add = |object: Value, place: String| {
        let key = serde_json::to_string(&object).unwrap();
        match seen.get(&key) {
            Some(&i) => applied[i].1.push(place),
            None => {
                seen.insert(key, applied.len());
                applied.push((object, vec![place]));
            }
        }
    };
    for (name, cr) in examples() {
        for (cluster, info) in clusters() {
            for object in applied_objects(&cr, &info) {
                let place = format!("{name} ({cluster}): {}", describe(&object));
                add(object, place);
            }
        }
    }
    let (_, full) = examples().into_iter().find(|(n, _)| n == "full").unwrap();
    let mut event = serde_json::to_value(example_event(
        &full,
        "Warning",
        "Failed: FailedToApply",
        "apply x: y",
    ))
    .unwrap();
    event["apiVersion"] = json!("v1");
    event["kind"] = json!("Event");
    add(
        event,
        "the event of a failed reconcile (core v1)".to_string(),
    );
    for (object, places) in applied {
        let place = match places.len() {
            1 => places[0].clone(),
            n => format!("{} (and {} more)", places[0], n - 1),
        };
        request.object(Set::Applied, place, places.len(), object);
    }
    for (name, object) in controls() {
        request.object(Set::Control, name.to_string(), 1, object);
    }
    let mut files: Vec<PathBuf> = fs::read_dir(repo().join("deploy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    request.files = files;
    request
}

fn describe(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// Reads the request (argv[1]) and prints, for each document, what each version says of it.
/// The library reads its schema files, the 1.8 MB of shared definitions among them, on every
/// call: cached here, the run takes a tenth of the time.
const VALIDATE_PY: &str = r#"
import functools, json, sys
import yaml
import kubernetes_validate
from kubernetes_validate import utils

utils.schema_contents = functools.lru_cache(maxsize=None)(utils.schema_contents)

def check(obj, version):
    try:
        schemas = kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.path)
        return {"outcome": "invalid", "schemas": e.version, "detail": f"{path or '.'}: {e.message}"}
    except kubernetes_validate.SchemaNotFoundError as e:
        return {"outcome": "no schema", "schemas": None, "detail": e.message}
    return {"outcome": "valid", "schemas": schemas, "detail": ""}

with open(sys.argv[1]) as f:
    request = json.load(f)
documents = list(request["objects"])
for path in request["files"]:
    name = path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1]
    with open(path) as f:
        for i, doc in enumerate(d for d in yaml.safe_load_all(f) if d is not None):
            documents.append({"set": "Deploy", "where": f"{name} document {i + 1}", "object": doc})
out = []
for d in documents:
    obj = d["object"]
    out.append({
        "set": d["set"], "where": d["where"], "copies": d.get("copies", 1),
        "api_version": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
        "versions": {v: check(obj, v) for v in request["versions"]},
    })
json.dump({"kubernetes_validate": kubernetes_validate.__version__, "documents": out}, sys.stdout)
"#;

#[derive(Deserialize)]
struct Answer {
    kubernetes_validate: String,
    documents: Vec<Document>,
    /// How long the python run took.
    #[serde(skip)]
    seconds: f64,
}

#[derive(Deserialize)]
struct Document {
    set: String,
    #[serde(rename = "where")]
    place: String,
    copies: usize,
    api_version: String,
    kind: String,
    versions: BTreeMap<String, Outcome>,
}

#[derive(Deserialize)]
struct Outcome {
    outcome: String,
    schemas: Option<String>,
    detail: String,
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Valid,
    /// A kind a CustomResourceDefinition defines: in no release's schemas.
    Skipped,
    Refused(String),
}

impl Document {
    fn in_set(&self, set: Set) -> bool {
        self.set == format!("{set:?}")
    }

    fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }

    fn crd_defined(&self) -> bool {
        let (group, kind) = our_crd_kind();
        (self.group() == group && &self.kind == kind)
            || FOREIGN_CRD_KINDS.contains(&(self.group(), self.kind.as_str()))
    }

    /// What Kubernetes `version` makes of it.
    fn verdict(&self, version: &str) -> Verdict {
        let Some(o) = self.versions.get(version) else {
            return Verdict::Refused(format!("not checked on {version}"));
        };
        let release = release(version);
        match o.outcome.as_str() {
            "valid" if o.schemas.as_deref() == Some(release) => Verdict::Valid,
            "valid" => Verdict::Refused(format!(
                "checked against the schemas of {:?}, not of {release}",
                o.schemas
            )),
            "no schema" if self.crd_defined() => Verdict::Skipped,
            "no schema" => Verdict::Refused(format!(
                "Kubernetes {release} has no {} {}: {}",
                self.api_version, self.kind, o.detail
            )),
            _ => Verdict::Refused(o.detail.clone()),
        }
    }
}

/// `1.33` of `1.33.0`.
fn release(version: &str) -> &str {
    version.rsplit_once('.').unwrap().0
}

/// The python that has kubernetes-validate.
fn python() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(PYTHON_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let script = repo().join("scripts/kubernetes-validate");
    let out = Command::new("bash")
        .arg(&script)
        .arg("--print")
        .output()
        .map_err(|e| format!("run {}: {e}", script.display()))?;
    if out.status.success() {
        return Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    Err(format!(
        "kubernetes-validate is not installed: run scripts/kubernetes-validate (as root: it \
         installs it in a virtualenv outside the repository), or set {PYTHON_ENV} to a python \
         that has it. `{} --print` said: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// The validator's answer on everything, from one run shared by the tests.
fn answer() -> &'static Answer {
    static ANSWER: OnceLock<Result<Answer, String>> = OnceLock::new();
    match ANSWER.get_or_init(validate_everything) {
        Ok(answer) => answer,
        Err(e) => panic!("{e}"),
    }
}

fn validate_everything() -> Result<Answer, String> {
    let python = python()?;
    let request = request();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("schemas_current-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let program = dir.join("validate.py");
    let input = dir.join("request.json");
    fs::write(&program, VALIDATE_PY).unwrap();
    let body = json!({"versions": VERSIONS, "objects": request.objects, "files": request.files});
    fs::write(&input, serde_json::to_vec(&body).unwrap()).unwrap();
    let start = Instant::now();
    let out = Command::new(&python)
        .arg(&program)
        .arg(&input)
        .output()
        .map_err(|e| format!("run {} ({PYTHON_ENV}): {e}", python.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{} {} {} failed ({}); its input stays in {}:\n{}",
            python.display(),
            program.display(),
            input.display(),
            out.status,
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut answer: Answer = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the validator's answer is not what was expected: {e}"))?;
    answer.seconds = seconds;
    let _ = fs::remove_dir_all(&dir);
    Ok(answer)
}

/// Straight to stderr in one write, not through eprintln!, which the test harness shows only
/// for failures: what was checked is worth seeing when it passes.
fn report(lines: &[String]) {
    let _ = std::io::stderr().write_all(format!("{}\n", lines.join("\n")).as_bytes());
}

/// Checks every document of `set` on every version: a summary line per version, and every
/// refusal.
fn refusals_in(set: Set, what: &str) -> Vec<String> {
    let answer = answer();
    let documents: Vec<&Document> = answer.documents.iter().filter(|d| d.in_set(set)).collect();
    let sent: usize = documents.iter().map(|d| d.copies).sum();
    let mut lines = vec![format!(
        "{what}: kubernetes-validate {} checked all {} documents on {} versions in one run of \
         {:.1} s",
        answer.kubernetes_validate,
        answer.documents.len(),
        VERSIONS.len(),
        answer.seconds
    )];
    let mut refusals = Vec::new();
    let mut skipped = BTreeSet::new();
    for version in VERSIONS {
        let (mut valid, mut refused, mut skips) = (0, 0, 0);
        for d in &documents {
            match d.verdict(version) {
                Verdict::Valid => valid += 1,
                Verdict::Skipped => {
                    skips += 1;
                    skipped.insert(format!("{} {}", d.api_version, d.kind));
                }
                Verdict::Refused(why) => {
                    refused += 1;
                    refusals.push(format!(
                        "Kubernetes {}: {}: {why}",
                        release(version),
                        d.place
                    ));
                }
            }
        }
        lines.push(format!(
            "{what} on Kubernetes {}: {} distinct objects checked ({sent} as sent), {valid} valid, \
             {refused} errors, {skips} skipped",
            release(version),
            documents.len()
        ));
    }
    lines.push(format!(
        "{what}: skipped as CRD-defined: {}",
        skipped.into_iter().collect::<Vec<_>>().join(", ")
    ));
    report(&lines);
    refusals
}

#[test]
fn every_object_applied_for_every_example_on_every_cluster_is_valid_on_kubernetes_1_33_to_1_37() {
    let refusals = refusals_in(Set::Applied, "applied objects");
    assert!(refusals.is_empty(), "{}", refusals.join("\n"));
}

#[test]
fn everything_in_deploy_is_valid_on_kubernetes_1_33_to_1_37() {
    let refusals = refusals_in(Set::Deploy, "deploy/");
    assert!(refusals.is_empty(), "{}", refusals.join("\n"));
    let kinds: BTreeSet<&str> = answer()
        .documents
        .iter()
        .filter(|d| d.in_set(Set::Deploy))
        .map(|d| d.kind.as_str())
        .collect();
    for kind in network_addons_operator::manifests::DEPLOY_KINDS {
        assert!(kinds.contains(kind), "no {kind} in deploy/: {kinds:?}");
    }
}

#[test]
fn the_examples_on_the_three_clusters_render_every_component() {
    let mut seen = BTreeSet::new();
    let settings = Settings::defaults();
    for (_, cr) in examples() {
        let applied = fill_defaults(&cr.spec, None, [0x4a, 0xbe]);
        for (_, cluster) in clusters() {
            for r in render(&applied, &settings, &cluster).unwrap() {
                seen.extend(r.component.map(Component::key));
            }
        }
    }
    let all: BTreeSet<&str> = Component::ALL.into_iter().map(Component::key).collect();
    assert_eq!(seen, all);
}

#[test]
fn only_the_kinds_that_crds_define_are_skipped_and_each_of_them_is_met() {
    let mut skipped = BTreeSet::new();
    for d in &answer().documents {
        for version in VERSIONS {
            if d.verdict(version) == Verdict::Skipped {
                assert!(d.crd_defined(), "{}", d.place);
                skipped.insert((d.group().to_string(), d.kind.clone()));
            }
        }
    }
    let mut expected: BTreeSet<(String, String)> = FOREIGN_CRD_KINDS
        .iter()
        .map(|(g, k)| (g.to_string(), k.to_string()))
        .collect();
    expected.insert(our_crd_kind().clone());
    assert_eq!(skipped, expected);
}

/// The verdicts on the control named `name`, one per version.
fn control(name: &str) -> Vec<(&'static str, Verdict)> {
    let d = answer()
        .documents
        .iter()
        .find(|d| d.in_set(Set::Control) && d.place == name)
        .unwrap();
    VERSIONS.iter().map(|v| (*v, d.verdict(v))).collect()
}

fn refused_for(verdicts: &[(&str, Verdict)], needle: &str) -> bool {
    verdicts
        .iter()
        .all(|(_, v)| matches!(v, Verdict::Refused(why) if why.contains(needle)))
}

#[test]
fn the_validator_refuses_a_misspelt_field_on_every_version() {
    let verdicts = control("unknown field");
    assert!(
        refused_for(&verdicts, ".spec.template.spec: Additional properties are not allowed ('hostNetwrok' was unexpected)"),
        "{verdicts:?}"
    );
}

#[test]
fn the_validator_refuses_a_value_of_the_wrong_type_on_every_version() {
    let verdicts = control("wrong type");
    assert!(
        refused_for(
            &verdicts,
            ".spec.template.spec.terminationGracePeriodSeconds: '30' is not of type"
        ),
        "{verdicts:?}"
    );
}

#[test]
fn the_validator_refuses_api_versions_kubernetes_removed_on_every_version() {
    for (name, removed_in) in [
        ("policy/v1beta1 PodDisruptionBudget", "1.25"),
        ("batch/v1beta1 CronJob", "1.25"),
        ("flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema", "1.32"),
    ] {
        let verdicts = control(name);
        assert!(
            refused_for(&verdicts, &format!(" has no {name}: ")),
            "{name} (removed in {removed_in}): {verdicts:?}"
        );
    }
}
