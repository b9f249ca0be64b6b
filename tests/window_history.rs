//! The window nobody states, learned from the session's own history: the
//! hook as Claude Code runs it, on transcripts in an older release's shape
//! (no `requestedModel`, `version` 2.1.92), cut from the real 2.1.332
//! capture's lines: an automatic compaction below 1M's compaction point
//! settles 200k; with no evidence, the agent is told the figure and both
//! windows, a note is written at the smaller window's orange, and no Stop is
//! blocked; a `[1m]` session is told nothing at 175k.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

const HAIKU: &str = "claude-haiku-4-5-20251001";

/// The real capture's lines, by kind.
struct Real {
    assistant: Value,
    boundary: Value,
    prompt: Value,
}

fn real() -> Real {
    let text = String::from_utf8(capture("transcript.compacted_session.jsonl")).unwrap();
    let find = |what: &dyn Fn(&Value) -> bool| -> Value {
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| what(v))
            .unwrap()
    };
    Real {
        assistant: find(&|v| v["type"] == "assistant" && v["message"]["usage"].is_object()),
        boundary: find(&|v| v["subtype"] == "compact_boundary"),
        prompt: find(&|v| v["type"] == "user" && v["message"]["content"].is_string()),
    }
}

/// A transcript in 2.1.92's shape: each step a response at that many
/// tokens, or a compaction (`Err(pre)`, automatic) with its summary.
fn session(
    dir: &Path,
    name: &str,
    model: &str,
    requested: Option<&str>,
    steps: &[Result<u64, u64>],
) -> PathBuf {
    let r = real();
    let mut lines = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match step {
            Ok(used) => {
                let mut p = r.prompt.clone();
                p["version"] = json!("2.1.92");
                lines.push(p.to_string());
                let mut a = r.assistant.clone();
                a["message"]["id"] = json!(format!("msg_{i}"));
                a["requestId"] = json!(format!("req_{i}"));
                a["message"]["model"] = json!(model);
                match requested {
                    Some(m) => a["requestedModel"] = json!(m),
                    None => {
                        a.as_object_mut().unwrap().remove("requestedModel");
                    }
                }
                a["version"] = json!("2.1.92");
                let u = &mut a["message"]["usage"];
                u["input_tokens"] = json!(used / 10);
                u["cache_creation_input_tokens"] = json!(0);
                u["cache_read_input_tokens"] = json!(used - used / 10);
                lines.push(a.to_string());
            }
            Err(pre) => {
                let mut b = r.boundary.clone();
                b["uuid"] = json!(format!("boundary-{i}"));
                b["version"] = json!("2.1.92");
                b["compactMetadata"] = json!({"trigger": "auto", "preTokens": pre});
                lines.push(b.to_string());
            }
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn input(event: &str, session: &str, transcript: &Path) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&capture(&format!("{event}.input.json"))).unwrap();
    v["session_id"] = json!(session);
    v["transcript_path"] = json!(transcript);
    v["cwd"] = json!(transcript.parent().unwrap());
    serde_json::to_vec(&v).unwrap()
}

/// One hook call with `event`'s real input: what it printed.
fn hook(w: &World, event: &str, session: &str, t: &Path) -> String {
    let mut c = w.cmd(&["hook", "--host", "claude"]);
    // Interactive, as a person runs it; no `claude` process to read a model from.
    c.env("CLAUDE_CODE_SESSION_ATTENDED", "1")
        .env("CLAUDE_PID", "");
    let o = with_stdin(&mut c, &input(event, session, t));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

fn pressure(w: &World, session: &str) -> Value {
    let m = w.bus().read("interpulse", "pressure", session).unwrap();
    serde_json::to_value(m.envelope.payload).unwrap()
}

fn said(out: &str) -> String {
    if out.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(out).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn an_automatic_compaction_at_171k_settles_200k_and_160k_is_red() {
    let w = World::new();
    let t = session(
        w.dir.path(),
        "haiku.jsonl",
        HAIKU,
        None,
        &[
            Ok(120_000),
            Ok(168_000),
            Err(171_000),
            Ok(40_000),
            Ok(110_000),
            Ok(160_000),
        ],
    );
    let out = hook(&w, "PostToolUse", "h1", &t);
    let p = pressure(&w, "h1");
    assert_eq!(
        (
            p["window"].as_u64(),
            p["window_source"].as_str(),
            p["level"].as_str()
        ),
        (Some(200_000), Some("compaction"), Some("red")),
        "{p}"
    );
    assert!(p.get("window_other").is_none(), "not a guess: {p}");
    let told = said(&out);
    assert!(
        told.contains("Context RED: 80% used (160k of 200k tokens)"),
        "{told}"
    );
    // The state keeps it: a later call reads only what was written since.
    let again = hook(&w, "PostToolUse", "h1", &t);
    assert_eq!(pressure(&w, "h1")["window_source"], "compaction");
    assert_eq!(said(&again), "", "once per level");
}

#[test]
fn with_no_evidence_the_agent_is_told_both_windows_a_note_is_written_and_no_stop_is_blocked() {
    let w = World::new();
    let t = session(
        w.dir.path(),
        "guess.jsonl",
        HAIKU,
        None,
        &[Ok(100_000), Ok(160_000)],
    );
    let out = hook(&w, "PostToolUse", "g1", &t);
    let p = pressure(&w, "g1");
    assert_eq!(
        (
            p["window"].as_u64(),
            p["window_source"].as_str(),
            p["window_other"].as_u64(),
            p["level"].as_str(),
            p["level_if_smaller"].as_str()
        ),
        (
            Some(1_000_000),
            Some("guess"),
            Some(200_000),
            Some("green"),
            Some("red")
        ),
        "{p}"
    );
    let told = said(&out);
    assert!(
        told.starts_with("Context: 160k tokens used, window not known: if it is 200k, 80% used, 7k to compact; if it is 1M, 16% used, 807k to compact (from the transcript)."),
        "{told}"
    );
    assert!(told.contains("nothing needs to stop"), "{told}");
    for order in ["new work started now", "Context RED", "Context ORANGE"] {
        assert!(!told.contains(order), "an order on a guess: {told}");
    }
    assert!(
        told.contains("saved a memory note"),
        "a note at the smaller window's orange: {told}"
    );
    // Once per level: the next call says nothing new.
    assert_eq!(said(&hook(&w, "PostToolUse", "g1", &t)), "");
    // The turn's end blocks nothing on a guess.
    let stop = hook(&w, "Stop", "g1", &t);
    assert!(
        !stop.contains("\"block\""),
        "a Stop blocked on a guess: {stop}"
    );
}

#[test]
fn a_1m_session_is_told_nothing_at_175k() {
    let w = World::new();
    let t = session(
        w.dir.path(),
        "big.jsonl",
        "claude-sonnet-4-5",
        Some("claude-sonnet-4-5[1m]"),
        &[Ok(120_000), Ok(175_000)],
    );
    let out = hook(&w, "PostToolUse", "b1", &t);
    assert_eq!(out.trim(), "", "nothing to say at 175k of 1M");
    let p = pressure(&w, "b1");
    assert_eq!(
        (
            p["window"].as_u64(),
            p["window_source"].as_str(),
            p["level"].as_str()
        ),
        (Some(1_000_000), Some("transcript"), Some("green")),
        "{p}"
    );
    assert!(p.get("level_if_smaller").is_none(), "{p}");
}

#[test]
fn usage_past_200k_in_the_history_settles_1m_after_a_compaction() {
    let w = World::new();
    let t = session(
        w.dir.path(),
        "past.jsonl",
        HAIKU,
        None,
        &[
            Ok(150_000),
            Ok(240_000),
            Err(250_000),
            Ok(60_000),
            Ok(170_000),
        ],
    );
    // A manual compaction would say nothing; an automatic one at 250k after
    // usage of 240k is the larger window's own (usage came first).
    let out = hook(&w, "PostToolUse", "p1", &t);
    let p = pressure(&w, "p1");
    assert_eq!(
        (
            p["window"].as_u64(),
            p["window_source"].as_str(),
            p["level"].as_str()
        ),
        (Some(1_000_000), Some("usage"), Some("green")),
        "{p}"
    );
    assert_eq!(out.trim(), "");
}

#[test]
fn a_model_is_judged_by_the_table_of_the_release_that_wrote_it() {
    // Claude Code 2.1.111 gave claude-opus-4-7 200k unless it was asked for
    // with [1m]; 1M of its own came with 2.1.117 (docs/hosts.md).
    let w = World::new();
    let t = session(
        w.dir.path(),
        "o111.jsonl",
        "claude-opus-4-7",
        None,
        &[Ok(100_000), Ok(160_000)],
    );
    let out = hook(&w, "PostToolUse", "o1", &t);
    let p = pressure(&w, "o1");
    assert_eq!(
        (
            p["window"].as_u64(),
            p["window_source"].as_str(),
            p["window_other"].as_u64()
        ),
        (Some(1_000_000), Some("guess"), Some(200_000)),
        "{p}"
    );
    assert!(said(&out).contains("window not known"), "{out}");
    // The same lines written by 2.1.117: the model's own 1M, nothing to say.
    let text = std::fs::read_to_string(&t)
        .unwrap()
        .replace("\"2.1.92\"", "\"2.1.117\"");
    let t = w.dir.path().join("o117.jsonl");
    std::fs::write(&t, text).unwrap();
    let out = hook(&w, "PostToolUse", "o2", &t);
    let p = pressure(&w, "o2");
    assert_eq!(
        (p["window"].as_u64(), p["window_source"].as_str()),
        (Some(1_000_000), Some("model")),
        "{p}"
    );
    assert_eq!(out.trim(), "");
}
