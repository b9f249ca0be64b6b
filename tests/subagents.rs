//! A session's subagents: each one's own figure, read from its own
//! transcript at its tool calls (Claude Code 2.1.332's
//! `<session>/subagents/agent-<id>.jsonl`, captured), shown under its
//! parent in `top` and counted on the statusline, never moving the parent's
//! level; gone once the parent's turn no longer lists it running.

mod common;

use common::*;
use serde_json::{Value, json};

const SESSION: &str = "f391a0ed-7f6f-4462-996c-414b32899ad7";
const AGENT: &str = "a3fc4036e01518cb9";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        repo()
            .join("tests/fixtures/claude-code-2.1.332-person/subagent")
            .join(name),
    )
    .unwrap()
}

/// The captured session, under this test's home: its transcript, its
/// subagent's, and a hook input of `name` with the paths made this home's.
struct Captured {
    w: World,
    transcript: std::path::PathBuf,
}

impl Captured {
    fn new() -> Self {
        let w = World::new();
        let folder = w.home().join(".claude/projects/-home-user-project");
        std::fs::create_dir_all(folder.join(SESSION).join("subagents")).unwrap();
        let transcript = folder.join(format!("{SESSION}.jsonl"));
        std::fs::write(&transcript, fixture("main-transcript.jsonl")).unwrap();
        std::fs::write(
            folder
                .join(SESSION)
                .join(format!("subagents/agent-{AGENT}.jsonl")),
            fixture("agent-ID.jsonl"),
        )
        .unwrap();
        std::fs::create_dir_all(w.dir.path().join("project")).unwrap();
        Captured { w, transcript }
    }

    /// The statusline of the session, as Claude Code asks for it.
    fn statusline(&self) -> String {
        let mut v: Value = serde_json::from_str(&fixture("statusLine.input.last.json")).unwrap();
        v["transcript_path"] = json!(self.transcript);
        v["cwd"] = json!(self.w.dir.path().join("project"));
        let mut cmd = self.w.cmd(&["statusline"]);
        cmd.env("NO_COLOR", "1");
        let o = with_stdin(&mut cmd, v.to_string().as_bytes());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    }

    fn hook(&self, name: &str) -> String {
        let mut v: Value = serde_json::from_str(&fixture(name)).unwrap();
        v["transcript_path"] = json!(self.transcript);
        v["cwd"] = json!(self.w.dir.path().join("project"));
        let mut cmd = self.w.cmd(&["hook", "--host", "claude"]);
        let o = with_stdin(&mut cmd, v.to_string().as_bytes());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    }
}

#[test]
fn a_subagent_s_own_figure_shows_under_its_parent_until_it_ends() {
    let c = Captured::new();
    let w = &c.w;
    c.hook("PostToolUse.Bash.input.json");
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    let level = parent.envelope.payload["level"].clone();
    c.hook("PostToolUse.Bash.in_subagent.input.json");
    let key = format!("{SESSION}--{AGENT}");
    let sub = w.bus().read("interpulse", "subagent", &key).unwrap();
    let p = &sub.envelope.payload;
    assert_eq!(p["agent"], AGENT, "{p}");
    assert_eq!(p["agent_type"], "Explore", "{p}");
    assert_eq!(p["model"], "claude-opus-5-5", "its own transcript's: {p}");
    assert_eq!(p["used_tokens"], 1000, "its last answer's usage: {p}");
    assert_eq!(p["window"], 1_000_000, "{p}");
    assert_eq!(p["calls"], 1, "{p}");
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert_eq!(
        parent.envelope.payload["level"], level,
        "the parent's level stays"
    );

    let o = w.run(&["top", "--once"]);
    let table = stdout(&o);
    let lines: Vec<&str> = table.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(&SESSION[..8]))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        lines[at + 1].contains("└ Explore a3fc40") && lines[at + 1].contains("claude-opus-5-5"),
        "the subagent's row under its parent's: {table}"
    );
    let o = w.run(&["top", "--json"]);
    let v: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["subagents"][0]["agent"], AGENT, "{}", stdout(&o));

    // The statusline counts it, with the fullest's own share.
    assert!(
        c.statusline().contains("⑂ 1 agent, fullest 0%"),
        "{}",
        c.statusline()
    );

    // The parent's turn ends with the subagent still running: it stays;
    // then with none running: it is gone from the views.
    c.hook("Stop.input.json");
    let o = w.run(&["top", "--json"]);
    let v: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["subagents"].as_array().unwrap().len(), 1);
    c.hook("Stop.2.input.json");
    let o = w.run(&["top", "--json"]);
    let v: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["subagents"], json!([]), "{}", stdout(&o));
    let sub = w.bus().read("interpulse", "subagent", &key).unwrap();
    assert!(sub.envelope.payload["ended_at"].as_u64().is_some());
    assert!(!c.statusline().contains("agent"), "{}", c.statusline());
}

/// The real Claude Code 2.1.332, interactive in tmux, offline, with these
/// hooks (`tests/fixtures/claude-code-2.1.332-subagent-tmux/`, its README
/// says how): while its background `Explore` subagent ran, `top` showed the
/// subagent's own figure under its parent; after the parent's turn no
/// longer listed it running, it was gone.
#[test]
fn the_real_claude_code_in_tmux_showed_a_running_subagent_under_its_parent() {
    let dir = repo().join("tests/fixtures/claude-code-2.1.332-subagent-tmux");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let table = read("top.running.txt");
    let lines: Vec<&str> = table.lines().collect();
    let sub = lines
        .iter()
        .position(|l| l.contains("└ Explore"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(sub >= 2 && lines[sub - 1].contains(" claude "), "{table}");
    assert!(
        lines[sub].contains(" agent ") && lines[sub].contains("/200k"),
        "{table}"
    );
    let after: Vec<Value> = serde_json::from_str(&read("top.after.json")).unwrap();
    assert_eq!(
        after[0]["subagents"],
        json!([]),
        "ended with its parent's turn"
    );
}
