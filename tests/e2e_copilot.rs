//! Opt-in end-to-end test: the real GitHub Copilot CLI, headless (`copilot -p`)
//! and offline (BYOK, `COPILOT_OFFLINE=true`) against a mock OpenAI-compatible API
//! (`tests/e2e/openai.rs`), with interband's hooks installed by
//! `interband install --host copilot`.
//!
//! Runs only with `INTERBAND_E2E_COPILOT=1`. The CLI is `INTERBAND_E2E_COPILOT_BIN`, else
//! `@github/copilot@1.0.102` installed with npm into
//! `${XDG_CACHE_HOME:-~/.cache}/interband-e2e-copilot-1.0.102` (`.ci/run` fills it, and the
//! oldest release whose hooks reach the model, 1.0.49, with `INTERBAND_E2E_COPILOT_BIN`).
//! Infrastructure trouble (no npm, no network) reports the test as ignored, with the reason.
//!
//! It proves from what the mock receives and what interband publishes that the hook reads
//! Copilot's real figure and limit from the session's `events.jsonl` (which a tool call's
//! input does not name), that a red figure's warning reaches the model inside the tool's
//! result, that the end of a headless turn at red writes the note and makes no model
//! request, and that after Copilot's own compaction (no hook follows it) the note comes back
//! to the model with the next tool call.

mod common;
mod e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use e2e::openai::{Kind, Mock, command, text};

const COPILOT_VERSION: &str = "1.0.102";
const TIME_BOX: Duration = Duration::from_secs(120);

fn copilot_bin() -> Option<PathBuf> {
    e2e::npm_cli(
        "@github/copilot",
        COPILOT_VERSION,
        "copilot",
        &format!("interband-e2e-copilot-{COPILOT_VERSION}"),
        "INTERBAND_E2E_COPILOT_BIN",
    )
}

/// The prompt limit the runs give Copilot (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`):
/// it compacts at 80% of it, 16,000.
const LIMIT: u64 = 20_000;

/// Runs `copilot -p PROMPT` headless; what it printed on stderr.
fn run(bin: &Path, w: &World, mock: &Mock, project: &Path, prompt: &str) -> String {
    let path = e2e::path_with_interband();
    let mut c = Command::new(bin);
    c.args(["-p", prompt, "--allow-all-tools"])
        .current_dir(project)
        .env_clear()
        .env("PATH", path)
        .env("HOME", w.home())
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_PROVIDER_BASE_URL", mock.url())
        .env("COPILOT_PROVIDER_API_KEY", "test-interband-e2e")
        .env("COPILOT_MODEL", "gpt-4.1")
        .env("COPILOT_PROVIDER_MAX_PROMPT_TOKENS", LIMIT.to_string())
        .env("INTERBAND_ROOT", w.root())
        .env("INTERBAND_LOG", w.dir.path().join("interband.log"));
    let ran = e2e::run_ok(
        c,
        &format!("copilot -p {prompt:?}"),
        TIME_BOX,
        &w.dir.path().join("interband.log"),
    );
    ran.stderr
}

/// The pressure of the session the latest run started (each `copilot -p` is one).
fn newest(w: &World, before: &[String]) -> (String, serde_json::Value) {
    let session = w
        .bus()
        .keys("interpulse", "pressure")
        .unwrap()
        .into_iter()
        .find(|s| !before.contains(s))
        .expect("the run's session published its pressure");
    let p = w
        .bus()
        .read("interpulse", "pressure", &session)
        .unwrap()
        .envelope
        .payload;
    (session, p)
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
        "the_real_copilot_cli_reads_its_real_figures_offline",
        || {
            e2e::opt_in(
                "INTERBAND_E2E_COPILOT",
                copilot_bin,
                Duration::from_secs(60),
            )
        },
        the_real_copilot_cli_reads_its_real_figures_offline,
    )
}

fn the_real_copilot_cli_reads_its_real_figures_offline(cli: e2e::Cli) {
    let bin = cli.bin;
    let w = World::new();
    let mock = Mock::start("bash", "gpt-4.1");
    // The case under test, not a wait for an event: a model that takes its
    // time to answer, as a real one does. Copilot writes its session log in
    // batches after 100 ms of quiet (docs/hosts.md), so under a model that
    // answers at once its hooks read the previous call's figure.
    mock.latency(Duration::from_millis(1500));
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let settings = w.home().join(".copilot/settings.json");
    let o = w.run(&[
        "install",
        "--host",
        "copilot",
        "--settings",
        settings.to_str().unwrap(),
        "--command",
        BIN,
    ]);
    assert_eq!(code(&o), 0, "interband install: {}", stderr(&o));
    // Two more preCompact hooks beside interband's, printing canaries in each
    // shape a hook's output takes (JSON context and message, the
    // hookSpecificOutput shape, plain stdout): whether any reaches Copilot's
    // summary request is what this run finds out (docs/hosts.md, "Steering a
    // compaction").
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let canary = |cmd: &str| serde_json::json!({"type": "command", "bash": cmd, "timeoutSec": 10});
    let pre = v["hooks"]["PreCompact"]
        .as_array_mut()
        .expect("interband's PreCompact hook");
    pre.push(canary(
        r#"printf '%s' '{"additionalContext":"CANARY-JSON-CONTEXT","systemMessage":"CANARY-JSON-MESSAGE","hookSpecificOutput":{"hookEventName":"PreCompact","additionalContext":"CANARY-HSO-CONTEXT"}}'"#,
    ));
    pre.push(canary("echo CANARY-PLAIN-STDOUT"));
    std::fs::write(&settings, serde_json::to_vec_pretty(&v).unwrap()).unwrap();

    // 1. A turn at low usage: the figure and the limit from the session's log.
    mock.script([command(9_000), text(9_500, "Done.")]);
    run(&bin, &w, &mock, &project, "run echo once");
    let (first, p) = newest(&w, &[]);
    // Before 1.0.102 the session's log has no call's usage: a hook of
    // Copilot's can know no figure (its camelCase inputs are read all the
    // same), and says nothing but the labelled heuristic.
    let logs_usage = files_under(&w.home().join(".copilot/session-state"))
        .iter()
        .filter(|f| f.ends_with("events.jsonl"))
        .any(|f| {
            std::fs::read_to_string(w.home().join(".copilot/session-state").join(f))
                .is_ok_and(|t| t.contains("session.usage_record"))
        });
    if !logs_usage {
        assert_eq!(p["source"], "heuristic", "{p}");
        assert_eq!(p["level"], "green", "{p}");
        assert!(
            mock.requests().iter().all(|r| !r.body.contains("Context ")),
            "no warning without a figure"
        );
        println!(
            "e2e: this release writes no usage to its session log: the heuristic alone, as documented"
        );
        return;
    }
    assert_eq!(
        p["source"], "transcript",
        "a real figure, not the heuristic: {p}"
    );
    assert_eq!(p["window"], LIMIT, "Copilot's own limit: {p}");
    assert_eq!(p["compact_at"], 16_000, "{p}");
    assert_eq!(p["level"], "green", "{p}");

    // 2. Near Copilot's compaction point: red at the first tool call, said
    //    inside the tool's result; the headless turn's end writes the note
    //    and asks for nothing more.
    let before = mock.requests().len();
    mock.script([
        command(15_000),
        command(15_100),
        text(15_200, "Done."),
        text(15_300, "Noted."),
    ]);
    run(&bin, &w, &mock, &project, "run echo twice");
    let run2: Vec<_> = mock.requests().split_off(before);
    let (_, p) = newest(&w, std::slice::from_ref(&first));
    assert_eq!(p["level"], "red", "{p}");
    let warned = run2
        .iter()
        .filter(|r| r.kind == Kind::Main)
        .find(|r| r.body.contains("Context RED"))
        .expect("the warning reached the model");
    let v: serde_json::Value = serde_json::from_str(&warned.body).unwrap();
    assert!(
        v["messages"].as_array().unwrap().iter().any(|m| {
            let text = m["content"].to_string();
            (m["role"] == "tool" || text.contains("postToolUse hook"))
                && text.contains("Context RED")
        }),
        "with the tool's result: {}",
        warned.body
    );
    assert!(
        !run2.iter().any(|r| r.prompt == 15_300),
        "the Stop hook blocked a headless run"
    );
    let log = std::fs::read_to_string(w.dir.path().join("interband.log")).unwrap_or_default();
    assert!(
        log.contains("not blocking the stop of a headless run"),
        "the log says why: {log}"
    );
    assert!(!notes(&w).is_empty(), "the red turn's note");

    // 3. Past the compaction point: Copilot compacts, and no hook of its own
    //    follows; the next tool call brings the note back to the model.
    let before = mock.requests().len();
    mock.script([
        command(17_000),
        command(5_000),
        command(5_100),
        text(5_200, "Done."),
    ]);
    run(&bin, &w, &mock, &project, "run echo again");
    let run3: Vec<_> = mock.requests().split_off(before);
    let at = run3
        .iter()
        .position(|r| r.kind == Kind::Summary)
        .expect("Copilot compacted");
    assert!(
        run3[at..]
            .iter()
            .any(|r| r.kind == Kind::Main && r.body.contains("interband-memory-note")),
        "the note came back after the compaction"
    );
    let summary = &run3[at];
    let reached: Vec<&str> = [
        "CANARY-JSON-CONTEXT",
        "CANARY-JSON-MESSAGE",
        "CANARY-HSO-CONTEXT",
        "CANARY-PLAIN-STDOUT",
    ]
    .into_iter()
    .filter(|c| summary.body.contains(c))
    .collect();
    println!(
        "e2e: {}: a preCompact hook's output in the summary request: {reached:?}",
        cli.version
    );
    assert!(
        reached.is_empty(),
        "Copilot's summary request now carries a preCompact hook's output ({reached:?}): steer it (hosts/src/lib.rs, Profile::steer)"
    );
    // The compaction's record: its summary read from the session's log.
    let keys = w.bus().keys("intermem", "compaction").unwrap();
    let record = w.bus().read("intermem", "compaction", &keys[0]).unwrap();
    let r = &record.envelope.payload;
    println!(
        "e2e: the record: {}",
        stdout(&w.run(&["pressure"]))
            .lines()
            .nth(1)
            .unwrap_or_default()
    );
    assert_eq!(r["settled"], true, "the note came back: {r}");

    // 4. A fresh session instead: `interband handoff`'s prompt, given to a
    //    fresh Copilot (headless here), reaches its first request.
    let (prompt, note) = e2e::handoff(&w, &keys[0], "copilot");
    let before = mock.requests().len();
    mock.script([text(9_000, "Picked up.")]);
    run(&bin, &w, &mock, &project, &prompt);
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
    println!("e2e: copilot passed; {} notes", notes(&w).len());
}
