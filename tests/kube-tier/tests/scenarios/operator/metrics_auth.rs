//! Who may read the components' metrics: every `/metrics` we serve (KubeMacPool's managers, the
//! operator, the node agents) answers only a token the API server authenticates and allows to
//! `get` `/metrics`, which the operator's rendered ClusterRole and binding grant the monitoring
//! account; bad input gets a clear status and the server stays up; a real Prometheus scrapes all
//! three with the token; and the reviews each scrape costs the API server, from its audit log.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpStream;
use std::time::Instant;

use kube_tier::metrics::{
    reviews_in_audit_log, scrape_with, service_endpoints, token_of, Scraped, OPERATOR_METRICS_PORT,
    OPERATOR_METRICS_SERVICE,
};

use super::*;
use crate::scenarios::kubemacpool::prometheus::Prometheus;
use crate::scenarios::kubemacpool::{live_manager_pods, MANAGER_METRICS_PORT, SPEC as KMP_SPEC};

/// A header longer than any endpoint reads (16 KiB).
const LONG_HEADER_BYTES: usize = 32 * 1024;
/// The measurement: this many scrapes of every endpoint with a token none has reviewed yet,
/// [`SCRAPE_INTERVAL`] apart: all within the 60 s a grant is kept.
const SCRAPES: usize = 4;
const SCRAPE_INTERVAL: Duration = Duration::from_secs(2);
/// The reviews (TokenReview + SubjectAccessReview) each endpoint may ask for over those scrapes:
/// the first scrape's two, then none while the grant is kept. A scrape every 15 s (a
/// ServiceMonitor's default) thus costs 2 requests a minute, 0.5 a scrape; how long a grant
/// and a refusal are kept is the http-endpoint cache's unit tests'.
const REVIEWS_PER_ENDPOINT: usize = 2;
/// How long an endpoint may hold a client that says nothing: the 10 s it gives a TLS handshake,
/// and some slack for the tier.
const SILENT_CLIENT_CUT_OFF: Duration = Duration::from_secs(15);

/// The metrics endpoints of the three kinds, each `(what, IP:PORT)`.
fn endpoints(ctx: &Ctx) -> Result<Vec<(&'static str, String)>> {
    let mut all: Vec<(&'static str, String)> = live_manager_pods(ctx)?
        .iter()
        .filter_map(|p| p["status"]["podIP"].as_str())
        .map(|ip| ("kubemacpool", format!("{ip}:{MANAGER_METRICS_PORT}")))
        .collect();
    let operator_port = format!(":{OPERATOR_METRICS_PORT}");
    for address in service_endpoints(&ctx.cluster, NAMESPACE, OPERATOR_METRICS_SERVICE)? {
        let what = if address.ends_with(&operator_port) {
            "operator"
        } else {
            "node agent"
        };
        all.push((what, address));
    }
    Ok(all)
}

/// Waits until each kind has an endpoint (the agents' and the managers' must be ready to be
/// listed).
fn wait_endpoints(ctx: &Ctx) -> Result<Vec<(&'static str, String)>> {
    wait_for(
        "the managers, the operator and the node agents to serve metrics",
        Duration::from_secs(120),
        || {
            let all = endpoints(ctx)?;
            let kinds: BTreeSet<&str> = all.iter().map(|(what, _)| *what).collect();
            Ok((kinds.len() == 3).then_some(all))
        },
    )
}

fn expect(what: &str, address: &str, case: &str, got: &Scraped, status: u16) -> Result<()> {
    check(got.status == status, || {
        format!(
            "{what} {address}, {case}: {} instead of {status}: {}",
            got.status,
            got.body.trim()
        )
    })
}

pub fn every_metrics_endpoint_answers_only_a_token_allowed_to_get_it(ctx: &mut Ctx) -> Result<()> {
    ctx.ensure_operator()?;
    ctx.start_from(&format!("linuxBridge: {{}}\n{KMP_SPEC}"))?;
    ctx.wait_rollout("deployment", "kubemacpool-mac-controller-manager")?;
    ctx.wait_rollout("daemonset", LINUX_BRIDGE_DS)?;
    let all = wait_endpoints(ctx)?;
    let scraper = ctx.scraper_token()?;
    // An account nobody granted `get /metrics`.
    let outsider = token_of(&ctx.cluster, "default", "default")?;
    let long_header = format!("X-Padding: {}", "a".repeat(LONG_HEADER_BYTES));
    for (what, address) in &all {
        let a = address.as_str();
        expect(what, a, "no token", &scrape_with(a, None, None)?, 401)?;
        expect(
            what,
            a,
            "a garbage token",
            &scrape_with(a, Some("garbage"), None)?,
            401,
        )?;
        expect(
            what,
            a,
            "a token without the permission",
            &scrape_with(a, Some(&outsider), None)?,
            403,
        )?;
        let scraped = scrape_with(a, Some(&scraper), None)?;
        expect(what, a, "the scraper's token", &scraped, 200)?;
        check(scraped.samples() > 0, || {
            format!(
                "{what} {address} answered the scraper no samples:\n{}",
                scraped.body
            )
        })?;
        let long = scrape_with(a, Some(&scraper), Some(&long_header))?;
        expect(what, a, "a 32 KiB header", &long, 431)?;
        let after = scrape_with(a, Some(&scraper), None)?;
        expect(
            what,
            a,
            "the scraper's token after the long header",
            &after,
            200,
        )?;
        println!(
            "    {what} {address}: 401 without a token and with a garbage one, 403 to default/default, \
             200 with {} samples to the scraper, 431 to a long header, then 200",
            scraped.samples()
        );
    }
    silent_clients_are_cut_off(&all)?;
    the_webhook_port_serves_no_metrics(ctx, &scraper)?;
    prometheus_scrapes_all_three(ctx)?;
    reviews_per_scrape(ctx, &all)
}

/// A client that connects and says nothing is disconnected within the handshake's timeout, by
/// every endpoint at once; each answers again after.
fn silent_clients_are_cut_off(all: &[(&'static str, String)]) -> Result<()> {
    let opened = Instant::now();
    let mut silent = Vec::new();
    for (what, address) in all {
        let stream = TcpStream::connect_timeout(&address.parse()?, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(SILENT_CLIENT_CUT_OFF + Duration::from_secs(5)))?;
        silent.push((what, address, stream));
    }
    for (what, address, mut stream) in silent {
        let mut buf = [0u8; 64];
        let closed = match stream.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        let after = opened.elapsed();
        check(closed && after <= SILENT_CLIENT_CUT_OFF, || {
            format!("{what} {address} still held a silent client after {after:?}")
        })?;
    }
    println!(
        "    a silent client of each endpoint was disconnected within {:.1} s",
        opened.elapsed().as_secs_f64()
    );
    Ok(())
}

/// KubeMacPool's webhook port (8000) has no `/metrics`, whoever asks.
fn the_webhook_port_serves_no_metrics(ctx: &Ctx, scraper: &str) -> Result<()> {
    for pod in live_manager_pods(ctx)? {
        let ip = pod["status"]["podIP"].as_str().unwrap_or_default();
        let got = scrape_with(&format!("{ip}:8000"), Some(scraper), None)?;
        expect(
            "kubemacpool webhook port",
            ip,
            "the scraper's token",
            &got,
            404,
        )?;
    }
    Ok(())
}

/// Prometheus, configured as the ServiceMonitors are, finds every target up.
fn prometheus_scrapes_all_three(ctx: &Ctx) -> Result<()> {
    let prometheus = Prometheus::start(ctx)?;
    for (job, targets) in &prometheus.jobs {
        check(!targets.is_empty(), || {
            format!("Prometheus has no {job} target")
        })?;
        let expr = format!("count(up{{job=\"{job}\"}} == 1)");
        wait_for(
            &format!("Prometheus to scrape every {job} target"),
            Duration::from_secs(60),
            || Ok((prometheus.query(&expr)? == Some(targets.len() as f64)).then_some(())),
        )?;
        println!(
            "    Prometheus scrapes its {} {job} targets, up",
            targets.len()
        );
    }
    Ok(())
}

/// Scrapes every endpoint [`SCRAPES`] times, [`SCRAPE_INTERVAL`] apart, with a token none has
/// reviewed yet, and counts the reviews the API server's audit log records meanwhile.
fn reviews_per_scrape(ctx: &Ctx, all: &[(&'static str, String)]) -> Result<()> {
    let token = token_of(
        &ctx.cluster,
        kube_tier::metrics::SCRAPER_NAMESPACE,
        kube_tier::metrics::SCRAPER,
    )?;
    let mark = reviews_in_audit_log(&ctx.cluster)?.len();
    for round in 0..SCRAPES {
        let started = Instant::now();
        for (what, address) in all {
            let got = scrape_with(address, Some(&token), None)?;
            expect(what, address, "a measured scrape", &got, 200)?;
        }
        if round + 1 < SCRAPES {
            std::thread::sleep(SCRAPE_INTERVAL.saturating_sub(started.elapsed()));
        }
    }
    let reviews: Vec<String> = reviews_in_audit_log(&ctx.cluster)?.split_off(mark);
    let scrapes = SCRAPES * all.len();
    let mut by_reviewer: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &reviews {
        *by_reviewer.entry(r.as_str()).or_default() += 1;
    }
    println!(
        "    {} reviews for {scrapes} scrapes ({SCRAPES} of each of {} endpoints, {} s apart): \
         {:.2} API requests a scrape; {by_reviewer:?}",
        reviews.len(),
        all.len(),
        SCRAPE_INTERVAL.as_secs(),
        reviews.len() as f64 / scrapes as f64
    );
    // Each endpoint must have asked about the fresh token once: fewer TokenReviews means the
    // audit log is not recording them, and the bound below would pass on nothing.
    let token_reviews = reviews
        .iter()
        .filter(|r| r.starts_with("tokenreviews "))
        .count();
    check(token_reviews >= all.len(), || {
        format!(
            "{token_reviews} TokenReviews in the audit log for {} endpoints' first scrape of a \
             fresh token: {reviews:?}",
            all.len()
        )
    })?;
    check(reviews.len() <= REVIEWS_PER_ENDPOINT * all.len(), || {
        format!(
            "{} reviews for {} endpoints, over {REVIEWS_PER_ENDPOINT} each: {reviews:?}",
            reviews.len(),
            all.len()
        )
    })
}
