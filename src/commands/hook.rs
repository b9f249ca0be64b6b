//! `interband hook` (every host event) and `interband statusline`.

use std::io::{Read as _, Write as _};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use interband::Bus;
use interband::settings::ProcessEnv;
use interband_consumers::hooks::AllSettings;
use interband_consumers::interline;
use interband_hosts::input::MAX_INPUT_BYTES;

use super::pulse::now;
use crate::exit;

fn log_path() -> Option<std::ffi::OsString> {
    std::env::var_os("INTERBAND_LOG").filter(|p| !p.is_empty())
}

/// Appends one line to `$INTERBAND_LOG`, if set. Never fails, never blocks
/// (a FIFO nobody reads is skipped), never prints a control character raw.
pub fn log(what: &str) {
    let Some(path) = log_path() else {
        return;
    };
    let line = format!(
        "{} {}\n",
        interband::envelope::now_timestamp(),
        interband::text::terminal(what)
    );
    let how = crate::platform::Open {
        non_blocking: true,
        ..Default::default()
    };
    let _ = crate::platform::private_options(
        std::fs::OpenOptions::new().create(true).append(true),
        how,
    )
    .open(path)
    .and_then(|mut f| f.write_all(line.as_bytes()));
}

/// Logs a line that repeats on every call until the user changes something
/// (a settings problem): once, not once per call. The lines said are
/// remembered by digest under `<root>/.state/log/`.
fn log_once(bus: &Bus, what: &str) {
    if log_path().is_none() {
        return;
    }
    let digest = interband::trust::digest(what.as_bytes());
    let first = bus
        .dir(&[".state", "log"], true)
        .and_then(|dir| {
            interband::lock::update_json(
                &dir,
                "said.json",
                Duration::from_millis(200),
                |said: &mut Vec<String>| {
                    if said.contains(&digest) {
                        return false;
                    }
                    said.push(digest.clone());
                    let over = said.len().saturating_sub(256);
                    said.drain(..over);
                    true
                },
            )
        })
        .unwrap_or(true);
    if first {
        log(what);
    }
}

/// How long a hook waits for its input before it gives up quietly.
pub const STDIN_WAIT: Duration = Duration::from_secs(2);

/// Says on stderr what a host-run command is for when a person typed it (its
/// stdin is a terminal): a host always pipes its input, so a hook run by a
/// host never prints it.
fn explain_if_typed(what: &str) {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        eprintln!("{what}");
    }
}

/// Reads the hook's input from stdin, at most `cap` bytes: until EOF, or as
/// soon as a whole JSON value has arrived and nothing more is there (a host
/// that never closes stdin), or until `wait` is over. Never blocks longer.
#[cfg(unix)]
pub fn read_stdin(cap: u64, wait: Duration) -> Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let stdin = std::io::stdin();
    let fd = stdin.as_raw_fd();
    let deadline = std::time::Instant::now() + wait;
    let mut buf = Vec::new();
    // On the stack: a large zeroed buffer on the heap costs a page fault per page.
    let mut chunk = [0u8; 8192];
    let poll = |ms: i32| -> std::io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd.
            match unsafe { libc::poll(&mut pfd, 1, ms) } {
                n if n >= 0 => return Ok(n > 0),
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    };
    loop {
        // More (or the end) there right now? The usual case: read on.
        let mut ready = poll(0)?;
        if !ready {
            // Nothing yet: a whole value is all there is to it (a host that
            // keeps stdin open); else wait for more, until the deadline.
            if whole_json(&buf) {
                return Ok(buf);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            anyhow::ensure!(
                !left.is_zero(),
                "no whole hook input on stdin within {wait:?} ({} bytes, no end)",
                buf.len()
            );
            ready = poll(left.as_millis().clamp(1, i32::MAX as u128) as i32)?;
            if !ready {
                continue;
            }
        }
        let n = match stdin.lock().read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Ok(buf);
        }
        buf.extend_from_slice(&chunk[..n]);
        anyhow::ensure!(buf.len() as u64 <= cap, "stdin is over {cap} bytes");
        // A writer that never stops (nor ends) is not waited on either.
        if std::time::Instant::now() >= deadline {
            anyhow::ensure!(
                whole_json(&buf),
                "no whole hook input on stdin within {wait:?}"
            );
            return Ok(buf);
        }
    }
}

/// [`read_stdin`] on Windows, where a pipe cannot be polled: a thread
/// reads, and this one takes what it sent until the end, a whole value with
/// nothing more for now, or the deadline (the thread is left to the
/// process's exit).
#[cfg(windows)]
pub fn read_stdin(cap: u64, wait: Duration) -> Result<Vec<u8>> {
    use std::sync::mpsc::RecvTimeoutError;
    let deadline = std::time::Instant::now() + wait;
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<Vec<u8>>>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut chunk = vec![0u8; 8192];
        loop {
            let got = match stdin.read(&mut chunk) {
                Ok(n) => Ok(chunk[..n].to_vec()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let end = !matches!(&got, Ok(b) if !b.is_empty());
            if tx.send(got).is_err() || end {
                return;
            }
        }
    });
    let mut buf = Vec::new();
    loop {
        // What is there right now; when nothing is, a whole value is all
        // there is to it (a host that keeps stdin open).
        let next = match rx.try_recv() {
            Ok(got) => Ok(got),
            Err(_) if whole_json(&buf) => return Ok(buf),
            Err(_) => {
                rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            }
        };
        match next {
            Ok(Ok(bytes)) if bytes.is_empty() => return Ok(buf),
            Ok(Ok(bytes)) => {
                buf.extend_from_slice(&bytes);
                anyhow::ensure!(buf.len() as u64 <= cap, "stdin is over {cap} bytes");
                // A writer that never stops (nor ends) is not waited on either.
                if std::time::Instant::now() >= deadline {
                    anyhow::ensure!(
                        whole_json(&buf),
                        "no whole hook input on stdin within {wait:?}"
                    );
                    return Ok(buf);
                }
            }
            Ok(Err(e)) => return Err(e.into()),
            Err(RecvTimeoutError::Disconnected) => return Ok(buf),
            Err(RecvTimeoutError::Timeout) => {
                anyhow::ensure!(
                    whole_json(&buf),
                    "no whole hook input on stdin within {wait:?} ({} bytes, no end)",
                    buf.len()
                );
                return Ok(buf);
            }
        }
    }
}

/// True when `buf` holds exactly one whole JSON object (and white space).
fn whole_json(buf: &[u8]) -> bool {
    buf.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'}')
        && serde_json::from_slice::<serde_json::Value>(buf).is_ok()
}

/// Prints a host response; a closed stdout is not an error for a hook.
fn print(out: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{out}").and_then(|_| stdout.flush());
}

/// A bug must not fail the host: log it and exit 0 with nothing on stdout.
fn fail_open_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        log(&format!("panic: {info}"));
        std::process::exit(0);
    }));
}

fn home() -> Option<std::path::PathBuf> {
    interband::paths::home(&interband::settings::ProcessEnv)
}

/// `interband hook`: one JSON object on stdin, dispatched on `hook_event_name`.
/// Always exits 0 and prints nothing but a valid host response.
#[derive(Args, Default)]
pub struct Hook {
    /// The host that runs it, by its key (`claude`, `codex`, `gemini`...):
    /// `interband install` names it; without it, the input tells.
    #[arg(long, value_name = "KEY")]
    pub host: Option<String>,
    /// Arguments this build does not know (a newer or older install's):
    /// logged and ignored, never refused.
    #[arg(skip)]
    pub ignored: Vec<String>,
}

/// Logs the arguments a host-run command ignored.
fn log_ignored(command: &str, ignored: &[String]) {
    if !ignored.is_empty() {
        log(&format!(
            "{command}: ignored arguments this build does not know: {}",
            ignored.join(" ")
        ));
    }
}

impl Hook {
    pub fn run(self) -> Result<u8> {
        fail_open_on_panic();
        log_ignored("hook", &self.ignored);
        // An unknown key (a newer install's host, a typo) is said in the log;
        // the input still tells the host.
        let host = self.host.as_deref().and_then(|key| {
            // cmd.exe passes a Windows install's `; exit 0` on as arguments
            // (`--host codex;`, then `exit 0`, ignored).
            let host = interband_hosts::Host::from_key(key.strip_suffix(';').unwrap_or(key));
            if host.is_none() {
                log(&format!(
                    "hook: --host {key}: no such host; the input tells"
                ));
            }
            host
        });
        match handle(host) {
            Ok(Some(out)) => print(&out),
            Ok(None) => {}
            Err(e) => log(&format!("hook: {e:#}")),
        }
        Ok(exit::OK)
    }
}

/// The bus a hook uses when it has no root: a path under a file, where no
/// folder can ever be made, so every write fails (and is logged) and every
/// read finds nothing.
const NO_ROOT: &str = "/dev/null/interband-has-no-root";

fn handle(host: Option<interband_hosts::Host>) -> Result<Option<String>> {
    explain_if_typed(&format!(
        "interband hook reads one hook event, as JSON on stdin, from {}: the host runs it \
         (`interband install` sets that up). Paste an event and press Ctrl-D, or it gives up in 2 s.",
        interband_hosts::Host::ALL
            .map(|h| h.profile().name)
            .join(", ")
    ));
    let buf = read_stdin(MAX_INPUT_BYTES, STDIN_WAIT)?;
    // No root to be found (no INTERBAND_ROOT, no home): the agent is warned
    // all the same, as with a root it cannot write; nothing is kept.
    let bus = Bus::from_env().unwrap_or_else(|e| {
        log(&format!(
            "hook: {e}: nothing is kept, warnings still reach the agent"
        ));
        Bus::new(NO_ROOT)
    });
    let once = |what: &str| log_once(&bus, what);
    crate::dispatch::dispatch(
        &crate::dispatch::Outside {
            bus: &bus,
            env: &ProcessEnv,
            host,
            home: home(),
            now: now(),
            log: &log,
            log_once: &once,
        },
        &buf,
    )
}

/// `interband statusline`: the statusline bridge and renderer.
#[derive(Args, Default)]
pub struct Statusline {
    /// The host that runs it, by its key (`claude`, `copilot`...):
    /// `interband install` names it; without it, Claude Code's input.
    #[arg(long, value_name = "KEY")]
    pub host: Option<String>,
    /// Print each segment's render time after the line.
    #[arg(long)]
    pub timings: bool,
    /// Run your existing statusline command (argv, with the same stdin) and append our segment to its line.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "CMD")]
    pub wrap: Option<Vec<String>>,
    /// Arguments this build does not know: logged and ignored.
    #[arg(skip)]
    pub ignored: Vec<String>,
}

impl Statusline {
    pub fn run(self) -> Result<u8> {
        fail_open_on_panic();
        log_ignored("statusline", &self.ignored);
        explain_if_typed(
            "interband statusline reads Claude Code's statusline input, as JSON on stdin, and prints one line: \
             Claude Code runs it (`interband install` sets that up). Paste an input and press Ctrl-D, or it prints its line without one in 2 s.",
        );
        let buf = read_stdin(1 << 20, STDIN_WAIT).unwrap_or_default();
        let host = self.host.as_deref().and_then(|key| {
            let host = interband_hosts::Host::from_key(key);
            if host.is_none() {
                log(&format!(
                    "statusline: --host {key}: no such host; read as Claude Code's"
                ));
            }
            host
        });
        let input = interline::Input::parse_as(&buf, host.unwrap_or(interband_hosts::Host::Claude));
        let project = std::env::current_dir().ok();
        let settings = AllSettings::load(project.as_deref(), &ProcessEnv);
        let s = &settings.interline.value;
        let ours = match Bus::from_env() {
            Ok(bus) => interline::render(&bus, &input, s, &ProcessEnv, now()),
            Err(e) => {
                // No bus (no root, no home): still a line, computed from the input alone.
                log(&format!("statusline: {e}"));
                let alone = interline::Settings {
                    publish: false,
                    ..s.clone()
                };
                interline::render(&Bus::new(""), &input, &alone, &ProcessEnv, now())
            }
        };
        // The user's own statusline: when it cannot give a line, the line
        // says why in its place (and the log, once), rather than vanish.
        let shell = &host.unwrap_or_default().profile().statusline_shell_windows;
        let theirs = self.wrap.as_deref().map(|argv| {
            let argv = crate::platform::wrapped_argv(argv, shell);
            match interline::wrap(&argv, &buf, interline::wrap_timeout(s)) {
                Ok(line) => line,
                Err(why) => {
                    if let Ok(bus) = Bus::from_env() {
                        log_once(&bus, &format!("statusline --wrap: {why}"));
                    } else {
                        log(&format!("statusline --wrap: {why}"));
                    }
                    format!("[your statusline: {why}]")
                }
            }
        });
        let line = interline::compose(theirs.as_deref(), &ours.line, &s.separator);
        print(&line);
        if self.timings {
            for (name, t) in &ours.timings {
                print(&format!("{name:<10} {:>8.1}µs", t.as_secs_f64() * 1e6));
            }
        }
        Ok(exit::OK)
    }
}
