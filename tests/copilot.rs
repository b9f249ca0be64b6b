//! `interband hook --host copilot` and `interband statusline --host copilot`
//! as GitHub Copilot CLI runs them, with the real inputs and session log
//! captured from Copilot CLI 1.0.102 (`tests/fixtures/copilot-cli-1.0.102`):
//! the figure from the session's `events.jsonl` (which a tool call's input
//! does not name), the warning in the one shape Copilot gives the model, the
//! statusline's own context, the note back with the first tool call after
//! Copilot's compaction (it has no hook there), and install's flat hooks.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::{Value, json};

const SESSION: &str = "db515af9-183e-40ee-ad11-80d0b386f015";

fn fixture_path(name: &str) -> PathBuf {
    repo().join("tests/fixtures/copilot-cli-1.0.102").join(name)
}

fn fixture(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture_path(name)).unwrap()).unwrap()
}

/// The session's log where Copilot keeps it: the real one's opening lines
/// (its start and first prompt), then the events appended.
struct Log(PathBuf);

impl Log {
    fn new(w: &World) -> Log {
        let path = w
            .home()
            .join(".copilot/session-state")
            .join(SESSION)
            .join("events.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let real =
            std::fs::read_to_string(fixture_path("events.compaction-headless.jsonl")).unwrap();
        let head: Vec<&str> = real
            .lines()
            .take_while(|l| !l.contains("session.usage_record"))
            .collect();
        std::fs::write(&path, format!("{}\n", head.join("\n"))).unwrap();
        Log(path)
    }

    fn append(&self, event: Value) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.0)
            .unwrap();
        std::io::Write::write_all(&mut f, format!("{event}\n").as_bytes()).unwrap();
    }

    /// A call of the agent's, its prompt `used` tokens of a `limit`.
    fn call(&self, used: u64, limit: u64) {
        self.append(
            json!({"type": "session.usage_record", "id": format!("usage-{used}"),
            "data": {"usage": {"model": "gpt-4.1", "inputTokens": used, "outputTokens": 20,
                "interactionType": "conversation-agent", "maxPromptTokens": limit}}}),
        );
    }
}

fn input(w: &World, name: &str, log: &Log) -> Value {
    let mut v = fixture(name);
    v["session_id"] = json!(SESSION);
    v["cwd"] = json!(w.dir.path());
    if v.get("transcript_path").is_some() {
        v["transcript_path"] = json!(log.0);
    }
    v
}

fn hook(w: &World, input: &Value) -> Option<Value> {
    let o = w.run_with_stdin(&["hook", "--host", "copilot"], input.to_string().as_bytes());
    assert_eq!(code(&o), 0, "a hook always exits 0: {}", stderr(&o));
    let out = stdout(&o);
    (!out.trim().is_empty()).then(|| serde_json::from_str(&out).unwrap())
}

fn pressure(w: &World) -> Value {
    let m = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    serde_json::to_value(m.envelope.payload).unwrap()
}

#[test]
fn a_tool_call_is_measured_from_the_session_log_and_warned_in_copilot_s_shape() {
    let w = World::new();
    let log = Log::new(&w);
    // The input of a tool call names no transcript: the session's log is found.
    let tool = input(&w, "PostToolUse.bash.input.json", &log);
    assert!(tool.get("transcript_path").is_none());
    log.call(9_000, 20_000);
    assert_eq!(hook(&w, &tool), None, "green: nothing said");
    let p = pressure(&w);
    assert_eq!(
        (p["used_tokens"].as_u64(), p["window"].as_u64()),
        (Some(9_000), Some(20_000)),
        "{p}"
    );
    assert_eq!(p["source"], "transcript", "{p}");
    assert_eq!(p["compact_at"], 16_000, "80% of the limit: {p}");

    // Past Copilot's compaction point: red, as a top-level additionalContext
    // (Copilot ignores the hookSpecificOutput shape).
    log.call(17_000, 20_000);
    let out = hook(&w, &tool).expect("a warning");
    assert!(out.get("hookSpecificOutput").is_none(), "{out}");
    let said = out["additionalContext"].as_str().unwrap();
    assert!(said.contains("Context RED"), "{said}");
    assert!(said.contains("17k of 20k tokens"), "{said}");

    // A tool that failed is a tool call too.
    let calls = pressure(&w)["calls"].as_u64().unwrap();
    hook(
        &w,
        &input(&w, "PostToolUseFailure.view-missing.input.json", &log),
    );
    assert_eq!(pressure(&w)["calls"].as_u64(), Some(calls + 1));

    // Copilot compacts (no hook of its own follows): the next tool call
    // brings the note back.
    let real = std::fs::read_to_string(fixture_path("events.compaction-headless.jsonl")).unwrap();
    let done = real
        .lines()
        .find(|l| l.contains("session.compaction_complete"))
        .unwrap();
    log.append(serde_json::from_str(done).unwrap());
    log.call(8_000, 20_000);
    let out = hook(&w, &tool).expect("the note");
    let back = out["additionalContext"].as_str().unwrap();
    assert!(
        back.contains("compaction test"),
        "the session's request, from the note: {back}"
    );
    assert_eq!(pressure(&w)["level"], "green");
}

#[test]
fn the_statusline_reads_the_context_copilot_counts_for_the_session_s_hooks() {
    let w = World::new();
    let log = Log::new(&w);
    let mut status = fixture("statusLine.input.after-first-prompt.json");
    status["session_id"] = json!(SESSION);
    status["transcript_path"] = json!(log.0.parent().unwrap());
    let o = w.run_with_stdin(
        &["statusline", "--host", "copilot"],
        status.to_string().as_bytes(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = stdout(&o);
    assert!(
        line.contains("20% used"),
        "12,555 of 64,000, not the running total: {line}"
    );
    let m = w.bus().read("interline", "context", SESSION).unwrap();
    let c = serde_json::to_value(m.envelope.payload).unwrap();
    assert_eq!(
        (c["used_tokens"].as_u64(), c["window"].as_u64()),
        (Some(12_555), Some(64_000)),
        "{c}"
    );
    assert_eq!(
        c["transcript_path"],
        json!(log.0),
        "the file the hooks name: {c}"
    );
    // The hook takes the statusline's figure (fresh: it saw the log as far).
    hook(&w, &input(&w, "PostToolUse.bash.input.json", &log));
    let p = pressure(&w);
    assert_eq!(
        (p["used_tokens"].as_u64(), p["source"].as_str()),
        (Some(12_555), Some("statusline")),
        "{p}"
    );
}

#[test]
fn install_writes_copilot_s_flat_hooks_and_statusline_and_uninstall_gives_them_back() {
    let w = World::new();
    let settings = w.home().join(".copilot/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let theirs = "{\n  \"model\": \"gpt-4.1\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"type\": \"command\",\n        \"bash\": \"./mine.sh\",\n        \"timeoutSec\": 3\n      }\n    ]\n  }\n}\n";
    std::fs::write(&settings, theirs).unwrap();
    let o = w.run(&["install", "--host", "copilot"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    for (event, timeout) in [
        ("PostToolUse", 5),
        ("PostToolUseFailure", 5),
        ("Stop", 10),
        ("PreCompact", 10),
        ("SessionStart", 5),
        ("SessionEnd", 10),
    ] {
        let ours = s["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| {
                h[COPILOT_SHELL]
                    .as_str()
                    .is_some_and(|c| c.ends_with(" hook --host copilot"))
            })
            .unwrap_or_else(|| panic!("{event}: {s}"));
        assert_eq!(ours["type"], "command", "{event}");
        assert_eq!(ours["timeoutSec"], timeout, "{event}");
        assert!(
            ours.get("hooks").is_none() && ours.get("command").is_none(),
            "flat: {ours}"
        );
    }
    assert_eq!(
        s["hooks"]["Stop"][0]["bash"], "./mine.sh",
        "theirs first, as it was"
    );
    assert!(
        s["statusLine"]["command"]
            .as_str()
            .unwrap()
            .ends_with(" statusline --host copilot"),
        "{s}"
    );
    // Installed again: nothing doubled.
    let o = w.run(&["install", "--host", "copilot"]);
    assert!(stdout(&o).contains("already installed"), "{}", stdout(&o));
    let o = w.run(&["uninstall", "--host", "copilot"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        theirs,
        "byte for byte"
    );

    // COPILOT_HOME is where Copilot keeps its settings.json.
    let moved = w.dir.path().join("copilot-home");
    std::fs::create_dir_all(&moved).unwrap();
    let o = w
        .cmd(&["install", "--host", "copilot"])
        .env("COPILOT_HOME", &moved)
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(moved.join("settings.json").exists());
}

#[test]
fn replay_re_enacts_a_real_copilot_session_with_its_compactions() {
    let w = World::new();
    let t = fixture_path("events.compaction-headless.jsonl");
    let o = w.run(&["replay", "--host", "copilot", t.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("(GitHub Copilot CLI)"), "{out}");
    assert!(out.contains("compaction (auto): 20k"), "{out}");
    assert!(out.contains("level yellow → red"), "{out}");
    assert!(
        out.contains("the latest note comes back"),
        "the note back after Copilot's compaction, with the next tool call: {out}"
    );
}
