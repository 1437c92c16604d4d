use super::*;

fn review() -> Review {
    parse(
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",
                "request":{"uid":"u1","operation":"CREATE","namespace":"ns","object":{"metadata":{"generateName":"p-"}}}}"#,
        )
        .expect("review")
}

#[test]
fn the_response_speaks_the_requests_version_and_uid() {
    let out = allow(&review(), None);
    assert_eq!(out["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(out["response"]["uid"], "u1");
    assert!(out["response"].get("patch").is_none());
}

#[test]
fn a_patch_is_sent_base64_encoded() {
    let out = allow(&review(), Some(&json!([{"op": "remove", "path": "/x"}])));
    let b64 = out["response"]["patch"].as_str().expect("patch");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    assert_eq!(raw, br#"[{"op":"remove","path":"/x"}]"#);
    assert_eq!(out["response"]["patchType"], "JSONPatch");
}

#[test]
fn a_refusal_carries_its_code_and_message() {
    let out = deny(&review(), 400, "no");
    assert_eq!(out["response"]["allowed"], false);
    assert_eq!(out["response"]["status"]["code"], 400);
    assert_eq!(out["response"]["status"]["message"], "no");
}

#[test]
fn a_generate_name_pod_has_no_name_yet() {
    assert_eq!(review().request.object_name(), "");
}
