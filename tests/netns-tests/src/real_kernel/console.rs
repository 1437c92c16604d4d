//! virtme-ng's output: the command's stdout passed on as it arrives, its stderr told from the
//! kernel console, and after a failure the console kept under `<tier dir>/logs/` with the part
//! worth seeing shown.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Whether a line of virtme-ng's stderr is the kernel console (timestamped kernel messages and
/// the boot loader's and virtme's initramfs' chatter) rather than the command's stderr.
pub fn is_console_line(line: &str) -> bool {
    const BOOT_PREFIXES: &[&str] = &[
        "Probing EDD",
        "Memory KASLR",
        "Poking KASLR",
        "early console",
        "Decompressing Linux",
        "Parsing ELF",
        "Performing relocations",
        "Booting the kernel",
        "virtme initramfs: ",
    ];
    if BOOT_PREFIXES.iter().any(|p| line.starts_with(p)) {
        return true;
    }
    // `[  12.345678] ...`
    let Some(rest) = line.strip_prefix('[') else {
        return false;
    };
    let Some((stamp, after)) = rest.split_once(']') else {
        return false;
    };
    let Some((secs, micros)) = stamp.trim_start_matches(' ').split_once('.') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(secs) && digits(micros) && after.starts_with(' ')
}

/// Lines of the console that show the kernel complaining.
const TROUBLE: &[&str] = &[
    "Oops",
    "BUG:",
    "WARNING:",
    "Kernel panic",
    "Call Trace",
    "segfault",
    "general protection",
];

/// What to show of the kernel console after a failure: its end when the guest never reported a
/// status, else each complaint with the 12 lines after it (at most 60 lines); `None` when there
/// is nothing worth showing.
pub fn console_excerpt(console: &str, guest_reported: bool) -> Option<(&'static str, Vec<&str>)> {
    let lines: Vec<&str> = console.lines().collect();
    if !guest_reported {
        let from = lines.len().saturating_sub(25);
        return Some(("last lines of the kernel console", lines[from..].to_vec()));
    }
    let mut shown = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if TROUBLE.iter().any(|t| line.contains(t)) {
            for s in shown.iter_mut().skip(i).take(13) {
                *s = true;
            }
        }
    }
    if !shown.contains(&true) {
        return None;
    }
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if shown[i] {
            if i > 0 && !shown[i - 1] && !out.is_empty() {
                out.push("--");
            }
            out.push(*line);
        }
    }
    out.truncate(60);
    Some(("the kernel complained", out))
}

/// Copies `from` to `to` as it arrives.
pub(super) fn copy_streaming(mut from: impl Read, to: &mut dyn Write) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
        let _ = to.flush();
    }
}

/// Sends the console lines of `from` to `console` (and, when verbose, on to `to`), the rest to
/// `to`.
pub(super) fn split_console(
    from: impl Read,
    to: &mut dyn Write,
    console: &mut dyn Write,
    verbose: bool,
) {
    let mut reader = BufReader::new(from);
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&raw);
        let line = text.trim_end_matches('\n').trim_end_matches('\r');
        if is_console_line(line) {
            let _ = writeln!(console, "{line}");
            if !verbose {
                continue;
            }
        }
        let _ = writeln!(to, "{line}");
        let _ = to.flush();
    }
    let _ = console.flush();
}

/// Saves the console and the guest's dmesg under `<dir>/logs/` (the 20 newest are kept) and
/// shows what is worth seeing of it.
pub(super) fn keep_console(
    dir: &Path,
    console: &Path,
    dmesg: &Path,
    guest_reported: bool,
    verbose: bool,
    stderr: &mut dyn Write,
) {
    let logs = dir.join("logs");
    let _ = fs::create_dir_all(&logs);
    let keep = logs.join(format!(
        "console-{}-{}.log",
        utc_stamp(SystemTime::now()),
        std::process::id()
    ));
    let mut text = fs::read_to_string(console).unwrap_or_default();
    let dmesg = fs::read_to_string(dmesg).unwrap_or_default();
    if !dmesg.is_empty() {
        text.push_str(
            "---- dmesg at the end of the command (the console above stops at warnings once it \
             started)\n",
        );
        text.push_str(&dmesg);
    }
    let _ = fs::write(&keep, &text);
    prune_logs(&logs, 20);
    let excerpt = if verbose {
        None
    } else {
        console_excerpt(&text, guest_reported)
    };
    match excerpt {
        Some((title, lines)) => {
            say(stderr, &format!("{title} (all of it: {}):", keep.display()));
            for line in lines {
                let _ = writeln!(stderr, "    {line}");
            }
        }
        None => say(stderr, &format!("kernel console: {}", keep.display())),
    }
}

/// Removes all but the `keep` newest `console-*.log` files in `logs`.
fn prune_logs(logs: &Path, keep: usize) {
    let Ok(entries) = fs::read_dir(logs) else {
        return;
    };
    let mut found: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(std::result::Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("console-") && name.ends_with(".log")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    for (_, path) in found.into_iter().skip(keep) {
        let _ = fs::remove_file(path);
    }
}

/// `YYYYmmdd-HHMMSS` in UTC.
pub fn utc_stamp(at: SystemTime) -> String {
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One of our own report lines (`real-kernel: ...`), among the guest's output on stderr.
pub(super) fn say(stderr: &mut dyn Write, line: &str) {
    let _ = writeln!(stderr, "real-kernel: {line}");
    let _ = stderr.flush();
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn console_lines_are_told_from_the_commands_stderr() {
        assert!(is_console_line("[    0.000000] Linux version 6.1.0"));
        assert!(is_console_line(
            "[12345.678901] br0: port 1 entered forwarding"
        ));
        assert!(is_console_line(
            "Decompressing Linux... Parsing ELF... done."
        ));
        assert!(is_console_line("virtme initramfs: mounting root"));
        assert!(!is_console_line("test result: ok. 1 passed"));
        assert!(!is_console_line("[ok] done"));
        assert!(!is_console_line("[1.5]no space"));
        assert!(!is_console_line("real-kernel: guest 6.1.0 up after 9.1 s"));
    }

    #[test]
    fn a_guest_that_never_reported_shows_the_consoles_end() {
        let console: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let (title, lines) = console_excerpt(&console, false).unwrap_or_default();
        assert_eq!(title, "last lines of the kernel console");
        assert_eq!(lines.len(), 25);
        assert_eq!(lines[0], "line 16");
    }

    #[test]
    fn kernel_complaints_are_shown_with_what_follows() {
        let mut console: Vec<String> = (1..=40).map(|i| format!("line {i}")).collect();
        console[4] = "WARNING: CPU: 0 PID: 1".to_owned();
        console[30] = "Call Trace:".to_owned();
        let text = console.join("\n");
        let (title, lines) = console_excerpt(&text, true).unwrap_or_default();
        assert_eq!(title, "the kernel complained");
        assert_eq!(lines[0], "WARNING: CPU: 0 PID: 1");
        assert_eq!(lines[12], "line 17");
        assert_eq!(lines[13], "--");
        assert_eq!(lines[14], "Call Trace:");
        assert_eq!(lines.len(), 13 + 1 + 10);
        assert_eq!(console_excerpt("all quiet\n", true), None);
    }

    #[test]
    fn log_names_carry_the_utc_time() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_999_384);
        assert_eq!(utc_stamp(at), "20261130-004304");
        assert_eq!(utc_stamp(SystemTime::UNIX_EPOCH), "19700101-000000");
    }
}
