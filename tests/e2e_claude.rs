//! Opt-in end-to-end test: the real Claude Code CLI, headless and offline against a mock Messages
//! API (`tests/e2e/`), with interband's hooks installed by `interband install`.
//!
//! Runs only with `INTERBAND_E2E_CLAUDE=1`. The CLI is `INTERBAND_E2E_CLAUDE_BIN`, else
//! `@anthropic-ai/claude-code@2.1.332` installed with npm into `${XDG_CACHE_HOME:-~/.cache}/interband-e2e-2.1.332`
//! (reused when present). Infrastructure trouble (no npm, no network) reports the test as ignored, with the reason.
//!
//! It proves, through what the mock receives, that a 1M session (`[1m]`) at 175k is told nothing and
//! has a 1M window, that a context warning reaches the model of a 200k session once the
//! reported usage crosses orange, that the Stop hook of this headless run saves a memory note and
//! makes no model request (the advice goes to the person), and that after a headless `/compact` the PreCompact note comes back to the model.

mod common;
mod e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use e2e::{Kind, MockApi, Request, bash, run_timed, text, tool};
use serde_json::{Value, json};

/// Usage at which a 200k window is orange: usable context (167k) less than 20% left.
const ORANGE_TOKENS: u64 = 134_000;
/// Every claude run is killed after this.
const TIME_BOX: Duration = Duration::from_secs(120);
/// A main-loop answer's delay, as a real model's (Claude Code flushes its transcript lazily).
const LATENCY: Duration = Duration::from_millis(300);

/// The Claude Code release the fixtures and host contracts were captured from
/// (`.ci/run` installs the same one).
const CLAUDE_CODE_VERSION: &str = "2.1.332";

/// The CLI to drive, installing it into the cache folder when needed; None when that fails.
fn claude_bin() -> Option<PathBuf> {
    e2e::npm_cli(
        "@anthropic-ai/claude-code",
        CLAUDE_CODE_VERSION,
        "claude",
        &format!("interband-e2e-{CLAUDE_CODE_VERSION}"),
        "INTERBAND_E2E_CLAUDE_BIN",
    )
}

/// A private world for claude: home, temp and runtime folders, a project, the mock API.
struct Claude<'a> {
    bin: PathBuf,
    w: &'a World,
    api: &'a MockApi,
    settings: PathBuf,
}

impl Claude<'_> {
    fn dir(&self, name: &str) -> PathBuf {
        let d = self.w.dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn command(&self, args: &[&str]) -> Command {
        let interband_dir = Path::new(BIN).parent().unwrap();
        let mut path = std::ffi::OsString::from(interband_dir);
        if let Some(p) = std::env::var_os("PATH") {
            path.push(":");
            path.push(p);
        }
        let runtime = self.dir("run");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let mut c = Command::new(&self.bin);
        c.args(args)
            .arg("--settings")
            .arg(&self.settings)
            .args(["--allowedTools", "Bash", "--output-format", "json"])
            .current_dir(self.dir("project"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.w.home())
            .env("CLAUDE_CODE_TMPDIR", self.dir("tmp"))
            .env("XDG_RUNTIME_DIR", runtime)
            .env("INTERBAND_ROOT", self.w.root())
            .env("INTERBAND_LOG", self.w.dir.path().join("interband.log"))
            .env("ANTHROPIC_BASE_URL", self.api.url())
            .env("ANTHROPIC_API_KEY", "sk-test-interband-e2e-0123456789")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1");
        c
    }

    /// Runs claude headless on `model` to the end (time-boxed) and returns
    /// its JSON result. The model is given both ways a user gives it,
    /// `--model` and `ANTHROPIC_MODEL`: the Node.js releases (1.x, 2.0) hide
    /// their arguments from the hooks, and write no `requestedModel`.
    fn run(&self, model: &str, args: &[&str]) -> Value {
        let mut c = self.command(&[args, &["--model", model]].concat());
        c.env("ANTHROPIC_MODEL", model);
        let ran = run_timed(c, TIME_BOX).unwrap();
        let log = std::fs::read_to_string(self.w.dir.path().join("interband.log"));
        let why = format!(
            "claude {args:?}\nstdout: {}\nstderr: {}\ninterband log: {log:?}",
            ran.stdout, ran.stderr
        );
        let status = ran
            .status
            .unwrap_or_else(|| panic!("killed after {TIME_BOX:?}: {why}"));
        assert!(status.success(), "{status}: {why}");
        let result: Value = serde_json::from_str(ran.stdout.trim())
            .unwrap_or_else(|e| panic!("not one JSON result ({e}): {why}"));
        assert_eq!(result["is_error"], false, "{why}");
        println!(
            "e2e: claude {args:?} took {:.1} s, {} turns",
            ran.took.as_secs_f64(),
            result["num_turns"]
        );
        result
    }
}

/// The memory notes (not the `latest.md` copy, not the session summary).
fn note_files(w: &World) -> Vec<String> {
    files_under(&w.root().join("intermem/notes"))
        .into_iter()
        .filter(|f| {
            f.ends_with(".md") && !f.ends_with("latest.md") && !f.ends_with("session-summary.md")
        })
        .collect()
}

/// `len` characters of `body` from where `needle` starts, for the report.
fn excerpt(body: &str, needle: &str, len: usize) -> String {
    body.find(needle)
        .map(|i| body[i..].chars().take(len).collect())
        .unwrap_or_default()
}

fn warns(r: &Request) -> bool {
    r.body.contains("Context ORANGE") || r.body.contains("Context RED")
}

fn main() -> std::process::ExitCode {
    e2e::main(
        "the_real_claude_code_runs_the_loop_offline",
        || e2e::opt_in("INTERBAND_E2E_CLAUDE", claude_bin, Duration::from_secs(30)),
        the_real_claude_code_runs_the_loop_offline,
    )
}

fn the_real_claude_code_runs_the_loop_offline(cli: e2e::Cli) {
    let bin = cli.bin.clone();
    let started = Instant::now();
    // The release the fixtures were captured from; `.ci/run` also drives the
    // oldest one with every event interband uses.
    let pinned = cli.version.starts_with(CLAUDE_CODE_VERSION);

    let w = World::new();
    let api = MockApi::start(LATENCY);
    let settings = w.dir.path().join("settings.json");
    let o = w.run(&[
        "install",
        "--settings",
        settings.to_str().unwrap(),
        "--command",
        BIN,
    ]);
    assert_eq!(code(&o), 0, "interband install: {}", stderr(&o));
    let claude = Claude {
        bin,
        w: &w,
        api: &api,
        settings,
    };

    // 0. A 1M session (`[1m]`), headless, no statusline, usage rising to
    // 175k (17%): nothing reaches the model, Stop advises nothing, and the
    // window is 1M.
    api.script([
        bash(30_000),
        bash(90_000),
        bash(140_000),
        bash(160_000),
        bash(175_000),
        text(175_000, "Done."),
    ]);
    let result = claude.run(
        "claude-sonnet-4-5[1m]",
        &["-p", "Run `echo hi` a few times"],
    );
    let large = result["session_id"].as_str().unwrap().to_owned();
    let run0 = api.requests();
    assert!(
        !run0
            .iter()
            .any(|r| warns(r) || r.body.contains("Context is nearly full")),
        "a 1M session at 17% is told nothing: {:?}",
        run0.iter()
            .map(|r| excerpt(&r.body, "Context ", 120))
            .filter(|e| !e.is_empty())
            .collect::<Vec<_>>()
    );
    let p = w.bus().read("interpulse", "pressure", &large).unwrap();
    let p = &p.envelope.payload;
    assert_eq!(
        (p["window"].as_u64(), p["used_tokens"].as_u64()),
        (Some(1_000_000), Some(175_000)),
        "{p}"
    );
    assert_eq!(p["level"], "green", "{p}");
    let o = w.run(&["pressure", "--json", "--all"]);
    assert!(stdout(&o).contains("\"window\":1000000"), "{}", stdout(&o));
    println!(
        "e2e: claude-sonnet-4-5[1m] at 175k: no warning, window {} from the {}",
        p["window"], p["window_source"]
    );
    let before = run0.len();

    // 1. A session of the 200k model whose reported usage rises through
    // yellow, orange and red; in the release pinned, the agent keeps its
    // work as tasks (TaskCreate, TaskUpdate), which the note and the
    // summary's instructions carry as open todos.
    let task = "Make the greeting louder";
    let mut turns = Vec::new();
    if pinned {
        turns.extend([
            tool(
                20_000,
                "TaskCreate",
                json!({"subject": task, "description": "Print the greeting in capitals.",
                    "activeForm": "Making the greeting louder"}),
            ),
            tool(
                25_000,
                "TaskUpdate",
                json!({"taskId": "1", "status": "in_progress"}),
            ),
        ]);
    }
    turns.extend([
        bash(30_000),
        bash(90_000),
        bash(140_000),
        bash(160_000),
        bash(165_000),
        bash(166_000),
        bash(166_000),
        bash(166_000),
        text(166_000, "Done."),
        text(166_500, "Noted."),
    ]);
    api.script(turns);
    let sonnet = "claude-sonnet-4-5";
    let result = claude.run(sonnet, &["-p", "Run `echo hi` a few times"]);
    let session = result["session_id"].as_str().unwrap().to_owned();
    let run1 = api.requests().split_off(before);
    let others: Vec<_> = run1.iter().filter(|r| r.kind == Kind::Other).collect();
    println!(
        "e2e: {} requests, {} outside the main loop: {:?}",
        run1.len(),
        others.len(),
        others
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );
    let crossed = run1
        .iter()
        .position(|r| r.kind == Kind::Main && r.usage >= ORANGE_TOKENS)
        .unwrap();
    let warned = run1.iter().position(warns).unwrap_or_else(|| {
        panic!(
            "no request carried a context warning; interband's pressure: {:?}",
            w.bus().read("interpulse", "pressure", &session)
        )
    });
    assert!(
        warned > crossed,
        "a warning before the usage crossed orange (request {warned})"
    );
    let body = &run1[warned].body;
    let said = excerpt(body, "Context ORANGE", 100) + &excerpt(body, "Context RED", 100);
    println!(
        "e2e: the answer to request #{crossed} crossed orange; request #{warned} carried the warning: {said}"
    );

    // 2. Stop drained the checkpoint into a memory note and announced the compaction on the
    // bus; `claude -p` being headless, it told the person and made no model request (the
    // "Noted." turn is never asked for).
    let notes = note_files(&w);
    assert!(
        w.root()
            .join(format!("intermem/note/{session}.json"))
            .is_file(),
        "no intermem/note announcement: {notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.ends_with("_pressure.md")),
        "no checkpoint note: {notes:?}"
    );
    assert!(
        !run1
            .iter()
            .any(|r| r.usage == 166_500 || r.body.contains("Context is nearly full")),
        "Stop blocked a headless run: {} requests",
        run1.len()
    );
    // (SessionEnd took the announcement back: the session is over.)
    let log = std::fs::read_to_string(w.dir.path().join("interband.log")).unwrap_or_default();
    assert!(
        log.contains("not blocking the stop of a headless run (CLAUDE_CODE_")
            && log.contains(&format!("--resume {session}")),
        "the log says why, and how to compact: {log}"
    );
    api.script([]);
    println!(
        "e2e: Stop of a headless run: no model request after the turn's end; {} requests in all",
        run1.len()
    );

    // 3. A headless compaction with the person's own instructions: PreCompact writes a note and
    //    tells the summary what to keep, after those instructions; nothing else reaches the
    //    model in this run.
    let before = api.requests().len();
    let result = claude.run(
        sonnet,
        &[
            "-p",
            "/compact focus on the hello output",
            "--resume",
            &session,
        ],
    );
    assert_eq!(result["session_id"], session.as_str(), "same session");
    let run2 = api.requests().split_off(before);
    assert!(
        run2.iter().any(|r| r.kind == Kind::Summary),
        "a compaction request: {:?}",
        run2.iter().map(|r| r.kind).collect::<Vec<_>>()
    );
    let pre_compact = note_files(&w)
        .into_iter()
        .find(|n| n.contains("pre_compact_manual"))
        .unwrap_or_else(|| panic!("no PreCompact note: {:?}", note_files(&w)));
    let pre_compact_name = Path::new(&pre_compact)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    assert!(
        run2.iter()
            .all(|r| !r.body.contains("before this context was compacted")),
        "SessionStart(compact) comes after the summary request"
    );
    println!(
        "e2e: /compact made {} request(s); PreCompact wrote {pre_compact_name}",
        run2.len()
    );
    let summary = run2.iter().find(|r| r.kind == Kind::Summary).unwrap();
    let at = |needle: &str| summary.body.find(needle);
    let (theirs, ours, path) = (
        at("focus on the hello output"),
        at("interband (a context monitor) saved"),
        at(pre_compact_name),
    );
    let steered = matches!((theirs, ours, path), (Some(t), Some(o), Some(p)) if t < o && o < p);
    if pinned {
        assert!(
            at("Additional Instructions:").is_some_and(|a| theirs.is_some_and(|t| a < t))
                && steered,
            "the summary request carries the person's instructions, then interband's with the note: {}",
            excerpt(&summary.body, "Additional Instructions:", 1200)
        );
    }
    if pinned {
        // The task kept with TaskCreate/TaskUpdate, read from the real
        // transcript: in the note and in the summary's instructions.
        let note =
            std::fs::read_to_string(w.root().join("intermem/notes").join(&pre_compact)).unwrap();
        assert!(note.contains(task), "the task in the note: {note}");
        assert!(
            summary.body[ours.unwrap()..].contains(task),
            "the task in the instructions: {}",
            excerpt(&summary.body, "interband (a context monitor) saved", 1500)
        );
    }
    println!(
        "e2e: {}: the summary request carried interband's instructions after the person's: {steered}: {}",
        cli.version,
        excerpt(&summary.body, "interband (a context monitor) saved", 300)
    );

    // 4. The next turn: the summary replaced the history, and SessionStart(compact)'s note is there.
    api.script([bash(20_000), text(25_000, "Done.")]);
    let before = api.requests().len();
    claude.run(sonnet, &["-p", "continue", "--resume", &session]);
    let run3 = api.requests().split_off(before);
    let first = run3
        .iter()
        .find(|r| r.kind == Kind::Main)
        .expect("a request after the compaction");
    assert!(first.body.contains("Mock summary"), "the summary is sent");
    assert!(
        !first.body.contains("\"toolu_mock_0\""),
        "the compacted history is gone"
    );
    let back = first
        .body
        .contains("saved by interband before it was compacted")
        && first.body.contains(pre_compact_name);
    if pinned {
        assert!(
            back,
            "the PreCompact note came back: {}",
            excerpt(&first.body, "<interband-memory-note", 300)
        );
    } else {
        // Older releases (seen with 1.0.128, 2.0.8, 2.1.6) do not carry
        // SessionStart(compact)'s context into a headless `--resume`: said,
        // not failed (docs/hosts.md).
        println!(
            "e2e: {}: the PreCompact note came back into the resumed session: {back}",
            cli.version
        );
    }
    let pressure = w.bus().read("interpulse", "pressure", &session).unwrap();
    assert_eq!(
        pressure.envelope.payload["level"], "green",
        "the level starts over after the compaction"
    );
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(w.root().join(format!(".state/interpulse/{session}.json"))).unwrap(),
    )
    .unwrap();
    assert!(
        state["compactions"].as_u64() >= Some(1),
        "the producer saw a new context start: {state}"
    );
    println!(
        "e2e: the first request after /compact carried: {}",
        excerpt(
            &first.body,
            "saved by interband before it was compacted",
            200
        )
    );
    // 5. The compaction's record: the mock's summary judged, the note's return settled.
    let record = w.bus().read("intermem", "compaction", &session).unwrap();
    let r = &record.envelope.payload;
    if pinned {
        assert_eq!(
            r["summary_read"], true,
            "PostCompact handed the summary over: {r}"
        );
        assert_eq!(r["settled"], true, "{r}");
    }
    let o = w.run(&["pressure", "--session", &session]);
    println!("e2e: {}", stdout(&o).trim());
    assert!(
        stdout(&o).contains("last compaction: compacted"),
        "{}",
        stdout(&o)
    );
    // 6. A fresh session instead: `interband handoff` gives the command line
    //    of a fresh session in the same folder; its prompt is the note, and
    //    the fresh session's first request carries it (headless here: `-p`
    //    with the same prompt).
    let o = w.run(&["handoff", "--session", &session, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let h: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(h["agent"], "claude", "{h}");
    let argv: Vec<String> = serde_json::from_value(h["argv"].clone()).unwrap();
    assert_eq!(argv[0], "claude", "{argv:?}");
    let prompt = argv.last().unwrap();
    api.script([text(9_000, "Picked up.")]);
    let before = api.requests().len();
    let fresh = claude.run(sonnet, &["-p", prompt]);
    assert_ne!(fresh["session_id"], session.as_str(), "a fresh session");
    let first = api
        .requests()
        .split_off(before)
        .into_iter()
        .find(|r| r.kind == Kind::Main)
        .expect("the fresh session's first request");
    let note = Path::new(h["note"].as_str().unwrap())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        first.body.contains("interband-memory-note") && first.body.contains(&note),
        "the first request carries the note: {}",
        excerpt(&first.body, "interband-memory-note", 300)
    );
    println!("e2e: handoff: the fresh session's first request carried {note}");
    println!("e2e: passed in {:.1} s", started.elapsed().as_secs_f64());
}
