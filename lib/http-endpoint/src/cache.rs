//! Verdicts on bearer tokens, kept briefly: a Prometheus scraping every 15 s then costs the API
//! server one TokenReview and one SubjectAccessReview a minute per target, not two a scrape.
//! Entries are keyed by the token's SHA-256, so the cache never holds a token. A refusal is
//! kept for less time than a grant: a permission just granted should work soon, and a garbage
//! token repeated fast still costs nothing.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long a granted token is trusted without asking again.
pub const ALLOW_FOR: Duration = Duration::from_secs(60);
/// How long a refused token (unauthenticated or forbidden) is refused without asking again.
pub const DENY_FOR: Duration = Duration::from_secs(10);
/// The most tokens remembered: past it, expired entries go, then the one expiring first.
pub const CAPACITY: usize = 1024;

/// The SHA-256 of a token.
pub type TokenDigest = [u8; 32];

pub fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// What the API server said of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// The TokenReview did not authenticate it.
    Unauthenticated,
    /// Authenticated, but not allowed to `get` the path.
    Forbidden,
}

impl Verdict {
    fn lifetime(self) -> Duration {
        match self {
            Verdict::Allowed => ALLOW_FOR,
            Verdict::Unauthenticated | Verdict::Forbidden => DENY_FOR,
        }
    }
}

#[derive(Debug, Default)]
pub struct Cache {
    entries: HashMap<TokenDigest, (Verdict, Instant)>,
}

impl Cache {
    /// The verdict on `token` if one is still fresh at `now`.
    pub fn get(&self, token: &TokenDigest, now: Instant) -> Option<Verdict> {
        match self.entries.get(token) {
            Some(&(verdict, until)) if now < until => Some(verdict),
            _ => None,
        }
    }

    pub fn put(&mut self, token: TokenDigest, verdict: Verdict, now: Instant) {
        if self.entries.len() >= CAPACITY && !self.entries.contains_key(&token) {
            self.entries.retain(|_, (_, until)| now < *until);
            if self.entries.len() >= CAPACITY {
                let first = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, until))| *until)
                    .map(|(k, _)| *k);
                if let Some(k) = first {
                    self.entries.remove(&k);
                }
            }
        }
        self.entries
            .insert(token, (verdict, now + verdict.lifetime()));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_kept_a_minute() {
        let now = Instant::now();
        let mut cache = Cache::default();
        cache.put(digest("t"), Verdict::Allowed, now);
        assert_eq!(
            cache.get(&digest("t"), now + Duration::from_secs(59)),
            Some(Verdict::Allowed)
        );
        assert_eq!(cache.get(&digest("t"), now + ALLOW_FOR), None);
    }

    #[test]
    fn a_refusal_is_kept_ten_seconds() {
        let now = Instant::now();
        let mut cache = Cache::default();
        cache.put(digest("a"), Verdict::Forbidden, now);
        cache.put(digest("b"), Verdict::Unauthenticated, now);
        let later = now + Duration::from_secs(9);
        assert_eq!(cache.get(&digest("a"), later), Some(Verdict::Forbidden));
        assert_eq!(
            cache.get(&digest("b"), later),
            Some(Verdict::Unauthenticated)
        );
        assert_eq!(cache.get(&digest("a"), now + DENY_FOR), None);
        assert_eq!(cache.get(&digest("b"), now + DENY_FOR), None);
    }

    #[test]
    fn another_token_is_not_taken_for_a_cached_one() {
        let now = Instant::now();
        let mut cache = Cache::default();
        cache.put(digest("granted"), Verdict::Allowed, now);
        assert_eq!(cache.get(&digest("granted "), now), None);
    }

    #[test]
    fn the_cache_never_holds_more_than_its_capacity_and_drops_the_soonest_to_expire() {
        let now = Instant::now();
        let mut cache = Cache::default();
        // One refusal (expiring first) among grants.
        cache.put(digest("refused"), Verdict::Forbidden, now);
        for i in 1..CAPACITY {
            cache.put(digest(&i.to_string()), Verdict::Allowed, now);
        }
        assert_eq!(cache.len(), CAPACITY);
        cache.put(digest("newcomer"), Verdict::Allowed, now);
        assert_eq!(cache.len(), CAPACITY);
        assert_eq!(cache.get(&digest("refused"), now), None);
        assert_eq!(cache.get(&digest("newcomer"), now), Some(Verdict::Allowed));
        assert_eq!(cache.get(&digest("1"), now), Some(Verdict::Allowed));
    }

    #[test]
    fn expired_entries_make_room_first() {
        let now = Instant::now();
        let mut cache = Cache::default();
        for i in 0..CAPACITY {
            cache.put(digest(&i.to_string()), Verdict::Forbidden, now);
        }
        let later = now + DENY_FOR;
        cache.put(digest("newcomer"), Verdict::Allowed, later);
        assert_eq!(cache.len(), 1);
    }
}
