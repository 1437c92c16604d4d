//! Who may read a protected path, as the API server decides it: the caller's bearer token goes
//! into a TokenReview (`authentication.k8s.io/v1`), and the user it names into a
//! SubjectAccessReview (`authorization.k8s.io/v1`) for `get` on the non-resource URL. So a
//! ClusterRole granting `get` on `nonResourceURLs: ["/metrics"]`, bound to a ServiceAccount,
//! lets that account's token read it, as for the API server's own `/metrics`.
//!
//! Verdicts are cached ([`crate::cache`]). An API server that does not answer within
//! [`REVIEW_TIMEOUT`], or answers with an error, leaves the request unanswerable (503) and
//! nothing cached: the next scrape asks again.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tracing::{debug, warn};

use crate::cache::{digest, Cache, Verdict};

/// The longest the two reviews of one token may take together.
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(5);
/// The path the endpoint protects, and the non-resource URL a reader needs `get` on.
pub const METRICS_PATH: &str = "/metrics";

/// The answer to a request for the protected path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Granted,
    /// No `Authorization: Bearer` header, or an empty or malformed one.
    NoToken,
    Refused(Verdict),
    /// The API server could not say in time.
    Unknown,
}

impl Access {
    /// The status a refused request is answered with; `None` when granted.
    pub fn refusal(self) -> Option<(StatusCode, &'static str)> {
        match self {
            Access::Granted | Access::Refused(Verdict::Allowed) => None,
            Access::NoToken => Some((StatusCode::UNAUTHORIZED, "a bearer token is required\n")),
            Access::Refused(Verdict::Unauthenticated) => {
                Some((StatusCode::UNAUTHORIZED, "the token is not valid\n"))
            }
            Access::Refused(Verdict::Forbidden) => Some((
                StatusCode::FORBIDDEN,
                "the token's user may not get /metrics\n",
            )),
            Access::Unknown => Some((
                StatusCode::SERVICE_UNAVAILABLE,
                "the token cannot be reviewed now\n",
            )),
        }
    }
}

/// Reviews tokens with the API server, caching the verdicts.
pub struct Authorizer {
    client: kube::Client,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("cached", &self.cache().len())
            .finish()
    }
}

/// The token of an `Authorization` header value: `Bearer <token>` (the scheme in any case).
pub fn bearer_token(header: Option<&http::HeaderValue>) -> Option<&str> {
    let value = header?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

impl Authorizer {
    /// Asks the API server `client` talks to (with this process's own ServiceAccount, which
    /// needs `create` on `tokenreviews` and `subjectaccessreviews`).
    pub fn new(client: kube::Client) -> Authorizer {
        Authorizer {
            client,
            cache: Mutex::new(Cache::default()),
        }
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the bearer token of `authorization` (the header) may get [`METRICS_PATH`].
    pub async fn check(&self, authorization: Option<&http::HeaderValue>) -> Access {
        let Some(token) = bearer_token(authorization) else {
            return Access::NoToken;
        };
        let key = digest(token);
        if let Some(verdict) = self.cache().get(&key, Instant::now()) {
            return access(verdict);
        }
        match tokio::time::timeout(REVIEW_TIMEOUT, self.review(token)).await {
            Ok(Ok(verdict)) => {
                self.cache().put(key, verdict, Instant::now());
                access(verdict)
            }
            Ok(Err(e)) => {
                warn!(error = %e, "reviewing a token for {METRICS_PATH}");
                Access::Unknown
            }
            Err(_) => {
                warn!(
                    "the API server did not review a token for {METRICS_PATH} within {} s",
                    REVIEW_TIMEOUT.as_secs()
                );
                Access::Unknown
            }
        }
    }

    async fn review(&self, token: &str) -> Result<Verdict, kube::Error> {
        let post = PostParams::default();
        let asked = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&post, &asked)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => user,
            _ => {
                debug!(error = ?status.error, "a token for {METRICS_PATH} is not authenticated");
                return Ok(Verdict::Unauthenticated);
            }
        };
        let asked = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(METRICS_PATH.to_string()),
                    verb: Some("get".to_string()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&post, &asked)
            .await?;
        if decided.status.is_some_and(|s| s.allowed) {
            Ok(Verdict::Allowed)
        } else {
            debug!(user = ?user.username, "may not get {METRICS_PATH}");
            Ok(Verdict::Forbidden)
        }
    }
}

fn access(verdict: Verdict) -> Access {
    match verdict {
        Verdict::Allowed => Access::Granted,
        refused => Access::Refused(refused),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_api::{self, ALLOWED, FORBIDDEN, HANGS};
    use http::HeaderValue;

    fn header(token: &str) -> HeaderValue {
        HeaderValue::from_str(&format!("Bearer {token}")).expect("header")
    }

    #[test]
    fn only_a_bearer_header_carries_a_token() {
        let token = |v: &str| {
            bearer_token(Some(&HeaderValue::from_str(v).expect("value"))).map(str::to_string)
        };
        assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("bearer abc").as_deref(), Some("abc"));
        assert_eq!(token("Basic abc"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearer a b"), None);
        assert_eq!(bearer_token(None), None);
    }

    #[tokio::test]
    async fn a_request_without_a_token_asks_the_api_server_nothing() {
        let (client, reviewer) = fake_api::start();
        let authorizer = Authorizer::new(client);
        assert_eq!(authorizer.check(None).await, Access::NoToken);
        assert_eq!(reviewer.requests(), 0);
    }

    #[tokio::test]
    async fn a_token_the_api_server_does_not_authenticate_is_unauthenticated() {
        let (client, reviewer) = fake_api::start();
        let authorizer = Authorizer::new(client);
        let got = authorizer.check(Some(&header("garbage"))).await;
        assert_eq!(got, Access::Refused(Verdict::Unauthenticated));
        assert_eq!(got.refusal().map(|r| r.0), Some(StatusCode::UNAUTHORIZED));
        // No SubjectAccessReview for a user nobody is.
        assert_eq!(reviewer.requests(), 1);
    }

    #[tokio::test]
    async fn an_authenticated_user_without_the_permission_is_forbidden() {
        let (client, _) = fake_api::start();
        let got = Authorizer::new(client)
            .check(Some(&header(FORBIDDEN)))
            .await;
        assert_eq!(got, Access::Refused(Verdict::Forbidden));
        assert_eq!(got.refusal().map(|r| r.0), Some(StatusCode::FORBIDDEN));
    }

    #[tokio::test]
    async fn the_access_review_asks_for_get_on_metrics_as_the_reviewed_user() {
        // The fake grants only a review naming the token's user, groups, uid and extra, and
        // `get` on /metrics.
        let (client, reviewer) = fake_api::start();
        let got = Authorizer::new(client).check(Some(&header(ALLOWED))).await;
        assert_eq!(got, Access::Granted);
        assert_eq!(reviewer.requests(), 2);
    }

    #[tokio::test]
    async fn verdicts_are_reused_until_they_expire() {
        let (client, reviewer) = fake_api::start();
        let authorizer = Authorizer::new(client);
        for _ in 0..5 {
            assert_eq!(
                authorizer.check(Some(&header(ALLOWED))).await,
                Access::Granted
            );
            assert_eq!(
                authorizer.check(Some(&header("garbage"))).await,
                Access::Refused(Verdict::Unauthenticated)
            );
        }
        assert_eq!(reviewer.requests(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn an_api_server_that_does_not_answer_in_5_s_leaves_the_request_unanswered_and_uncached()
    {
        let (client, reviewer) = fake_api::start();
        let authorizer = Authorizer::new(client);
        let started = tokio::time::Instant::now();
        let got = authorizer.check(Some(&header(HANGS))).await;
        assert_eq!(got, Access::Unknown);
        assert_eq!(
            got.refusal().map(|r| r.0),
            Some(StatusCode::SERVICE_UNAVAILABLE)
        );
        assert!(started.elapsed() >= REVIEW_TIMEOUT);
        assert!(started.elapsed() < REVIEW_TIMEOUT + Duration::from_secs(1));
        authorizer.check(Some(&header(HANGS))).await;
        assert_eq!(reviewer.requests(), 2, "asked again: nothing was cached");
    }

    #[tokio::test]
    async fn an_api_error_is_not_cached() {
        let (client, reviewer) = fake_api::start();
        reviewer.fail_with(403);
        let authorizer = Authorizer::new(client);
        assert_eq!(
            authorizer.check(Some(&header(ALLOWED))).await,
            Access::Unknown
        );
        reviewer.fail_with(0);
        assert_eq!(
            authorizer.check(Some(&header(ALLOWED))).await,
            Access::Granted
        );
    }
}
