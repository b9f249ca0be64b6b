//! Whole-process cost of the `interband` binary against the process-spawn floor.
//!
//! Each case is one command run to completion (spawn + wait, timed with `Instant`), with stdin
//! from `/dev/null` (or the case's own bytes) and stdout/stderr to `/dev/null`. `floor` is
//! `/bin/true`, the cheapest process there is; the interband cases are reported as a ratio of
//! medians to it. Cases are warmed up, then interleaved: every round runs each case once, in
//! an order rotated each round, so machine drift hits all cases alike.
//!
//! Every binary measured is first dropped from the page cache, so its first run reads it from
//! disk, as after a restart: a binary the build has just written is mapped faster (its pages are
//! in memory as the write left them) than the same file read in by exec, by about 0.35 ms a run
//! on the reference machine, which would flatter every figure.
//!
//! Everything runs against a private temp dir (`INTERBAND_ROOT=<tmp>/root`, `HOME=<tmp>/home`),
//! seeded with one message so `read` has something to read.
//!
//! Builds measured side by side: the one `scripts/build-release` makes (statically linked on
//! Linux/glibc, into `target/static/`), and the one `cargo install --path .` makes (into
//! `target/install/`), which `.cargo/config.toml` links statically too; and, when `scripts/dist`
//! has written `target/dist/npm/`, the one `npm install -g` puts on PATH (installed offline into a
//! temp prefix, run at the path `interband install` writes into the hooks). With
//! `INTERBAND_BENCH_DYNAMIC=1`, also a dynamically linked build (`INTERBAND_DYNAMIC=1`, into
//! `target/dynamic/`), to see what static linking saves: a static binary skips the dynamic
//! loader, which is most of a Rust binary's cost over `/bin/true`.
//!
//! Run: `cargo bench --bench spawn`. Environment:
//! - `INTERBAND_BENCH_ROUNDS`: measured rounds, default 300.
//! - `INTERBAND_BENCH_STATIC=0`: skip the static build.
//! - `INTERBAND_BENCH_TRANSCRIPT_MB`: size of the generated large transcript, default 500.
//!
//! The `hook` cases feed the real captured PostToolUse input to `interband hook`, once with a
//! small transcript and once with a generated 500 MB one (written to the temp dir, removed after):
//! the hook reads the transcript from the end, so both should cost the same.
//! - `INTERBAND_BENCH_PEER`: a command to compare against, run as `sh -c "$INTERBAND_BENCH_PEER"`.
//! - `INTERBAND_BENCH_BASELINE`: another `interband` binary (say, the last release's, built with
//!   `scripts/build-release` in a checkout of it): its cases are measured in the same rounds,
//!   marked "(baseline)", for a before/after comparison side by side.
//!
//! Prints a markdown table and writes it as JSON to `target/bench-spawn.json`. This is a
//! benchmark, not a test: it exits 0 whatever the numbers, and 1 only if the setup fails
//! (e.g. a command exits non-zero).

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const WARMUP: usize = 10;
const PAYLOAD: &str = r#"{"level":"yellow","pressure":61,"est_tokens":1200,"ts":1796000000}"#;
/// The target the interband cases are held to: median at most this many times the floor's.
const TARGET_RATIO: f64 = 1.5;

/// One measured command.
struct Case {
    name: String,
    argv: Vec<String>,
    /// Bytes written to the child's stdin; `None` means stdin is `/dev/null`.
    stdin: Option<Vec<u8>>,
    /// Or bytes made for each run (its number): a new session every time.
    stdin_for: Option<fn(u64) -> Vec<u8>>,
    /// The build's own root, a folder of its name under the bench's root:
    /// each build keeps its sessions' state as it writes it (one build's
    /// state, rewritten by another that does not know a field, would cost
    /// it what it keeps there).
    build: String,
    /// The call writes a memory note (fsynced): not held to the target.
    writes_note: bool,
}

impl Case {
    fn new(name: impl Into<String>, argv: &[&str]) -> Case {
        let argv = argv.iter().map(ToString::to_string).collect();
        Case {
            name: name.into(),
            argv,
            stdin: None,
            stdin_for: None,
            build: String::new(),
            writes_note: false,
        }
    }

    /// Marks a call that writes a memory note.
    fn writing_a_note(self) -> Case {
        Case {
            writes_note: true,
            ..self
        }
    }

    /// Feeds `bytes` to the child's stdin.
    fn with_stdin(self, bytes: &[u8]) -> Case {
        Case {
            stdin: Some(bytes.to_vec()),
            ..self
        }
    }

    /// Whether the case runs `interband` and so is held to [`TARGET_RATIO`]
    /// (a call that writes a memory note is not: it may cost more).
    fn is_interband(&self) -> bool {
        self.argv[0].ends_with("/interband") && self.stdin_for.is_none() && !self.writes_note
    }
}

/// The statically linked binary (`scripts/build-release`), built into `target/static/`.
fn static_binary() -> Option<String> {
    if std::env::var("INTERBAND_BENCH_STATIC").is_ok_and(|v| v == "0") {
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    eprintln!("spawn bench: building the static binary (scripts/build-release)...");
    let ok = Command::new("bash")
        .arg(root.join("scripts/build-release"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let bin = root.join("target/static/release/interband");
    if ok && bin.exists() {
        Some(bin.to_string_lossy().into_owned())
    } else {
        eprintln!("spawn bench: no static build; measuring the dynamic one only");
        None
    }
}

/// Runs a build command from the repository (so `.cargo/config.toml` applies) and returns
/// `bin` when it succeeded and exists.
fn build(what: &str, cmd: &mut Command, bin: PathBuf) -> Option<String> {
    eprintln!("spawn bench: building {what}...");
    let ok = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok && bin.exists() {
        Some(bin.to_string_lossy().into_owned())
    } else {
        eprintln!("spawn bench: {what} did not build; left out");
        None
    }
}

/// The binary a user's `cargo install --path .` makes, in a fresh clone of this one.
fn installed_binary() -> Option<String> {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    build(
        "the `cargo install --path .` binary",
        Command::new("cargo")
            .args([
                "install", "--path", ".", "--locked", "--force", "--quiet", "--root",
            ])
            .arg(target.join("install-root"))
            .arg("--target-dir")
            .arg(target.join("install")),
        target.join("install-root/bin/interband"),
    )
}

/// The binary `npm install -g interband` puts on PATH, from the packages
/// `scripts/dist` wrote into `target/dist/npm/` (installed offline into a
/// temp prefix), as the hooks name it: its canonical path. None without
/// those packages or npm.
fn npm_binary(tmp: &Path) -> Option<String> {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist/npm");
    let packages: Vec<PathBuf> = std::fs::read_dir(&dist)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tgz"))
        .collect();
    let prefix = tmp.join("npm-prefix");
    let ok = Command::new("npm")
        .args([
            "install",
            "-g",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&prefix)
        .arg("--cache")
        .arg(tmp.join("npm-cache"))
        .args(&packages)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok || packages.is_empty() {
        eprintln!(
            "spawn bench: no npm packages in {} (scripts/dist); the npm case is left out",
            dist.display()
        );
        return None;
    }
    let real = std::fs::canonicalize(prefix.join("bin/interband")).ok()?;
    Some(real.to_str()?.to_owned())
}

/// A dynamically linked build, only with `INTERBAND_BENCH_DYNAMIC=1`.
fn dynamic_binary() -> Option<String> {
    if !std::env::var("INTERBAND_BENCH_DYNAMIC").is_ok_and(|v| v == "1") {
        return None;
    }
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dynamic");
    build(
        "a dynamically linked binary",
        Command::new("cargo")
            .args(["build", "--release", "--bin", "interband", "--target-dir"])
            .arg(&target)
            .env("INTERBAND_DYNAMIC", "1"),
        target.join("release/interband"),
    )
}

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude-code-2.1.332"
);

/// A transcript: the real one's lines, then `filler` bytes of realistic
/// traffic, then an assistant line at 120k tokens (yellow on a 200k window),
/// all of a 200k model.
fn make_transcript(path: &Path, filler: u64) -> std::io::Result<()> {
    make_transcript_at(path, filler, 118_300)
}

/// [`make_transcript`] with the last line's cache reads at `cache_read` tokens.
fn make_transcript_at(path: &Path, filler: u64, cache_read: u64) -> std::io::Result<()> {
    // Of a 200k model (the real session's claude-opus-5-5 has 1M), as asked for.
    let real =
        std::fs::read_to_string(Path::new(FIXTURES).join("transcript.compacted_session.jsonl"))?
            .replace("claude-opus-5-5", "claude-sonnet-4-6");
    let lines: Vec<&str> = real
        .lines()
        .filter(|l| !l.contains("compact_boundary"))
        .collect();
    let assistant = lines
        .iter()
        .rev()
        .find(|l| l.contains(r#""type":"assistant""#))
        .expect("an assistant line");
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0u64;
    while written < filler {
        for l in &lines {
            f.write_all(l.as_bytes())?;
            f.write_all(b"\n")?;
            written += l.len() as u64 + 1;
        }
    }
    let last = assistant.replace(
        r#""cache_read_input_tokens":30000"#,
        &format!(r#""cache_read_input_tokens":{cache_read}"#),
    );
    writeln!(f, "{last}")?;
    f.flush()
}

/// A transcript in another host's format: its real captured lines, `filler`
/// bytes more of them, then a usage line (yellow for that host). Named as
/// the host names it, so the hook reads it with that host's reader.
fn make_host_transcript(
    dir: &Path,
    host: &str,
    session: &str,
    filler: u64,
) -> std::io::Result<PathBuf> {
    if host == "gemini-json" {
        return make_gemini_document(dir, session, filler);
    }
    let (folder, fixture, name, last) = match host {
        "codex" => (
            dir.join(format!("codex-{filler}/sessions/2026/11/30")),
            "../codex-0.171.0/rollout.at-PostToolUse.140k.jsonl",
            format!("rollout-2026-11-30T07-24-45-{session}.jsonl"),
            serde_json::json!({"timestamp": "2026-11-30T07:28:33Z", "type": "event_msg", "payload": {"type": "token_count",
                "info": {"total_token_usage": {"total_tokens": 120_000}, "last_token_usage": {"input_tokens": 119_980,
                "cached_input_tokens": 0, "output_tokens": 20, "total_tokens": 120_000}, "model_context_window": 190_000}}}),
        ),
        "qwen" => (
            dir.join(format!("qwen-{filler}/projects/-proj/chats")),
            "../qwen-code-0.24.4/transcript.jsonl",
            format!("{session}.jsonl"),
            serde_json::json!({"uuid": "last", "type": "assistant", "model": "qwen3-coder-plus", "sessionId": session,
                "message": {"role": "model", "parts": [{"text": "ok"}]},
                "usageMetadata": {"promptTokenCount": 600_000, "candidatesTokenCount": 20, "totalTokenCount": 600_020}}),
        ),
        "copilot" => (
            dir.join(format!("copilot-{filler}/session-state/{session}")),
            "../copilot-cli-1.0.102/events.compaction-headless.jsonl",
            "events.jsonl".to_owned(),
            serde_json::json!({"type": "session.usage_record", "id": "last", "data": {"usage": {"model": "gpt-4.1",
                "inputTokens": 36_000, "outputTokens": 20, "interactionType": "conversation-agent", "maxPromptTokens": 64_000}}}),
        ),
        _ => (
            dir.join(format!("gemini-{filler}/tmp/proj/chats")),
            "../gemini-cli-0.61.0/transcript.session.jsonl",
            format!("session-2026-11-30T07-27-{}.jsonl", &session[..8]),
            serde_json::json!({"id": "last", "type": "gemini", "content": "", "model": "gemini-2.5-flash",
                "tokens": {"input": 350_000, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 350_020}}),
        ),
    };
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(name);
    let real = std::fs::read_to_string(Path::new(FIXTURES).join(fixture))?;
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let mut written = 0u64;
    loop {
        for l in real.lines() {
            f.write_all(l.as_bytes())?;
            f.write_all(b"\n")?;
            written += l.len() as u64 + 1;
        }
        if written >= filler {
            break;
        }
    }
    writeln!(f, "{last}")?;
    f.flush()?;
    Ok(path)
}

/// A Gemini chat as one JSON document, as Gemini CLI wrote it before 0.39
/// (pretty-printed, rewritten whole): the real 0.38.2 messages repeated to
/// `filler` bytes (at most 50 MB), then a reply at 350k (yellow).
fn make_gemini_document(dir: &Path, session: &str, filler: u64) -> std::io::Result<PathBuf> {
    let folder = dir.join(format!("gemini-json-{filler}/tmp/proj/chats"));
    std::fs::create_dir_all(&folder)?;
    let path = folder.join(format!("session-2026-11-30T07-27-{}.json", &session[..8]));
    let real = std::fs::read(Path::new(FIXTURES).join("../gemini-cli-0.38.2/chat.session.json"))?;
    let mut doc: serde_json::Value = serde_json::from_slice(&real)?;
    let one: Vec<serde_json::Value> = doc["messages"].as_array().cloned().unwrap_or_default();
    let size = serde_json::to_vec_pretty(&one)?.len().max(1) as u64;
    let mut messages = Vec::new();
    for _ in 0..=(filler.min(50 << 20) / size) {
        messages.extend(one.iter().cloned());
    }
    messages.push(serde_json::json!({"id": "last", "timestamp": "2026-11-30T07:28:00.000Z", "type": "gemini",
        "content": "", "thoughts": [], "model": "gemini-2.5-flash",
        "tokens": {"input": 350_000, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 350_020}}));
    doc["messages"] = serde_json::Value::Array(messages);
    let f = std::io::BufWriter::new(std::fs::File::create(&path)?);
    serde_json::to_writer_pretty(f, &doc)?;
    Ok(path)
}

/// One other host's transcripts: small and big, with their sessions.
struct HostFiles {
    host: &'static str,
    session: String,
    small: PathBuf,
    session_big: String,
    big: PathBuf,
}

/// A host's real captured tool-call input for `session` with `transcript`.
fn host_input(host: &str, session: &str, transcript: &Path) -> Vec<u8> {
    let file = match host {
        "codex" => "../codex-0.171.0/PostToolUse.input.json",
        "qwen" => "../qwen-code-0.24.4/PostToolUse.run_shell_command.input.json",
        "copilot" => "../copilot-cli-1.0.102/PostToolUse.bash.input.json",
        _ => "../gemini-cli-0.61.0/AfterTool.run_shell_command.input.json",
    };
    let real = std::fs::read(Path::new(FIXTURES).join(file)).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_slice(&real).expect("fixture is JSON");
    v["session_id"] = serde_json::json!(session);
    v["transcript_path"] = serde_json::json!(transcript);
    serde_json::to_vec(&v).expect("serializes")
}

/// The real PostToolUse input for `session` with `transcript`.
fn hook_input(session: &str, transcript: &Path) -> Vec<u8> {
    event_input("PostToolUse.input.json", session, transcript)
}

/// The real captured input `fixture` for `session` and `transcript`.
fn event_input(fixture: &str, session: &str, transcript: &Path) -> Vec<u8> {
    let real = std::fs::read(Path::new(FIXTURES).join(fixture)).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_slice(&real).expect("fixture is JSON");
    v["session_id"] = serde_json::json!(session);
    v["transcript_path"] = serde_json::json!(transcript);
    serde_json::to_vec(&v).expect("serializes")
}

/// The orange transcript the note-writing case reads (set once, before the cases).
static ORANGE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The PostToolUse input of the orange call of a new session (`n`): its
/// checkpoint's note is written in the call.
fn orange_input(n: u64) -> Vec<u8> {
    hook_input(
        &format!("bench-orange-{n}"),
        ORANGE.get().expect("written before the cases run"),
    )
}

/// The cases, `floor` first. Add new ones here.
fn cases(
    peer: Option<&str>,
    static_bin: Option<&str>,
    baseline: Option<&str>,
    others: &[(&str, String)],
    small: &Path,
    big: &Path,
    hosts: &[HostFiles],
) -> Vec<Case> {
    let mut cases = vec![Case::new("floor", &["/bin/true"])];
    let mut builds = vec![];
    if let Some(bin) = static_bin {
        builds.push(("", bin));
    }
    if let Some(bin) = baseline {
        builds.push((" (baseline)", bin));
    }
    for (suffix, bin) in others {
        builds.push((suffix, bin.as_str()));
    }
    for (suffix, bin) in builds {
        let first = cases.len();
        let publish = [
            bin,
            "publish",
            "interpulse",
            "pressure",
            "bench",
            "--type",
            "context_pressure",
            "--session",
            "bench",
            "--payload",
            PAYLOAD,
        ];
        cases.push(Case::new(
            format!("read{suffix}"),
            &[bin, "read", "interpulse/pressure/bench"],
        ));
        cases.push(Case::new(format!("publish{suffix}"), &publish));
        cases.push(
            Case::new(format!("hook{suffix}"), &[bin, "hook"])
                .with_stdin(&hook_input("bench-hook", small)),
        );
        // The end of a turn in the same session: it reads the transcript's
        // figure again, and finds nothing new.
        cases.push(
            Case::new(format!("stop{suffix}"), &[bin, "hook"]).with_stdin(&event_input(
                "Stop.input.json",
                "bench-hook",
                small,
            )),
        );
        // A compaction: PreCompact writes the note, begins the record and
        // tells the summary what to keep; PostCompact judges the summary.
        cases.push(
            Case::new(
                format!("precompact, writes the note and steers{suffix}"),
                &[bin, "hook"],
            )
            .with_stdin(&event_input(
                "PreCompact.manual.input.json",
                "bench-hook",
                small,
            ))
            .writing_a_note(),
        );
        cases.push(
            Case::new(format!("postcompact, the record{suffix}"), &[bin, "hook"]).with_stdin(
                &event_input("PostCompact.manual.input.json", "bench-hook", small),
            ),
        );
        cases.push(
            Case::new(format!("hook, 500 MB transcript{suffix}"), &[bin, "hook"])
                .with_stdin(&hook_input("bench-hook-big", big)),
        );
        cases.push(Case {
            stdin_for: Some(orange_input),
            ..Case::new(
                format!("hook at orange, writes the note{suffix}"),
                &[bin, "hook"],
            )
        });
        let statusline =
            std::fs::read(Path::new(FIXTURES).join("statusLine.input.json")).expect("fixture");
        cases.push(
            Case::new(format!("statusline{suffix}"), &[bin, "statusline"]).with_stdin(&statusline),
        );
        if suffix.is_empty() {
            // The other hosts' formats, for the build we ship.
            for h in hosts {
                // As `interband install` registers it: the host named.
                let key = h.host.trim_end_matches("-json");
                let hook = [bin, "hook", "--host", key];
                cases.push(
                    Case::new(format!("hook, {}{suffix}", h.host), &hook)
                        .with_stdin(&host_input(h.host, &h.session, &h.small)),
                );
                let size = if h.host == "gemini-json" {
                    "50 MB"
                } else {
                    "500 MB"
                };
                cases.push(
                    Case::new(format!("hook, {}, {size}{suffix}", h.host), &hook)
                        .with_stdin(&host_input(h.host, &h.session_big, &h.big)),
                );
            }
        }
        for c in &mut cases[first..] {
            c.build = suffix
                .trim()
                .trim_matches(|c| c == '(' || c == ')')
                .replace(' ', "-");
        }
    }
    if let Some(cmd) = peer {
        cases.push(Case::new("peer", &["sh", "-c", cmd]));
    }
    cases
}

/// Runs `case` once with `env`, returning the wall time in milliseconds.
fn run(case: &Case, env: &[(&str, PathBuf)]) -> Result<f64, String> {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let fresh = case
        .stdin_for
        .map(|f| f(RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let stdin = fresh.as_ref().or(case.stdin.as_ref());
    let mut cmd = Command::new(&case.argv[0]);
    cmd.args(&case.argv[1..]).envs(env.iter().map(|(k, v)| {
        if *k == "INTERBAND_ROOT" && !case.build.is_empty() {
            (k, v.join(&case.build))
        } else {
            (k, v.clone())
        }
    }));
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{}: cannot spawn {:?}: {e}", case.name, case.argv))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A child that exits without reading all of its stdin is fine.
        if let Err(e) = pipe.write_all(bytes)
            && e.kind() != ErrorKind::BrokenPipe
        {
            return Err(format!("{}: stdin: {e}", case.name));
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("{}: wait: {e}", case.name))?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    if !status.success() {
        return Err(format!(
            "{}: {:?} exited with {status}",
            case.name, case.argv
        ));
    }
    Ok(ms)
}

/// The nearest-rank `pct`th percentile of sorted, non-empty `xs`.
fn percentile(xs: &[f64], pct: usize) -> f64 {
    xs[(pct * xs.len()).div_ceil(100).max(1) - 1]
}

/// Writes `path` out and drops it from the page cache (best effort: what
/// cannot be dropped stays, as it was).
fn evict(path: &str) {
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    let _ = file.sync_all();
    // SAFETY: a valid open descriptor; advice only.
    #[cfg(target_os = "linux")]
    unsafe {
        use std::os::fd::AsRawFd;
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
    };
    // macOS and Windows have no way to drop one file's pages: they stay,
    // as they were.
}

fn bench() -> Result<(), String> {
    let rounds: usize = match std::env::var("INTERBAND_BENCH_ROUNDS") {
        Ok(s) => s
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("bad INTERBAND_BENCH_ROUNDS {s:?}"))?,
        Err(_) => 300,
    };
    let tmp = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let env = [
        ("INTERBAND_ROOT", tmp.path().join("root")),
        ("HOME", tmp.path().join("home")),
    ];
    std::fs::create_dir_all(&env[1].1).map_err(|e| format!("cannot create the temp home: {e}"))?;
    let peer = std::env::var("INTERBAND_BENCH_PEER").ok();
    let static_bin = static_binary();
    let mut others = Vec::new();
    if let Some(bin) = installed_binary() {
        others.push((" (cargo install)", bin));
    }
    if let Some(bin) = npm_binary(tmp.path()) {
        others.push((" (npm)", bin));
    }
    if let Some(bin) = dynamic_binary() {
        others.push((" (dynamic)", bin));
    }
    let (small, big) = (tmp.path().join("small.jsonl"), tmp.path().join("big.jsonl"));
    let big_mb: u64 = std::env::var("INTERBAND_BENCH_TRANSCRIPT_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    make_transcript(&small, 0).map_err(|e| format!("cannot write a transcript: {e}"))?;
    let orange = tmp.path().join("orange.jsonl");
    make_transcript_at(&orange, 0, 138_300)
        .map_err(|e| format!("cannot write a transcript: {e}"))?;
    ORANGE.set(orange).expect("set once");
    make_transcript(&big, big_mb << 20).map_err(|e| format!("cannot write a transcript: {e}"))?;
    let baseline = std::env::var("INTERBAND_BENCH_BASELINE").ok();
    let mut hosts = Vec::new();
    for (host, n) in [
        ("codex", 1),
        ("gemini", 2),
        ("gemini-json", 3),
        ("qwen", 4),
        ("copilot", 5),
    ] {
        let session = format!("{n}0a22b57-8342-7ec3-a13e-3f0ced12dfe6");
        let session_big = format!("{n}1a22b57-8342-7ec3-a13e-3f0ced12dfe6");
        let write = |session: &str, filler| {
            make_host_transcript(tmp.path(), host, session, filler)
                .map_err(|e| format!("cannot write a {host} transcript: {e}"))
        };
        hosts.push(HostFiles {
            host,
            small: write(&session, 0)?,
            big: write(&session_big, big_mb << 20)?,
            session,
            session_big,
        });
    }
    let cases = cases(
        peer.as_deref(),
        static_bin.as_deref(),
        baseline.as_deref(),
        &others,
        &small,
        &big,
        &hosts,
    );

    // Each binary as a user's machine has it after a restart: read from disk
    // by its first run, not left in memory by the build that wrote it (pages
    // a write left are mapped faster by exec: BENCHMARKS.md).
    let bins = static_bin.iter().chain(others.iter().map(|(_, b)| b));
    for bin in bins.chain(baseline.iter()) {
        evict(bin);
    }

    // Seed the message `read` reads (each build's publish case writes the
    // same one, in the build's own root), then warm up.
    for seed in cases.iter().filter(|c| c.name.starts_with("publish")) {
        run(seed, &env)?;
    }
    for case in &cases {
        for _ in 0..WARMUP {
            run(case, &env)?;
        }
    }
    let n = cases.len();
    let mut samples = vec![Vec::with_capacity(rounds); n];
    for r in 0..rounds {
        for i in (0..n).map(|i| (r + i) % n) {
            samples[i].push(run(&cases[i], &env)?);
        }
    }

    let stats: Vec<(f64, f64)> = samples
        .iter_mut()
        .map(|xs| {
            xs.sort_by(f64::total_cmp);
            (percentile(xs, 50), percentile(xs, 90))
        })
        .collect();
    let floor = stats[0].0;
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let bins = static_bin.as_deref().unwrap_or("-");
    let others_text: Vec<String> = others
        .iter()
        .map(|(s, b)| format!("{}={b}", s.trim()))
        .collect();
    println!(
        "machine: nproc={cpus}, rounds={rounds}, static={bins} {}\n",
        others_text.join(" ")
    );
    println!("| case | median ms | p90 ms | ratio to floor | ≤ {TARGET_RATIO}× floor |");
    println!("|---|---:|---:|---:|:---:|");
    let mut json = Vec::new();
    for (case, &(median, p90)) in cases.iter().zip(&stats) {
        let ratio = median / floor;
        let ok = if !case.is_interband() {
            ""
        } else if ratio <= TARGET_RATIO {
            "yes"
        } else {
            "no"
        };
        println!(
            "| {} | {median:.3} | {p90:.3} | {ratio:.2}× | {ok} |",
            case.name
        );
        let [median, p90, ratio] = [median, p90, ratio].map(|x| (x * 1e3).round() / 1e3);
        json.push(serde_json::json!({
            "case": case.name, "median_ms": median, "p90_ms": p90, "ratio": ratio,
        }));
    }
    // The npm route against cargo's, case by case (held to 1.05×: the
    // command npm puts on PATH must be the native binary, not a launcher).
    let median_of = |name: &str| {
        cases
            .iter()
            .position(|c| c.name == name)
            .map(|i| stats[i].0)
    };
    let mut compared = false;
    for case in cases.iter().filter(|c| c.name.ends_with(" (npm)")) {
        let base = case.name.trim_end_matches(" (npm)");
        if let (Some(npm), Some(cargo)) = (
            median_of(&case.name),
            median_of(&format!("{base} (cargo install)")),
        ) {
            if !compared {
                println!("\n| case | npm ÷ cargo install | ≤ 1.05× |\n|---|---:|:---:|");
                compared = true;
            }
            let r = npm / cargo;
            println!(
                "| {base} | {r:.3}× | {} |",
                if r <= 1.05 { "yes" } else { "no" }
            );
            json.push(serde_json::json!({
                "case": format!("{base}: npm / cargo install"), "ratio": (r * 1e3).round() / 1e3,
            }));
        }
    }

    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let out = target.join("bench-spawn.json");
    let text = serde_json::to_string_pretty(&json).expect("JSON values serialize");
    std::fs::create_dir_all(&target)
        .and_then(|()| std::fs::write(&out, text + "\n"))
        .map_err(|e| format!("cannot write {}: {e}", out.display()))
}

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spawn bench: {e}");
            ExitCode::FAILURE
        }
    }
}
