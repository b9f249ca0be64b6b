//! `interband handoff`: a fresh session of the same agent, in the same
//! folder, whose first prompt carries the session's memory note (printed,
//! as JSON, or run). The agent's own CLI is a stand-in here that records
//! what it was given; `tests/e2e_claude.rs` gives the real one's prompt.

mod common;

use common::*;
use interpulse::synthetic::Writer;
use serde_json::{Value, json};

const SESSION: &str = "3e0c7e2b-51d4-4d8e-9d0a-2c6f3b8e7a42";

/// A Claude Code session in `project` that ran `cargo test` at 120k, with
/// its hook's pressure published.
fn a_claude_session(w: &World) -> std::path::PathBuf {
    let project = w.dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let path = w.dir.path().join(format!("{SESSION}.jsonl"));
    let mut t = Writer::new(&path, SESSION, &project);
    t.prompt("Port the cache to the new store").unwrap();
    t.tool(
        "Bash",
        json!({"command": "cargo test"}),
        "ok",
        false,
        120_000,
        false,
    )
    .unwrap();
    let input = json!({"session_id": SESSION, "transcript_path": path, "cwd": project,
        "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "cargo test"}, "tool_response": {"stdout": "ok"}});
    let mut cmd = w.cmd(&["hook", "--host", "claude"]);
    let o = with_stdin(&mut cmd, &serde_json::to_vec(&input).unwrap());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    project
}

#[test]
fn the_fresh_session_s_command_carries_the_note() {
    let w = World::new();
    let o = w.run(&["handoff"]);
    assert_eq!(code(&o), 1, "no session yet");
    assert!(
        stderr(&o).contains("no session to hand over yet"),
        "{}",
        stderr(&o)
    );

    let project = a_claude_session(&w);
    let o = w.run(&["handoff", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["session"], SESSION);
    assert_eq!(v["agent"], "claude");
    assert_eq!(v["cwd"], json!(project));
    let argv: Vec<String> = serde_json::from_value(v["argv"].clone()).unwrap();
    assert_eq!(argv.len(), 2, "{argv:?}");
    assert_eq!(argv[0], "claude");
    let prompt = &argv[1];
    let note = std::fs::read_to_string(v["note"].as_str().unwrap()).unwrap();
    assert!(note.contains("Port the cache to the new store"), "{note}");
    assert!(
        prompt.contains("<interband-memory-note")
            && prompt.contains("Port the cache to the new store")
            && prompt.contains("fresh Claude Code session"),
        "{prompt}"
    );
    // Printed: a command line a shell runs as it is.
    let o = w.run(&["handoff", "--session", SESSION]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = stdout(&o);
    let words = shell_words::split(line.trim()).unwrap();
    assert_eq!(
        &words[..3],
        ["cd", project.to_str().unwrap(), "&&"],
        "{line}"
    );
    assert_eq!(words[3], "claude");
    assert!(
        words[4].contains("Port the cache to the new store"),
        "{line}"
    );
}

#[test]
#[cfg(unix)] // a shell script stands in for the agent's CLI
fn run_starts_the_agent_in_the_session_s_folder_with_the_note() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let project = a_claude_session(&w);
    let bin = w.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = w.dir.path().join("ran.txt");
    let claude = bin.join("claude");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\npwd > '{0}'\nprintf '%s' \"$1\" >> '{0}'\nexit 7\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = w
        .cmd(&["handoff", "--run"])
        .current_dir(&project)
        .env("PATH", path)
        .finish();
    assert_eq!(code(&o), 7, "the agent's exit code: {}", stderr(&o));
    let ran = std::fs::read_to_string(&record).unwrap();
    let (cwd, prompt) = ran.split_once('\n').unwrap();
    assert_eq!(
        std::fs::canonicalize(cwd).unwrap(),
        std::fs::canonicalize(&project).unwrap()
    );
    assert!(
        prompt.contains("<interband-memory-note") && prompt.contains("Port the cache"),
        "{prompt}"
    );
}
