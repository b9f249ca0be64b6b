//! Opt-in end-to-end test: the real Qwen Code, headless (`qwen "PROMPT"`) and
//! offline against a mock OpenAI-compatible API (`tests/e2e/openai.rs`), with
//! interband's hooks installed by `interband install --host qwen`.
//!
//! Runs only with `INTERBAND_E2E_QWEN=1`. The CLI is `INTERBAND_E2E_QWEN_BIN`, else
//! `@qwen-code/qwen-code@0.24.4` installed with npm into
//! `${XDG_CACHE_HOME:-~/.cache}/interband-e2e-qwen-0.24.4` (`.ci/run` fills it, and the
//! oldest release interband supports, 0.21.2, with `INTERBAND_E2E_QWEN_BIN`). Infrastructure
//! trouble (no npm, no network) reports the test as ignored, with the reason.
//!
//! It proves from what the mock receives and what interband publishes that the window Qwen
//! states at a turn's end (its `Stop` input) is the one the next session's tool calls are
//! measured against, that a red figure's warning reaches the model inside the tool's result,
//! that the end of a headless turn at red writes the note and makes no model request, and
//! that at Qwen's own compaction interband's instructions reach the summary's request and
//! the note comes back to the model in the new context.

mod common;
mod e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use e2e::openai::{Kind, Mock, command, text};
use serde_json::json;

const QWEN_VERSION: &str = "0.24.4";
const TIME_BOX: Duration = Duration::from_secs(120);

fn qwen_bin() -> Option<PathBuf> {
    e2e::npm_cli(
        "@qwen-code/qwen-code",
        QWEN_VERSION,
        "qwen",
        &format!("interband-e2e-qwen-{QWEN_VERSION}"),
        "INTERBAND_E2E_QWEN_BIN",
    )
}

/// Runs `qwen [ARGS] PROMPT` headless; what it printed on stderr.
fn run(bin: &Path, w: &World, mock: &Mock, project: &Path, args: &[&str], prompt: &str) -> String {
    let path = e2e::path_with_interband();
    let mut c = Command::new(bin);
    c.args(args)
        .arg(prompt)
        .args([
            "--yolo",
            "--output-format",
            "json",
            "--auth-type",
            "openai",
            "--openai-base-url",
            &mock.url(),
            "--openai-api-key",
            "test-interband-e2e",
            "-m",
            "mock-model",
        ])
        .current_dir(project)
        .env_clear()
        .env("PATH", path)
        .env("HOME", w.home())
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .env("INTERBAND_ROOT", w.root())
        .env("INTERBAND_LOG", w.dir.path().join("interband.log"));
    let ran = e2e::run_ok(
        c,
        &format!("qwen {prompt:?}"),
        TIME_BOX,
        &w.dir.path().join("interband.log"),
    );
    ran.stderr
}

fn pressure(w: &World) -> serde_json::Value {
    let sessions = w.bus().keys("interpulse", "pressure").unwrap();
    assert_eq!(sessions.len(), 1, "one session, resumed: {sessions:?}");
    w.bus()
        .read("interpulse", "pressure", &sessions[0])
        .unwrap()
        .envelope
        .payload
}

fn notes(w: &World) -> Vec<String> {
    files_under(&w.root().join("intermem/notes"))
        .into_iter()
        .filter(|f| {
            f.ends_with(".md") && !f.ends_with("latest.md") && !f.contains("session-summary")
        })
        .collect()
}

fn main() -> std::process::ExitCode {
    e2e::main(
        "the_real_qwen_code_reads_its_real_figures_offline",
        || e2e::opt_in("INTERBAND_E2E_QWEN", qwen_bin, Duration::from_secs(60)),
        the_real_qwen_code_reads_its_real_figures_offline,
    )
}

fn the_real_qwen_code_reads_its_real_figures_offline(cli: e2e::Cli) {
    let bin = cli.bin.clone();
    let w = World::new();
    let mock = Mock::start("run_shell_command", "mock-model");
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let settings = w.home().join(".qwen/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    // The OpenAI-compatible provider, and no update fetched in the middle of a test.
    std::fs::write(
        &settings,
        json!({"security": {"auth": {"selectedType": "openai"}},
               "general": {"enableAutoUpdate": false}})
        .to_string(),
    )
    .unwrap();
    let o = w.run(&[
        "install",
        "--host",
        "qwen",
        "--settings",
        settings.to_str().unwrap(),
        "--command",
        BIN,
    ]);
    assert_eq!(code(&o), 0, "interband install: {}", stderr(&o));

    // 1. A turn at low usage: the transcript's figure, then the window Qwen
    //    states at the turn's end (an unknown model: 200,000).
    mock.script([command(20_000), text(21_000, "Done.")]);
    run(&bin, &w, &mock, &project, &[], "run echo once");
    let p = pressure(&w);
    assert_eq!(p["window"], 200_000, "the Stop input's window: {p}");
    assert_eq!(p["window_source"], "hook_input", "{p}");
    assert_eq!(p["level"], "green", "{p}");

    // 2. The session goes on (`--continue`) near Qwen's compaction point
    //    (167,000 of 200,000): red at the first tool call, measured against
    //    the window Qwen stated, and said inside the tool's result.
    let before = mock.requests().len();
    mock.script([
        command(155_000),
        command(156_000),
        text(157_000, "Done."),
        text(157_500, "Noted."),
    ]);
    run(&bin, &w, &mock, &project, &["--continue"], "run echo twice");
    let run2: Vec<_> = mock.requests().split_off(before);
    let p = pressure(&w);
    assert_eq!(p["level"], "red", "{p}");
    assert_eq!(p["window"], 200_000, "{p}");
    let warned = run2
        .iter()
        .filter(|r| r.kind == Kind::Main)
        .find(|r| r.body.contains("Context RED"))
        .expect("the warning reached the model");
    let v: serde_json::Value = serde_json::from_str(&warned.body).unwrap();
    let in_tool_result = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "tool" && m["content"].to_string().contains("Context RED"));
    assert!(
        in_tool_result,
        "appended to the tool's result: {}",
        warned.body
    );
    // A headless run: the turn's end wrote the note and asked for nothing
    // more (the "Noted." turn is never taken).
    assert!(
        !run2.iter().any(|r| r.prompt == 157_500),
        "the Stop hook blocked a headless run"
    );
    // (Before 0.23.4 Qwen says `stop_hook_active: true` at every Stop, so
    // interband never blocks there at all, and has nothing to explain.)
    let says_active_always = ["0.21.", "0.22.", "0.23.0", "0.23.1", "0.23.2", "0.23.3"]
        .iter()
        .any(|v| cli.version.starts_with(v));
    let log = std::fs::read_to_string(w.dir.path().join("interband.log")).unwrap_or_default();
    assert!(
        says_active_always || log.contains("not blocking the stop of a headless run"),
        "the log says why: {log}"
    );
    assert!(!notes(&w).is_empty(), "the red turn's note");

    // 3. Past the compaction point: Qwen compacts; interband's note is written
    //    first and its instructions reach the summary's request; the note comes
    //    back to the model in the new context.
    let before = mock.requests().len();
    mock.script([
        command(170_000),
        command(30_000),
        command(31_000),
        text(32_000, "Done."),
    ]);
    run(&bin, &w, &mock, &project, &["--continue"], "run echo again");
    let run3: Vec<_> = mock.requests().split_off(before);
    let summary = run3
        .iter()
        .find(|r| r.kind == Kind::Summary)
        .expect("Qwen compacted");
    assert!(
        summary.body.contains("interband (a context monitor) saved"),
        "the summary was told what to keep: {}",
        summary.body
    );
    let at = run3.iter().position(|r| r.kind == Kind::Summary).unwrap();
    assert!(
        run3[at..]
            .iter()
            .any(|r| r.kind == Kind::Main && r.body.contains("run echo twice")),
        "the note (with the session's requests) came back after the compaction"
    );
    // The compaction's record: PostCompact handed the summary over.
    let keys = w.bus().keys("intermem", "compaction").unwrap();
    assert_eq!(keys.len(), 1, "one record: {keys:?}");
    let record = w.bus().read("intermem", "compaction", &keys[0]).unwrap();
    let r = &record.envelope.payload;
    assert_eq!(
        (r["summary_read"].clone(), r["settled"].clone()),
        (serde_json::json!(true), serde_json::json!(true)),
        "{r}"
    );
    let o = w.run(&["pressure"]);
    println!("e2e: {}", stdout(&o).lines().nth(1).unwrap_or_default());

    // 4. A fresh session instead: `interband handoff`'s prompt, given to a
    //    fresh Qwen (headless here), reaches its first request.
    let (prompt, note) = e2e::handoff(&w, &keys[0], "qwen");
    let before = mock.requests().len();
    mock.script([text(9_000, "Picked up.")]);
    run(&bin, &w, &mock, &project, &[], &prompt);
    let first = mock
        .requests()
        .split_off(before)
        .into_iter()
        .find(|r| r.kind == Kind::Main)
        .expect("the fresh session's first request");
    assert!(
        first.body.contains("interband-memory-note") && first.body.contains(&note),
        "the fresh session's first request carries the note {note}"
    );
    println!("e2e: qwen passed; {} notes", notes(&w).len());
}
