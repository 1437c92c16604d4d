use super::*;

fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(Box::new(kube::core::Status {
        status: Some(kube::core::response::StatusSummary::Failure),
        code,
        message: message.to_string(),
        reason: reason.to_string(),
        ..Default::default()
    }))
}

#[test]
fn an_api_error_reads_as_the_server_message_after_what_was_done() {
    let e = api_error(
            500,
            "InternalError",
            "failed to create typed patch object: .spec.ports: element 0: associative list with keys has an element that omits key field \"protocol\"",
        );
    let text = Error::wrap(
        "apply Service cluster-network-addons/kubemacpool-service",
        e,
    )
    .to_string();
    assert_eq!(
            text,
            "apply Service cluster-network-addons/kubemacpool-service: failed to create typed patch object: .spec.ports: element 0: associative list with keys has an element that omits key field \"protocol\""
        );
    for dump in ["Status {", "Some(", "Failure", "ApiError", "code:"] {
        assert!(!text.contains(dump), "{dump:?} in {text:?}");
    }
}

#[test]
fn an_api_error_without_a_message_names_its_code_and_reason() {
    let text = Error::wrap(
        "read DaemonSet ns/a",
        api_error(503, "ServiceUnavailable", ""),
    )
    .to_string();
    assert_eq!(
        text,
        "read DaemonSet ns/a: the API server answered 503 (ServiceUnavailable)"
    );
}

#[test]
fn a_wrapped_error_keeps_its_cause_as_the_source() {
    let e = Error::wrap(
        "read ConfigMap ns/applied",
        Error::wrap("parse", std::io::Error::other("bad")),
    );
    assert_eq!(e.to_string(), "read ConfigMap ns/applied: parse: bad");
    let inner = std::error::Error::source(&e).expect("a source");
    assert_eq!(inner.to_string(), "parse: bad");
    let root = std::iter::successors(Some(inner), |e| e.source()).last();
    assert!(root.is_some_and(|e| e.downcast_ref::<std::io::Error>().is_some()));
    // describing ours does not repeat the causes its text already has
    assert_eq!(describe(&e), e.to_string());
}

#[test]
fn other_errors_read_as_their_text_and_causes_on_one_line() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection\nrefused");
    let text = Error::wrap("connect", io).to_string();
    assert_eq!(text, "connect: connection refused");
    let json = serde_json::from_str::<u8>("x").context("parse");
    assert!(json.is_err_and(|e| !e.to_string().contains('\n')));
}
