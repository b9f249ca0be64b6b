//! Telling the person (`[notify]`): the terminal's notification rides on
//! Claude Code's answer (`terminalSequence`, from 2.1.141), for an
//! interactive session; the desktop and the person's own command run once
//! per moment, never from a project's file not trusted; a headless session
//! that ends at red is told of too.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

/// A Claude Code 2.1.332 transcript at `used` tokens, its release named on
/// its last answer as `version`.
fn transcript(dir: &Path, session: &str, used: u64, version: &str) -> PathBuf {
    let path = claude_transcript(dir, &format!("{session}.jsonl"), used);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    last["version"] = json!(version);
    *lines.last_mut().unwrap() = last.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn event(w: &World, name: &str, session: &str, t: &Path, extra: Value) -> Value {
    let mut v: Value = serde_json::from_slice(&capture(&format!("{name}.input.json"))).unwrap();
    v["session_id"] = json!(session);
    v["transcript_path"] = json!(t);
    v["cwd"] = json!(w.dir.path().join("shop"));
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// Runs the hook on `input` as an interactive (`cli`) or headless
/// (`sdk-cli`) Claude Code in WezTerm.
fn hook(w: &World, input: &Value, entrypoint: &str) -> Value {
    let mut cmd = w.cmd(&["hook", "--host", "claude"]);
    for v in [
        "TERM",
        "KITTY_WINDOW_ID",
        "WT_SESSION",
        "CLAUDE_CODE_SESSION_ATTENDED",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("TERM_PROGRAM", "WezTerm")
        .env("CLAUDE_CODE_ENTRYPOINT", entrypoint);
    let o = with_stdin(&mut cmd, input.to_string().as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap()
    }
}

/// A session at red: its call, then its turn's end.
fn red_stop(w: &World, session: &str, version: &str, entrypoint: &str) -> Value {
    std::fs::create_dir_all(w.dir.path().join("shop")).unwrap();
    let t = transcript(w.dir.path(), session, 165_000, version);
    hook(
        w,
        &event(w, "PostToolUse", session, &t, json!({})),
        entrypoint,
    );
    hook(
        w,
        &event(w, "Stop", session, &t, json!({"stop_hook_active": false})),
        entrypoint,
    )
}

fn user_config(w: &World, text: &str) {
    let file = w.home().join(".config/interband/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

#[test]
fn the_terminal_is_told_through_claude_code_from_2_1_141_in_an_interactive_session() {
    let w = World::new();
    let out = red_stop(&w, "s-new", "2.1.332", "cli");
    let seq = out["terminalSequence"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        seq.starts_with(
            "\x1b]9;interband: the context is nearly full: shop: a memory note is saved"
        ) && seq.ends_with('\x07'),
        "WezTerm's OSC 9: {seq:?}"
    );
    assert!(seq.contains("run /compact now"), "{seq:?}");
    assert!(out["systemMessage"].is_string(), "{out}");
    // A release before the answer existed, a headless run: nothing for the terminal.
    for (version, entrypoint) in [("2.1.105", "cli"), ("2.1.332", "sdk-cli")] {
        let w = World::new();
        let out = red_stop(&w, "s-old", version, entrypoint);
        assert!(
            out.get("terminalSequence").is_none(),
            "{version} {entrypoint}: {out}"
        );
    }
    // Turned off.
    let w = World::new();
    user_config(&w, "[notify]\nterminal = false\n");
    let out = red_stop(&w, "s-off", "2.1.332", "cli");
    assert!(out.get("terminalSequence").is_none(), "{out}");
}

#[test]
#[cfg(unix)] // a shell stands in for the person's command
fn the_person_s_command_runs_once_per_moment_and_never_from_an_untrusted_project() {
    let w = World::new();
    let told = w.dir.path().join("told.txt");
    let command = json!([
        "/bin/sh",
        "-c",
        "printf '%s|%s\\n' \"$1\" \"$2\" >> \"$0\"",
        told.to_str().unwrap(),
        "{title}",
        "{message}"
    ]);
    user_config(
        &w,
        &format!("[notify]\nterminal = false\ncommand = {command}\n"),
    );
    let out = red_stop(&w, "s-cmd", "2.1.332", "cli");
    assert!(out["systemMessage"].is_string(), "{out}");
    let said = std::fs::read_to_string(&told).unwrap();
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.starts_with("interband: the context is nearly full|shop: a memory note is saved"),
        "{said}"
    );
    // The same moment again (another Stop of this cycle): not told twice.
    let t = w.dir.path().join("s-cmd.jsonl");
    hook(
        &w,
        &event(&w, "Stop", "s-cmd", &t, json!({"stop_hook_active": false})),
        "cli",
    );
    assert_eq!(std::fs::read_to_string(&told).unwrap().lines().count(), 1);

    // A headless session that ends at red: its person hears of it, once.
    let w2 = World::new();
    let told2 = w2.dir.path().join("told.txt");
    let command = json!([
        "/bin/sh",
        "-c",
        "printf '%s|%s\\n' \"$1\" \"$2\" >> \"$0\"",
        told2.to_str().unwrap(),
        "{title}",
        "{message}"
    ]);
    user_config(&w2, &format!("[notify]\ncommand = {command}\n"));
    red_stop(&w2, "s-headless", "2.1.332", "sdk-cli");
    assert!(!told2.exists(), "a headless turn's end is not the moment");
    let t = w2.dir.path().join("s-headless.jsonl");
    let end = event(&w2, "SessionEnd", "s-headless", &t, json!({}));
    hook(&w2, &end, "sdk-cli");
    hook(&w2, &end, "sdk-cli");
    let said = std::fs::read_to_string(&told2).unwrap();
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.starts_with("interband: a session ended at red|shop: session s-headless ended"),
        "{said}"
    );

    // A project's file sets no command unless trusted.
    let w3 = World::new();
    let told3 = w3.dir.path().join("told.txt");
    let shop = w3.dir.path().join("shop");
    std::fs::create_dir_all(shop.join(".interband")).unwrap();
    let command = json!([
        "/bin/sh",
        "-c",
        "echo ran >> \"$0\"",
        told3.to_str().unwrap()
    ]);
    std::fs::write(
        shop.join(".interband/config.toml"),
        format!("[notify]\ncommand = {command}\n"),
    )
    .unwrap();
    red_stop(&w3, "s-project", "2.1.332", "cli");
    assert!(!told3.exists(), "an untrusted project's command ran");
    // Trusted, it runs.
    let file = shop.join(".interband/config.toml");
    let o = w3.run(&["trust", file.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    red_stop(&w3, "s-project-2", "2.1.332", "cli");
    assert!(told3.exists(), "the trusted project's command");
}

/// The real Claude Code 2.1.332, interactive in tmux, offline, with these
/// hooks (`tests/fixtures/claude-code-2.1.332-loop-tmux/`, its README says
/// how): at red, the turn's end put interband's notification on the pty
/// (wrapped by Claude Code for tmux), the advice read as advice and cost no
/// request, `top` listed the session, and `interband handoff --run` started
/// a fresh session whose first request carried the note.
#[test]
fn the_real_claude_code_in_tmux_carried_the_loop_to_the_person() {
    let dir = repo().join("tests/fixtures/claude-code-2.1.332-loop-tmux");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let pty = read("pty.red-stop.txt");
    assert!(
        pty.contains(r"\x1bPtmux;\x1b\x1b]9;interband: the context is nearly full: project: a memory note is saved"),
        "the OSC 9, as tmux passes it on"
    );
    let pane = read("pane.red-stop.txt");
    assert!(
        pane.contains("Stop says: interband: the context is nearly full"),
        "{pane}"
    );
    for fault in ["reported a problem", "stop hook problem", "blocking error"] {
        assert!(!pane.contains(fault), "{fault}: {pane}");
    }
    let top = read("top.txt");
    let row = top.lines().nth(1).unwrap();
    assert!(
        row.contains(" claude ") && row.contains(" RED ") && row.contains("⟳ /compact"),
        "{top}"
    );
    let first = read("request.handoff-first.json");
    assert!(
        first.contains("interband-memory-note") && first.contains("-handoff.md"),
        "the fresh session's first request carries the note"
    );
}

#[test]
#[cfg(target_os = "linux")] // a shell script stands in for notify-send
fn the_desktop_is_told_through_notify_send_with_the_words_as_arguments() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let bin = w.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let told = w.dir.path().join("told.txt");
    let fake = bin.join("notify-send");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '{}'; done\n",
            told.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    user_config(&w, "[notify]\nterminal = false\ndesktop = true\n");
    std::fs::create_dir_all(w.dir.path().join("shop")).unwrap();
    let t = transcript(w.dir.path(), "s-desk", 165_000, "2.1.332");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for name in ["PostToolUse", "Stop"] {
        let input = event(&w, name, "s-desk", &t, json!({"stop_hook_active": false}));
        let mut cmd = w.cmd(&["hook", "--host", "claude"]);
        cmd.env("PATH", &path).env("CLAUDE_CODE_ENTRYPOINT", "cli");
        let o = with_stdin(&mut cmd, input.to_string().as_bytes());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let args: Vec<String> = std::fs::read_to_string(&told)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(&args[..3], ["-a", "interband", "--"], "{args:?}");
    assert_eq!(args[3], "interband: the context is nearly full", "{args:?}");
    assert!(
        args[4].starts_with("shop: a memory note is saved"),
        "{args:?}"
    );
}
