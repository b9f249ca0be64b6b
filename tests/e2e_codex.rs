//! Opt-in end-to-end test: the real Codex CLI, headless (`codex exec`) and
//! offline against a mock Responses API (`tests/e2e/codex.rs`), with
//! interband's hooks installed and trusted by `interband install --host codex --trust`.
//!
//! Runs only with `INTERBAND_E2E_CODEX=1`. The CLI is `INTERBAND_E2E_CODEX_BIN`, else
//! `@openai/codex@0.171.0` installed with npm into `${XDG_CACHE_HOME:-~/.cache}/interband-e2e-codex-0.171.0`
//! (`.ci/run` fills it). Infrastructure trouble (no npm, no network) reports the test as ignored, with the reason.
//!
//! It proves from what the mock receives and what interband publishes that the hook reads
//! Codex's real figure from its rollout (within 1% of what Codex recorded, against its
//! effective window), that the warning reaches the model, that at red the Stop hook of a
//! headless `codex exec` writes the note and makes no model request, that a low-usage run warns of nothing and writes no checkpoint note, and that
//! SessionEnd writes the session's final note; and at Codex's own compaction, that no
//! PreCompact hook output reaches the summary request (canaries in each shape), that the
//! note comes back at SessionStart, and that the compaction's record is on the bus.

mod common;
mod e2e;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::*;
use e2e::codex::{Kind, Mock, command, text};
use serde_json::Value;

const CODEX_VERSION: &str = "0.171.0";
const TIME_BOX: Duration = Duration::from_secs(120);

fn codex_bin() -> Option<PathBuf> {
    e2e::npm_cli(
        "@openai/codex",
        CODEX_VERSION,
        "codex",
        &format!("interband-e2e-codex-{CODEX_VERSION}"),
        "INTERBAND_E2E_CODEX_BIN",
    )
}

struct Codex<'a> {
    bin: PathBuf,
    w: &'a World,
    home: PathBuf,
    project: PathBuf,
}

impl Codex<'_> {
    /// Writes Codex's config: the mock as provider, a 200k model.
    fn configure(&self, mock: &Mock) {
        std::fs::write(
            self.home.join("config.toml"),
            format!(
                "model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\n\
                 sandbox_mode = \"danger-full-access\"\nmodel_context_window = 200000\n\n\
                 [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n",
                mock.base_url()
            ),
        )
        .unwrap();
    }

    /// Has Codex compact on its own past `tokens`, keeping the rest of the
    /// config (the hooks' trust among it).
    fn compact_at(&self, tokens: u64) {
        let config = self.home.join("config.toml");
        let rest = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            format!("model_auto_compact_token_limit = {tokens}\n{rest}"),
        )
        .unwrap();
    }

    fn exec(&self, prompt: &str) {
        self.exec_with(&[], prompt);
    }

    fn exec_with(&self, flags: &[&str], prompt: &str) {
        let path = e2e::path_with_interband();
        let mut c = Command::new(&self.bin);
        c.args(["exec", "--skip-git-repo-check"])
            .args(flags)
            .arg(prompt)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.w.home())
            .env("CODEX_HOME", &self.home)
            .env("INTERBAND_ROOT", self.w.root())
            .env("INTERBAND_LOG", self.w.dir.path().join("interband.log"));
        e2e::run_ok(
            c,
            &format!("codex exec {prompt:?}"),
            TIME_BOX,
            &self.w.dir.path().join("interband.log"),
        );
    }

    /// The session's rollout, and the total tokens of its last usage.
    fn recorded(&self, session: &str) -> u64 {
        let rollout = files_under(&self.home.join("sessions"))
            .into_iter()
            .find(|f| f.contains(session) && f.ends_with(".jsonl"))
            .unwrap_or_else(|| panic!("no rollout for {session}"));
        let text = std::fs::read_to_string(self.home.join("sessions").join(rollout)).unwrap();
        text.lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| match v["type"].as_str() {
                Some("token_usage_record") => v["payload"]["usage"]["total_tokens"].as_u64(),
                Some("event_msg") if v["payload"]["type"] == "token_count" => {
                    v["payload"]["info"]["last_token_usage"]["total_tokens"].as_u64()
                }
                _ => None,
            })
            .next()
            .expect("a usage in the rollout")
    }
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

fn sessions(w: &World) -> Vec<String> {
    w.bus().keys("interpulse", "pressure").unwrap()
}

fn main() -> std::process::ExitCode {
    e2e::main(
        "the_real_codex_cli_reads_its_real_figures_offline",
        || e2e::opt_in("INTERBAND_E2E_CODEX", codex_bin, Duration::from_secs(30)),
        the_real_codex_cli_reads_its_real_figures_offline,
    )
}

fn the_real_codex_cli_reads_its_real_figures_offline(cli: e2e::Cli) {
    let bin = cli.bin;

    let w = World::new();
    let mock = Mock::start();
    let home = w.dir.path().join("codex-home");
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let codex = Codex {
        bin,
        w: &w,
        home: home.clone(),
        project,
    };
    codex.configure(&mock);
    let hooks = home.join("hooks.json");
    let o = w.run(&[
        "install",
        "--host",
        "codex",
        "--settings",
        hooks.to_str().unwrap(),
        "--command",
        BIN,
        "--trust",
    ]);
    assert_eq!(code(&o), 0, "interband install: {}", stderr(&o));

    // 1. A low-usage run of several tool calls: no warning, no checkpoint note.
    mock.script([
        command(20_000),
        command(21_000),
        command(22_000),
        text(23_000, "Done."),
    ]);
    codex.exec("run echo three times");
    let first = sessions(&w);
    assert_eq!(first.len(), 1, "the hooks ran: {first:?}");
    let requests = mock.requests();
    assert!(
        requests.iter().all(|r| !warned(&r.body)),
        "no warning at 10% used"
    );
    let p = w
        .bus()
        .read("interpulse", "pressure", &first[0])
        .unwrap()
        .envelope
        .payload;
    assert_eq!(
        p["source"], "transcript",
        "a real figure, not the heuristic: {p}"
    );
    assert_eq!(p["window"], 190_000, "Codex's effective window: {p}");
    assert_eq!(p["level"], "green");
    let after_low = notes(&w);
    assert!(
        after_low.iter().all(|n| n.ends_with("session_end.md")),
        "only SessionEnd's final note: {after_low:?}"
    );
    assert_eq!(
        after_low.len(),
        1,
        "SessionEnd wrote the final note: {after_low:?}"
    );

    // 2. Near Codex's compaction point (180k of a 200k model): red, warned, advised.
    // Two calls: from 0.132 to 0.152 Codex writes a response's usage after
    // its tool ran, so the first call's hook reads no figure yet.
    let before = mock.requests().len();
    mock.script([
        command(175_000),
        command(175_500),
        text(176_000, "Done."),
        text(176_500, "Noted."),
    ]);
    codex.exec("run echo twice");
    let run = mock.requests().split_off(before);
    let session = sessions(&w)
        .into_iter()
        .find(|s| !first.contains(s))
        .expect("a second session");
    let p = w
        .bus()
        .read("interpulse", "pressure", &session)
        .unwrap()
        .envelope
        .payload;
    assert_eq!(p["source"], "transcript", "{p}");
    assert_eq!(p["window"], 190_000, "{p}");
    assert_eq!(p["level"], "red", "{p}");
    let used = p["used_tokens"].as_u64().unwrap() as f64;
    let recorded = codex.recorded(&session) as f64;
    assert!(
        (used - recorded).abs() <= recorded * 0.01,
        "{used} against Codex's {recorded}"
    );
    let main: Vec<_> = run.iter().filter(|r| r.kind == Kind::Main).collect();
    let warned = main
        .iter()
        .position(|r| r.body.contains("Context RED"))
        .unwrap_or_else(|| {
            panic!(
                "the warning reached the model: {:?}",
                main.iter().map(|r| r.body.len()).collect::<Vec<_>>()
            )
        });
    assert!(warned >= 1, "after the tool call");
    // `codex exec` is headless: Stop told the person, and made no model
    // request (the "Noted." turn is never asked for).
    assert!(
        !main
            .iter()
            .any(|r| r.total == 176_500 || r.body.contains("Context is nearly full")),
        "Stop blocked a headless run: {} main requests",
        main.len()
    );
    // (SessionEnd took the announcement back: the session is over.)
    let log = std::fs::read_to_string(w.dir.path().join("interband.log")).unwrap_or_default();
    assert!(
        log.contains("not blocking the stop of a headless run"),
        "the log says why: {log}"
    );
    let all = notes(&w);
    assert!(
        all.len() >= 3,
        "a checkpoint's note and SessionEnd's: {all:?}"
    );

    // 3. Codex's own compaction (past `model_auto_compact_token_limit`),
    //    with two more PreCompact hooks beside interband's printing canaries
    //    in each shape a hook's output takes: none reaches the summary
    //    request (docs/hosts.md, "Steering a compaction"); the note comes
    //    back at SessionStart (`compact`) in the next request; the record is
    //    on the bus and in `pressure`.
    codex.compact_at(150_000);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&hooks).unwrap()).unwrap();
    let canary = |cmd: &str| serde_json::json!({"hooks": [{"type": "command", "command": cmd, "timeout": 10}]});
    let pre = v["hooks"]["PreCompact"]
        .as_array_mut()
        .expect("interband's PreCompact hook");
    pre.push(canary(
        r#"printf '%s' '{"additionalContext":"CANARY-JSON-CONTEXT","systemMessage":"CANARY-JSON-MESSAGE","hookSpecificOutput":{"hookEventName":"PreCompact","additionalContext":"CANARY-HSO-CONTEXT"}}'"#,
    ));
    pre.push(canary("echo CANARY-PLAIN-STDOUT"));
    std::fs::write(&hooks, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let before = mock.requests().len();
    mock.script([command(100_000), command(200_000), text(20_000, "Done.")]);
    // The canaries are not trusted: this run alone passes over trust.
    codex.exec_with(&["--dangerously-bypass-hook-trust"], "run echo twice more");
    let run = mock.requests().split_off(before);
    let summary = run
        .iter()
        .position(|r| r.kind == Kind::Summary)
        .unwrap_or_else(|| panic!("Codex compacted: {} requests", run.len()));
    for c in [
        "CANARY-JSON-CONTEXT",
        "CANARY-JSON-MESSAGE",
        "CANARY-HSO-CONTEXT",
        "CANARY-PLAIN-STDOUT",
    ] {
        assert!(
            run.iter().all(|r| !r.body.contains(c)),
            "{c} reached a request: Codex lets a PreCompact hook steer its summary"
        );
    }
    let next = run[summary + 1..]
        .iter()
        .find(|r| r.kind == Kind::Main)
        .expect("a request after the compaction");
    assert!(
        next.body
            .contains("saved by interband before it was compacted"),
        "the note came back after the compaction"
    );
    let third = sessions(&w)
        .into_iter()
        .find(|s| !first.contains(s) && *s != session)
        .expect("a third session");
    let record = w.bus().read("intermem", "compaction", &third).unwrap();
    let r = &record.envelope.payload;
    println!("e2e: codex's record: {r}");
    assert_eq!(r["tokens_before"], 200_000, "{r}");
    assert_eq!(r["tokens_after"], 20_000, "the first figure after: {r}");
    assert_eq!(
        r["summary_read"], true,
        "the summary read from the rollout's `compacted` line: {r}"
    );
    assert_eq!(r["settled"], true, "{r}");
    let o = w.run(&["pressure", "--session", &third]);
    assert!(
        stdout(&o).contains("last compaction: compacted"),
        "{}",
        stdout(&o)
    );

    // 4. A fresh session instead: `interband handoff`'s prompt, given to a
    //    fresh Codex (`codex exec` here), reaches its first request.
    let (prompt, note) = e2e::handoff(&w, &third, "codex");
    let before = mock.requests().len();
    mock.script([text(9_000, "Picked up.")]);
    // (The canaries are still there, untrusted.)
    codex.exec_with(&["--dangerously-bypass-hook-trust"], &prompt);
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
    println!("e2e: codex passed; {} notes", all.len());
}
