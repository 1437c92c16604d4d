//! The scenarios' way to read a component's `/metrics`: as Prometheus does, with the scraper's
//! token ([`kube_tier::metrics`]), kept for the run and renewed when refused (a scenario may
//! have removed the scraper's namespace) or half an hour old (tokens last an hour).

use std::time::{Duration, Instant};

use anyhow::Result;

use kube_tier::metrics::{scrape_with, scraper_token};

use super::ctx::Ctx;

/// How long a scraper token is used before a new one is asked for.
const TOKEN_REUSE: Duration = Duration::from_secs(30 * 60);

impl Ctx {
    /// The scraper's token, the same one while it is fresh (a new token is one the components
    /// have not reviewed yet: a few more reviews).
    pub fn scraper_token(&self) -> Result<String> {
        let mut kept = self.scraper.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((token, since)) = kept.as_ref() {
            if since.elapsed() < TOKEN_REUSE {
                return Ok(token.clone());
            }
        }
        let token = scraper_token(&self.cluster)?;
        *kept = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    /// The metrics at `address` (IP:PORT), read with the scraper's token.
    pub fn metrics_at(&self, address: &str) -> Result<String> {
        let mut scraped = scrape_with(address, Some(&self.scraper_token()?), None)?;
        if scraped.status == 401 {
            *self.scraper.lock().unwrap_or_else(|e| e.into_inner()) = None;
            scraped = scrape_with(address, Some(&self.scraper_token()?), None)?;
        }
        anyhow::ensure!(
            scraped.status == 200,
            "https://{address}/metrics answered {} to the scraper: {}",
            scraped.status,
            scraped.body.trim()
        );
        Ok(scraped.body)
    }
}
