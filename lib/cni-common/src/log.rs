//! Plugin logs: `tracing` to stderr only (stdout carries the CNI result), warnings and errors by
//! default so a runtime's log holds no chatter, more with `CNI_LOG=info|debug|trace`.

use tracing_subscriber::filter::LevelFilter;

/// The environment variable that sets the level: `off`, `error`, `warn` (default), `info`,
/// `debug`, `trace`.
pub const LOG_ENV: &str = "CNI_LOG";

/// The level `CNI_LOG` asks for; warn when unset or not a level.
pub fn level_from(value: Option<&str>) -> LevelFilter {
    value
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(LevelFilter::WARN)
}

/// The words that start what GC reports it removed, for the node agent that runs GC to count
/// and relay: `collected: <what>` at info level.
pub const COLLECTED: &str = "collected: ";

/// Reports one thing a GC removed (a port, a rule, a state file), as [`COLLECTED`] says.
pub fn collected(what: impl std::fmt::Display) {
    tracing::info!("{COLLECTED}{what}");
}

/// Installs the stderr subscriber once per process.
pub fn init() {
    let level = level_from(std::env::var(LOG_ENV).ok().as_deref());
    // A subscriber set already (a test harness, a second call) keeps logging where it does.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .without_time()
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_the_default_level() {
        assert_eq!(level_from(None), LevelFilter::WARN);
        assert_eq!(level_from(Some("loud")), LevelFilter::WARN);
    }

    #[test]
    fn the_variable_names_the_level() {
        assert_eq!(level_from(Some("debug")), LevelFilter::DEBUG);
        assert_eq!(level_from(Some("off")), LevelFilter::OFF);
    }
}
