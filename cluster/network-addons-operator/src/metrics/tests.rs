use super::*;
use http_endpoint::SelfSigned;

/// A client whose API server never answers: enough for requests that need no review.
fn unreviewing_client() -> kube::Client {
    let (service, _) = tower_test::mock::pair::<
        http::Request<kube::client::Body>,
        http::Response<kube::client::Body>,
    >();
    kube::Client::new(service, "default")
}

#[tokio::test]
async fn probes_are_served_over_https_to_anyone_and_metrics_only_with_a_token() {
    let listener = bind(parse_address("127.0.0.1:0").expect("address"))
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let SelfSigned {
        config,
        certificate,
    } = http_endpoint::self_signed(&["localhost".to_string()]).expect("certificate");
    let state = Arc::new(State::default());
    let server = tokio::spawn(serve(listener, config, unreviewing_client(), state.clone()));
    let get = |path: &'static str| {
        let certificate = certificate.clone();
        async move {
            http_endpoint::client::get(address, &certificate, path, None)
                .await
                .expect("get")
                .0
        }
    };

    assert_eq!(get("/healthz").await, 200);
    assert_eq!(get("/readyz").await, 503);
    state.count_reconcile(true);
    assert_eq!(get("/readyz").await, 200);
    assert_eq!(get("/metrics").await, 401);
    assert_eq!(get("/other").await, 404);
    server.abort();
}

#[test]
fn metrics_report_the_leaders_view_of_the_config() {
    let state = State::default();
    let body = |state: &State| answer("/metrics", state).body;
    assert!(body(&state).contains("\nkubevirt_cnao_operator_up 1\n"));
    // not leading yet: the config is the leader's to report
    assert!(!body(&state).contains("kubevirt_cnao_cr_ready"));
    state.set_leading();
    assert!(body(&state).contains("\nkubevirt_cnao_cr_ready 0\n"));

    state.count_reconcile(true);
    state.set_cr_ready(true);
    state.set_kubemacpool_deployed(true);
    let text = body(&state);
    assert!(text.contains("\nkubevirt_cnao_cr_ready 1\n"), "{text}");
    assert!(
        text.contains("\nkubevirt_cnao_cr_kubemacpool_deployed 1\n"),
        "{text}"
    );
    assert!(text.contains("network_addons_operator_reconcile_total{result=\"success\"} 1\n"));
}

#[test]
fn every_metric_has_help_and_type_before_its_samples() {
    let state = State::default();
    state.set_leading();
    let text = state.render();
    assert_eq!(
        http_endpoint::undeclared_samples(&text),
        Vec::<String>::new()
    );
    assert!(text.ends_with('\n'));
}
