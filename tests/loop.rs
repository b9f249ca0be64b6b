//! The whole loop through the real binary, as Claude Code would drive it:
//! tool calls at rising usage, Stop, PreCompact, SessionStart(compact), the
//! statusline, and intermem in watch mode.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::*;
use interpulse::synthetic::Writer;
use serde_json::{Value, json};

const SESSION: &str = "4d2f1ea8-e4e6-4ba7-acd7-f410a8771c94";

fn fixture(name: &str) -> Value {
    serde_json::from_slice(&capture(name)).unwrap()
}

/// A transcript in the real client's shapes, in a temp world.
struct Transcript {
    w: Writer,
    path: PathBuf,
    cwd: PathBuf,
}

impl Transcript {
    fn new(dir: &Path) -> Self {
        let cwd = dir.join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        let path = dir.join(format!("{SESSION}.jsonl"));
        Transcript {
            w: Writer::new(&path, SESSION, &cwd).branch("feature/notes"),
            path,
            cwd,
        }
    }
    fn prompt(&mut self, text: &str) {
        self.w.prompt(text).unwrap();
    }
    fn tool(&mut self, name: &str, input: Value, result: &str, is_error: bool, used: u64) {
        self.w
            .tool(name, input, result, is_error, used, false)
            .unwrap();
    }
    fn say(&mut self, text: &str, used: u64) {
        self.w.say(text, used).unwrap();
    }
}

fn event(name: &str, t: &Transcript, extra: Value) -> Vec<u8> {
    let file = match name {
        "PostToolUse" => "PostToolUse.input.json",
        "Stop" => "Stop.input.json",
        "PreCompact" => "PreCompact.auto.input.json",
        "PostCompact" => "PostCompact.manual.input.json",
        "SessionStart" => "SessionStart.compact.input.json",
        "SessionEnd" => "SessionEnd.input.json",
        other => panic!("{other}"),
    };
    let mut v = fixture(file);
    v["session_id"] = json!(SESSION);
    v["transcript_path"] = json!(t.path);
    v["cwd"] = json!(t.cwd);
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    serde_json::to_vec(&v).unwrap()
}

fn hook(w: &World, stdin: &[u8]) -> String {
    let o = w.run_with_stdin(&["hook"], stdin);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

fn note_files(w: &World) -> Vec<String> {
    files_under(&w.root().join("intermem/notes"))
        .into_iter()
        .filter(|f| {
            f.ends_with(".md") && !f.ends_with("latest.md") && !f.ends_with("session-summary.md")
        })
        .collect()
}

#[test]
fn a_scripted_session_runs_the_whole_loop() {
    let w = World::new();
    let mut t = Transcript::new(w.dir.path());
    t.prompt("Add a retry to the uploader and cover it with tests");
    t.tool("TodoWrite", json!({"todos": [
        {"content": "Add retry with backoff", "status": "in_progress", "activeForm": "Adding retry"},
        {"content": "Write uploader tests", "status": "pending", "activeForm": "Writing tests"}]}), "ok", false, 20_000);
    t.tool(
        "Edit",
        json!({"file_path": "/work/src/uploader.rs", "old_string": "a", "new_string": "b"}),
        "ok",
        false,
        40_000,
    );
    let post = |w: &World, t: &Transcript, tool: &str| {
        hook(w, &event("PostToolUse", t, json!({"tool_name": tool})))
    };
    assert_eq!(post(&w, &t, "Edit"), "", "40% is green");

    t.tool(
        "Bash",
        json!({"command": "cargo test -p uploader"}),
        "1 failed",
        true,
        100_000,
    );
    t.tool(
        "Write",
        json!({"file_path": "/work/tests/retry.rs", "content": "..."}),
        "ok",
        false,
        140_000,
    );
    let out = post(&w, &t, "Write");
    assert!(out.contains("ORANGE"), "70% is orange: {out}");
    t.prompt("Also log each retry");
    t.tool(
        "Bash",
        json!({"command": "cargo test"}),
        "ok",
        false,
        160_000,
    );
    let out = post(&w, &t, "Bash");
    assert!(out.contains("RED"), "80% is red: {out}");
    t.say("The retry is in place; tests pass. Next: logging.", 161_000);

    // Stop: intermem writes the notes the checkpoints asked for, then the trigger advises once.
    let out = hook(&w, &event("Stop", &t, json!({"stop_hook_active": false})));
    let advice: Value =
        serde_json::from_str(&out).unwrap_or_else(|_| panic!("Stop should advise once: {out:?}"));
    // Claude Code shows a hook's message to the person: the advice, no block.
    assert!(advice.get("decision").is_none(), "{advice}");
    let said = advice["systemMessage"].as_str().unwrap();
    assert!(
        said.contains("`/compact")
            && said.contains(&format!("intermem{}notes", std::path::MAIN_SEPARATOR)),
        "{said}"
    );
    let notes_after_stop = note_files(&w);
    assert!(
        !notes_after_stop.is_empty(),
        "checkpoint notes written by the orange and red calls"
    );
    assert_eq!(
        hook(&w, &event("Stop", &t, json!({"stop_hook_active": true}))),
        "",
        "never twice in a row"
    );
    assert_eq!(
        hook(&w, &event("Stop", &t, json!({"stop_hook_active": false}))),
        "",
        "once per cycle"
    );

    // The note names the task, todos, files and commands from the transcript.
    let latest = std::fs::read_to_string(
        files_under(&w.root().join("intermem/notes"))
            .iter()
            .find(|f| f.ends_with("latest.md"))
            .map(|f| w.root().join("intermem/notes").join(f))
            .unwrap(),
    )
    .unwrap();
    for needle in [
        "Add a retry to the uploader",
        "Also log each retry",
        "Add retry with backoff",
        "/work/src/uploader.rs",
        "/work/tests/retry.rs",
        "cargo test -p uploader",
        "FAILED",
        "feature/notes",
    ] {
        assert!(latest.contains(needle), "note lacks {needle:?}:\n{latest}");
    }
    assert!(latest.len() <= 8192);
    // The wind-down journal at red made it into a note.
    assert!(
        latest.contains("Wind-down journal") && latest.contains("`cargo test`"),
        "{latest}"
    );

    // PreCompact: a note, always; never blocks; Claude's summary is told what to keep.
    let steer = hook(&w, &event("PreCompact", &t, json!({})));
    assert!(
        steer.starts_with("interband (a context monitor) saved"),
        "{steer}"
    );
    assert!(
        note_files(&w)
            .iter()
            .any(|f| f.contains("pre_compact_auto")),
        "{:?}",
        note_files(&w)
    );
    let pending = w.bus().read("compact", "pending", SESSION);
    assert!(pending.is_ok(), "the compaction is announced as pending");

    // SessionStart(compact): the pressure state starts over and the note comes back.
    let out = hook(&w, &event("SessionStart", &t, json!({"source": "compact"})));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        ctx.contains("Add retry with backoff") && ctx.contains("/work/src/uploader.rs"),
        "{ctx}"
    );
    // The PreCompact note, written after the turn's last words, holds them.
    assert!(ctx.contains("The retry is in place"), "{ctx}");
    assert!(
        w.bus().read("compact", "pending", SESSION).is_err(),
        "no longer pending"
    );
    let state: Value = serde_json::from_slice(
        &std::fs::read(w.root().join(format!(".state/interpulse/{SESSION}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(state["level"], "green");

    // The statusline shows the level as a word and publishes interline/context.
    let mut s = fixture("statusLine.input.json");
    s["session_id"] = json!(SESSION);
    s["transcript_path"] = json!(t.path);
    s["context_window"]["context_window_size"] = json!(200_000);
    s["context_window"]["current_usage"] = json!({"input_tokens": 1000, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 150_000});
    let o = with_stdin(
        w.cmd(&["statusline"]).env("NO_COLOR", "1"),
        &serde_json::to_vec(&s).unwrap(),
    );
    assert_eq!(code(&o), 0);
    let line = stdout(&o);
    assert!(line.contains("RED") && !line.contains('\x1b'), "{line}");
    let c = w.bus().read("interline", "context", SESSION).unwrap();
    assert_eq!(c.envelope.payload["window"], 200_000);
    assert_eq!(c.envelope.payload["used_tokens"], 151_000);

    // SessionEnd: a final note and the session summary.
    assert_eq!(
        hook(
            &w,
            &event("SessionEnd", &t, json!({"reason": "prompt_input_exit"}))
        ),
        ""
    );
    let files = files_under(&w.root().join("intermem/notes"));
    assert!(
        files.iter().any(|f| f.ends_with("session-summary.md"))
            && files.iter().any(|f| f.ends_with("session-summary.json")),
        "{files:?}"
    );
    // An ended session is shown as ended, with nothing pending.
    let p = w.bus().read("interpulse", "pressure", SESSION).unwrap();
    assert!(
        p.envelope.payload["ended_at"].as_u64().is_some(),
        "{}",
        p.envelope.payload
    );
    assert!(w.bus().read("compact", "pending", SESSION).is_err());
    let top = stdout(&w.run(&["top", "--once"]));
    assert!(top.contains("ENDED") && !top.contains("RED"), "{top}");
    let pressure = stdout(&w.run(&["pressure"]));
    assert!(pressure.contains("ENDED"), "{pressure}");
    // An hour later it drops out of the default view (--all still shows it).
    let mut old = p.envelope.payload.clone();
    old["ended_at"] = json!(1_700_000_000u64);
    w.publish("interpulse", "pressure", SESSION, "context_pressure", &old);
    assert!(!stdout(&w.run(&["top", "--once"])).contains("ENDED"));
    assert!(stdout(&w.run(&["top", "--once", "--all"])).contains("ENDED"));
    let o = w.run(&["validate", w.root().to_str().unwrap()]);
    assert_eq!(
        code(&o),
        0,
        "everything under the root is valid: {}",
        stdout(&o)
    );
}

#[test]
fn watch_mode_writes_one_note_and_a_later_drain_writes_none() {
    let w = World::new();
    let mut t = Transcript::new(w.dir.path());
    t.prompt("Refactor the parser");
    // Green: the checkpoint below is published by hand, and the Stop's own
    // look at the transcript must not ask for another.
    t.tool(
        "Edit",
        json!({"file_path": "/work/src/parser.rs"}),
        "ok",
        false,
        60_000,
    );
    let mut child = w
        .cmd(&["watch", "--idle-timeout", "30"])
        .stderr(Stdio::piped())
        .start();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = err.next().unwrap().unwrap();
    assert!(
        first.contains("watching") && first.contains("intermem"),
        "{first}"
    );
    let payload = json!({"trigger": "orange_pressure", "ts": 1796000000, "transcript_path": t.path, "cwd": t.cwd});
    w.publish(
        "interpulse",
        "checkpoint",
        SESSION,
        "checkpoint_needed",
        &payload,
    );
    let note = poll(20, "a note from the watcher", || {
        w.bus().read("intermem", "note", SESSION).ok()
    });
    assert!(
        note.envelope.payload["path"]
            .as_str()
            .unwrap()
            .contains("parser")
            || std::fs::read_to_string(note.envelope.payload["path"].as_str().unwrap())
                .unwrap()
                .contains("/work/src/parser.rs")
    );
    let _ = child.kill();
    let _ = child.wait();
    let before = note_files(&w);
    assert_eq!(before.len(), 1);
    // The same checkpoint seq drained by a hook later: nothing new.
    hook(&w, &event("Stop", &t, json!({"stop_hook_active": false})));
    let after = note_files(&w);
    assert_eq!(before, after);
}

#[test]
fn consumers_fail_open_on_bad_input() {
    let w = World::new();
    let mut t = Transcript::new(w.dir.path());
    t.prompt(&"p".repeat(300_000));
    // Missing transcript, huge prompt, and a notes folder that is a file.
    let missing = json!({"transcript_path": w.dir.path().join("gone.jsonl")});
    // A note of what is known, and the summary told where it is.
    assert!(hook(&w, &event("PreCompact", &t, missing)).contains("intermem"));
    assert!(hook(&w, &event("PreCompact", &t, json!({}))).contains("intermem"));
    let note = w.bus().read("intermem", "note", SESSION).unwrap();
    let text = std::fs::read_to_string(note.envelope.payload["path"].as_str().unwrap()).unwrap();
    assert!(
        text.len() <= 8192 && text.contains("…"),
        "a huge prompt is cut visibly"
    );
    let notes = w.root().join("intermem/notes");
    std::fs::remove_dir_all(&notes).unwrap();
    std::fs::write(&notes, "not a folder").unwrap();
    // No note: nothing to steer with, nothing printed.
    assert_eq!(hook(&w, &event("PreCompact", &t, json!({}))), "");
    assert_eq!(hook(&w, &event("SessionEnd", &t, json!({}))), "");
    assert_eq!(hook(&w, &event("Stop", &t, json!({}))), "");
    for junk in [&b""[..], b"{", b"[]", b"{\"hook_event_name\":\"Stop\"}"] {
        assert_eq!(hook(&w, junk), "");
    }
    let o = w.run_with_stdin(&["statusline"], b"\x00\x01 not json");
    assert_eq!(code(&o), 0);
    assert!(!stdout(&o).trim().is_empty(), "a minimal line still");
}

/// A fake program on PATH that records its argv and the interband env it got.
#[cfg(unix)] // shell scripts stand in for tmux and the command
fn fake_program(dir: &Path, name: &str) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join(format!("{name}.log"));
    let script = format!(
        "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\nprintf 'session=%s note=%s\\n' \"$INTERBAND_SESSION\" \"$INTERBAND_NOTE\" >> '{}'\n",
        log.display(),
        log.display()
    );
    let path = bin.join(name);
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

/// Where Claude Code keeps the project's auto-memory (every non-alphanumeric character of the project root becomes `-`).
fn claude_memory_dir(w: &World, t: &Transcript) -> PathBuf {
    let slug = t
        .cwd
        .to_string_lossy()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    w.home().join(".claude/projects").join(slug).join("memory")
}

fn red_session(w: &World) -> Transcript {
    let mut t = Transcript::new(w.dir.path());
    t.prompt("Ship the release notes");
    t.tool(
        "Bash",
        json!({"command": "make release"}),
        "ok",
        false,
        165_000,
    );
    hook(w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
    t
}

fn hook_env(w: &World, stdin: &[u8], env: &[(&str, String)]) -> String {
    let mut c = w.cmd(&["hook"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = with_stdin(&mut c, stdin);
    assert_eq!(code(&o), 0);
    stdout(&o)
}

/// A fake `tmux` on PATH: records its argv, and answers `display-message`
/// with the pane's foreground program `front`.
#[cfg(unix)] // shell scripts stand in for tmux and the command
fn fake_tmux(w: &World, front: &str) -> (PathBuf, [(&'static str, String); 3]) {
    let log = fake_program(w.dir.path(), "tmux");
    let script = w.dir.path().join("bin/tmux");
    let body = std::fs::read_to_string(&script).unwrap();
    std::fs::write(
        &script,
        format!("{body}[ \"$1\" = display-message ] && echo '{front}'\nexit 0\n"),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        w.dir.path().join("bin").display(),
        std::env::var("PATH").unwrap()
    );
    let env = [
        ("PATH", path),
        ("TMUX_PANE", "%7".to_owned()),
        ("INTERBAND_COMPACT_STRATEGY", "tmux".to_owned()),
    ];
    (log, env)
}

#[test]
#[cfg(unix)] // shell scripts stand in for tmux and the command
fn the_tmux_strategy_types_compact_into_the_recorded_pane_once() {
    let w = World::new();
    let (log, env) = fake_tmux(&w, "claude");
    let t = red_session(&w);
    hook_env(
        &w,
        &event("SessionStart", &t, json!({"source": "startup"})),
        &env,
    );
    let stop = event("Stop", &t, json!({"stop_hook_active": false}));
    assert_eq!(hook_env(&w, &stop, &env), "", "tmux acts without blocking");
    assert_eq!(hook_env(&w, &stop, &env), "");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        calls.matches("|-l|--|").count(),
        1,
        "once per cycle: {calls}"
    );
    assert!(
        calls.contains("send-keys|-t|%7|-l|--|/compact keep: Ship the release notes|"),
        "typed literally: {calls}"
    );
    assert!(
        calls.contains("send-keys|-t|%7|Enter|"),
        "then Enter: {calls}"
    );
    // A new cycle after the compaction: it may fire again when red again.
    hook_env(
        &w,
        &event("SessionStart", &t, json!({"source": "compact"})),
        &env,
    );
    hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
    hook_env(&w, &stop, &env);
    assert_eq!(
        std::fs::read_to_string(&log)
            .unwrap()
            .matches("|-l|--|")
            .count(),
        2
    );
}

#[test]
#[cfg(unix)] // shell scripts stand in for tmux and the command
fn the_command_strategy_runs_argv_with_the_session_and_note() {
    let w = World::new();
    let log = fake_program(w.dir.path(), "on-red");
    let cmd = json!([w.dir.path().join("bin/on-red"), "--now"]).to_string();
    let env = [
        ("INTERBAND_COMPACT_STRATEGY", "command".to_owned()),
        ("INTERBAND_COMPACT_COMMAND", cmd),
    ];
    let t = red_session(&w);
    assert_eq!(hook_env(&w, &event("Stop", &t, json!({})), &env), "");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.starts_with("--now|session=4d2f1ea8")
            && calls.contains("note=")
            && calls.contains("intermem/notes"),
        "{calls}"
    );
}

#[test]
fn notes_can_also_go_to_claude_code_memory() {
    let w = World::new();
    let t = red_session(&w);
    let env = [("INTERBAND_INTERMEM_CLAUDE_MEMORY", "true".to_owned())];
    for _ in 0..2 {
        hook_env(&w, &event("PreCompact", &t, json!({})), &env);
    }
    let dir = claude_memory_dir(&w, &t);
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert_eq!(
        index.lines().count(),
        1,
        "one index line per note file: {index}"
    );
    let note = std::fs::read_to_string(dir.join("interband-note-4d2f1ea8.md")).unwrap();
    assert!(
        note.starts_with("---\nname: ")
            && note.contains("type: project")
            && note.contains("Ship the release notes"),
        "{note}"
    );
}

#[test]
fn a_resume_does_not_inject_the_same_note_twice_but_a_compaction_always_does() {
    let w = World::new();
    let t = red_session(&w);
    hook(&w, &event("PreCompact", &t, json!({})));
    let injects = |source: &str| {
        hook(&w, &event("SessionStart", &t, json!({"source": source})))
            .contains("<interband-memory-note")
    };
    assert!(injects("resume"), "the first resume brings the note back");
    assert!(
        !injects("resume"),
        "a second resume with the same note does not repeat it"
    );
    assert!(
        injects("compact"),
        "after a compaction the context is empty: always"
    );
    assert!(!injects("startup"), "a new session starts clean");
}

#[test]
#[cfg(unix)] // /bin/sh as the compaction command
fn a_failing_compaction_strategy_still_advises_once_and_says_why() {
    let w = World::new();
    let t = red_session(&w);
    let compaction = |w: &World| {
        let o = w.run(&[
            "read",
            "compact/pending/4d2f1ea8-e4e6-4ba7-acd7-f410a8771c94",
            "--payload",
        ]);
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    let cmd = json!(["/bin/sh", "-c", "exit 3"]).to_string();
    let env = [
        ("INTERBAND_COMPACT_STRATEGY", "command".to_owned()),
        ("INTERBAND_COMPACT_COMMAND", cmd),
    ];
    let stop = event("Stop", &t, json!({"stop_hook_active": false}));
    let out: Value = serde_json::from_str(&hook_env(&w, &stop, &env)).unwrap();
    let said = out["systemMessage"].as_str().unwrap();
    assert!(
        said.contains("the compaction command failed (/bin/sh: exited with code 3)")
            && said.contains("`/compact keep: Ship the release notes`")
            && said.contains("intermem/notes"),
        "{said}"
    );
    assert_eq!(compaction(&w)["strategy"], "advise");
    assert_eq!(hook_env(&w, &stop, &env), "", "once per cycle");

    // tmux with a pane recorded, but no tmux to run: advise instead.
    let w = World::new();
    let t = red_session(&w);
    let env = [
        ("PATH", w.dir.path().join("no-bin").display().to_string()),
        ("TMUX_PANE", "%7".to_owned()),
        ("INTERBAND_COMPACT_STRATEGY", "tmux".to_owned()),
    ];
    hook_env(
        &w,
        &event("SessionStart", &t, json!({"source": "startup"})),
        &env,
    );
    let stop = event("Stop", &t, json!({"stop_hook_active": false}));
    let out: Value = serde_json::from_str(&hook_env(&w, &stop, &env)).unwrap();
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("typing /compact into tmux pane %7 failed"),
        "{out}"
    );
    assert_eq!(compaction(&w)["strategy"], "advise");
}

#[test]
#[cfg(unix)] // shell scripts stand in for tmux and the command
fn tmux_never_types_into_a_shell_and_types_only_plain_text() {
    // The pane's foreground program is a shell: nothing is typed, it advises.
    let w = World::new();
    let (log, env) = fake_tmux(&w, "bash");
    let mut t = Transcript::new(w.dir.path());
    t.prompt("fix it $(touch /tmp/pwned); tmux kill-server ;");
    t.tool("Bash", json!({"command": "make"}), "ok", false, 165_000);
    hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
    hook_env(
        &w,
        &event("SessionStart", &t, json!({"source": "startup"})),
        &env,
    );
    let stop = event("Stop", &t, json!({"stop_hook_active": false}));
    let out = hook_env(&w, &stop, &env);
    assert!(out.contains("\"systemMessage\""), "{out}");
    assert!(out.contains("not the agent"), "{out}");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(!calls.contains("send-keys"), "{calls}");

    // The agent's pane: the prompt's syntax never reaches tmux or a shell.
    let w = World::new();
    let (log, env) = fake_tmux(&w, "2.1.332");
    let mut t = Transcript::new(w.dir.path());
    t.prompt("fix it $(touch /tmp/pwned); tmux kill-server ;");
    t.tool("Bash", json!({"command": "make"}), "ok", false, 165_000);
    hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
    hook_env(
        &w,
        &event("SessionStart", &t, json!({"source": "startup"})),
        &env,
    );
    assert_eq!(hook_env(&w, &stop, &env), "");
    let calls = std::fs::read_to_string(&log).unwrap();
    let typed = calls
        .lines()
        .find(|l| l.contains("|-l|--|"))
        .unwrap_or_else(|| panic!("{calls}"));
    assert!(
        typed.contains("/compact keep: fix it touch /tmp/pwned tmux kill-server"),
        "{typed}"
    );
    for bad in ["$", "(", ";", "`"] {
        assert!(
            !typed.split("|-l|--|").nth(1).unwrap().contains(bad),
            "{bad}: {typed}"
        );
    }
}

#[test]
fn after_a_compaction_the_first_stop_does_not_act_on_the_old_level() {
    let w = World::new();
    let mut t = red_session(&w);
    let level = |w: &World, channel: &str| {
        let o = w.run(&["read", channel, "--payload"]);
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()["level"].clone()
    };
    let interpulse = format!("interpulse/pressure/{SESSION}");
    let intercheck = format!("intercheck/pressure/{SESSION}");
    assert_eq!(level(&w, &interpulse), "red");
    hook(&w, &event("PreCompact", &t, json!({"trigger": "auto"})));
    // The host writes its boundary, then starts the new context.
    t.w.compact(165_000, 9_000, "Summary:\nRelease notes drafted.")
        .unwrap();
    hook(&w, &event("SessionStart", &t, json!({"source": "compact"})));
    assert_eq!(
        level(&w, &interpulse),
        "green",
        "the new context is green at once"
    );
    assert_eq!(
        level(&w, &intercheck),
        "green",
        "and so is the legacy channel"
    );
    let stop = event("Stop", &t, json!({"stop_hook_active": false}));
    assert_eq!(
        hook(&w, &stop),
        "",
        "no advice to compact what was just compacted"
    );
    let pending = w.run(&["read", &format!("compact/pending/{SESSION}")]);
    assert_ne!(code(&pending), 0, "nothing pending: {}", stdout(&pending));
}

#[test]
#[cfg(unix)] // /bin/sh as the compaction command
fn a_long_compaction_command_is_left_running_and_the_stop_hook_answers() {
    let w = World::new();
    let t = red_session(&w);
    let go = w.dir.path().join("go");
    let ran = w.dir.path().join("ran");
    // Waits for the test's signal, then leaves a mark: it outlives the hook.
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.02; done; echo \"$INTERBAND_SESSION\" > '{}'",
        go.display(),
        ran.display()
    );
    let env = [
        ("INTERBAND_COMPACT_STRATEGY", "command".to_owned()),
        (
            "INTERBAND_COMPACT_COMMAND",
            json!(["/bin/sh", "-c", script]).to_string(),
        ),
        ("INTERBAND_COMPACT_COMMAND_TIMEOUT_SECS", "0.2".to_owned()),
    ];
    let stop = event("Stop", &t, json!({"stop_hook_active": false}));
    assert_eq!(hook_env(&w, &stop, &env), "", "launched: no advice needed");
    assert!(!ran.exists(), "the hook did not wait for the command");
    std::fs::write(&go, "").unwrap();
    let mark = poll(20, "the command to finish on its own", || {
        std::fs::read_to_string(&ran)
            .ok()
            .filter(|m| m.ends_with('\n'))
    });
    assert_eq!(mark.trim(), SESSION);
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine shows a link as what it names (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn a_memory_index_that_cannot_be_updated_does_not_cost_the_note() {
    let w = World::new();
    let t = red_session(&w);
    let dir = claude_memory_dir(&w, &t);
    std::fs::create_dir_all(&dir).unwrap();
    let theirs = w.dir.path().join("theirs.md");
    std::fs::write(&theirs, "their index\n").unwrap();
    symlink(&theirs, dir.join("MEMORY.md"));
    let log = w.dir.path().join("hook.log");
    let env = [
        ("INTERBAND_INTERMEM_CLAUDE_MEMORY", "true".to_owned()),
        ("INTERBAND_LOG", log.display().to_string()),
    ];
    hook_env(
        &w,
        &event("PreCompact", &t, json!({"trigger": "auto"})),
        &env,
    );
    assert!(
        note_files(&w)
            .iter()
            .any(|f| f.ends_with("pre_compact_auto.md")),
        "{:?}",
        note_files(&w)
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("MEMORY.md"), "{logged}");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "their index\n");
    assert!(dir.join("MEMORY.md").is_symlink());
}

#[test]
fn a_reset_that_fails_does_not_cost_the_notes_reinjection() {
    let w = World::new();
    let t = red_session(&w);
    hook(&w, &event("PreCompact", &t, json!({})));
    // The producer's state folder is broken: its reset at SessionStart fails.
    let state = w.root().join(".state/interpulse");
    std::fs::remove_dir_all(&state).unwrap();
    std::fs::write(&state, b"not a folder").unwrap();
    let out = hook(&w, &event("SessionStart", &t, json!({"source": "compact"})));
    assert!(
        out.contains("saved by interband before it was compacted"),
        "{out}"
    );
}

#[test]
fn a_zero_retention_still_writes_keeps_and_brings_back_the_note() {
    let w = World::new();
    let log = w.dir.path().join("interband.log");
    let env = [
        ("INTERBAND_RETENTION_SECS", "0"),
        ("INTERBAND_PRUNE_INTERVAL_SECS", "0"),
    ];
    let run = |stdin: &[u8]| {
        let mut c = w.cmd(&["hook"]);
        c.envs(env).env("INTERBAND_LOG", &log);
        let o = with_stdin(&mut c, stdin);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    };
    let mut t = Transcript::new(w.dir.path());
    t.prompt("Port the cache to the new store");
    t.tool(
        "Edit",
        json!({"file_path": "/work/src/cache.rs"}),
        "ok",
        false,
        160_000,
    );
    let out = run(&event("PostToolUse", &t, json!({"tool_name": "Edit"})));
    assert!(out.contains("RED"), "{out}");
    run(&event("Stop", &t, json!({"stop_hook_active": false})));
    assert!(!note_files(&w).is_empty(), "the checkpoint got its note");
    run(&event("PreCompact", &t, json!({})));
    let out = run(&event("SessionStart", &t, json!({"source": "compact"})));
    assert!(
        out.contains("/work/src/cache.rs"),
        "the note comes back: {out}"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("INTERBAND_RETENTION_SECS=0") && logged.contains("refused"),
        "{logged}"
    );
}

#[test]
fn a_compaction_is_steered_recorded_and_what_its_summary_dropped_comes_back_first() {
    let w = World::new();
    let mut t = Transcript::new(w.dir.path());
    t.prompt("Make the uploader resilient and cover it with tests");
    t.tool("TodoWrite", json!({"todos": [
        {"content": "Add exponential backoff between attempts", "status": "in_progress", "activeForm": "Adding backoff"},
        {"content": "Document the new setting in README", "status": "pending", "activeForm": "Documenting"}]}), "ok", false, 20_000);
    t.tool(
        "Edit",
        json!({"file_path": "/work/src/uploader.rs", "old_string": "a", "new_string": "b"}),
        "ok",
        false,
        60_000,
    );
    t.tool(
        "Bash",
        json!({"command": "cargo test -p uploader"}),
        "test retry_gives_up failed: expected 3 attempts, got 1",
        true,
        120_000,
    );
    t.say(
        "The retry loop is written. Next I make retry_gives_up pass by counting attempts.",
        121_000,
    );
    hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));

    // 1. PreCompact, the person's `/compact focus on the retry`: Claude Code
    //    adds the hook's plain stdout after their instructions.
    let steer = hook(
        &w,
        &event(
            "PreCompact",
            &t,
            json!({"trigger": "manual", "custom_instructions": "focus on the retry"}),
        ),
    );
    let note = w.bus().read("intermem", "note", SESSION).unwrap();
    let note_path = note.envelope.payload["path"].as_str().unwrap().to_owned();
    assert!(
        serde_json::from_str::<Value>(&steer).is_err(),
        "plain text, not JSON: {steer}"
    );
    for needle in [
        note_path.as_str(),
        "verbatim: \"Make the uploader resilient and cover it with tests\"",
        "Add exponential backoff between attempts (the agent's last words: \"The retry loop is written. Next I make retry_gives_up pass by counting attempts.\")",
        "Document the new setting in README (open)",
        "/work/src/uploader.rs",
        "`cargo test -p uploader`",
        "test retry_gives_up failed: expected 3 attempts, got 1",
        "Beside any instructions above, which come first",
    ] {
        assert!(steer.contains(needle), "{needle:?} not in:\n{steer}");
    }
    assert!(steer.chars().count() <= 10_000);
    let record = |w: &World| {
        w.bus()
            .read("intermem", "compaction", SESSION)
            .unwrap()
            .envelope
            .payload
    };
    let before = record(&w);
    assert_eq!(before["note"], note_path.as_str());
    assert_eq!(before["trigger"], "manual");
    assert_eq!(before["tokens_before"], 121_000);
    assert_eq!(before["settled"], false);
    let kinds: Vec<&str> = before["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["step", "request", "todo", "todo", "failed_command", "file"]
    );

    // 2. PostCompact hands over the summary: it kept the request and the file.
    let summary = "<summary>The user asked to make the uploader resilient and cover it with tests. \
                   src/uploader.rs was edited.</summary>";
    assert_eq!(
        hook(
            &w,
            &event("PostCompact", &t, json!({"compact_summary": summary}))
        ),
        ""
    );
    let kept: Vec<(String, String)> = record(&w)["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().into(),
                f["kept"].as_str().unwrap().into(),
            )
        })
        .collect();
    let kept: Vec<(&str, &str)> = kept.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        kept,
        [
            ("step", "pending"),
            ("request", "summary"),
            ("todo", "pending"),
            ("todo", "pending"),
            ("failed_command", "pending"),
            ("file", "summary"),
        ]
    );

    // 3. SessionStart(compact): the note comes back, leading with what the
    //    summary dropped; the person sees the record's line.
    let out = hook(&w, &event("SessionStart", &t, json!({"source": "compact"})));
    let v: Value = serde_json::from_str(&out).unwrap();
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    let lead = ctx
        .find("## What the compaction's summary left out (brought back first)")
        .unwrap_or_else(|| panic!("no lead section:\n{ctx}"));
    let rest = ctx.find("# Memory note").unwrap();
    assert!(lead < rest, "the dropped facts come first:\n{ctx}");
    let section = &ctx[lead..rest];
    for needle in [
        "- the step in progress: Add exponential backoff between attempts",
        "- an open todo: Document the new setting in README",
        "- a failed command: `cargo test -p uploader`",
    ] {
        assert!(section.contains(needle), "{needle:?} not in:\n{section}");
    }
    assert!(
        !section.contains("uploader.rs"),
        "the summary kept it: {section}"
    );
    assert_eq!(
        section
            .matches("Add exponential backoff between attempts")
            .count(),
        1,
        "the step in progress and its todo once: {section}"
    );
    let after = record(&w);
    assert_eq!(after["settled"], true);
    let line =
        "compacted at 121k: the summary kept 2 of 6 facts, the note brought back 4, none lost";
    assert_eq!(v["systemMessage"], format!("interband: {line}"));

    // 4. `pressure` and `top` show it.
    let o = w.run(&["pressure"]);
    assert!(
        stdout(&o).contains(&format!("last compaction: {line}")),
        "{}",
        stdout(&o)
    );
    let o = w.run(&["top", "--json"]);
    let top: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let row = top
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["session"] == SESSION))
        .unwrap_or_else(|| panic!("{top}"));
    assert_eq!(row["compaction"]["line"], line);
    assert_eq!(row["compaction"]["lost"], 0);
}

/// Claude Code 2.1.332 starts the next context (SessionStart with `compact`)
/// before it writes the summary's line: the note comes back first, the
/// record waits for the summary, and the turn's end reads it from the
/// transcript and shows the person the line (its `systemMessage`). A
/// PostCompact, where the person's own settings run it, judges it the same.
#[test]
fn a_summary_written_after_the_note_came_back_completes_the_record() {
    for via_post_compact in [false, true] {
        let w = World::new();
        let mut t = Transcript::new(w.dir.path());
        t.prompt("Make the uploader resilient and cover it with tests");
        t.tool(
            "Edit",
            json!({"file_path": "/work/src/uploader.rs", "old_string": "a", "new_string": "b"}),
            "ok",
            false,
            60_000,
        );
        t.tool(
            "Bash",
            json!({"command": "cargo test -p uploader"}),
            "1 failed",
            true,
            90_000,
        );
        hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
        let steer = hook(&w, &event("PreCompact", &t, json!({"trigger": "manual"})));
        assert!(steer.starts_with(STEER_OPENING), "{steer}");

        let out = hook(&w, &event("SessionStart", &t, json!({"source": "compact"})));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(
            v.get("systemMessage").is_none(),
            "nothing to say yet: {out}"
        );
        let ctx = v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap();
        assert!(
            !ctx.contains("left out"),
            "the summary is not known yet: {ctx}"
        );
        let record = || {
            w.bus()
                .read("intermem", "compaction", SESSION)
                .unwrap()
                .envelope
                .payload
        };
        assert_eq!(
            (
                record()["settled"].clone(),
                record()["summary_read"].clone()
            ),
            (json!(true), Value::Null)
        );

        let summary = "<summary>Made the uploader resilient; edited src/uploader.rs.</summary>";
        // (The request, and the step it is, in other words than the summary's.)
        let kept = "the summary kept 1 of 4 facts, the note brought back 3, none lost";
        if via_post_compact {
            let out = hook(
                &w,
                &event("PostCompact", &t, json!({"compact_summary": summary})),
            );
            assert_eq!(
                out.trim_end(),
                format!("interband: compacted at 90k: {kept}")
            );
        } else {
            t.w.compact(90_000, 20_000, summary).unwrap();
            t.say("Resuming.", 21_000);
            let out = hook(&w, &event("Stop", &t, json!({"stop_hook_active": false})));
            let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
            // With the first figure after it, this turn's end's.
            assert_eq!(
                v["systemMessage"],
                format!("interband: compacted 90k -> 21k: {kept}")
            );
            assert_eq!(record()["tokens_after"], 21_000);
        }
        assert_eq!(record()["summary_read"], true);
        // Once: the next turn's end says nothing of it.
        let again = hook(&w, &event("Stop", &t, json!({"stop_hook_active": false})));
        assert!(!again.contains("compacted at"), "{again}");
    }
}

/// What neither the summary nor the note that came back holds (here, a note
/// brought back cut short by the person's own `inject_max_bytes`) is told
/// to the agent at the next tool call, and counted lost.
#[test]
fn facts_the_summary_and_the_note_both_left_out_come_back_at_the_next_call() {
    let w = World::new();
    let config = w.home().join(".config/interband/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[intermem]\ninject_max_bytes = 300\n").unwrap();
    let mut t = Transcript::new(w.dir.path());
    t.prompt("Make the uploader resilient and cover it with tests");
    t.tool(
        "Bash",
        json!({"command": "cargo test -p uploader --features retry"}),
        "1 failed",
        true,
        90_000,
    );
    hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
    hook(&w, &event("PreCompact", &t, json!({"trigger": "manual"})));
    hook(&w, &event("SessionStart", &t, json!({"source": "compact"})));
    t.w.compact(90_000, 20_000, "<summary>Work on the uploader.</summary>")
        .unwrap();
    t.say("Resuming.", 21_000);
    let out = hook(&w, &event("Stop", &t, json!({"stop_hook_active": false})));
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let line = v["systemMessage"].as_str().unwrap();
    assert_eq!(
        line,
        "interband: compacted 90k -> 21k: the summary kept 0 of 3 facts, the note brought back 0, \
         3 lost: the step in progress (Make the uploader resilient and cover it with tests)"
    );
    // The next tool call brings them back to the agent.
    t.tool("Bash", json!({"command": "ls"}), "ok", false, 22_000);
    let out = hook(&w, &event("PostToolUse", &t, json!({"tool_name": "Bash"})));
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        ctx.contains("both left out these facts")
            && ctx.contains("- a failed command: `cargo test -p uploader --features retry`"),
        "{ctx}"
    );
}
