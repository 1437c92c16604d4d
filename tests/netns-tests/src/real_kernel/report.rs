//! How a run ended: what the guest reported about the command, how virtme-ng ended, and the exit
//! status `run` makes of both.

/// The exit status when the guest reported none for the command.
pub const NO_STATUS: i32 = 125;

/// What the guest wrote to the shared directory about the command.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GuestReport {
    /// Guest uptime when the command started and ended.
    pub start: Option<f64>,
    pub end: Option<f64>,
    /// The command's exit status.
    pub exit: Option<i32>,
}

impl GuestReport {
    /// From the `times` (`start <uptime>` / `end <uptime>` lines) and `exit` files.
    pub fn parse(times: &str, exit: &str) -> GuestReport {
        let time = |key: &str| {
            times.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some(key))
                    .then(|| words.next()?.parse().ok())
                    .flatten()
            })
        };
        let exit = exit.lines().next().unwrap_or_default().trim();
        GuestReport {
            start: time("start"),
            end: time("end"),
            exit: (!exit.is_empty() && exit.bytes().all(|b| b.is_ascii_digit()))
                .then(|| exit.parse().ok())
                .flatten(),
        }
    }
}

/// How virtme-ng ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VngEnd {
    /// It exited with this status (128 + N for signal N).
    Exited(i32),
    /// It ran past the timeout and was stopped.
    TimedOut,
}

/// The exit status `run` reports, and what to say about it: the guest's status for the command
/// when it reported one (unless virtme-ng failed after a command that succeeded), else
/// [`NO_STATUS`] with the likely reason.
pub fn outcome(
    vng: VngEnd,
    report: &GuestReport,
    timeout_secs: u64,
    wall: f64,
    abi: &str,
) -> (i32, Vec<String>) {
    let rc = match vng {
        VngEnd::Exited(rc) => rc,
        VngEnd::TimedOut => 124,
    };
    let mut notes = Vec::new();
    let Some(guest) = report.exit else {
        notes.push(if vng == VngEnd::TimedOut {
            format!("the guest did not finish within {timeout_secs} s and was killed")
        } else if report.start.is_some() {
            format!(
                "the guest reported no exit status for the command (guest crash or power-off \
                 inside the command?); virtme-ng exited {rc}"
            )
        } else {
            format!("the command never started in the guest (boot failure?); virtme-ng exited {rc}")
        });
        return (NO_STATUS, notes);
    };
    let mut status = guest;
    if guest == 0 && rc != 0 {
        notes.push(format!(
            "warning: the command exited 0 but virtme-ng exited {rc}"
        ));
        status = rc;
    } else if rc != guest {
        notes.push(format!(
            "warning: virtme-ng reported exit status {rc}, the guest {guest}; using the guest's"
        ));
    }
    let (start, end) = (report.start.unwrap_or(0.0), report.end.unwrap_or(0.0));
    notes.push(format!(
        "kernel {abi}: command started at guest uptime {start:.1} s, ran {:.1} s; {wall:.1} s \
         wall in all (boot and power-off: {:.1} s)",
        end - start,
        wall - (end - start)
    ));
    (status, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_report_is_read_from_its_files() {
        let r = GuestReport::parse("start 9.52\nend 12.75\n", "3\n");
        assert_eq!(r.start, Some(9.52));
        assert_eq!(r.end, Some(12.75));
        assert_eq!(r.exit, Some(3));
        assert_eq!(GuestReport::parse("", "").exit, None);
        assert_eq!(
            GuestReport::parse("start x\n", "-1\n"),
            GuestReport::default()
        );
    }

    #[test]
    fn the_guests_status_wins_and_is_timed() {
        let report = GuestReport::parse("start 9.5\nend 12.5\n", "4\n");
        let (status, notes) = outcome(VngEnd::Exited(4), &report, 900, 20.0, "6.1.0-56-amd64");
        assert_eq!(status, 4);
        assert_eq!(
            notes,
            [
                "kernel 6.1.0-56-amd64: command started at guest uptime 9.5 s, ran 3.0 s; 20.0 s \
              wall in all (boot and power-off: 17.0 s)"
            ]
        );
        let (status, notes) = outcome(VngEnd::Exited(1), &report, 900, 20.0, "k");
        assert_eq!(status, 4);
        assert!(notes[0].contains("using the guest's"), "{notes:?}");
    }

    #[test]
    fn a_success_is_no_success_when_virtme_ng_failed() {
        let report = GuestReport::parse("start 1\nend 2\n", "0\n");
        let (status, notes) = outcome(VngEnd::TimedOut, &report, 900, 5.0, "k");
        assert_eq!(status, 124);
        assert!(
            notes[0].contains("exited 0 but virtme-ng exited 124"),
            "{notes:?}"
        );
    }

    #[test]
    fn no_guest_status_is_125_with_the_likely_reason() {
        let none = GuestReport::default();
        let (status, notes) = outcome(VngEnd::TimedOut, &none, 60, 61.0, "k");
        assert_eq!(
            (status, notes[0].as_str()),
            (
                NO_STATUS,
                "the guest did not finish within 60 s and was killed"
            )
        );
        let (status, notes) = outcome(VngEnd::Exited(1), &none, 60, 5.0, "k");
        assert_eq!(status, NO_STATUS);
        assert!(notes[0].contains("never started"), "{notes:?}");
        let started = GuestReport::parse("start 3\n", "");
        let (_, notes) = outcome(VngEnd::Exited(0), &started, 60, 5.0, "k");
        assert!(notes[0].contains("reported no exit status"), "{notes:?}");
    }
}
