//! The user's own statusline, run beside ours (`--wrap`), and the line that joins both.

use super::*;

/// The wrapped output with ours joined to its first line by `separator`
/// (its other lines follow, unchanged: the user's own command may colour
/// them); ours alone when the wrapped command said nothing. The separator is
/// a setting: its control characters are neutralized.
///
/// ```
/// use interband_consumers::interline::compose;
/// assert_eq!(compose(Some("left"), "ctx 90%", " │ "), "left │ ctx 90%");
/// assert_eq!(compose(Some("a\nb"), "ctx 90%", " │ "), "a │ ctx 90%\nb");
/// assert_eq!(compose(None, "ctx 90%", " │ "), "ctx 90%");
/// ```
pub fn compose(wrapped: Option<&str>, line: &str, separator: &str) -> String {
    let separator = interband::text::terminal(separator);
    match wrapped.filter(|w| !w.is_empty()) {
        Some(w) if !line.is_empty() => match w.split_once('\n') {
            Some((first, rest)) => format!("{first}{separator}{line}\n{rest}"),
            None => format!("{w}{separator}{line}"),
        },
        Some(w) => w.to_owned(),
        None => line.to_owned(),
    }
}

/// The `--timings` report: one line per entry, `name  12.3µs`.
///
/// ```
/// use std::time::Duration;
/// let t = [("model", Duration::from_nanos(12_340))];
/// assert_eq!(interband_consumers::interline::timings_report(&t), "model  12.3µs\n");
/// ```
pub fn timings_report(timings: &[(&str, Duration)]) -> String {
    timings
        .iter()
        .map(|(name, d)| format!("{name}  {:.1}µs\n", d.as_secs_f64() * 1e6))
        .collect()
}

/// Stdin up to this size goes through a pipe: a fresh pipe holds at least
/// one page, so writing it can never block.
pub(crate) const PIPE_SAFE: usize = 4096;
/// How often [`wrap`] checks whether the command is done.
pub(crate) const POLL: Duration = Duration::from_millis(2);
/// The most of the wrapped command's output read.
pub(crate) const MAX_OUTPUT: u64 = 64 * 1024;

/// The longest `--wrap` waits for the wrapped command, whatever a setting says: 5 s.
pub const MAX_WRAP_TIMEOUT_MS: u64 = 5000;

/// How long `--wrap` waits: the setting, within [`MAX_WRAP_TIMEOUT_MS`].
pub fn wrap_timeout(s: &Settings) -> Duration {
    Duration::from_millis(s.wrap_timeout_ms.min(MAX_WRAP_TIMEOUT_MS))
}

/// Runs the user's statusline command `argv` (no shell) with `stdin`, waits
/// at most `timeout`, and returns its stdout (every line, at most 64 KiB,
/// without the final line ending; empty when it printed nothing), or why
/// there is none: it could not run, it was late (it is killed with its
/// whole process group), or it failed and printed nothing.
///
/// No thread: the command's stdout goes to an unlinked scratch file (so a
/// background child of it holding stdout open cannot stall us), and stdin
/// larger than a pipe surely holds goes through one too, so nothing blocks
/// past the timeout. When no scratch file can be made, pipes are used.
pub fn wrap(argv: &[String], stdin: &[u8], timeout: Duration) -> Result<String, String> {
    run_wrapped(argv, stdin, timeout, true)
}

/// [`wrap`], with scratch files allowed or not (the pipes-only path is tested too).
pub(crate) fn run_wrapped(
    argv: &[String],
    stdin: &[u8],
    timeout: Duration,
    files: bool,
) -> Result<String, String> {
    let make_scratch = || if files { scratch() } else { None };
    let deadline = Instant::now() + timeout;
    let Some((program, args)) = argv.split_first() else {
        return Err("no command to wrap".into());
    };
    let name = interband::text::terminal(program);
    let mut cmd = Command::new(program);
    cmd.args(args).stderr(Stdio::null());

    let mut stdin_pending = None;
    if stdin.len() <= PIPE_SAFE {
        cmd.stdin(Stdio::piped());
        stdin_pending = Some(stdin);
    } else if let Some(f) = make_scratch().and_then(|mut f| {
        f.write_all(stdin).ok()?;
        f.seek(SeekFrom::Start(0)).ok()?;
        Some(f)
    }) {
        cmd.stdin(Stdio::from(f));
    } else {
        cmd.stdin(Stdio::piped());
        stdin_pending = Some(stdin);
    }
    let out_file = make_scratch().and_then(|f| Some((f.try_clone().ok()?, f)));
    let mut out_file = match out_file {
        Some((theirs, ours)) => {
            cmd.stdout(Stdio::from(theirs));
            Some(ours)
        }
        None => {
            cmd.stdout(Stdio::piped());
            None
        }
    };

    // A group of its own, so a timeout takes its pipelines down with it.
    let (mut child, group) =
        crate::group::spawn(&mut cmd).map_err(|e| format!("{name} could not run: {e}"))?;
    drop(cmd); // closes our copies of the child's ends
    if let (Some(bytes), Some(mut pipe)) = (stdin_pending, child.stdin.take()) {
        // A command that does not read its stdin may close it: not an error.
        let _ = pipe.write_all(bytes);
    }

    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        let now = Instant::now();
        if now >= deadline {
            break None;
        }
        std::thread::sleep((deadline - now).min(POLL));
    };
    let Some(status) = status else {
        group.kill(&mut child);
        let _ = child.wait();
        return Err(format!(
            "{name} did not finish within {} ms",
            timeout.as_millis()
        ));
    };

    let mut out = Vec::new();
    let unread = |e: std::io::Error| format!("{name}'s output could not be read: {e}");
    match (&mut out_file, child.stdout.take()) {
        (Some(f), _) => {
            f.seek(SeekFrom::Start(0)).map_err(unread)?;
            f.take(MAX_OUTPUT).read_to_end(&mut out).map_err(unread)?;
        }
        (None, Some(pipe)) => {
            // A pipe is read to its end, which waits for every holder of it:
            // what the command left running in its group must not keep us.
            group.kill(&mut child);
            pipe.take(MAX_OUTPUT)
                .read_to_end(&mut out)
                .map_err(unread)?;
        }
        (None, None) => return Err(format!("{name}'s output could not be read")),
    }
    let text = String::from_utf8_lossy(&out);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.is_empty() && !status.success() {
        return Err(format!("{name} failed ({status}) and printed nothing"));
    }
    // Their colours, and nothing else that could drive the terminal.
    Ok(interband::text::keep_sgr(&text.replace("\r\n", "\n")))
}

/// A private scratch file in the temp folder, with no name (0600, gone
/// however the process ends).
pub(crate) fn scratch() -> Option<File> {
    tempfile::tempfile().ok()
}
