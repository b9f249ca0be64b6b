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

/// A captured run's file, read.
fn captured(folder: &str, name: &str) -> String {
    std::fs::read_to_string(repo().join("tests/fixtures").join(folder).join(name)).unwrap()
}

/// A hook input of a capture with its paths moved from the captured home
/// (`/home/user`) to `w`'s.
fn moved(w: &World, input: &str) -> Value {
    let home = w.home().to_string_lossy().replace('\\', "/");
    serde_json::from_str(&input.replace("/home/user", &home)).unwrap()
}

fn hook(w: &World, host: &str, input: &Value) -> String {
    let mut cmd = w.cmd(&["hook", "--host", host]);
    let o = with_stdin(&mut cmd, input.to_string().as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

fn top(w: &World) -> Vec<Value> {
    serde_json::from_str(&stdout(&w.run(&["top", "--json"]))).unwrap()
}

/// Codex 0.171.0 runs a subagent (`spawn_agent`) as a thread of its own
/// with a rollout of its own beside the session's; its hooks carry the
/// session's id, its `agent_id` and its own rollout
/// (`tests/fixtures/codex-0.171.0-subagent/`, captured). Its figure is its
/// rollout's own (61k of its model's window: the parent's 30k stays);
/// it ends when its rollout says its turn ended, at the parent's turn's end.
#[test]
fn a_codex_subagent_s_own_figure_from_its_own_rollout_until_its_turn_ends() {
    const F: &str = "codex-0.171.0-subagent";
    const SESSION: &str = "01a24267-dcff-7452-88f7-5a6513525589";
    const AGENT: &str = "01a24267-ddc1-7283-b404-1514bd4d2901";
    let w = World::new();
    let day = w.home().join(".codex/sessions/2026/12/04");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    let parent = day.join(format!("rollout-2026-12-04T18-53-52-{SESSION}.jsonl"));
    let child = day.join(format!("rollout-2026-12-04T18-53-52-{AGENT}.jsonl"));
    std::fs::write(&parent, captured(F, "rollout.parent.jsonl")).unwrap();
    // The subagent's rollout as it was at its third call: its turn runs.
    let whole = captured(F, "rollout.subagent.jsonl");
    let running: String = whole.lines().take(24).map(|l| format!("{l}\n")).collect();
    std::fs::write(&child, &running).unwrap();

    hook(
        &w,
        "codex",
        &moved(
            &w,
            &captured(F, "PostToolUse.parent.spawn_agent.input.json"),
        ),
    );
    let before = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    let said = hook(
        &w,
        "codex",
        &moved(&w, &captured(F, "PostToolUse.subagent.Bash-3.input.json")),
    );
    assert_eq!(said, "", "nothing of the parent's is told the subagent");
    let key = format!("{SESSION}--{AGENT}");
    let sub = w.bus().read("interpulse", "subagent", &key).unwrap();
    let p = &sub.envelope.payload;
    assert_eq!(p["agent_type"], "default", "{p}");
    assert_eq!(
        p["used_tokens"], 60_020,
        "its own rollout's last figure: {p}"
    );
    assert_eq!(
        p["window"], 258_400,
        "its model's window, as Codex states it: {p}"
    );
    let after = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert_eq!(
        after.envelope.payload["used_tokens"], before.envelope.payload["used_tokens"],
        "the parent's stays"
    );
    assert_eq!(
        after.envelope.payload["level"],
        before.envelope.payload["level"]
    );

    // The parent's turn ends while the subagent's runs: it stays, under its parent.
    hook(
        &w,
        "codex",
        &moved(&w, &captured(F, "Stop.parent.input.json")),
    );
    let v = top(&w);
    assert_eq!(v[0]["subagents"][0]["agent"], AGENT, "{v:?}");
    let table = stdout(&w.run(&["top", "--once"]));
    assert!(table.contains("└ default 01a242"), "{table}");
    // Its rollout says its turn ended: at the parent's next turn's end it is gone.
    std::fs::write(&child, &whole).unwrap();
    hook(
        &w,
        "codex",
        &moved(&w, &captured(F, "Stop.parent.input.json")),
    );
    assert_eq!(top(&w)[0]["subagents"], json!([]));
    let sub = w.bus().read("interpulse", "subagent", &key).unwrap();
    assert_eq!(
        sub.envelope.payload["used_tokens"], 61_020,
        "read again at its end"
    );
    assert!(sub.envelope.payload["ended_at"].as_u64().is_some());
}

/// Codex's `SubagentStop` (installed: from 0.135; the releases before
/// ignore it) ends the subagent at once, its rollout read once more: its
/// last answer's figure.
#[test]
fn a_codex_subagent_is_ended_at_its_stop_with_its_last_figure() {
    const F: &str = "codex-0.171.0-subagent";
    const SESSION: &str = "01a24267-dcff-7452-88f7-5a6513525589";
    const AGENT: &str = "01a24267-ddc1-7283-b404-1514bd4d2901";
    let w = World::new();
    let day = w.home().join(".codex/sessions/2026/12/04");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    let rollout = |id: &str| day.join(format!("rollout-2026-12-04T18-53-52-{id}.jsonl"));
    std::fs::write(rollout(SESSION), captured(F, "rollout.parent.jsonl")).unwrap();
    std::fs::write(rollout(AGENT), captured(F, "rollout.subagent.jsonl")).unwrap();
    let input = |name: &str| moved(&w, &captured(F, name));
    hook(
        &w,
        "codex",
        &input("PostToolUse.subagent.Bash-3.input.json"),
    );
    assert_eq!(top(&w)[0]["subagents"][0]["agent"], AGENT);
    let said = hook(&w, "codex", &input("SubagentStop.subagent.input.json"));
    assert_eq!(said, "", "nothing is said at a subagent's end");
    assert_eq!(top(&w)[0]["subagents"], json!([]), "ended at once");
    let key = format!("{SESSION}--{AGENT}");
    let p = w
        .bus()
        .read("interpulse", "subagent", &key)
        .unwrap()
        .envelope
        .payload;
    assert!(p["ended_at"].as_u64().is_some(), "{p}");
    assert_eq!(p["used_tokens"], 61_020, "its rollout's last answer: {p}");
}

/// Sets when `path` was last written: `secs` after a fixed moment.
fn written_at(path: &std::path::Path, secs: u64) {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_400_000 + secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

/// Gemini CLI 0.61.0 runs a subagent (`invoke_agent`) whose tool calls come
/// with the session's own id and chat, nothing naming the subagent
/// (`tests/fixtures/gemini-cli-0.61.0-subagent/`, captured, and its
/// `verified/` run): interband told the parent's warning to the subagent's
/// model, and counted its calls as the parent's. While it runs Gemini
/// writes its own chat (`chats/<session>/<id>.jsonl`) and nothing of the
/// session's (the reply that called it comes with its answer, after): a
/// call made while a subagent's chat is newer than the session's is the
/// subagent's. Its figure is its own chat's, nothing is told it, and it
/// ends once the session's chat is written again.
#[test]
fn a_gemini_subagent_is_told_apart_by_its_own_chat_being_the_newest() {
    const F: &str = "gemini-cli-0.61.0-subagent/runs/0.61.0-codebase_investigator";
    const SESSION: &str = "4559b910-c559-4af4-a3b3-5ccec2e28c74";
    const AGENT: &str = "dcb69142-4f38-4e5d-838e-0fb596b097f7";
    let w = World::new();
    let chats = w.home().join(".gemini/tmp/proj/chats");
    std::fs::create_dir_all(chats.join(SESSION)).unwrap();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    // The parent's 30k is YELLOW here, so a warning waits to be given.
    let config = w.home().join(".config/interband");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        captured("gemini-cli-0.61.0-subagent", "interband-config.warn.toml"),
    )
    .unwrap();
    let chat = chats.join("session-2026-12-04T18-57-4559b910.jsonl");
    let whole = captured(F, "chats/session-2026-12-04T18-57-4559b910.jsonl");
    // The session's chat while the subagent runs, as the real CLI left it:
    // its last reply, with no call in it yet (6 lines).
    let running: String = whole.lines().take(6).map(|l| format!("{l}\n")).collect();
    std::fs::write(&chat, &running).unwrap();
    written_at(&chat, 0);
    let own = chats.join(SESSION).join(format!("{AGENT}.jsonl"));
    std::fs::write(&own, captured(F, &format!("chats/{SESSION}/{AGENT}.jsonl"))).unwrap();
    written_at(&own, 2);

    for call in [
        "0012.AfterTool.subagent.list_directory",
        "0018.AfterTool.subagent.read_file",
    ] {
        let said = hook(
            &w,
            "gemini",
            &moved(&w, &captured(F, &format!("hooks/{call}.input.json"))),
        );
        assert_eq!(
            said, "",
            "{call}: the parent's warning is not the subagent's"
        );
    }
    // The parent's own figure, read from its chat at the subagent's calls:
    // its first call of its own (the one that ran the subagent) comes after.
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    let pp = &parent.envelope.payload;
    assert_eq!(pp["used_tokens"], 30_000, "{pp}");
    assert_eq!(pp["model"], "gemini-2.5-flash", "{pp}");
    let key = format!("{SESSION}--{AGENT}");
    let sub = w.bus().read("interpulse", "subagent", &key).unwrap();
    let p = &sub.envelope.payload;
    assert_eq!(p["model"], "gemini-2.5-pro", "its own model: {p}");
    assert_eq!(p["used_tokens"], 61_000, "its own chat's last figure: {p}");
    assert_eq!(p["window"], 1_048_576, "{p}");
    assert_eq!(p["calls"], 2, "{p}");
    let v = top(&w);
    assert_eq!(v[0]["subagents"][0]["agent"], AGENT, "{v:?}");

    // The call that ran it is the parent's own, and the warning the parent's.
    let said = hook(
        &w,
        "gemini",
        &moved(
            &w,
            &captured(F, "hooks/0031.AfterTool.parent.invoke_agent.input.json"),
        ),
    );
    assert!(said.contains("YELLOW"), "{said}");
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert_eq!(
        parent.envelope.payload["used_tokens"], 30_000,
        "the parent's own"
    );

    // The session's chat is written again (the call, its answer, the
    // reply): at the turn's end the subagent is gone.
    std::fs::write(&chat, &whole).unwrap();
    written_at(&chat, 4);
    hook(
        &w,
        "gemini",
        &moved(&w, &captured(F, "hooks/0036.AfterAgent.parent.input.json")),
    );
    assert_eq!(top(&w)[0]["subagents"], json!([]));
    // A later call of the parent's is its own, whatever subagent ran before.
    let said = hook(
        &w,
        "gemini",
        &moved(
            &w,
            &captured(F, "hooks/0012.AfterTool.subagent.list_directory.input.json"),
        ),
    );
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert_eq!(parent.envelope.payload["used_tokens"], 32_000, "{said}");
    assert_eq!(
        w.bus()
            .read("interpulse", "subagent", &key)
            .unwrap()
            .envelope
            .payload["calls"],
        2
    );
}

/// Claude Code's `SubagentStop` (installed: every release from 1.0.85 knows
/// it) ends the subagent at once, with its figure read once more: the
/// subagent's last answer is on disk by then, where its own last call's
/// hook read the one before.
#[test]
fn a_finished_subagent_is_ended_at_once_with_its_last_figure() {
    let c = Captured::new();
    let w = &c.w;
    c.hook("PostToolUse.Bash.input.json");
    c.hook("PostToolUse.Bash.in_subagent.input.json");
    assert_eq!(top(w)[0]["subagents"].as_array().unwrap().len(), 1);
    let said = c.hook("SubagentStop.in_subagent.input.json");
    assert_eq!(said, "", "nothing is said at a subagent's end");
    assert_eq!(top(w)[0]["subagents"], json!([]), "ended at once");
    let key = format!("{SESSION}--{AGENT}");
    let p = w
        .bus()
        .read("interpulse", "subagent", &key)
        .unwrap()
        .envelope
        .payload;
    assert!(p["ended_at"].as_u64().is_some(), "{p}");
    assert_eq!(p["used_tokens"], 1000, "its transcript's last answer: {p}");
    assert_eq!(p["calls"], 1, "{p}");
}

/// The hook inputs a capture's observer recorded (`{_event, input}` a
/// line), in order: each event's name and input.
fn observed(file: &str) -> Vec<(String, Value)> {
    captured("qwen-copilot-subagents", file)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["_event"].as_str().unwrap().to_owned(), v["input"].clone())
        })
        .collect()
}

/// The `n`th (from 0) observed input of `event` whose `agent_id` is or is
/// not set, with its paths made `w`'s.
fn nth(all: &[(String, Value)], w: &World, event: &str, sub: bool, n: usize) -> Value {
    let v = all
        .iter()
        .filter(|(e, i)| e == event && i["agent_id"].is_string() == sub)
        .nth(n)
        .unwrap_or_else(|| panic!("no {event} #{n}"))
        .1
        .clone();
    moved(w, &v.to_string())
}

/// The session's pressure, as published.
fn pressure(w: &World, session: &str) -> Value {
    w.bus()
        .read("interpulse", "pressure", session)
        .unwrap()
        .envelope
        .payload
}

/// The subagent's record, as published.
fn subagent(w: &World, session: &str, agent: &str) -> Value {
    w.bus()
        .read("interpulse", "subagent", &format!("{session}--{agent}"))
        .unwrap()
        .envelope
        .payload
}

const QWEN_AGENT: &str = "general-purpose-call_mock1_0";

/// The captured Qwen session's chat and its subagent's transcript under
/// `w`'s home, the subagent's holding its first `answers` answers: where
/// Qwen 0.24.4 and 0.21.2 keep them.
fn qwen_files(w: &World, run: &str, session: &str, answers: usize) {
    let project = w.home().join(".qwen/projects/-home-user-proj");
    std::fs::create_dir_all(project.join("chats")).unwrap();
    std::fs::create_dir_all(project.join("subagents").join(session)).unwrap();
    let chat = format!("{run}/chats.SESSION.jsonl");
    let chat = if repo()
        .join("tests/fixtures/qwen-copilot-subagents")
        .join(&chat)
        .is_file()
    {
        captured("qwen-copilot-subagents", &chat)
    } else {
        // (Only the foreground run kept the session's chat: the parent at 30k.)
        captured("qwen-copilot-subagents", "qwen-0.24.4/chats.SESSION.jsonl")
            .replace("1ce1b995-2e10-4568-aabd-def284368152", session)
    };
    std::fs::write(project.join(format!("chats/{session}.jsonl")), chat).unwrap();
    let own = captured(
        "qwen-copilot-subagents",
        &format!("{run}/subagents.SESSION.agent-{QWEN_AGENT}.jsonl"),
    );
    let mut seen = 0;
    let lines: String = own
        .lines()
        .take_while(|l| {
            let answer = l.contains("promptTokenCount");
            seen += usize::from(answer);
            !answer || seen <= answers
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        project.join(format!("subagents/{session}/agent-{QWEN_AGENT}.jsonl")),
        lines,
    )
    .unwrap();
    // Its record, running (0.21.2 writes the same fields as 0.24.4's).
    let meta = captured(
        "qwen-copilot-subagents",
        &format!("qwen-0.24.4/subagents.SESSION.agent-{QWEN_AGENT}.meta.json"),
    )
    .replace("1ce1b995-2e10-4568-aabd-def284368152", session)
    .replace("\"completed\"", "\"running\"");
    std::fs::write(
        project.join(format!("subagents/{session}/agent-{QWEN_AGENT}.meta.json")),
        meta,
    )
    .unwrap();
}

/// Qwen Code 0.24.4 runs a subagent (`agent`) whose tool calls carry the
/// session's id and chat and its own `agent_id`; it writes its own
/// transcript, `subagents/<session>/agent-<id>.jsonl`, each answer before
/// the calls it makes run their hooks
/// (`tests/fixtures/qwen-copilot-subagents/`, captured). Its figure is that
/// transcript's (20k, then 40k), nothing is told it, the parent's stays;
/// `SubagentStop` ends it at once at its last answer's 60k.
#[test]
fn a_qwen_subagent_s_own_figure_from_its_own_transcript_until_it_stops() {
    const SESSION: &str = "1ce1b995-2e10-4568-aabd-def284368152";
    let w = World::new();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    let all = observed("qwen-0.24.4/hook-inputs.jsonl");
    qwen_files(&w, "qwen-0.24.4", SESSION, 1);
    let said = hook(&w, "qwen", &nth(&all, &w, "PostToolUse", true, 0));
    assert_eq!(said, "", "nothing of the parent's is told the subagent");
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(p["used_tokens"], 20_000, "its own transcript's: {p}");
    assert_eq!(p["calls"], 1, "{p}");
    assert_eq!(p["agent_type"], "general-purpose", "its record's: {p}");
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    let own = parent.envelope.payload["used_tokens"].clone();
    assert_eq!(
        own, 31_000,
        "the session's own chat's last (captured whole), never the subagent's"
    );

    qwen_files(&w, "qwen-0.24.4", SESSION, 2);
    hook(&w, "qwen", &nth(&all, &w, "PostToolUse", true, 1));
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(
        (p["used_tokens"].clone(), p["calls"].clone()),
        (json!(40_000), json!(2))
    );
    let v = top(&w);
    assert_eq!(v.len(), 1, "one session, no other: {v:?}");
    assert_eq!(v[0]["subagents"][0]["agent"], QWEN_AGENT, "{v:?}");

    qwen_files(&w, "qwen-0.24.4", SESSION, 3);
    let said = hook(&w, "qwen", &nth(&all, &w, "SubagentStop", true, 0));
    assert_eq!(said, "", "nothing is said at a subagent's end");
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(p["used_tokens"], 60_000, "its last answer's: {p}");
    assert!(p["ended_at"].as_u64().is_some(), "{p}");
    assert_eq!(top(&w)[0]["subagents"], json!([]), "ended at once");
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert_eq!(parent.envelope.payload["used_tokens"], own);
    assert_eq!(
        parent.envelope.payload["calls"], 0,
        "the session's own calls: none yet"
    );
}

/// Qwen Code 0.24.4's default subagent runs in the background: the
/// parent's turn ends while it runs, listing it `running` in
/// `background_tasks` (it stays), and the next one lists it `completed`
/// (it is gone, at its last figure).
#[test]
fn a_qwen_background_subagent_stays_while_its_parent_s_turn_lists_it_running() {
    const SESSION: &str = "4d6b0fa3-ea96-49c3-be2c-e7f8ee5e322e";
    let w = World::new();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    let all = observed("qwen-0.24.4-background/hook-inputs.with-disk-snapshot.jsonl");
    qwen_files(&w, "qwen-0.24.4-background", SESSION, 2);
    hook(&w, "qwen", &nth(&all, &w, "PostToolUse", true, 0));
    assert_eq!(subagent(&w, SESSION, QWEN_AGENT)["used_tokens"], 40_000);
    assert_eq!(
        subagent(&w, SESSION, QWEN_AGENT)["window"],
        1_000_000,
        "assumed, as its session's, before Qwen states one"
    );
    hook(&w, "qwen", &nth(&all, &w, "Stop", false, 0));
    assert_eq!(
        top(&w)[0]["subagents"][0]["agent"],
        QWEN_AGENT,
        "still running"
    );
    // The session's Stop states its window (200,000): the subagent, whose
    // transcript names no model, runs on the session's, in that window.
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(
        (p["window"].clone(), p["model"].clone()),
        (json!(200_000), json!("mock-model")),
        "{p}"
    );
    qwen_files(&w, "qwen-0.24.4-background", SESSION, 3);
    hook(&w, "qwen", &nth(&all, &w, "Stop", false, 1));
    assert_eq!(top(&w)[0]["subagents"], json!([]), "completed");
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(p["used_tokens"], 60_000, "read again at its end: {p}");
}

/// Qwen Code 0.21.2's subagent's calls carry nothing naming it (counted
/// as the session's, docs/hosts.md says so); its `SubagentStop` does: the
/// subagent is recorded at its end with its own last figure.
#[test]
fn a_qwen_0_21_subagent_is_recorded_at_its_stop() {
    const SESSION: &str = "cd6827e4-b708-44f6-93d4-5371c5f07264";
    let w = World::new();
    let all = observed("qwen-0.21.2/hook-inputs.with-disk-snapshot.jsonl");
    qwen_files(&w, "qwen-0.21.2", SESSION, 3);
    let said = hook(&w, "qwen", &nth(&all, &w, "SubagentStop", true, 0));
    assert_eq!(said, "");
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(p["used_tokens"], 60_000, "{p}");
    assert_eq!(p["agent_type"], "general-purpose", "{p}");
    assert!(p["ended_at"].as_u64().is_some(), "{p}");
}

/// Qwen Code 0.21.2's subagent's calls carry its session's id and chat
/// and nothing naming it (`agent_id` and `prompt_id` come with 0.23.4):
/// interband gave them the session's warnings and counted them as the
/// session's. The subagent writes each answer, naming the calls it makes,
/// to its own transcript before their hooks run: a call whose id a running
/// subagent's transcript names is that subagent's, the session's own call
/// that started it (seen live taken for the subagent's by a first rule, by
/// its transcript's time: tests/fixtures/qwen-copilot-subagents/verified-2/)
/// and every call once it has finished are the session's.
#[test]
fn a_qwen_0_21_subagent_s_calls_are_told_apart_by_its_own_transcript() {
    const SESSION: &str = "cd6827e4-b708-44f6-93d4-5371c5f07264";
    let w = World::new();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    let all = observed("qwen-0.21.2/hook-inputs.with-disk-snapshot.jsonl");
    let project = w.home().join(".qwen/projects/-home-user-proj");
    let meta = project.join(format!("subagents/{SESSION}/agent-{QWEN_AGENT}.meta.json"));
    // Its transcript up to its first answer, which calls `call_mock2_0`.
    qwen_files(&w, "qwen-0.21.2", SESSION, 1);
    let call = nth(&all, &w, "PostToolUse", false, 0);
    assert_eq!(call["tool_call_id"], "call_mock2_0");
    assert_eq!(hook(&w, "qwen", &call), "", "nothing is told the subagent");
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(p["used_tokens"], 20_000, "{p}");
    assert_eq!(p["agent_type"], "general-purpose", "{p}");
    let parent = pressure(&w, SESSION);
    assert_eq!(parent["calls"], 0, "not the session's own: {parent}");
    assert_eq!(
        parent["used_tokens"], 31_000,
        "the session's own chat's: {parent}"
    );

    // The session's call that started it (in the background, its hook runs
    // while the subagent does): the session's.
    let started = nth(&all, &w, "PostToolUse", false, 2);
    assert_eq!(started["tool_name"], "agent");
    hook(&w, "qwen", &started);
    assert_eq!(subagent(&w, SESSION, QWEN_AGENT)["calls"], 1);
    let parent = pressure(&w, SESSION);
    assert_eq!(parent["calls"], 1, "{parent}");

    // A release that names a subagent's calls (its calls have a
    // `prompt_id`): a call with no `agent_id` is the session's.
    let mut named = call.clone();
    named["prompt_id"] = json!("p1");
    hook(&w, "qwen", &named);
    assert_eq!(subagent(&w, SESSION, QWEN_AGENT)["calls"], 1);

    // Its second call, named by its next answer.
    qwen_files(&w, "qwen-0.21.2", SESSION, 2);
    hook(&w, "qwen", &nth(&all, &w, "PostToolUse", false, 1));
    let p = subagent(&w, SESSION, QWEN_AGENT);
    assert_eq!(
        (p["used_tokens"].clone(), p["calls"].clone()),
        (json!(40_000), json!(2))
    );

    // Once its record says it has finished, a call it named is the session's.
    let done = std::fs::read_to_string(&meta)
        .unwrap()
        .replace("\"running\"", "\"completed\"");
    std::fs::write(&meta, done).unwrap();
    hook(&w, "qwen", &call);
    assert_eq!(subagent(&w, SESSION, QWEN_AGENT)["calls"], 2);
    let parent = pressure(&w, SESSION);
    assert_eq!(parent["calls"], 3, "{parent}");
}

/// Copilot CLI 1.0.102's subagent (`task`) fires its hooks with its own id
/// as `session_id` and the session's as `parent_agent_id`, and a `Stop` of
/// its own (`tests/fixtures/qwen-copilot-subagents/copilot-1.0.102/`,
/// captured). interband had shown it as a session of its own, and would
/// have taken its `Stop` for a turn's end. It is its session's subagent;
/// its `Stop` is its end, and nothing is said at it, even with the session
/// at red; its figure is its own records' in the session's log, written
/// there (for a `sync` subagent) once it has returned.
#[test]
fn a_copilot_subagent_is_its_session_s_and_its_stop_ends_only_it() {
    const SESSION: &str = COPILOT_SESSION;
    const AGENT: &str = COPILOT_AGENT;
    let (w, all, folder, events) = copilot_session();
    // The session at red: its own figures 60.5k, then 61k, of its 64k.
    let events = events
        .replace("\"inputTokens\": 30000", "\"inputTokens\": 60500")
        .replace("\"inputTokens\": 31000", "\"inputTokens\": 61000");
    // While a `sync` subagent runs, Copilot has written no usage record
    // yet (copilot-1.0.102-timing/): the lines up to its start, without them.
    let before: String = events
        .lines()
        .take_while(|l| !l.contains("\"agentId\""))
        .filter(|l| !l.contains("session.usage_record"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(folder.join("events.jsonl"), &before).unwrap();

    for n in 0..2 {
        let said = hook(&w, "copilot", &nth(&all, &w, "PostToolUse", true, n));
        assert_eq!(said, "", "nothing is told the subagent");
    }
    let v = top(&w);
    assert_eq!(
        v.len(),
        1,
        "its session's only, no session of its own: {v:?}"
    );
    assert_eq!(v[0]["session"], SESSION, "{v:?}");
    assert_eq!(v[0]["subagents"][0]["agent"], AGENT, "{v:?}");
    assert_eq!(
        v[0]["subagents"][0]["agent_type"], "general-purpose",
        "{v:?}"
    );
    assert!(
        w.bus().read("interpulse", "pressure", AGENT).is_err(),
        "no session under the subagent's id"
    );
    let p = subagent(&w, SESSION, AGENT);
    assert_eq!(p["calls"], 2, "{p}");
    assert!(p["used_tokens"].is_null(), "no figure written yet: {p}");

    // Its own Stop, with the session red on disk: it ends, nothing is said.
    std::fs::write(folder.join("events.jsonl"), &events).unwrap();
    let said = hook(&w, "copilot", &nth(&all, &w, "Stop", true, 0));
    assert_eq!(
        said, "",
        "a subagent's Stop is no turn's end of its session"
    );
    let p = subagent(&w, SESSION, AGENT);
    assert!(p["ended_at"].as_u64().is_some(), "{p}");
    assert_eq!(p["used_tokens"], 60_000, "its own last record's: {p}");
    assert_eq!(p["window"], 64_000, "{p}");

    // The session's own turn's end at red advises.
    let said = hook(&w, "copilot", &nth(&all, &w, "Stop", false, 0));
    assert!(!said.is_empty(), "the session's own Stop at red advises");
    // Its note and the summary's instructions keep the session's own
    // prompt, never the subagent's (its lines are in the same log).
    assert!(
        said.contains("Use a subagent to list files") && !said.contains("Run two shell commands"),
        "{said}"
    );
    let parent = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert_eq!(
        parent.envelope.payload["used_tokens"], 61_000,
        "the session's own figure, never its subagent's"
    );
}

const COPILOT_SESSION: &str = "52d60db1-337e-4613-924f-38559aa72500";
const COPILOT_AGENT: &str = "694171c2-b121-4e29-8597-816a6a9a3496";

/// The captured Copilot session (1.0.102, a `sync` subagent): a world with
/// its folder, the hook inputs observed, the session's log folder, and its
/// log as it was at its turn's end (before its shutdown's line).
fn copilot_session() -> (World, Vec<(String, Value)>, std::path::PathBuf, String) {
    let w = World::new();
    std::fs::create_dir_all(w.home().join("proj")).unwrap();
    let folder = w
        .home()
        .join(".copilot/session-state")
        .join(COPILOT_SESSION);
    std::fs::create_dir_all(&folder).unwrap();
    let events = captured(
        "qwen-copilot-subagents",
        "copilot-1.0.102/events.trimmed.jsonl",
    )
    .lines()
    .take_while(|l| !l.contains("session.shutdown"))
    .map(|l| format!("{l}\n"))
    .collect();
    let all = observed("copilot-1.0.102/hook-inputs.jsonl");
    (w, all, folder, events)
}

/// Copilot writes its log lazily, some hundreds of milliseconds after
/// each answer (seen live: tests/fixtures/qwen-copilot-subagents/verified/):
/// a subagent's own `Stop` may read no figure of its, or its answer
/// before the last. One ended a short while ago is read again at its
/// session's turn's end, until its last figure is there.
#[test]
fn a_copilot_subagent_s_last_figure_written_after_its_end_is_read_at_its_session_s_turn_end() {
    const SESSION: &str = COPILOT_SESSION;
    const AGENT: &str = COPILOT_AGENT;
    let (w, all, folder, events) = copilot_session();
    let log = |keep: &dyn Fn(&str) -> bool| {
        let lines: String = events
            .lines()
            .filter(|l| keep(l))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(folder.join("events.jsonl"), lines).unwrap();
    };
    log(&|l| !l.contains("session.usage_record"));
    hook(&w, "copilot", &nth(&all, &w, "PostToolUse", true, 0));
    hook(&w, "copilot", &nth(&all, &w, "Stop", true, 0));
    assert!(subagent(&w, SESSION, AGENT)["used_tokens"].is_null());
    // Its answer before the last is written by the session's turn's end.
    log(&|l| !l.contains("\"inputTokens\": 60000"));
    hook(&w, "copilot", &nth(&all, &w, "Stop", false, 0));
    assert_eq!(subagent(&w, SESSION, AGENT)["used_tokens"], 40_000);
    // Its last, by the next.
    log(&|_| true);
    hook(&w, "copilot", &nth(&all, &w, "Stop", false, 0));
    let p = subagent(&w, SESSION, AGENT);
    assert_eq!(p["used_tokens"], 60_000, "{p}");
    assert!(p["ended_at"].as_u64().is_some(), "{p}");
}
