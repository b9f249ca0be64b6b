//! Runs the real `interband` binary as a host would: a private temp root and temp home.
#![allow(dead_code)]

pub mod trials;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_interband");

/// The key of a Copilot CLI hook's command here: the shell Copilot runs it
/// in (`powershell` on Windows, `bash` elsewhere).
pub const COPILOT_SHELL: &str = if cfg!(windows) { "powershell" } else { "bash" };

/// Starts and runs commands in tests. Under Wine a process start now and then
/// fails under load with `ERROR_INTERNAL_ERROR` (1359) before the program runs
/// at all (docs/hosts.md, Wine's gaps); such a start is tried again, at most
/// five times. Any other failure, and every failure elsewhere, fails the test.
pub trait Start {
    /// `spawn()`, its start tried again where Wine failed it, or Linux found
    /// the program still open for writing (ETXTBSY).
    fn start(&mut self) -> std::process::Child;
    /// `output()`, its start tried again where Wine failed it.
    fn finish(&mut self) -> Output;
}

impl Start for Command {
    fn start(&mut self) -> std::process::Child {
        retry_start(|| self.spawn())
    }
    fn finish(&mut self) -> Output {
        retry_start(|| self.output())
    }
}

fn retry_start<T>(mut f: impl FnMut() -> std::io::Result<T>) -> T {
    const WINE_START_FAILED: i32 = 1359;
    // A script a test has just written is, for a moment, still open for
    // writing in a process another test forked meanwhile (until it execs):
    // Linux refuses to run it then (ETXTBSY). It passes by itself.
    const TEXT_FILE_BUSY: i32 = 26;
    let mut tries = 0;
    loop {
        match f() {
            Err(e) if cfg!(windows) && e.raw_os_error() == Some(WINE_START_FAILED) && tries < 5 => {
                tries += 1
            }
            Err(e) if cfg!(unix) && e.raw_os_error() == Some(TEXT_FILE_BUSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r.unwrap(),
        }
    }
}

/// What Claude Code's `PreCompact` hook prints: plain text the host adds to
/// its summary's request (every other response is one JSON object).
pub const STEER_OPENING: &str = "interband (a context monitor) saved";

/// The JSON host response `out` is, or `None` for the plain text Claude
/// Code's `PreCompact` takes (its summary's instructions, [`STEER_OPENING`]);
/// anything else fails the test: a hook prints nothing but a valid response.
pub fn host_response(stdin: &[u8], out: &str) -> Option<serde_json::Value> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(out) {
        return Some(v);
    }
    let event = serde_json::from_slice::<serde_json::Value>(stdin)
        .ok()
        .and_then(|v| v["hook_event_name"].as_str().map(str::to_owned));
    assert!(
        event.as_deref() == Some("PreCompact") && out.starts_with(STEER_OPENING),
        "not a valid host response to {event:?}: {out}"
    );
    None
}

/// A private world: `INTERBAND_ROOT` and `HOME` under one temp folder.
pub struct World {
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        World { dir }
    }
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    /// The binary with this world's environment (and nothing of the caller's interband settings).
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("INTERBAND_ROOT", self.root())
            .env("HOME", self.home())
            // Windows' home (interband::paths::home).
            .env("USERPROFILE", self.home())
            .stdin(Stdio::null());
        c
    }
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).finish()
    }
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        with_stdin(&mut self.cmd(args), stdin)
    }
    /// `interband publish NS CH KEY --type TY --session KEY --payload ...`,
    /// as a plugin would; it must succeed. Returns what it printed (path, seq).
    pub fn publish(
        &self,
        ns: &str,
        ch: &str,
        key: &str,
        ty: &str,
        payload: &serde_json::Value,
    ) -> serde_json::Value {
        let o = self.run(&[
            "publish",
            ns,
            ch,
            key,
            "--type",
            ty,
            "--session",
            key,
            "--payload",
            &payload.to_string(),
        ]);
        assert_eq!(code(&o), 0, "publish {ns}/{ch}/{key}: {}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap_or_default()
    }
    pub fn bus(&self) -> interband::Bus {
        interband::Bus::new(self.root())
    }
}

/// Runs `cmd` with `stdin` piped in, and collects its output.
pub fn with_stdin(cmd: &mut Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start();
    let mut pipe = child.stdin.take().unwrap();
    // The child may stop reading early (a size cap): a broken pipe is fine.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().unwrap()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `dir`, recursively, relative names (`/` between
/// their parts on every system).
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                let parts: Vec<String> = p
                    .strip_prefix(dir)
                    .unwrap()
                    .iter()
                    .map(|part| part.to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    out.sort();
    out
}

/// The repository's folder.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One of the real Claude Code 2.1.332 captures in `tests/fixtures/`, as bytes.
pub fn capture(name: &str) -> Vec<u8> {
    let path = repo().join("tests/fixtures/claude-code-2.1.332").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Polls `f` until it returns Some, or panics after `secs`.
pub fn poll<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Runs `cmd` with `stdin` written (and closed), and fails the test if it is
/// still running after `limit`: a hook must never hang its host.
pub fn run_within(cmd: &mut Command, stdin: &[u8], limit: std::time::Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start();
    let mut pipe = child.stdin.take().unwrap();
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let what = format!("{:?}", cmd.get_args().collect::<Vec<_>>());
    wait_labelled(child, limit, &what)
}

/// Waits for `child` at most `limit` (then kills it and fails the test).
pub fn wait_within(child: std::process::Child, limit: std::time::Duration) -> Output {
    wait_labelled(child, limit, "the command")
}

fn wait_labelled(mut child: std::process::Child, limit: std::time::Duration, what: &str) -> Output {
    use std::io::Read;
    // Drained while it runs, so a command that prints much never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!(
                "{what}: still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Makes a link at `link` to `target` (on Windows, a folder's link when
/// `target` is a folder). Under Wine a link shows as what it names, so a
/// test of links is ignored there ([`LINKS_UNDER_WINE`]).
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    let (target, link) = (target.as_ref(), link.as_ref());
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(target, link);
    #[cfg(windows)]
    let made = if target.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    };
    made.unwrap_or_else(|e| panic!("{} -> {}: {e}", link.display(), target.display()));
}

/// Why a test of links cannot run under Wine (docs/hosts.md, Platforms).
pub const LINKS_UNDER_WINE: &str = "Wine shows a link as what it names (docs/hosts.md, Platforms); runs on the release workflow's Windows";

/// Whether this is the Windows build that only the Wine check runs.
pub const UNDER_WINE: bool = cfg!(all(windows, target_env = "gnu"));

/// Makes `path` runnable by its owner (Unix; Windows runs a file by its
/// extension).
pub fn set_executable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    #[cfg(windows)]
    let _ = path;
}

/// Makes a FIFO at `path`.
#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "{}",
        path.display()
    );
}

/// Fails when `text` holds a character that must not reach a terminal raw
/// (controls other than newline and tab, DEL, C1, bidirectional controls).
pub fn assert_terminal_safe(what: &str, text: &str) {
    for c in text.chars() {
        assert!(
            !interband::text::is_unsafe(c) || c == '\n' || c == '\t',
            "{what}: raw {c:?} in {text:?}"
        );
    }
}

/// The real Claude Code transcript up to its compaction, then a reply whose
/// usage puts `used` tokens in context, of a 200k model (the real one's
/// `claude-opus-5-5` has 1M), written to `dir/name`.
pub fn claude_transcript(dir: &Path, name: &str, used: u64) -> PathBuf {
    let real = String::from_utf8(capture("transcript.compacted_session.jsonl")).unwrap();
    let lines: Vec<&str> = real.lines().collect();
    let template = lines
        .iter()
        .rev()
        .find(|l| l.contains(r#""type":"assistant""#))
        .unwrap();
    let mut last: serde_json::Value = serde_json::from_str(template).unwrap();
    last["message"]["model"] = serde_json::json!(interpulse::synthetic::MODEL);
    last["requestedModel"] = serde_json::json!(interpulse::synthetic::MODEL);
    last["message"]["usage"]["input_tokens"] = serde_json::json!(used / 10);
    last["message"]["usage"]["cache_creation_input_tokens"] = serde_json::json!(0);
    last["message"]["usage"]["cache_read_input_tokens"] = serde_json::json!(used - used / 10);
    let boundary = lines
        .iter()
        .position(|l| l.contains("compact_boundary"))
        .unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{}\n{last}\n", lines[..boundary].join("\n"))).unwrap();
    path
}

/// The clauses of `text` that give an order: those opening with a verb in
/// the imperative (interband informs and never orders: README, docs/hooks.md).
pub fn orders(text: &str) -> Vec<&str> {
    const VERBS: [&str; 14] = [
        "bring", "finish", "start", "save", "stop", "do", "don't", "run", "commit", "wrap",
        "avoid", "keep", "make", "never",
    ];
    text.split(['.', ':', ';', '!', '\n'])
        .map(str::trim)
        .filter(|clause| {
            let first = clause
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase();
            VERBS.contains(&first.as_str())
        })
        .collect()
}
