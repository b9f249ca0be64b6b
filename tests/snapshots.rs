//! What people read, as snapshots (insta): the agent's warning at each
//! level, the memory note, the statusline line at each level, the replay
//! report of the real captured session, and install's dry-run diff. Each is
//! made by the real binary from real captured inputs, in a temp root and
//! home; what changes from run to run (temp paths, times, ids, durations) is
//! replaced by a placeholder. A changed text fails until its snapshot is
//! reviewed (`cargo insta review`, or `INSTA_UPDATE=always` then `git diff`).

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

fn transcript(dir: &Path, used: u64) -> std::path::PathBuf {
    claude_transcript(dir, &format!("t-{used}.jsonl"), used)
}

/// Temp paths, the binary's path, times, dates, durations and ids, as placeholders.
fn settings(w: &World) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&w.dir.path().to_string_lossy()), "[TMP]");
    // A Windows path's separator after it, as Unix writes it.
    s.add_filter(r"\[TMP\]\\", "[TMP]/");
    // The temp folder's own name (a note's title names its project so).
    let name = w
        .dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    s.add_filter(&regex_escape(&name), "[TMP-NAME]");
    s.add_filter(&regex_escape(BIN), "[BIN]");
    s.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "[TIME]");
    s.add_filter(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?( UTC)?", "[TIME]");
    s.add_filter(r"\b\d+(\.\d+)? ?(ms|µs)\b", "[DURATION]");
    s.add_filter(r"cp\d+-[0-9a-f]{8}", "cp[N]-[ID]");
    s.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[UUID]",
    );
    s.set_prepend_module_to_snapshot(false);
    s
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

fn hook(w: &World, session: &str, transcript: &Path) -> Option<String> {
    let mut v: Value = serde_json::from_slice(&capture("PostToolUse.input.json")).unwrap();
    v["session_id"] = json!(session);
    v["transcript_path"] = json!(transcript);
    v["cwd"] = json!(w.dir.path());
    let o = w.run_with_stdin(&["hook", "--host", "claude"], v.to_string().as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    (!out.trim().is_empty()).then(|| {
        let v: Value = serde_json::from_str(&out).unwrap();
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_owned()
    })
}

#[test]
fn the_warning_at_each_level_and_the_note_a_checkpoint_writes() {
    let w = World::new();
    let mut said = String::new();
    for (level, used) in [("yellow", 120_000), ("orange", 140_000), ("red", 160_000)] {
        let t = transcript(w.dir.path(), used);
        let text = hook(&w, &format!("s-{level}"), &t).expect("a warning");
        said.push_str(&format!("--- {level}, {used} tokens of 200k\n{text}\n"));
    }
    settings(&w).bind(|| insta::assert_snapshot!("warnings", said));

    let notes = files_under(&w.root().join("intermem/notes"));
    let note = notes
        .iter()
        .find(|n| n.contains("s-orange") && n.ends_with("pressure.md"))
        .unwrap_or_else(|| panic!("the orange checkpoint's note: {notes:?}"));
    let text = std::fs::read_to_string(w.root().join("intermem/notes").join(note)).unwrap();
    settings(&w).bind(|| insta::assert_snapshot!("note", text));
}

/// What the person (and, where the host shows them nothing, the agent) is
/// told at a red turn's end: Claude Code's message, Codex's block and its
/// message, a headless session's line.
#[test]
fn the_advice_at_a_red_turn_s_end() {
    let w = World::new();
    let mut said = String::new();
    for (name, host, env) in [
        (
            "claude, interactive",
            "claude",
            vec![("CLAUDE_CODE_ENTRYPOINT", "cli")],
        ),
        (
            "claude -p",
            "claude",
            vec![("CLAUDE_CODE_ENTRYPOINT", "sdk-cli")],
        ),
    ] {
        let session = format!("s-{}", name.len());
        let t = transcript(w.dir.path(), 165_000);
        hook(&w, &session, &t);
        let mut v: Value = serde_json::from_slice(&capture("Stop.input.json")).unwrap();
        v["session_id"] = json!(session);
        v["transcript_path"] = json!(t);
        v["cwd"] = json!(w.dir.path());
        v["stop_hook_active"] = json!(false);
        let mut cmd = w.cmd(&["hook", "--host", host]);
        cmd.env_remove("CLAUDE_CODE_ENTRYPOINT").envs(env);
        // The terminal it runs in: iTerm2 (OSC 9).
        for v in ["TERM", "KITTY_WINDOW_ID", "WT_SESSION"] {
            cmd.env_remove(v);
        }
        cmd.env("TERM_PROGRAM", "iTerm.app");
        let o = with_stdin(&mut cmd, v.to_string().as_bytes());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let out: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        let message = out["systemMessage"].as_str().unwrap();
        said.push_str(&format!("--- {name}: {keys:?}\n{message}\n"));
        if let Some(t) = out["terminalSequence"].as_str() {
            let shown = t.replace('\x1b', "ESC").replace('\x07', "BEL");
            said.push_str(&format!("terminal: {shown}\n"));
        }
    }
    let mut settings = settings(&w);
    // The notes' folder is named for the project's path (the temp folder's).
    // (Paths as Unix writes them, Windows' too.)
    settings.add_filter(r"\\", "/");
    settings.add_filter(r"/notes/[^/\s]+/s-", "/notes/[PROJECT]/s-");
    settings.bind(|| insta::assert_snapshot!("advice", said));
}

/// What `pressure` says with no session, before and after an install, and
/// the line `interband handoff` prints.
#[test]
fn the_lines_around_a_session() {
    let w = World::new();
    let mut said = String::new();
    said.push_str(&format!(
        "--- pressure, nothing installed\n{}",
        stdout(&w.run(&["pressure"]))
    ));
    let o = w.run(&["install", "--host", "claude"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    said.push_str(&format!(
        "--- pressure, installed\n{}",
        stdout(&w.run(&["pressure"]))
    ));
    let t = transcript(w.dir.path(), 120_000);
    hook(&w, "s-handoff", &t);
    let o = w.run(&["handoff", "--session", "s-handoff"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    said.push_str(&format!("--- handoff: stderr\n{}", stderr(&o)));
    let o = w.run(&["handoff", "--session", "s-handoff", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    said.push_str(&format!(
        "--- handoff: the prompt\n{}\n",
        v["argv"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_str()
            .unwrap()
    ));
    let mut settings = settings(&w);
    settings.add_filter(r"\\", "/");
    settings.add_filter(r"/notes/[^/\s]+/s-", "/notes/[PROJECT]/s-");
    settings.add_filter(r"\d{8}T\d{6}-\d+-handoff", "[STAMP]-handoff");
    settings.add_filter(r"written: \S+", "written: [TIME]");
    settings.bind(|| insta::assert_snapshot!("around", said));
}

#[test]
fn the_statusline_at_each_level() {
    let w = World::new();
    let mut lines = String::new();
    // One session runs a subagent (its own figure: 90k of 200k).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let session = "s-200000-140000";
    w.bus()
        .publish_typed(
            &format!("{session}--a1b2c3"),
            session,
            &interband::payloads::SubagentContext {
                session: session.into(),
                agent: "a1b2c3".into(),
                agent_type: Some("Explore".into()),
                used_tokens: Some(90_000),
                window: Some(200_000),
                calls: 3,
                ts: now,
                ..Default::default()
            },
        )
        .unwrap();
    for (window, used) in [
        (200_000, 40_000),
        (200_000, 120_000),
        (200_000, 140_000),
        (200_000, 160_000),
        (1_000_000, 160_000),
    ] {
        let mut input: Value = serde_json::from_slice(&capture("statusLine.input.json")).unwrap();
        input["session_id"] = json!(format!("s-{window}-{used}"));
        input["context_window"]["context_window_size"] = json!(window);
        input["context_window"]["current_usage"] = json!({"input_tokens": used, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
        // Claude Code's own percentage, as it computes it (the line shows it).
        let pct = used * 100 / window;
        input["context_window"]["used_percentage"] = json!(pct);
        input["context_window"]["remaining_percentage"] = json!(100 - pct);
        let o = w
            .cmd(&["statusline", "--host", "claude"])
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(input.to_string().as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        lines.push_str(&format!(
            "{used:>7} of {window:>9}: {}\n",
            stdout(&o).trim_end()
        ));
    }
    settings(&w).bind(|| insta::assert_snapshot!("statusline", lines));
}

#[test]
fn the_replay_report_of_the_real_session() {
    let w = World::new();
    let fixture =
        repo().join("tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl");
    let o = w.run(&["replay", fixture.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut s = settings(&w);
    s.add_filter(&regex_escape(&repo().to_string_lossy()), "[REPO]");
    s.add_filter(r"\[REPO\]\\", "[REPO]/");
    // The note's size counts the paths it names, which differ by system.
    s.add_filter(r"new context \(\d+ bytes\)", "new context ([N] bytes)");
    s.add_filter(r"\b\d+(\.\d+)? ?s\b", "[DURATION]");
    s.bind(|| insta::assert_snapshot!("replay", stdout(&o)));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the snapshot is the Unix form (a POSIX program path, quoted); install.rs tests the Windows form"
)]
fn install_s_dry_run_diff() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(
        &path,
        "{\n  \"model\": \"opus\",\n  \"statusLine\": {\"type\": \"command\", \"command\": \"~/bin/my-status\"}\n}\n",
    )
    .unwrap();
    let o = w.run(&[
        "install",
        "--settings",
        path.to_str().unwrap(),
        "--command",
        "/opt/interband/bin/interband",
        "--dry-run",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    settings(&w).bind(|| insta::assert_snapshot!("install_dry_run", stdout(&o)));
}

/// What `install --project --dry-run` says for each host: the file a
/// project's people share, written alike on every system (so one snapshot
/// on Unix and Windows), and the notes a person must read (each host's
/// folder trust; interband from each one's PATH).
#[test]
fn a_project_install_for_every_host() {
    let w = World::new();
    let project = w.dir.path().join("repo");
    std::fs::create_dir_all(&project).unwrap();
    let mut all = String::new();
    for host in interband_hosts::Host::ALL {
        let key = host.profile().key;
        let o = w
            .cmd(&["install", "--project", "--host", key, "--dry-run"])
            // No interband on PATH, whatever the machine has.
            .env("PATH", "")
            .current_dir(&project)
            .finish();
        assert_eq!(code(&o), 0, "{key}: {}", stderr(&o));
        all.push_str(&format!("--- {key}\n{}", stdout(&o)));
    }
    let mut s = settings(&w);
    // The project file's path, as Windows writes it.
    s.add_filter(r"\\", "/");
    s.bind(|| insta::assert_snapshot!("project_install", all));
}
