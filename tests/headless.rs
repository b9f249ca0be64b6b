//! Advice only where a person can act: at the end of a red turn of a
//! headless run (`claude -p`, `codex exec`, `gemini -p`) the hook writes the
//! note and announces the compaction, but does not block the stop (that
//! would cost a model round at a full context, for an answer nobody reads);
//! the advice goes to the person as a `systemMessage`. An interactive
//! session, or one nothing tells apart, is still advised through the agent,
//! and `[compact] advise_headless` brings that back for headless runs.
//! Each host's own signal, through the real binary, as the host runs it.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use interpulse::synthetic::Writer;
use serde_json::{Value, json};

const SESSION: &str = "9a0c7e2b-51d4-4d8e-9d0a-2c6f3b8e7a11";

fn capture_of(host: &str, name: &str) -> Value {
    let path = repo().join("tests/fixtures").join(host).join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn with(mut v: Value, extra: Value) -> Vec<u8> {
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::to_vec(&v).unwrap()
}

/// Runs the hook with `env` on top of the world's; its output, parsed.
fn hook(w: &World, env: &[(&str, &str)], stdin: &[u8]) -> Value {
    let mut cmd = w.cmd(&["hook"]);
    cmd.envs(env.iter().copied());
    let o = with_stdin(&mut cmd, stdin);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "stderr stays empty: {}", stderr(&o));
    let out = stdout(&o);
    if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap()
    }
}

fn notes(w: &World) -> Vec<String> {
    files_under(&w.root().join("intermem/notes"))
        .into_iter()
        .filter(|f| f.ends_with(".md") && !f.ends_with("latest.md"))
        .collect()
}

fn pending(w: &World) -> Value {
    w.bus()
        .read("compact", "pending", SESSION)
        .map(|m| m.envelope.payload)
        .unwrap_or(Value::Null)
}

/// What a red Claude Code turn's end answers with `env`: the tool call
/// that reaches red, then Stop.
fn claude_red_stop(w: &World, env: &[(&str, &str)]) -> Value {
    let cwd = w.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let path = w.dir.path().join(format!("{SESSION}.jsonl"));
    let mut t = Writer::new(&path, SESSION, &cwd);
    t.prompt("Port the cache to the new store").unwrap();
    t.tool(
        "Bash",
        json!({"command": "cargo test"}),
        "ok",
        false,
        165_000,
        false,
    )
    .unwrap();
    let input = |name: &str, extra: Value| {
        let mut v = capture_of("claude-code-2.1.332", name);
        v["session_id"] = json!(SESSION);
        v["transcript_path"] = json!(path);
        v["cwd"] = json!(cwd);
        with(v, extra)
    };
    let warned = hook(w, env, &input("PostToolUse.input.json", json!({})));
    assert!(warned.to_string().contains("RED"), "{warned}");
    t.say("The cache is ported; tests pass.", 166_000).unwrap();
    hook(
        w,
        env,
        &input("Stop.input.json", json!({"stop_hook_active": false})),
    )
}

/// The stop was not blocked; the person is told, with the note and how to
/// compact; the note exists and the compaction is announced.
fn told_the_person(w: &World, out: &Value, command: &str) {
    assert!(out.get("decision").is_none(), "no block: {out}");
    let said = out["systemMessage"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        said.starts_with("interband: ") && said.contains(command) && said.contains(SESSION),
        "{said}"
    );
    assert!(!said.contains("Tell the user"), "{said}");
    let notes = notes(w);
    assert!(!notes.is_empty(), "the note is written");
    assert!(
        notes
            .iter()
            .any(|n| said.contains(&n.replace('/', std::path::MAIN_SEPARATOR_STR))),
        "the message names the note: {said} {notes:?}"
    );
    assert_eq!(pending(w)["strategy"], "advise", "announced");
}

/// The advice for the person at the keyboard, in interband's words: the
/// command marked, the turn's end as the moment, the fresh session beside it,
/// and no order.
fn advice_for_the_person(said: &str, command: &str) {
    assert!(
        said.starts_with("interband: the context is nearly full")
            && said.contains(&format!("`{command}"))
            && said.contains("The turn has ended")
            && said.contains("`interband handoff --session ")
            && orders(said).is_empty(),
        "{said}"
    );
}

/// Where the host shows no hook's message: the block has the agent relay it.
#[cfg(unix)] // (its one test is)
fn blocked(out: &Value, command: &str) {
    assert_eq!(out["decision"], "block", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains("let them know") && reason.contains(&format!("`{command}")),
        "{reason}"
    );
    assert!(!reason.contains("do not start new work"), "{reason}");
    advice_for_the_person(
        out["systemMessage"]
            .as_str()
            .unwrap_or_else(|| panic!("a message for the user beside the block: {out}")),
        command,
    );
}

/// Where the host shows a hook's message to the person (Claude Code): the
/// advice is that message, with no block (which the UI shows as "Stop hook
/// reported a problem" and the model as a "blocking error").
fn shown(out: &Value, command: &str) {
    assert!(out.get("decision").is_none(), "no block: {out}");
    assert_eq!(out.as_object().map(|o| o.len()), Some(1), "{out}");
    advice_for_the_person(out["systemMessage"].as_str().unwrap(), command);
}

#[test]
fn claude_print_mode_is_told_not_blocked() {
    for env in [
        &[("CLAUDE_CODE_ENTRYPOINT", "sdk-cli")][..],
        &[("CLAUDE_CODE_ENTRYPOINT", "sdk-ts")],
        &[
            ("CLAUDE_CODE_ENTRYPOINT", "cli"),
            ("CLAUDE_CODE_SESSION_ATTENDED", "0"),
        ],
    ] {
        let w = World::new();
        let out = claude_red_stop(&w, env);
        told_the_person(
            &w,
            &out,
            &format!(
                "claude -p '/compact keep: Port the cache to the new store' --resume {SESSION}"
            ),
        );
    }
}

#[test]
fn an_interactive_or_unknown_claude_session_is_advised_in_its_ui() {
    for env in [
        &[("CLAUDE_CODE_ENTRYPOINT", "cli")][..],
        &[
            ("CLAUDE_CODE_ENTRYPOINT", "sdk-cli"),
            ("CLAUDE_CODE_SESSION_ATTENDED", "1"),
        ],
        &[],
        &[
            ("CLAUDE_CODE_ENTRYPOINT", "sdk-cli"),
            ("INTERBAND_COMPACT_ADVISE_HEADLESS", "true"),
        ],
    ] {
        let w = World::new();
        shown(
            &claude_red_stop(&w, env),
            "/compact keep: Port the cache to the new store",
        );
        assert_eq!(notes(&w).len(), 1, "{env:?}");
    }
}

/// A Codex rollout at red whose first line says who started it.
fn codex_rollout(dir: &Path, source: &str, originator: &str) -> PathBuf {
    let folder = dir.join(".codex/sessions/2026/11/30");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("rollout-2026-11-30T07-24-45-{SESSION}.jsonl"));
    let real = std::fs::read_to_string(
        repo().join("tests/fixtures/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl"),
    )
    .unwrap();
    let real = real
        .replacen(
            r#""originator":"codex_exec""#,
            &format!(r#""originator":"{originator}""#),
            1,
        )
        .replacen(r#""source":"exec""#, &format!(r#""source":"{source}""#), 1);
    let used = 183_000;
    let usage = json!({"input_tokens": used - 20, "cached_input_tokens": used / 2, "output_tokens": 20,
        "reasoning_output_tokens": 0, "total_tokens": used});
    let count = json!({"timestamp": "2026-11-30T07:28:33.100Z", "type": "event_msg", "payload": {"type": "token_count",
        "info": {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 190_000}}});
    std::fs::write(&path, format!("{real}{count}\n")).unwrap();
    path
}

fn codex_red_stop(w: &World, rollout: &Path) -> Value {
    let input = |name: &str, extra: Value| {
        let mut v = capture_of("codex-0.171.0", name);
        v["session_id"] = json!(SESSION);
        v["transcript_path"] = json!(rollout);
        v["cwd"] = json!(w.dir.path());
        with(v, extra)
    };
    let warned = hook(w, &[], &input("PostToolUse.input.json", json!({})));
    assert!(warned.to_string().contains("RED"), "{warned}");
    hook(
        w,
        &[],
        &input("Stop.input.json", json!({"stop_hook_active": false})),
    )
}

#[test]
fn codex_exec_is_told_not_blocked_and_its_interactive_ui_is_advised() {
    let w = World::new();
    let exec = codex_rollout(w.dir.path(), "exec", "codex_exec");
    let out = codex_red_stop(&w, &exec);
    told_the_person(&w, &out, "/compact");

    for (source, originator) in [("cli", "codex-tui"), ("vscode", "codex_vscode")] {
        let w = World::new();
        let ui = codex_rollout(w.dir.path(), source, originator);
        shown(&codex_red_stop(&w, &ui), "/compact");
    }
}

/// A stand-in for the `gemini` program with `args`: a script of that name
/// that runs the hook as its child, as Gemini CLI does, with the input in
/// the file `input`; its output, parsed.
#[cfg(unix)] // a shell script stands in for the host process (Wine cannot read a parent: docs/hosts.md, Platforms)
fn as_gemini(w: &World, args: &[&str], input: &[u8]) -> Value {
    as_host(w, "gemini", "gemini", args, input)
}

#[cfg(unix)]
// a shell script stands in for the host process (Wine cannot read a parent: docs/hosts.md, Platforms)
#[test]
fn gemini_prompt_mode_is_told_not_blocked() {
    // (The stand-in's standard input is not a terminal either: a run with
    // `-p` and one whose input is a pipe are both headless.)
    for args in [
        &["-p", "port the cache"][..],
        &["--prompt=port the cache"],
        &[],
    ] {
        let w = World::new();
        let cwd = w.dir.path().join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        let folder = w.dir.path().join(".gemini/tmp/proj/chats");
        std::fs::create_dir_all(&folder).unwrap();
        let chat = folder.join("session-2026-11-30T07-27-9a0c7e2b.jsonl");
        let real = std::fs::read_to_string(
            repo().join("tests/fixtures/gemini-cli-0.61.0/transcript.session.jsonl"),
        )
        .unwrap();
        let reply = json!({"id": "r9", "type": "gemini", "tokens": {"input": 500_000, "output": 9},
            "model": "gemini-2.5-flash"});
        std::fs::write(&chat, format!("{real}{reply}\n")).unwrap();
        let event = |name: &str, file: Option<&str>, extra: Value| {
            let mut v = match file {
                Some(f) => capture_of("gemini-cli-0.61.0", f),
                None => json!({"hook_event_name": name, "timestamp": "2026-11-30T07:27:19.000Z"}),
            };
            v["session_id"] = json!(SESSION);
            v["transcript_path"] = json!(chat);
            v["cwd"] = json!(cwd);
            with(v, extra)
        };
        let warned = as_gemini(
            &w,
            args,
            &event(
                "AfterTool",
                Some("AfterTool.run_shell_command.input.json"),
                json!({}),
            ),
        );
        assert!(warned.to_string().contains("RED"), "{warned}");
        let out = as_gemini(
            &w,
            args,
            &event(
                "AfterAgent",
                None,
                json!({"prompt": "go", "prompt_response": "ok", "stop_hook_active": false}),
            ),
        );
        told_the_person(&w, &out, "/compress");
    }
}

/// A session's start from interband's Claude Code plugin, with `env`.
fn plugin_start(w: &World, env: &[(&str, &str)]) -> Value {
    let mut v = capture_of("claude-code-2.1.332", "SessionStart.startup.input.json");
    v["session_id"] = json!(SESSION);
    v["cwd"] = json!(w.dir.path());
    let mut all = vec![("CLAUDE_PLUGIN_ROOT", "/opt/plugins/interband")];
    all.extend_from_slice(env);
    hook(w, &all, &serde_json::to_vec(&v).unwrap())
}

fn hinted(out: &Value) -> bool {
    out["systemMessage"]
        .as_str()
        .is_some_and(|m| m.contains("interband install --statusline-only"))
}

#[test]
fn the_plugins_first_interactive_session_says_how_to_add_the_statusline_once() {
    let ui = [("CLAUDE_CODE_ENTRYPOINT", "cli")];
    let w = World::new();
    // Headless: nobody sees it, so it is not spent.
    assert_eq!(
        plugin_start(&w, &[("CLAUDE_CODE_ENTRYPOINT", "sdk-cli")]),
        Value::Null
    );
    let out = plugin_start(&w, &ui);
    assert!(hinted(&out), "{out}");
    assert_terminal_safe("the hint", out["systemMessage"].as_str().unwrap());
    assert_eq!(plugin_start(&w, &ui), Value::Null, "once");

    // Not from the plugin (hooks in the settings), or the statusline is there: nothing.
    let w = World::new();
    let mut v = capture_of("claude-code-2.1.332", "SessionStart.startup.input.json");
    v["cwd"] = json!(w.dir.path());
    assert_eq!(hook(&w, &ui, &serde_json::to_vec(&v).unwrap()), Value::Null);
    std::fs::create_dir_all(w.home().join(".claude")).unwrap();
    std::fs::write(
        w.home().join(".claude/settings.json"),
        r#"{"statusLine": {"type": "command", "command": "/usr/local/bin/interband statusline"}}"#,
    )
    .unwrap();
    assert_eq!(plugin_start(&w, &ui), Value::Null);
    // Someone else's statusline: said (it can be wrapped).
    std::fs::write(
        w.home().join(".claude/settings.json"),
        r#"{"statusLine": {"type": "command", "command": "ccstatusline"}}"#,
    )
    .unwrap();
    assert!(hinted(&plugin_start(&w, &ui)));
}

/// Runs the hook for `host` from a stand-in for its CLI named `name` (a
/// script, so its process is the hook's parent, with `args` on its command
/// line, as Qwen Code and Copilot CLI run their hooks): its output, parsed.
#[cfg(unix)] // a shell script stands in for the host process (Wine cannot read a parent: docs/hosts.md, Platforms)
fn as_host(w: &World, name: &str, host: &str, args: &[&str], input: &[u8]) -> Value {
    let bin = w.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = bin.join(name);
    std::fs::write(
        &program,
        "#!/bin/sh\n\"$INTERBAND_BIN\" hook --host \"$HOST_KEY\" < \"$INPUT\"\nexit $?\n",
    )
    .unwrap();
    set_executable(&program);
    let file = w.dir.path().join("input.json");
    std::fs::write(&file, input).unwrap();
    let o = std::process::Command::new(&program)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("INTERBAND_ROOT", w.root())
        .env("HOME", w.home())
        .env("INTERBAND_BIN", BIN)
        .env("HOST_KEY", host)
        .env("INPUT", &file)
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap()
    }
}

#[cfg(unix)]
/// A red turn's end for Qwen Code and for Copilot CLI: the inputs each
/// sends, at a figure past its compaction point.
fn red_stop_input(w: &World, host: &str) -> Vec<u8> {
    let cwd = w.dir.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    match host {
        "qwen" => with(
            capture_of("qwen-code-0.24.4", "Stop.input.json"),
            json!({"session_id": SESSION, "cwd": cwd, "input_tokens": 190_000, "context_limit": 200_000,
                "transcript_path": w.dir.path().join("none.jsonl")}),
        ),
        _ => {
            let log = w
                .home()
                .join(format!(".copilot/session-state/{SESSION}/events.jsonl"));
            std::fs::create_dir_all(log.parent().unwrap()).unwrap();
            let usage = json!({"type": "session.usage_record", "id": "u1", "data": {"usage": {
                "model": "gpt-4.1", "inputTokens": 120_000, "maxPromptTokens": 128_000,
                "interactionType": "conversation-agent"}}});
            std::fs::write(&log, format!("{usage}\n")).unwrap();
            with(
                capture_of("copilot-cli-1.0.102", "Stop.input.json"),
                json!({"session_id": SESSION, "cwd": cwd, "transcript_path": log}),
            )
        }
    }
}

/// Qwen Code's and Copilot CLI's headless runs are told apart by their own
/// process (`qwen -p`, a prompt argument, no terminal; `copilot -p`): the
/// red turn's end writes the note and is not blocked there, while the same
/// end with no such process found (run straight from here) is advised
/// through the agent. (Only the opt-in real-CLI tests reached this before.)
#[cfg(unix)]
// a shell script stands in for the host process (Wine cannot read a parent: docs/hosts.md, Platforms)
#[test]
fn qwen_and_copilot_headless_runs_are_told_not_blocked() {
    for (name, host, args) in [
        ("qwen", "qwen", &["-p", "port the cache"][..]),
        ("qwen", "qwen", &["port the cache"][..]),
        (
            "copilot",
            "copilot",
            &["-p", "port the cache", "--allow-all-tools"][..],
        ),
    ] {
        let w = World::new();
        let input = red_stop_input(&w, host);
        let out = as_host(&w, name, host, args, &input);
        assert!(
            !out.to_string().contains("\"block\""),
            "{name} {args:?}: a headless run is not blocked: {out}"
        );
        assert!(
            !notes(&w).is_empty(),
            "{name} {args:?}: the note is written"
        );
        assert_eq!(
            pending(&w)["strategy"],
            "advise",
            "{name} {args:?}: announced"
        );
        // The same end, no host process found: an interactive session, advised.
        let w = World::new();
        let input = red_stop_input(&w, host);
        let mut cmd = w.cmd(&["hook", "--host", host]);
        let o = with_stdin(&mut cmd, &input);
        assert_eq!(code(&o), 0);
        // (Neither shows a hook's message alone: the agent relays it.)
        let command = if name == "qwen" {
            "/compress"
        } else {
            "/compact"
        };
        blocked(&serde_json::from_str(&stdout(&o)).unwrap(), command);
    }
}
