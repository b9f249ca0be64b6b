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
//! SessionEnd writes the session's final note.

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
    fn exec(&self, prompt: &str) {
        let path = e2e::path_with_interband();
        let mut c = Command::new(&self.bin);
        c.args(["exec", "--skip-git-repo-check", prompt])
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
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-5.1-codex\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\nmodel_context_window = 200000\n\n\
             [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n",
            mock.base_url()
        ),
    )
    .unwrap();
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
    let codex = Codex {
        bin,
        w: &w,
        home: home.clone(),
        project,
    };

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
    println!("e2e: codex passed; {} notes", all.len());
}
