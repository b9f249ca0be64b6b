//! `interband replay`: the real captured transcript, and transcripts built from
//! its lines whose usage walks through every level.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use interband::payloads::Level;
use interpulse::config::Config;
use interpulse::context::{Figures, Source};
use interpulse::engine::{self, Action, Call, Observation, State};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl"
);

/// The fixture's first line matching `pred`, parsed.
fn template(pred: impl Fn(&str) -> bool) -> Value {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let line = text.lines().find(|l| pred(l)).unwrap();
    serde_json::from_str(line).unwrap()
}

fn time(i: u64) -> String {
    format!("2026-11-30T02:{:02}:{:02}.000Z", i / 60, i % 60)
}

/// A tool call `i` (its assistant line and its result) with `used` tokens in
/// context, one minute after call `i - 1`; in a subagent when `side`.
fn call(i: u64, used: u64, side: bool) -> [String; 2] {
    let mut a = template(|l| l.contains(r#""type":"tool_use""#));
    a["isSidechain"] = json!(side);
    a["timestamp"] = json!(time(i * 60));
    a["message"]["id"] = json!(format!("msg_{i}_{side}"));
    a["message"]["content"][0]["id"] = json!(format!("toolu_{i}_{side}"));
    a["message"]["usage"]["input_tokens"] = json!(used / 10);
    a["message"]["usage"]["cache_creation_input_tokens"] = json!(0);
    a["message"]["usage"]["cache_read_input_tokens"] = json!(used - used / 10);
    let mut u = template(|l| l.contains(r#""type":"tool_result""#));
    u["isSidechain"] = json!(side);
    u["timestamp"] = json!(time(i * 60 + 5));
    u["message"]["content"][0]["tool_use_id"] = json!(format!("toolu_{i}_{side}"));
    [a.to_string(), u.to_string()]
}

/// A compaction boundary after call `i`, leaving `post` tokens.
fn boundary(i: u64, post: u64) -> String {
    let mut b = template(|l| l.contains("compact_boundary"));
    b["timestamp"] = json!(time(i * 60 + 30));
    b["compactMetadata"]["postTokens"] = json!(post);
    b.to_string()
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Main-thread calls at these percentages of 200k.
fn calls_at(pcts: &[u64]) -> Vec<String> {
    pcts.iter()
        .enumerate()
        .flat_map(|(i, p)| call(i as u64 + 1, p * 2000, false))
        .collect()
}

fn replay_json(w: &World, path: &Path) -> Value {
    let o = w.run(&["replay", "--json", path.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn kinds(v: &Value) -> Vec<String> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_real_transcript_replays_with_its_call_and_its_compaction() {
    let w = World::new();
    let o = w.run(&["replay", FIXTURE]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("compaction (manual): 32k → 3k tokens"),
        "{out}"
    );
    assert!(out.contains("memory note written (PreCompact)"), "{out}");
    assert!(
        out.contains("tool calls             1 (0 in subagents)"),
        "{out}"
    );

    let v = replay_json(&w, Path::new(FIXTURE));
    let s = &v["summary"];
    assert_eq!(s["found"], true);
    assert_eq!(s["calls"], 1);
    assert_eq!(s["compactions"], 1);
    assert_eq!(s["max_used_tokens"], 31_700);
    let c = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "compaction")
        .unwrap();
    assert_eq!(c["post_tokens"], 2613);
    assert_eq!(c["trigger"], "manual");
}

#[test]
fn plot_writes_a_standalone_svg_of_the_series() {
    let w = World::new();
    let out = w.dir.path().join("out.svg");
    let o = w.run(&["replay", FIXTURE, "--plot", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
    assert!(svg.contains("viewBox="));
    assert!(svg.contains("<polyline class=\"used\" points=\""));
    assert!(svg.contains("marker-compaction"));
    assert!(svg.trim_end().ends_with("</svg>"));
}

/// The warnings the engine itself gives for calls at these percentages of 200k.
fn engine_warnings(pcts: &[u64]) -> [u64; 4] {
    let cfg = Config::default();
    let mut s = State::default();
    let mut n = [0; 4];
    for (i, p) in pcts.iter().enumerate() {
        let figures = Figures {
            used_tokens: p * 2000,
            window: 200_000,
            autocompact_at: 167_000,
            source: Source::Transcript,
        };
        let c = Call {
            now: i as f64 * 60.0,
            tool: "Bash".into(),
            response_bytes: 5,
            subagent: false,
        };
        let obs = Observation {
            compaction: None,
            figures: Some(figures),
            directives: false,
        };
        let o = engine::step(&s, &c, &obs, &cfg);
        for a in &o.actions {
            if let Action::Warn(l) = a {
                n[*l as usize] += 1;
            }
        }
        s = o.state;
    }
    n
}

#[test]
fn rising_usage_goes_green_yellow_orange_red_and_a_compaction_makes_it_green() {
    let w = World::new();
    let mut pcts = vec![20, 20, 60, 60, 70, 70];
    pcts.extend([80; 8]);
    let mut lines = calls_at(&pcts);
    lines.push(boundary(pcts.len() as u64, 10_000));
    lines.extend(call(pcts.len() as u64 + 1, 12_000, false));
    let t = write(w.dir.path(), "rising.jsonl", &lines);

    let o = w.run(&["replay", t.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let changes: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once("level ").map(|(_, c)| c))
        .filter(|c| c.contains('→'))
        .collect();
    assert_eq!(
        changes,
        [
            "green → yellow",
            "yellow → orange",
            "orange → red",
            "red → green"
        ],
        "{out}"
    );
    let checkpoints: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("checkpoint requested"))
        .collect();
    assert_eq!(checkpoints.len(), 2, "{out}");
    assert!(checkpoints[0].contains("orange_pressure") && checkpoints[0].contains("orange"));
    assert!(checkpoints[1].contains("red_pressure"));
    // The orange checkpoint is at call 5, the red one at call 7.
    assert!(
        checkpoints[0].split_whitespace().nth(2) == Some("5"),
        "{out}"
    );
    assert!(
        checkpoints[1].split_whitespace().nth(2) == Some("7"),
        "{out}"
    );

    let v = replay_json(&w, &t);
    let s = &v["summary"];
    let expected = engine_warnings(&pcts);
    assert_eq!(
        expected,
        [0, 1, 1, 2],
        "yellow and orange once, red at once and 5 calls later"
    );
    for level in [Level::Green, Level::Yellow, Level::Orange, Level::Red] {
        assert_eq!(
            s["warnings"][level.as_str()],
            expected[level as usize],
            "{level:?}"
        );
    }
    let warned = kinds(&v).iter().filter(|k| *k == "warning").count();
    assert_eq!(warned, 4);
    assert_eq!(s["checkpoints"], 2);
    assert_eq!(s["checkpoint_files"], 1);
    assert_eq!(s["notes"], 3, "orange, red and PreCompact");
    assert_eq!(s["compactions"], 1);
    assert_eq!(s["final_level"], "green");
    assert_eq!(s["calls_at_level"]["red"], 8);
    assert_eq!(s["calls_at_level"]["green"], 3);
    let last = v["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "level_change");
    assert_eq!(
        (&last["from"], &last["to"]),
        (&json!("red"), &json!("green"))
    );
}

#[test]
fn subagent_calls_never_change_the_level() {
    let w = World::new();
    let mut lines = calls_at(&[20]);
    for i in 2..8 {
        lines.extend(call(i, 195_000, true));
    }
    lines.extend(call(8, 42_000, false));
    let t = write(w.dir.path(), "sub.jsonl", &lines);
    let v = replay_json(&w, &t);
    let s = &v["summary"];
    assert_eq!(s["calls"], 8);
    assert_eq!(s["subagent_calls"], 6);
    assert_eq!(s["calls_at_level"]["green"], 2);
    assert_eq!(
        s["max_used_tokens"], 42_000,
        "a subagent's usage is not the context"
    );
    assert_eq!(s["final_level"], "green");
    assert!(kinds(&v).is_empty(), "{v}");
}

#[test]
fn a_missing_transcript_is_a_one_line_error_naming_it() {
    let w = World::new();
    let missing = w.dir.path().join("no-such-transcript.jsonl");
    let o = w.run(&["replay", missing.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn a_transcript_without_anything_usable_says_so() {
    let w = World::new();
    let t = write(
        w.dir.path(),
        "empty.jsonl",
        &[
            "not json".into(),
            r#"{"type":"mode","mode":"normal"}"#.into(),
        ],
    );
    let o = w.run(&["replay", t.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("nothing found"), "{}", stdout(&o));
    let v = replay_json(&w, &t);
    assert_eq!(v["summary"]["found"], false);
}

#[test]
fn replay_takes_the_window_a_statusline_reported_for_the_model() {
    let w = World::new();
    assert_eq!(
        replay_json(&w, Path::new(FIXTURE))["summary"]["window"],
        200_000
    );
    // The statusline of any session of this model (claude-opus-5-5) reports 1M.
    let o = w.run_with_stdin(&["statusline"], &capture("statusLine.input.json"));
    assert_eq!(code(&o), 0);
    let v = replay_json(&w, Path::new(FIXTURE));
    assert_eq!(v["summary"]["window"], 1_000_000, "{}", v["summary"]);
    // Also when the transcript opens with a 2 MB pasted image.
    let big = w.dir.path().join("big-first.jsonl");
    let image = serde_json::json!({"type": "user", "message": {"role": "user", "content": "i".repeat(2 << 20)}});
    std::fs::write(
        &big,
        format!("{image}\n{}", std::fs::read_to_string(FIXTURE).unwrap()),
    )
    .unwrap();
    assert_eq!(replay_json(&w, &big)["summary"]["window"], 1_000_000);
}
