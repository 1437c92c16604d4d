//! The checks, by area, and the order in which they run. Each check builds its own sandbox (a
//! throwaway "host" netns in which the plugin runs, a container netns and a temp dir), calls the
//! plugin as a runtime would, and judges what it sees.

mod del_robustness;
mod lifecycle;
mod rejected;
mod results;
mod runtime_variants;
mod status_gc;
mod stdout;
mod version;

use crate::suite::Suite;

impl Suite {
    /// Runs every selected check, in this order; returns the totals line and whether all
    /// passed.
    pub fn run(mut self) -> (String, bool) {
        self.describe_run();
        self.version_checks();
        self.describe_versions();
        self.request_error_checks();
        self.missing_env_checks();
        self.name_checks();
        for v in self.supported.clone() {
            self.version_lifecycle(&v);
        }
        self.check_offered();
        self.existing_ifname_check();
        self.del_robustness_checks();
        self.missing_interface_checks();
        self.variant_checks();
        self.no_cniversion_checks();
        self.status_gc_checks();
        self.stdout_check();
        let ok = self.report.failed == 0;
        (self.report.summary(), ok)
    }
}
