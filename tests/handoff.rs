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
    // The prompt is in a file beside the note, for the printed line.
    let file = v["prompt_file"].as_str().unwrap();
    assert!(file.ends_with("-handoff.prompt.txt"), "{file}");
    let held = std::fs::read_to_string(file).unwrap();
    assert_eq!(&held, prompt, "the file holds the prompt");
    let command = v["command"].as_str().unwrap();
    assert!(command.contains(file), "the printed line reads it: {v}");
    // For the shell a person has there (on Windows, PowerShell).
    if cfg!(windows) {
        assert!(
            command.starts_with("Set-Location '") && command.contains("(Get-Content -Raw '"),
            "{command}"
        );
    } else {
        assert!(
            command.starts_with("cd ") && command.contains(" && claude \"$(cat "),
            "{command}"
        );
    }
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
        .env("PATH", &path)
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

    // The printed line, run by a shell elsewhere, does the same: the same
    // folder, the prompt whole, its newlines and quotes as they are.
    let o = w.run(&["handoff", "--session", SESSION]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = stdout(&o);
    assert!(!line.trim().contains('\n'), "one line: {line}");
    std::fs::remove_file(&record).unwrap();
    let shell = std::process::Command::new("/bin/sh")
        .args(["-c", line.trim()])
        .current_dir(w.dir.path())
        .env("PATH", &path)
        .finish();
    assert_eq!(shell.status.code(), Some(7), "{line}");
    let ran = std::fs::read_to_string(&record).unwrap();
    let (cwd, printed) = ran.split_once('\n').unwrap();
    assert_eq!(
        std::fs::canonicalize(cwd).unwrap(),
        std::fs::canonicalize(&project).unwrap()
    );
    assert!(
        printed.contains("<interband-memory-note") && printed.contains('\n'),
        "{printed}"
    );
}
