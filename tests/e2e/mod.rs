//! What the end-to-end tests share: a minimal loopback HTTP server, running a
//! CLI time-boxed in its own process group, installing a pinned CLI with npm
//! into a versioned cache — and the mock Anthropic Messages API, just enough
//! to drive the real Claude Code offline (`codex` and `gemini` hold the
//! others' mocks).
//!
//! One thread per connection, minimal HTTP/1.1 (request line, headers, a `Content-Length` body),
//! every answer `Connection: close`. `POST /v1/messages` answers with server-sent events; the main
//! loop's requests (those offering the `Bash` tool) follow a script of turns, the compaction request
//! gets a `<summary>`, anything else a short text. Every request is recorded for assertions.
#![allow(dead_code)]

pub mod codex;
pub mod gemini;
pub mod openai;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer of the main loop, with the usage (input tokens) it reports.
#[derive(Clone, Debug)]
pub enum Turn {
    Bash {
        command: String,
        usage: u64,
    },
    Text {
        text: String,
        usage: u64,
    },
    /// Any other tool, with its input.
    Tool {
        name: String,
        input: Value,
        usage: u64,
    },
}

/// A call of the tool `name` with `input`.
pub fn tool(usage: u64, name: &str, input: Value) -> Turn {
    Turn::Tool {
        name: name.into(),
        input,
        usage,
    }
}

pub fn bash(usage: u64) -> Turn {
    Turn::Bash {
        command: "echo hi".into(),
        usage,
    }
}

pub fn text(usage: u64, text: &str) -> Turn {
    Turn::Text {
        text: text.into(),
        usage,
    }
}

impl Turn {
    fn usage(&self) -> u64 {
        match self {
            Turn::Bash { usage, .. } | Turn::Text { usage, .. } | Turn::Tool { usage, .. } => {
                *usage
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The agent's loop: the request offers the `Bash` tool.
    Main,
    /// The compaction request: its last user message asks to "create a detailed summary".
    Summary,
    /// Anything else (titles, side queries, unknown paths).
    Other,
}

/// A request as received, and the usage the mock answered with.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
    pub kind: Kind,
    pub usage: u64,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    script: VecDeque<Turn>,
    last_usage: u64,
}

pub struct MockApi {
    port: u16,
    state: Arc<Mutex<State>>,
}

/// What a handler answers: status line, content type, body.
pub type Answer = (&'static str, &'static str, String);

/// A request handler: method, path, body.
pub type Handler = Arc<dyn Fn(&str, &str, &[u8]) -> Answer + Send + Sync>;

/// Listens on 127.0.0.1 (a free port) and answers every request with `handler`,
/// one thread per connection, for as long as the test process lives. Returns the port.
pub fn listen(handler: Handler) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let handler = handler.clone();
            std::thread::spawn(move || {
                let _ = serve(stream, &*handler);
            });
        }
    });
    port
}

impl MockApi {
    /// Listens on 127.0.0.1 (a free port); each main-loop answer is delayed by `latency`, as a real
    /// model's would be (Claude Code writes its transcript lazily: without a delay the hooks
    /// see an older usage).
    pub fn start(latency: Duration) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let port = listen(Arc::new(move |method, path, body| {
            answer(method, path, body, &shared, latency)
        }));
        MockApi { port, state }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The main loop's next answers; once they are used up it answers `Done.` at the last usage.
    pub fn script(&self, turns: impl IntoIterator<Item = Turn>) {
        self.state.lock().unwrap().script = turns.into_iter().collect();
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn serve(
    stream: TcpStream,
    handler: &(dyn Fn(&str, &str, &[u8]) -> Answer + Send + Sync),
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut len = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.trim().eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;

    let (status, content_type, out) = handler(&method, &path, &body);
    let mut w = stream;
    write!(
        w,
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
        out.len()
    )?;
    w.flush()
}

fn answer(
    method: &str,
    path: &str,
    body: &[u8],
    state: &Mutex<State>,
    latency: Duration,
) -> (&'static str, &'static str, String) {
    let raw = String::from_utf8_lossy(body).into_owned();
    let messages =
        method == "POST" && (path == "/v1/messages" || path.starts_with("/v1/messages?"));
    if !messages {
        state.lock().unwrap().requests.push(Request {
            method: method.into(),
            path: path.into(),
            body: raw,
            kind: Kind::Other,
            usage: 0,
        });
        let err = json!({"type": "error", "error": {"type": "not_found_error", "message": format!("mock: no {method} {path}")}});
        return ("404 Not Found", "application/json", err.to_string());
    }
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let kind = classify(&json);
    let (turn, n) = {
        let mut s = state.lock().unwrap();
        let last = s.last_usage;
        let turn = match kind {
            Kind::Main => s.script.pop_front().unwrap_or_else(|| text(last, "Done.")),
            Kind::Summary => text(last, "<summary>Mock summary</summary>"),
            Kind::Other => text(100, "Mock"),
        };
        if kind == Kind::Main {
            s.last_usage = turn.usage();
        }
        s.requests.push(Request {
            method: method.into(),
            path: path.into(),
            body: raw,
            kind,
            usage: turn.usage(),
        });
        (turn, s.requests.len() - 1)
    };
    if kind == Kind::Main {
        std::thread::sleep(latency);
    }
    let model = json["model"].as_str().unwrap_or("claude-mock");
    ("200 OK", "text/event-stream", events(&turn, n, model))
}

fn classify(body: &Value) -> Kind {
    let last_user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"));
    let text = match last_user.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if text.contains("create a detailed summary") {
        Kind::Summary
    } else if body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"))
    {
        Kind::Main
    } else {
        Kind::Other
    }
}

/// The server-sent events of one streamed answer; `n` (the request's number) makes the ids unique.
fn events(turn: &Turn, n: usize, model: &str) -> String {
    let (block, delta, stop) = match turn {
        Turn::Bash { command, .. } => (
            json!({"type": "tool_use", "id": format!("toolu_mock_{n}"), "name": "Bash", "input": {}}),
            json!({"type": "input_json_delta", "partial_json": json!({"command": command}).to_string()}),
            "tool_use",
        ),
        Turn::Tool { name, input, .. } => (
            json!({"type": "tool_use", "id": format!("toolu_mock_{n}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        Turn::Text { text, .. } => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
    };
    let usage = json!({"input_tokens": turn.usage(), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 10});
    [
        ("message_start", json!({"type": "message_start", "message": {"id": format!("msg_mock_{n}"), "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}})),
        ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": block})),
        ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": delta})),
        ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage})),
        ("message_stop", json!({"type": "message_stop"})),
    ]
    .iter()
    .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
    .collect()
}

/// What a time-boxed run gave.
pub struct Ran {
    /// None: killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs `cmd` in its own process group; kills the whole group after `limit`.
pub fn run_timed(mut cmd: std::process::Command, limit: Duration) -> std::io::Result<Ran> {
    use std::process::Stdio;
    let start = std::time::Instant::now();
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // The child's whole group on Unix; on Windows the child (the real CLIs'
    // Windows runs are the release workflow's).
    let kill = |child: &mut std::process::Child| {
        #[cfg(unix)]
        // SAFETY: kill(2) on the group this child leads; no memory is involved.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
        #[cfg(windows)]
        let _ = child.kill();
    };
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() > limit {
            kill(&mut child);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A grandchild left holding the pipes (a daemon the CLI started) is killed with the group.
    kill(&mut child);
    Ok(Ran {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        took: start.elapsed(),
    })
}

/// `PATH` with the folder of the interband under test first.
pub fn path_with_interband() -> std::ffi::OsString {
    let mut path =
        std::ffi::OsString::from(std::path::Path::new(crate::common::BIN).parent().unwrap());
    if let Some(p) = std::env::var_os("PATH") {
        path.push(":");
        path.push(p);
    }
    path
}

/// Runs a CLI's headless run `cmd` time-boxed and fails the test unless it
/// exits 0, saying why (what it printed, and interband's `log`); prints how
/// long it took, named `what`.
pub fn run_ok(
    cmd: std::process::Command,
    what: &str,
    limit: Duration,
    log: &std::path::Path,
) -> Ran {
    let ran = run_timed(cmd, limit).unwrap();
    let why = format!(
        "{what}\nstdout: {}\nstderr: {}\ninterband log: {:?}",
        ran.stdout,
        ran.stderr,
        std::fs::read_to_string(log)
    );
    let status = ran
        .status
        .unwrap_or_else(|| panic!("killed after {limit:?}: {why}"));
    assert!(status.success(), "{status}: {why}");
    println!("e2e: {what} took {:.1} s", ran.took.as_secs_f64());
    ran
}

/// A pinned CLI, installed with npm into `${XDG_CACHE_HOME:-~/.cache}/interband-e2e-<name>-<version>`
/// when missing (the folder `.ci/run` fills too); `None` when that fails. `bin_var` names an
/// environment variable that gives the CLI's path instead.
pub fn npm_cli(
    package: &str,
    version: &str,
    bin: &str,
    cache: &str,
    bin_var: &str,
) -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    if let Some(b) = std::env::var_os(bin_var).filter(|b| !b.is_empty()) {
        return Some(b.into());
    }
    let folder = std::env::var_os("XDG_CACHE_HOME")
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join(cache);
    let path = folder.join("node_modules/.bin").join(bin);
    if !path.exists() {
        std::fs::create_dir_all(&folder).ok()?;
        let mut npm = std::process::Command::new("npm");
        npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&folder)
            .arg(format!("{package}@{version}"));
        let ran = run_timed(npm, Duration::from_secs(600)).ok()?;
        if !ran.status.is_some_and(|s| s.success()) {
            println!("npm install {package}@{version} failed:\n{}", ran.stderr);
            return None;
        }
    }
    path.exists().then_some(path)
}

/// A real host CLI found and answering `--version`: its path and what it printed.
pub struct Cli {
    /// The executable.
    pub bin: std::path::PathBuf,
    /// Its `--version` line.
    pub version: String,
}

/// The CLI to drive when the run opted in with `var=1`, found by `find` and answering
/// `--version` within `timeout`; else why not.
pub fn opt_in(
    var: &str,
    find: impl FnOnce() -> Option<std::path::PathBuf>,
    timeout: Duration,
) -> Result<Cli, String> {
    if std::env::var(var).as_deref() != Ok("1") {
        return Err(format!(
            "opt-in: set {var}=1 (.ci/run does when npm can install the CLI)"
        ));
    }
    let bin = find().ok_or("the CLI could not be installed with npm")?;
    // In a home of its own: a CLI's first run writes there (never the user's).
    let home = tempfile::tempdir().map_err(|e| format!("no temp folder: {e}"))?;
    let mut c = std::process::Command::new(&bin);
    c.arg("--version").env("HOME", home.path());
    let ran = run_timed(c, timeout).map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !ran.status.is_some_and(|s| s.success()) {
        return Err(format!(
            "{} --version failed: {}",
            bin.display(),
            ran.stderr.trim()
        ));
    }
    Ok(Cli {
        bin,
        version: ran.stdout.trim().to_owned(),
    })
}

/// The test binary's `main` for one end-to-end test: runs `test` when `ready` finds the CLI,
/// else reports the test as ignored, with the reason on stderr (so a skipped run never reads
/// as a pass). Forced with `--include-ignored`, a test that cannot run fails with its reason.
pub fn main(
    name: &'static str,
    ready: impl FnOnce() -> Result<Cli, String>,
    test: fn(Cli),
) -> std::process::ExitCode {
    use libtest_mimic::{Arguments, Trial};
    let args = Arguments::from_args();
    let selected = !args.list
        && args.filter.as_deref().is_none_or(|f| {
            if args.exact {
                f == name
            } else {
                name.contains(f)
            }
        });
    let found = if selected {
        ready()
    } else {
        Err("not selected".to_owned())
    };
    let trial = match found {
        Ok(cli) => Trial::test(name, move || {
            println!("e2e: driving {} ({})", cli.bin.display(), cli.version);
            test(cli);
            Ok(())
        }),
        Err(why) => {
            if selected {
                eprintln!("{name}: ignored: {why}");
            }
            Trial::test(name, move || Err(format!("cannot run: {why}").into()))
                .with_ignored_flag(true)
        }
    };
    libtest_mimic::run(&args, vec![trial]).exit_code()
}

/// `interband handoff --session S --json` in `w`: the fresh session's
/// command line must be `agent`'s own, in the session's folder; returns its
/// first prompt (the note, framed) and the note's file name.
pub fn handoff(w: &crate::common::World, session: &str, agent: &str) -> (String, String) {
    let o = w.run(&["handoff", "--session", session, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let h: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(h["agent"], agent, "{h}");
    let argv: Vec<String> = serde_json::from_value(h["argv"].clone()).unwrap();
    assert_eq!(argv[0], agent, "{argv:?}");
    let prompt = argv.last().unwrap().clone();
    assert!(
        prompt.contains("<interband-memory-note") && prompt.contains("## Task"),
        "the note, with the session's task: {prompt}"
    );
    let note = std::path::Path::new(h["note"].as_str().unwrap())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    (prompt, note)
}
