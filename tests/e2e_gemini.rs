//! Opt-in end-to-end test: the real Gemini CLI, headless (`gemini -p`) and
//! offline against a mock Gemini API (`tests/e2e/gemini.rs`), with interband's
//! hooks installed by `interband install --host gemini`.
//!
//! Runs only with `INTERBAND_E2E_GEMINI=1`. The CLI is `INTERBAND_E2E_GEMINI_BIN`, else
//! `@google/gemini-cli@0.61.0` installed with npm into `${XDG_CACHE_HOME:-~/.cache}/interband-e2e-gemini-0.61.0`
//! (`.ci/run` fills it). Infrastructure trouble (no npm, no network) reports the test as ignored, with the reason.
//!
//! It proves from what the mock receives and what interband publishes that the hook reads
//! Gemini's real figure from its chat recording against its real limit and compression point,
//! that the warning reaches the model inside the tool's result, that a run of several turns at
//! low usage (a PreCompress before each) writes no note, and that AfterAgent, the end of
//! Gemini's turn, writes the note of a red session and, `gemini -p` being headless, makes
//! no model request: the advice to `/compress` goes to the person, not the model.

mod common;
mod e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use e2e::gemini::{Mock, command, text};
use serde_json::json;

const GEMINI_VERSION: &str = "0.61.0";
const TIME_BOX: Duration = Duration::from_secs(120);

fn gemini_bin() -> Option<PathBuf> {
    e2e::npm_cli(
        "@google/gemini-cli",
        GEMINI_VERSION,
        "gemini",
        &format!("interband-e2e-gemini-{GEMINI_VERSION}"),
        "INTERBAND_E2E_GEMINI_BIN",
    )
}

/// Runs `gemini -p PROMPT`; what it printed on stderr.
fn run(bin: &Path, w: &World, mock: &Mock, project: &Path, prompt: &str) -> String {
    let path = e2e::path_with_interband();
    let mut c = Command::new(bin);
    c.args(["-m", "gemini-2.5-flash", "-p", prompt, "--yolo"])
        .current_dir(project)
        .env_clear()
        .env("PATH", path)
        .env("HOME", w.home())
        .env("GEMINI_API_KEY", "test-interband-e2e")
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("GOOGLE_GEMINI_BASE_URL", mock.url())
        .env("INTERBAND_ROOT", w.root())
        .env("INTERBAND_LOG", w.dir.path().join("interband.log"));
    let ran = e2e::run_ok(
        c,
        &format!("gemini -p {prompt:?}"),
        TIME_BOX,
        &w.dir.path().join("interband.log"),
    );
    ran.stderr
}

/// Whether a request carries one of interband's warnings.
fn warned(body: &str) -> bool {
    ["Context YELLOW", "Context ORANGE", "Context RED"]
        .iter()
        .any(|w| body.contains(w))
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
        "the_real_gemini_cli_reads_its_real_figures_offline",
        || e2e::opt_in("INTERBAND_E2E_GEMINI", gemini_bin, Duration::from_secs(60)),
        the_real_gemini_cli_reads_its_real_figures_offline,
    )
}

fn the_real_gemini_cli_reads_its_real_figures_offline(cli: e2e::Cli) {
    let bin = cli.bin;

    let w = World::new();
    let mock = Mock::start();
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let settings = w.home().join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    // Headless with a base URL needs the API-key auth chosen in the settings.
    std::fs::write(
        &settings,
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
    )
    .unwrap();
    let o = w.run(&[
        "install",
        "--host",
        "gemini",
        "--settings",
        settings.to_str().unwrap(),
        "--command",
        BIN,
    ]);
    assert_eq!(code(&o), 0, "interband install: {}", stderr(&o));

    // 1. Several turns at low usage: a PreCompress before each, no note.
    mock.script([command(20_000), command(21_000), text(22_000, "Done.")]);
    run(&bin, &w, &mock, &project, "run echo twice");
    let sessions = w.bus().keys("interpulse", "pressure").unwrap();
    assert_eq!(sessions.len(), 1, "the hooks ran: {sessions:?}");
    let p = w
        .bus()
        .read("interpulse", "pressure", &sessions[0])
        .unwrap()
        .envelope
        .payload;
    assert_eq!(
        p["source"], "transcript",
        "a real figure, not the heuristic: {p}"
    );
    assert_eq!(p["window"], 1_048_576, "{p}");
    assert_eq!(p["level"], "green", "{p}");
    assert!(
        notes(&w).iter().all(|n| n.ends_with("session_end.md")),
        "no note but SessionEnd's: {:?}",
        notes(&w)
    );
    assert!(mock.requests().iter().all(|r| !warned(&r.body)));

    // 2. Near the compression point (0.5 × 1,048,576): red, warned inside the
    //    tool's result, and AfterAgent writes the note and advises /compress.
    let before = mock.requests().len();
    // Two calls: before 0.32.1 Gemini writes a reply that only calls tools
    // after they ran, so the first call's hook reads no figure yet.
    mock.script([
        command(500_000),
        command(500_500),
        text(501_000, "Done."),
        text(501_500, "Noted."),
    ]);
    let printed = run(&bin, &w, &mock, &project, "run echo twice");
    let run2: Vec<_> = mock
        .requests()
        .split_off(before)
        .into_iter()
        .filter(|r| r.main)
        .collect();
    let session = w
        .bus()
        .keys("interpulse", "pressure")
        .unwrap()
        .into_iter()
        .find(|s| !sessions.contains(s))
        .expect("a second session");
    let p = w
        .bus()
        .read("interpulse", "pressure", &session)
        .unwrap()
        .envelope
        .payload;
    assert_eq!(p["level"], "red", "{p}");
    let used = p["used_tokens"].as_u64().unwrap() as f64;
    assert!(
        (used - 500_000.0).abs() <= 5_000.0 || (used - 501_000.0).abs() <= 5_010.0,
        "{p}"
    );
    assert!(
        run2.iter()
            // Appended to the tool's output (0.61.0 wraps it in <hook_context>, 0.26.0 does not).
            .any(|r| r.body.contains("functionResponse") && r.body.contains("Context RED")),
        "the warning reached the model in the tool's result: {:?}",
        run2.iter()
            .filter_map(|r| r
                .body
                .find("Context RED")
                .map(|i| &r.body[i.saturating_sub(200)..(i + 40).min(r.body.len())]))
            .collect::<Vec<_>>()
    );
    // A headless run: AfterAgent told the person, and made no model request
    // (the "Noted." turn is never asked for).
    assert!(
        !run2
            .iter()
            .any(|r| r.prompt == 501_500 || r.body.contains("Context is nearly full")),
        "AfterAgent blocked a headless run: {} main requests",
        run2.len()
    );
    // (SessionEnd took the announcement back: the session is over.)
    let log = std::fs::read_to_string(w.dir.path().join("interband.log")).unwrap_or_default();
    assert!(
        log.contains("not blocking the stop of a headless run"),
        "the log says why: {log}"
    );
    // Gemini prints a hook's systemMessage on its stderr: the person reads it.
    assert!(
        printed.contains("interband: session") && printed.contains("/compress"),
        "the advice reached the person: {printed}"
    );
    let all = notes(&w);
    assert!(
        all.iter().any(|n| !n.ends_with("session_end.md")),
        "the end-of-turn note: {all:?}"
    );
    // 3. A fresh session instead: `interband handoff`'s prompt, given to a
    //    fresh Gemini (headless here), reaches its first request.
    let (prompt, note) = e2e::handoff(&w, &session, "gemini");
    let before = mock.requests().len();
    mock.script([text(9_000, "Picked up.")]);
    run(&bin, &w, &mock, &project, &prompt);
    let first = mock
        .requests()
        .split_off(before)
        .into_iter()
        .find(|r| r.main)
        .expect("the fresh session's first request");
    assert!(
        first.body.contains("interband-memory-note") && first.body.contains(&note),
        "the fresh session's first request carries the note {note}"
    );
    println!("e2e: gemini passed; {} notes", all.len());
}
