//! Codex CLI and Gemini CLI through the real binary, with their real captured
//! inputs and transcripts in their own formats: the hook reads each host's
//! real figure, against its real window and compaction point.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

fn capture_of(host: &str, name: &str) -> Value {
    let path = repo().join("tests/fixtures").join(host).join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// A Codex rollout whose last response put `used` tokens in context, in an
/// effective window of `window`, named as Codex names it.
fn codex_rollout(dir: &Path, session: &str, used: u64, window: u64) -> PathBuf {
    let folder = dir.join(".codex/sessions/2026/11/30");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("rollout-2026-11-30T07-24-45-{session}.jsonl"));
    let real = std::fs::read_to_string(
        repo().join("tests/fixtures/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl"),
    )
    .unwrap();
    let usage = json!({"input_tokens": used - 20, "cached_input_tokens": used / 2, "output_tokens": 20,
        "reasoning_output_tokens": 0, "total_tokens": used});
    let count = json!({"timestamp": "2026-11-30T07:28:33.100Z", "type": "event_msg", "payload": {"type": "token_count",
        "info": {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": window}}});
    std::fs::write(&path, format!("{real}{count}\n")).unwrap();
    path
}

/// A Gemini chat recording whose last reply had `input` prompt tokens.
fn gemini_chat(dir: &Path, session: &str, input: u64) -> PathBuf {
    let folder = dir.join(".gemini/tmp/proj/chats");
    std::fs::create_dir_all(&folder).unwrap();
    let short: String = session.chars().take(8).collect();
    let path = folder.join(format!("session-2026-11-30T07-27-{short}.jsonl"));
    let reply = json!({"id": "r1", "timestamp": "2026-11-30T07:27:18.625Z", "type": "gemini", "content": "",
        "tokens": {"input": input, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": input + 20},
        "model": "gemini-2.5-flash"});
    let real = std::fs::read_to_string(
        repo().join("tests/fixtures/gemini-cli-0.61.0/transcript.session.jsonl"),
    )
    .unwrap();
    std::fs::write(&path, format!("{real}{reply}\n")).unwrap();
    path
}

fn hook(w: &World, input: &Value) -> Value {
    let o = w.run_with_stdin(&["hook"], &serde_json::to_vec(input).unwrap());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        o.stderr.is_empty(),
        "stderr stays empty (Gemini reads it): {}",
        stderr(&o)
    );
    let out = stdout(&o);
    if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap()
    }
}

fn pressure(w: &World, session: &str) -> Value {
    w.bus()
        .read("interpulse", "pressure", session)
        .unwrap()
        .envelope
        .payload
}

#[test]
fn codex_figures_come_from_its_rollout_against_its_window() {
    let w = World::new();
    let mut input = capture_of("codex-0.171.0", "PostToolUse.input.json");
    let session = input["session_id"].as_str().unwrap().to_owned();
    // 140k of an effective 190k window: yellow, from the rollout.
    let rollout = codex_rollout(w.dir.path(), &session, 140_000, 190_000);
    input["transcript_path"] = json!(rollout);
    input["cwd"] = json!(w.dir.path());
    let out = hook(&w, &input);
    let p = pressure(&w, &session);
    assert_eq!(p["source"], "transcript", "{p}");
    assert_eq!(p["used_tokens"], 140_000);
    assert_eq!(p["window"], 190_000);
    assert_eq!(p["level"], "yellow", "{p}");
    // The model the rollout names, for the views (no statusline here).
    let model = p["model"].as_str().unwrap_or_default().to_owned();
    assert!(model.starts_with("gpt-"), "{p}");
    let top: Value = serde_json::from_str(&stdout(&w.run(&["top", "--json"]))).unwrap();
    assert_eq!(top[0]["model"], model.as_str(), "{top}");
    let said = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("");
    assert!(said.contains("Context YELLOW"), "{out}");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    // 185k: red, and the way out is Codex's `/compact`.
    let rollout = codex_rollout(w.dir.path(), &session, 185_000, 190_000);
    input["transcript_path"] = json!(rollout);
    hook(&w, &input);
    assert_eq!(pressure(&w, &session)["level"], "red");
}

#[test]
fn codex_output_carries_no_field_it_would_reject() {
    let w = World::new();
    let mut input = capture_of("codex-0.171.0", "PostToolUse.input.json");
    let session = input["session_id"].as_str().unwrap().to_owned();
    input["transcript_path"] = json!(codex_rollout(w.dir.path(), &session, 185_000, 190_000));
    input["cwd"] = json!(w.dir.path());
    let out = hook(&w, &input);
    let accepted = capture_of("codex-0.171.0", "interband.PostToolUse.output.json");
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v["hookSpecificOutput"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&out), keys(&accepted), "{out}");
    assert_eq!(out.as_object().unwrap().len(), 1, "{out}");
}

#[test]
fn gemini_figures_come_from_its_chat_against_its_compression_point() {
    let w = World::new();
    let mut input = capture_of(
        "gemini-cli-0.61.0",
        "AfterTool.run_shell_command.input.json",
    );
    let session = input["session_id"].as_str().unwrap().to_owned();
    input["cwd"] = json!(w.dir.path());
    // 190k of 1,048,576 compressing at half of it: green.
    input["transcript_path"] = json!(gemini_chat(w.dir.path(), &session, 190_000));
    assert_eq!(hook(&w, &input), Value::Null, "green says nothing");
    let p = pressure(&w, &session);
    assert_eq!(
        (p["used_tokens"].clone(), p["window"].clone()),
        (json!(190_000), json!(1_048_576))
    );
    assert_eq!(p["level"], "green", "{p}");
    assert_eq!(p["model"], "gemini-2.5-flash", "{p}");
    // 500k: past 90% of the 524,288 compression point: red.
    input["transcript_path"] = json!(gemini_chat(w.dir.path(), &session, 500_000));
    let out = hook(&w, &input);
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "AfterTool");
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("Context RED"),
        "{out}"
    );
    // The user's compressionThreshold moves the point.
    std::fs::create_dir_all(w.home().join(".gemini")).unwrap();
    std::fs::write(
        w.home().join(".gemini/settings.json"),
        r#"{"model": {"compressionThreshold": 0.9}}"#,
    )
    .unwrap();
    let w2_session = "0b8c94aa-1932-4084-84fc-a27eed6c8978";
    input["session_id"] = json!(w2_session);
    input["transcript_path"] = json!(gemini_chat(w.dir.path(), w2_session, 500_000));
    hook(&w, &input);
    assert_eq!(pressure(&w, w2_session)["level"], "green");
}

/// Appends lines to a file.
fn append(path: &Path, lines: &[Value]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

fn gemini_event(name: &str, session: &str, chat: &Path, cwd: &Path, extra: Value) -> Value {
    let mut v = json!({"session_id": session, "transcript_path": chat, "cwd": cwd,
        "hook_event_name": name, "timestamp": "2026-11-30T07:27:19.000Z"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// A Gemini session in `w` whose last reply had `input` prompt tokens: its
/// project folder, its chat recording, and the real captured AfterTool
/// input for it.
fn gemini_session(w: &World, session: &str, input: u64) -> (PathBuf, PathBuf, Value) {
    let cwd = w.dir.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let chat = gemini_chat(w.dir.path(), session, input);
    let mut tool = capture_of(
        "gemini-cli-0.61.0",
        "AfterTool.run_shell_command.input.json",
    );
    tool["session_id"] = json!(session);
    tool["transcript_path"] = json!(chat);
    tool["cwd"] = json!(cwd);
    (cwd, chat, tool)
}

/// Gemini compresses: the recording's messages are replaced, and the next
/// reply has `input` prompt tokens.
fn compress(chat: &Path, input: u64) {
    append(
        chat,
        &[
            json!({"$set": {"messages": [{"id": "s", "type": "user", "content": [{"text": "<state_snapshot>"}]}]}}),
            json!({"id": format!("r{input}"), "type": "gemini", "tokens": {"input": input, "output": 9}, "model": "gemini-2.5-flash"}),
        ],
    );
}

/// A hook's output brings a memory note back.
fn mark_restored(out: &Value) -> bool {
    out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .contains("<interband-memory-note")
}

fn notes(w: &World) -> Vec<String> {
    files_under(&w.root().join("intermem/notes"))
        .into_iter()
        .filter(|f| {
            f.ends_with(".md") && !f.ends_with("latest.md") && !f.contains("session-summary")
        })
        .collect()
}

#[test]
fn gemini_turns_end_at_after_agent_and_a_compression_brings_the_note_back() {
    let w = World::new();
    let session = "566ab2a4-af31-45b0-a386-42b3e4b9309f";
    let (cwd, chat, tool) = gemini_session(&w, session, 190_000);
    hook(&w, &tool);

    // Low usage: PreCompress at every turn, and no note for any of them.
    let pre = gemini_event(
        "PreCompress",
        session,
        &chat,
        &cwd,
        json!({"trigger": "auto"}),
    );
    for _ in 0..3 {
        assert_eq!(hook(&w, &pre), Value::Null);
    }
    let end = gemini_event(
        "AfterAgent",
        session,
        &chat,
        &cwd,
        json!({"prompt": "go", "prompt_response": "ok", "stop_hook_active": false}),
    );
    assert_eq!(hook(&w, &end), Value::Null, "green: the turn just ends");
    assert_eq!(
        notes(&w),
        Vec::<String>::new(),
        "a low-usage run writes no note"
    );

    // Near the compression point: red, a checkpoint; AfterAgent writes its
    // note and advises Gemini's own command.
    append(
        &chat,
        &[
            json!({"id": "r2", "type": "gemini", "tokens": {"input": 500_000, "output": 9},
        "model": "gemini-2.5-flash"}),
        ],
    );
    hook(&w, &tool);
    // (Gemini shows a hook's systemMessage to the person: the advice, no
    // block; `/compress` takes no text: no focus after it.)
    let out = hook(&w, &end);
    assert!(out.get("decision").is_none(), "{out}");
    let said = out["systemMessage"].as_str().unwrap();
    assert!(
        said.contains("run `/compress`") && !said.contains("/compact"),
        "{said}"
    );
    assert_eq!(notes(&w).len(), 1, "the checkpoint's note: {:?}", notes(&w));
    // Below the compression point (524,288), a PreCompress still writes nothing.
    hook(&w, &pre);
    assert_eq!(notes(&w).len(), 1, "{:?}", notes(&w));
    // Where Gemini will compress, PreCompress saves a last note.
    append(
        &chat,
        &[
            json!({"id": "r2b", "type": "gemini", "tokens": {"input": 530_000, "output": 9},
        "model": "gemini-2.5-flash"}),
        ],
    );
    hook(&w, &pre);
    assert_eq!(notes(&w).len(), 2, "{:?}", notes(&w));

    // Gemini compresses: the history is rewritten, the next figure is small.
    append(
        &chat,
        &[
            json!({"$set": {"messages": [{"id": "s", "type": "user", "content": [{"text": "<state_snapshot>"}]}]}}),
            json!({"id": "r3", "type": "gemini", "tokens": {"input": 9_000, "output": 9}, "model": "gemini-2.5-flash"}),
        ],
    );
    let out = hook(&w, &tool);
    let said = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("");
    assert!(
        said.contains("<interband-memory-note") && said.contains("before it was compacted"),
        "{out}"
    );
    assert_eq!(pressure(&w, session)["level"], "green");
    // With the note, the compaction's record, read against the snapshot,
    // for the person (interactive Gemini shows a systemMessage as an info
    // line and never sends it to the model); the turn's end says no more.
    let line = out["systemMessage"].as_str().unwrap_or("");
    assert!(
        line.starts_with("interband: compacted at 530k: ")
            && line.contains("the summary kept 0 of ")
            && line.contains("the note brought back"),
        "{out}"
    );
    assert_eq!(hook(&w, &tool), Value::Null, "once");
    assert_eq!(hook(&w, &end), Value::Null, "said once");
}

#[test]
fn gemini_brings_the_note_back_before_the_next_turn_when_no_tool_ran() {
    let w = World::new();
    let session = "8c94aa9e-1932-4084-84fc-a27eed6c8978";
    let cwd = w.dir.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let chat = gemini_chat(w.dir.path(), session, 530_000);
    let mut tool = capture_of("gemini-cli-0.61.0", "AfterTool.read_file.error.input.json");
    tool["transcript_path"] = json!(chat);
    tool["cwd"] = json!(cwd);
    // Red: the checkpoint's note is written in the same call.
    let out = hook(&w, &tool);
    assert_eq!(notes(&w).len(), 1);
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|s| s.contains("saved a memory note")),
        "{out}"
    );
    let pre = gemini_event(
        "PreCompress",
        session,
        &chat,
        &cwd,
        json!({"trigger": "auto"}),
    );
    hook(&w, &pre);
    assert_eq!(notes(&w).len(), 2);
    let before = gemini_event(
        "BeforeAgent",
        session,
        &chat,
        &cwd,
        json!({"prompt": "next"}),
    );
    assert_eq!(hook(&w, &before), Value::Null, "no compression yet");
    append(
        &chat,
        &[
            json!({"$set": {"messages": [{"id": "s", "type": "user", "content": [{"text": "<state_snapshot>"}]}]}}),
            json!({"id": "r9", "type": "gemini", "tokens": {"input": 8_000, "output": 9}, "model": "gemini-2.5-flash"}),
        ],
    );
    // The turn that compressed ends first: its end leaves the new context
    // to the next turn's start, which brings the note back.
    let end = gemini_event(
        "AfterAgent",
        session,
        &chat,
        &cwd,
        json!({"prompt": "go", "prompt_response": "ok", "stop_hook_active": false}),
    );
    hook(&w, &end);
    let out = hook(&w, &before);
    assert_eq!(
        out["hookSpecificOutput"]["hookEventName"], "BeforeAgent",
        "{out}"
    );
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("<interband-memory-note")
    );
    assert_eq!(hook(&w, &before), Value::Null, "once");
}

#[test]
fn codex_session_end_writes_the_final_note() {
    let w = World::new();
    let mut input = capture_of("codex-0.171.0", "SessionEnd.input.json");
    let session = input["session_id"].as_str().unwrap().to_owned();
    input["transcript_path"] = json!(codex_rollout(w.dir.path(), &session, 50_000, 190_000));
    input["cwd"] = json!(w.dir.path());
    let mut tool = capture_of("codex-0.171.0", "PostToolUse.input.json");
    for k in ["session_id", "transcript_path", "cwd"] {
        tool[k] = input[k].clone();
    }
    hook(&w, &tool);
    assert_eq!(hook(&w, &input), Value::Null);
    let notes = notes(&w);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].ends_with("session_end.md"), "{notes:?}");
    // With the session's last figure, as a checkpoint's note has its own.
    let body = std::fs::read_to_string(w.root().join("intermem/notes").join(&notes[0])).unwrap();
    assert!(
        body.contains("(trigger: session_end, ")
            && body.contains("% used (")
            && body.contains(" to compact)"),
        "{body}"
    );
}

#[test]
fn gemini_brings_each_wind_down_record_back_once_across_compressions() {
    let w = World::new();
    let session = "566ab2a4-af31-45b0-a386-42b3e4b9309f";
    let cwd = w.dir.path().join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let chat = gemini_chat(w.dir.path(), session, 500_000);
    let call = |command: &str| {
        let mut tool = capture_of(
            "gemini-cli-0.61.0",
            "AfterTool.run_shell_command.input.json",
        );
        tool["session_id"] = json!(session);
        tool["transcript_path"] = json!(chat);
        tool["cwd"] = json!(cwd);
        tool["tool_input"] = json!({"command": command});
        let out = hook(&w, &tool);
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let red = |id: &str| {
        append(
            &chat,
            &[
                json!({"id": id, "type": "gemini", "tokens": {"input": 500_000, "output": 9}, "model": "gemini-2.5-flash"}),
            ],
        );
    };
    // Red: the checkpoint's note holds the first call; the second comes after it.
    call("cargo test uniq-a");
    call("cargo test uniq-b");
    assert_eq!(notes(&w).len(), 1, "{:?}", notes(&w));
    // Gemini compresses (past a threshold of its own): no note was written for it.
    compress(&chat, 9_000);
    let back1 = call("echo after-1");
    assert!(back1.contains("<interband-memory-note"), "{back1}");
    assert_eq!(back1.matches("uniq-b").count(), 1, "{back1}");
    // A second red stretch, its note, and another compression.
    red("r-red-2");
    call("cargo test uniq-c");
    compress(&chat, 8_000);
    let back2 = call("echo after-2");
    assert!(back2.contains("<interband-memory-note"), "{back2}");
    assert_eq!(back2.matches("uniq-c").count(), 1, "{back2}");
    for old in ["uniq-a", "uniq-b"] {
        assert_eq!(
            back2.matches(old).count(),
            0,
            "{old} came back already:\n{back2}"
        );
    }
    // The user's own `/compress` (a manual PreCompress, below the
    // compression point) compresses: it saves a note.
    let before = notes(&w).len();
    let pre = gemini_event(
        "PreCompress",
        session,
        &chat,
        &cwd,
        json!({"trigger": "manual"}),
    );
    hook(&w, &pre);
    assert_eq!(notes(&w).len(), before + 1, "{:?}", notes(&w));
}

#[test]
fn gemini_brings_the_note_back_again_when_the_hook_that_did_died_before_saying_it() {
    let w = World::new();
    let session = "566ab2a4-af31-45b0-a386-42b3e4b9309f";
    let (cwd, chat, tool) = gemini_session(&w, session, 530_000);
    hook(&w, &tool);
    assert_eq!(notes(&w).len(), 1, "red: the checkpoint's note");
    compress(&chat, 8_000);
    // The call after the compression: the producer has taken the new
    // context, and the note comes back. Then, as if that hook had been
    // killed before it could say so (its record is not there)...
    assert!(mark_restored(&hook(&w, &tool)));
    let state = w.root().join(format!(".state/compact/{session}.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(v["reinjected_cycle"], 1, "{v}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // While that hook may still be at it (a parallel call), it is left to it...
    v["reinjected_cycle"] = json!(0);
    v["reinjecting"] = json!([1, now]);
    std::fs::write(&state, v.to_string()).unwrap();
    assert!(!mark_restored(&hook(&w, &tool)), "left to the hook at it");
    // ...and once it has had its time, the next call brings it back, once.
    v["reinjecting"] = json!([1, now - 60.0]);
    std::fs::write(&state, v.to_string()).unwrap();
    assert!(mark_restored(&hook(&w, &tool)), "made again");
    assert!(!mark_restored(&hook(&w, &tool)), "once");
    let before = gemini_event(
        "BeforeAgent",
        session,
        &chat,
        &cwd,
        json!({"prompt": "next"}),
    );
    assert_eq!(hook(&w, &before), Value::Null, "and not at the next turn");
    // A clear starts a new context whose start event brings the note back:
    // the next call does not bring it back again.
    let mut start = capture_of("gemini-cli-0.61.0", "SessionStart.startup.input.json");
    start["session_id"] = json!(session);
    start["transcript_path"] = json!(chat);
    start["cwd"] = json!(cwd);
    start["source"] = json!("clear");
    let out = hook(&w, &start);
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or("")
            .contains("<interband-memory-note"),
        "{out}"
    );
    assert!(
        !mark_restored(&hook(&w, &tool)),
        "not again after the clear"
    );
}

#[test]
fn gemini_after_an_upgrade_brings_back_each_later_note_once() {
    let w = World::new();
    let session = "566ab2a4-af31-45b0-a386-42b3e4b9309f";
    let (_, chat, tool) = gemini_session(&w, session, 530_000);
    hook(&w, &tool);
    compress(&chat, 8_000);
    assert!(mark_restored(&hook(&w, &tool)));
    // The state as a build from before cycles were kept left it: the note
    // it brought back, and no cycle.
    let state = w.root().join(format!(".state/compact/{session}.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("reinjected_cycle");
    v.as_object_mut().unwrap().remove("reinjecting");
    std::fs::write(&state, v.to_string()).unwrap();
    assert!(
        !mark_restored(&hook(&w, &tool)),
        "that note already came back"
    );
    // A later red stretch, its note, a compression: that note comes back, once.
    append(
        &chat,
        &[
            json!({"id": "r-red", "type": "gemini", "tokens": {"input": 530_000, "output": 9}, "model": "gemini-2.5-flash"}),
        ],
    );
    hook(&w, &tool);
    compress(&chat, 7_000);
    assert!(mark_restored(&hook(&w, &tool)), "the later note comes back");
    assert!(!mark_restored(&hook(&w, &tool)), "once");
}

/// The same rule for Gemini: a repository's `compressionThreshold` counts
/// where Gemini trusts the folder and the user trusts the file.
#[test]
fn a_repository_s_gemini_threshold_counts_only_where_gemini_and_the_user_trust_it() {
    let w = World::new();
    let session = "5d0e2b33-0000-4000-8000-000000000032";
    let (cwd, _, tool) = gemini_session(&w, session, 150_000);
    std::fs::create_dir_all(cwd.join(".gemini")).unwrap();
    let theirs = cwd.join(".gemini/settings.json");
    std::fs::write(&theirs, r#"{"model": {"compressionThreshold": 0.1}}"#).unwrap();
    let level = |w: &World| {
        hook(w, &tool);
        pressure(w, session)["level"].as_str().unwrap().to_owned()
    };
    std::fs::create_dir_all(w.home().join(".gemini")).unwrap();
    std::fs::write(
        w.home().join(".gemini/trustedFolders.json"),
        json!({cwd.to_str().unwrap(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    assert_eq!(level(&w), "green", "Gemini trusts it; the user has not");
    assert_eq!(code(&w.run(&["trust", theirs.to_str().unwrap()])), 0);
    assert_eq!(level(&w), "red", "both trust it: Gemini compresses at 104k");
    std::fs::write(
        w.home().join(".gemini/trustedFolders.json"),
        json!({cwd.to_str().unwrap(): "DO_NOT_TRUST"}).to_string(),
    )
    .unwrap();
    assert_eq!(level(&w), "green", "Gemini does not trust it");
}

/// Gemini CLI 0.61.0, driven interactively in tmux (`/compress` after three
/// prompts), with two `PreCompress` hooks printing a canary in each shape a
/// hook's output takes: none reaches the compression request or any later
/// one; a `systemMessage` (and plain stdout, made one) shows to the person
/// alone (`tests/fixtures/gemini-cli-0.61.0-compress-canary/README.md`).
#[test]
fn no_pre_compress_output_reaches_gemini_s_summary_request() {
    let dir = repo().join("tests/fixtures/gemini-cli-0.61.0-compress-canary");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let canaries = [
        "CANARY-HSO-CONTEXT",
        "CANARY-JSON-CONTEXT",
        "CANARY-JSON-MESSAGE",
        "CANARY-PLAIN-STDOUT",
    ];
    let compress = read("request.compress.json");
    assert!(
        compress.contains("state_snapshot"),
        "the compression's own request"
    );
    let after = read("request.after-compress.json");
    assert!(
        after.contains("<state_snapshot>"),
        "the request after it opens with the snapshot"
    );
    for request in [&compress, &read("request.compress-verify.json"), &after] {
        for c in canaries {
            assert!(!request.contains(c), "{c} reached a request");
        }
    }
    let input: Value = serde_json::from_str(&read("PreCompress.manual.input.json")).unwrap();
    assert_eq!(input["trigger"], "manual", "{input}");
    let pane = read("pane.after-compress.txt");
    assert!(
        pane.contains("CANARY-JSON-MESSAGE") && pane.contains("CANARY-PLAIN-STDOUT"),
        "the person sees a hook's systemMessage and plain stdout: {pane}"
    );
}
