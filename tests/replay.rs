//! `interband replay`: the real captured transcript, transcripts built from
//! its lines whose usage walks through every level, the demo's own
//! transcript (the replay reports what the demo's hooks did), and generated
//! transcripts read by the hook, the replay and a reader written here.

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
    // A 200k model (the real transcript's claude-opus-5-5 has 1M).
    a["message"]["model"] = json!(interpulse::synthetic::MODEL);
    a["requestedModel"] = json!(interpulse::synthetic::MODEL);
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

fn the_real_transcript_replays_with_its_call_and_its_compaction() {
    let w = World::new();
    let o = w.run(&["replay", FIXTURE]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("compaction (manual): 32k tokens before, 3k after by the host's count"),
        "{out}"
    );
    assert!(
        out.contains("memory note written (pre_compact_manual)"),
        "{out}"
    );
    assert!(out.contains("the latest note comes back"), "{out}");
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
        let figures = Figures::new(p * 2000, 200_000, 167_000, Source::Transcript);
        let c = Call {
            now: i as f64 * 60.0,
            tool: "Bash".into(),
            response_bytes: 5,
            subagent: false,
        };
        let obs = Observation {
            figures: Some(figures),
            ..Observation::default()
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
    // Call 5 reached 70% and call 7 80%; Claude Code writes a response's
    // line just after its tool's hook ran, so the hooks saw each figure one
    // call later: the orange checkpoint is at call 6, the red one at call 8.
    assert!(
        checkpoints[0].split_whitespace().nth(2) == Some("6"),
        "{out}"
    );
    assert!(
        checkpoints[1].split_whitespace().nth(2) == Some("8"),
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
    // One call later each (see above): red from call 8 to 14, green at 1-3 and 15.
    assert_eq!(s["calls_at_level"]["red"], 7);
    assert_eq!(s["calls_at_level"]["green"], 4);
    let events = v["events"].as_array().unwrap();
    let change = events
        .iter()
        .rev()
        .find(|e| e["event"] == "level_change")
        .unwrap();
    assert_eq!(
        (&change["from"], &change["to"]),
        (&json!("red"), &json!("green"))
    );
    let n = events.len();
    assert_eq!(events[n - 2]["event"], "note_back");
    // Then interband's record of the compaction, once the note came back.
    let record = &events[n - 1];
    assert_eq!(record["event"], "record", "{record}");
    assert!(
        record["line"].as_str().unwrap().starts_with("compacted"),
        "{record}"
    );
    assert_eq!(
        record["facts"].as_u64().unwrap(),
        record["summary"].as_u64().unwrap()
            + record["note"].as_u64().unwrap()
            + record["lost"].as_u64().unwrap(),
        "each fact counted once: {record}"
    );
    assert_eq!(s["records"], 1);
    assert_eq!(s["lost_facts"], record["lost"]);
}

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
    assert_eq!(code(&o), 1, "a file with nothing to replay is bad data");
    assert!(stdout(&o).contains("nothing found"), "{}", stdout(&o));
    assert!(stderr(&o).contains("nothing to replay"), "{}", stderr(&o));
    let o = w.run(&["replay", "--json", t.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["found"], false);
    // A file that is not there is a usage problem, said as such.
    let missing = w.dir.path().join("missing.jsonl");
    let o = w.run(&["replay", missing.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("missing.jsonl: no such file"),
        "{}",
        stderr(&o)
    );
}

fn replay_takes_the_window_of_the_model_the_session_asked_for() {
    let w = World::new();
    // The real session asked for claude-opus-5-5 (`requestedModel`), whose
    // window is 1M: a statusline of any other session changes nothing.
    let summary = |w: &World, t: &Path| replay_json(w, t)["summary"].clone();
    assert_eq!(summary(&w, Path::new(FIXTURE))["window"], 1_000_000);
    let o = w.run_with_stdin(&["statusline"], &capture("statusLine.input.json"));
    assert_eq!(code(&o), 0);
    assert_eq!(summary(&w, Path::new(FIXTURE))["window"], 1_000_000);
    // Also when the transcript opens with a 2 MB pasted image.
    let big = w.dir.path().join("big-first.jsonl");
    let image = serde_json::json!({"type": "user", "message": {"role": "user", "content": "i".repeat(2 << 20)}});
    std::fs::write(
        &big,
        format!("{image}\n{}", std::fs::read_to_string(FIXTURE).unwrap()),
    )
    .unwrap();
    assert_eq!(summary(&w, &big)["window"], 1_000_000);
    // A session that asked for a 200k model with the `[1m]` tag has 1M;
    // without it, 200k.
    let fixture = std::fs::read_to_string(FIXTURE).unwrap();
    for (requested, window) in [
        ("claude-sonnet-4-5[1m]", 1_000_000),
        ("claude-sonnet-4-5", 200_000),
    ] {
        let t = w.dir.path().join("asked.jsonl");
        let text = fixture
            .replace(
                "\"requestedModel\":\"claude-opus-5-5\"",
                &format!("\"requestedModel\":\"{requested}\""),
            )
            .replace(
                "\"model\":\"claude-opus-5-5\"",
                "\"model\":\"claude-sonnet-4-5\"",
            );
        std::fs::write(&t, text).unwrap();
        assert_eq!(summary(&w, &t)["window"], window, "{requested}");
    }
}

fn the_demo_and_its_replay_report_what_the_hooks_did() {
    let w = World::new();
    let o = w.run(&["demo", "--json", "--keep"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let demo: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let transcript = PathBuf::from(demo["transcript"].as_str().unwrap());
    let kept = transcript
        .ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("interband-demo."))
        })
        .unwrap()
        .to_path_buf();
    let v = replay_json(&w, &transcript);
    std::fs::remove_dir_all(&kept).unwrap();
    let events = v["events"].as_array().unwrap();
    let of = |kind: &str, field: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["event"] == kind)
            .map(|e| json!([e["call"], e[field]]))
            .collect()
    };
    assert_eq!(Value::from(of("warning", "level")), demo["warnings"], "{v}");
    assert_eq!(Value::from(of("note", "trigger")), demo["notes"], "{v}");
    let directives: Vec<Value> = events
        .iter()
        .filter(|e| e["event"] == "directives")
        .map(|e| e["call"].clone())
        .collect();
    assert_eq!(Value::from(directives), demo["directives"]);
    let s = &v["summary"];
    assert_eq!(s["trigger_firings"], demo["trigger_firings"]);
    assert_eq!(s["notes_back"], demo["notes_back"]);
    assert_eq!(s["calls"], demo["calls"]);
    assert_eq!(demo["warnings"].as_array().unwrap().len(), 3, "{demo}");
    assert_eq!(demo["notes"].as_array().unwrap().len(), 3, "{demo}");
}

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One generated transcript line, and whether it is a tool call's result
/// (the hook runs once it is written).
struct Gen {
    line: Value,
    result: bool,
}

/// A session in Claude Code's shapes with what real transcripts hold and
/// naive readers get wrong: responses split over lines with one id (the
/// first with the whole prompt, the last with a tiny figure), text-only
/// answers that peak between tool calls, `stop_reason: null` on every line
/// (older versions), `turn_duration` records, `<synthetic>` error lines, and
/// compactions without `postTokens`.
fn generate(seed: u64) -> Vec<Gen> {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let null_stops = r.below(2) == 0;
    let mut out = Vec::new();
    let mut t = 0u64;
    let mut used = 20_000u64;
    let mut n = 0u64;
    let mut stamp = |v: &mut Value| {
        t += 7;
        v["timestamp"] = json!(time(t));
        v["isSidechain"] = json!(false);
        v["sessionId"] = json!("9f1c2b7e-0d4a-4e21-8a3c-5b6d7e8f9a0b");
        v["cwd"] = json!("/work/lines");
    };
    let usage = |u: u64| json!({"input_tokens": u / 2, "cache_creation_input_tokens": 0, "cache_read_input_tokens": u - u / 2, "output_tokens": 50});
    let mut prompt =
        json!({"type": "user", "message": {"role": "user", "content": "Carry on with the parser"}});
    stamp(&mut prompt);
    out.push(Gen {
        line: prompt,
        result: false,
    });
    for _ in 0..(14 + r.below(10)) {
        n += 1;
        used = (used + 4_000 + r.below(14_000)).min(190_000);
        let id = format!("msg_{n}");
        match r.below(10) {
            // A tool call, its response split over one to three lines.
            0..=5 => {
                let parts = 1 + r.below(3);
                for k in 0..parts {
                    let last = k + 1 == parts;
                    let figure = match (parts, k) {
                        (1, _) => used,
                        (_, 0) => used,
                        _ => 100 + r.below(900),
                    };
                    let mut content = vec![json!({"type": "text", "text": "Looking."})];
                    if last {
                        content = vec![
                            json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": "Bash", "input": {"command": format!("cargo test step{n}")}}),
                        ];
                    }
                    let stop = if null_stops || !last {
                        Value::Null
                    } else {
                        json!("tool_use")
                    };
                    let mut a = json!({"type": "assistant", "message": {"id": id, "type": "message", "role": "assistant",
                        "model": "claude-x", "content": content, "stop_reason": stop, "usage": usage(figure)}});
                    stamp(&mut a);
                    out.push(Gen {
                        line: a,
                        result: false,
                    });
                }
                let mut u = json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": format!("toolu_{n}"), "type": "tool_result", "content": "ok", "is_error": false}]}, "toolUseResult": {"stdout": "ok"}});
                stamp(&mut u);
                out.push(Gen {
                    line: u,
                    result: true,
                });
            }
            // A text-only answer ending the turn, higher than the calls around it.
            6 | 7 => {
                let peak = (used + 10_000).min(199_000);
                let stop = if null_stops {
                    Value::Null
                } else {
                    json!("end_turn")
                };
                let mut a = json!({"type": "assistant", "message": {"id": id, "type": "message", "role": "assistant",
                    "model": "claude-x", "content": [{"type": "text", "text": "Done for now."}], "stop_reason": stop, "usage": usage(peak)}});
                stamp(&mut a);
                out.push(Gen {
                    line: a,
                    result: false,
                });
                if r.below(2) == 0 {
                    let mut d =
                        json!({"type": "system", "subtype": "turn_duration", "durationMs": 1200});
                    stamp(&mut d);
                    out.push(Gen {
                        line: d,
                        result: false,
                    });
                }
                if r.below(3) == 0 {
                    let mut e = json!({"type": "assistant", "message": {"id": format!("syn_{n}"), "model": "<synthetic>", "role": "assistant",
                        "content": [{"type": "text", "text": "API Error: overloaded"}], "stop_reason": "stop_sequence", "usage": usage(0)}});
                    stamp(&mut e);
                    out.push(Gen {
                        line: e,
                        result: false,
                    });
                }
                let mut p =
                    json!({"type": "user", "message": {"role": "user", "content": "Go on"}});
                stamp(&mut p);
                out.push(Gen {
                    line: p,
                    result: false,
                });
            }
            // A compaction without postTokens, as every real one seen.
            8 => {
                let mut b = json!({"type": "system", "subtype": "compact_boundary", "uuid": format!("b-{n}"), "content": "Conversation compacted",
                    "compactMetadata": {"trigger": "auto", "preTokens": used}});
                stamp(&mut b);
                out.push(Gen {
                    line: b,
                    result: false,
                });
                let mut s = json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": "Summary: parser work"}});
                stamp(&mut s);
                out.push(Gen {
                    line: s,
                    result: false,
                });
                used = 15_000;
            }
            _ => {
                let mut e = json!({"type": "assistant", "message": {"id": format!("syn_{n}"), "model": "<synthetic>", "role": "assistant",
                    "content": [{"type": "text", "text": "API Error"}], "stop_reason": "stop_sequence", "usage": usage(0)}});
                stamp(&mut e);
                out.push(Gen {
                    line: e,
                    result: false,
                });
            }
        }
    }
    out
}

/// The context figure after each line, the most seen, and the turns ended,
/// by the documented rule, read here without interband's code: a response's
/// lines (one message id, nothing between) count their largest figure, a
/// compaction without a figure leaves none, `<synthetic>` lines say nothing;
/// a turn ends with an answer that asks for no tool (when the stop reason
/// is written), or before the next prompt or a `turn_duration` record.
fn independent(lines: &[Gen]) -> (Vec<Option<u64>>, Option<u64>, u64) {
    let (mut figure, mut id, mut max) = (None::<u64>, None::<String>, None::<u64>);
    let (mut open, mut turns) = (false, 0);
    let mut after = Vec::new();
    for g in lines {
        let v = &g.line;
        let m = &v["message"];
        match v["type"].as_str() {
            Some("assistant") if m["model"] != "<synthetic>" => {
                let u = &m["usage"];
                let t: u64 = [
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ]
                .iter()
                .map(|k| u[*k].as_u64().unwrap_or(0))
                .sum();
                let this = m["id"].as_str().map(str::to_owned);
                figure = Some(match (figure, &id) {
                    (Some(f), Some(prev)) if Some(prev) == this.as_ref() => f.max(t),
                    _ => t,
                });
                id = this;
                max = Some(max.unwrap_or(0).max(t));
                open = true;
                let calls = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["type"] == "tool_use");
                if !calls && m["stop_reason"].as_str().is_some_and(|s| s != "tool_use") {
                    turns += 1;
                    open = false;
                }
            }
            Some("user") => {
                id = None;
                let prompt = m["content"].is_string() && v["isCompactSummary"] != true;
                if prompt && open {
                    turns += 1;
                    open = false;
                }
            }
            Some("system") if v["subtype"] == "compact_boundary" => {
                figure = v["compactMetadata"]["postTokens"].as_u64();
                id = None;
            }
            Some("system") if v["subtype"] == "turn_duration" && open => {
                turns += 1;
                open = false;
            }
            _ => {}
        }
        after.push(figure);
    }
    if open {
        turns += 1;
    }
    (after, max, turns)
}

fn the_hook_and_the_replay_read_generated_sessions_as_a_reader_written_here() {
    for seed in 1..=6 {
        let lines = generate(seed);
        let (after, max, turns) = independent(&lines);
        let w = World::new();
        let path = w
            .dir
            .path()
            .join("9f1c2b7e-0d4a-4e21-8a3c-5b6d7e8f9a0b.jsonl");
        // The hook, at each tool call, with the transcript as far as its result.
        let mut text = String::new();
        let mut hook_figures = Vec::new();
        let mut want = Vec::new();
        for (i, g) in lines.iter().enumerate() {
            text += &format!("{}\n", g.line);
            if !g.result {
                continue;
            }
            std::fs::write(&path, &text).unwrap();
            let mut input: Value =
                serde_json::from_slice(&capture("PostToolUse.input.json")).unwrap();
            input["session_id"] = json!("9f1c2b7e-0d4a-4e21-8a3c-5b6d7e8f9a0b");
            input["transcript_path"] = json!(path);
            input["cwd"] = json!(w.dir.path());
            let o = w.run_with_stdin(&["hook"], &serde_json::to_vec(&input).unwrap());
            assert_eq!(code(&o), 0);
            let p = w
                .bus()
                .read(
                    "interpulse",
                    "pressure",
                    "9f1c2b7e-0d4a-4e21-8a3c-5b6d7e8f9a0b",
                )
                .unwrap();
            hook_figures.push(p.envelope.payload["used_tokens"].as_u64());
            want.push(after[i]);
        }
        assert_eq!(
            hook_figures, want,
            "seed {seed}: the hook's figure at each call"
        );
        // The replay, of the whole file.
        std::fs::write(&path, &text).unwrap();
        let r = replay_json(&World::new(), &path);
        let s = &r["summary"];
        assert_eq!(
            s["max_used_tokens"].as_u64(),
            max,
            "seed {seed}: the peak, text-only answers included"
        );
        assert_eq!(s["turns"].as_u64(), Some(turns), "seed {seed}: turns ended");
        // Every figure the replay plotted is the reader's after that line.
        let series: Vec<Option<u64>> = r["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["used_tokens"].as_u64())
            .collect();
        let changes: Vec<Option<u64>> = lines
            .iter()
            .zip(&after)
            .filter(|(g, _)| {
                let v = &g.line;
                (v["type"] == "assistant" && v["message"]["model"] != "<synthetic>")
                    || v["subtype"] == "compact_boundary"
            })
            .map(|(_, f)| *f)
            .collect();
        assert_eq!(series, changes, "seed {seed}: the replay's curve");
    }
}

fn codex_and_gemini_transcripts_replay_through_their_own_hooks() {
    let w = World::new();
    let fixtures = repo().join("tests/fixtures");
    // Codex's rollout, cut at its PostToolUse: one call, a figure, the host's window.
    let dir = w.dir.path().join("codex/sessions/2026/11/30");
    std::fs::create_dir_all(&dir).unwrap();
    let rollout =
        dir.join("rollout-2026-11-30T07-24-45-01a22b5a-f865-7f42-bd9a-3be6150b497a.jsonl");
    std::fs::copy(
        fixtures.join("codex-0.171.0/rollout.at-PostToolUse.140k.jsonl"),
        &rollout,
    )
    .unwrap();
    let v = replay_json(&w, &rollout);
    assert_eq!(v["host"], "codex");
    assert_eq!(v["summary"]["calls"], 1);
    assert!(
        v["summary"]["max_used_tokens"].as_u64().unwrap() > 100_000,
        "{}",
        v["summary"]
    );
    // Gemini's chat: a call and its answer, at Gemini's limit.
    let chats = w.dir.path().join("gemini/tmp/p/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let chat = chats.join("session-2026-11-30T07-27-566ab2a4.jsonl");
    std::fs::copy(
        fixtures.join("gemini-cli-0.61.0/transcript.session.jsonl"),
        &chat,
    )
    .unwrap();
    let v = replay_json(&w, &chat);
    assert_eq!(v["host"], "gemini");
    assert_eq!(v["summary"]["calls"], 1);
    assert_eq!(v["summary"]["max_used_tokens"], 190_000);
    assert_eq!(v["summary"]["window"], 1_048_576);
    assert_eq!(v["summary"]["turns"], 1);
}

fn a_transcript_past_the_readers_reach_replays_the_same_with_its_copy_given_back() {
    // Long results (as the client writes them: in the message and in
    // toolUseResult), usage rising to red and compacting, twice: about 24 MB,
    // far past the 8 MB any hook reads back from the end.
    let w = World::new();
    let body = "x".repeat(50_000);
    let mut lines = Vec::new();
    let mut i = 0;
    for _ in 0..2 {
        for step in 0..120u64 {
            i += 1;
            let [a, u] = call(i, 30_000 + step * 1_300, false);
            let mut u: Value = serde_json::from_str(&u).unwrap();
            u["message"]["content"][0]["content"] = json!(body);
            u["toolUseResult"] = json!({"stdout": body});
            lines.extend([a, u.to_string()]);
        }
        lines.push(boundary(i, 20_000));
    }
    let path = write(w.dir.path(), "long.jsonl", &lines);
    assert!(std::fs::metadata(&path).unwrap().len() > 20 << 20);
    let run = |keep: bool| {
        let o = w
            .cmd(&["replay", "--defaults", "--json", path.to_str().unwrap()])
            .env("INTERBAND_REPLAY_KEEP_COPY", if keep { "1" } else { "0" })
            .finish();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    };
    let (freed, kept) = (run(false), run(true));
    let v: Value = serde_json::from_str(&freed).unwrap();
    assert!(
        v["summary"]["notes"].as_u64() >= Some(4),
        "{}",
        v["summary"]
    );
    assert_eq!(v["summary"]["compactions"], 2);
    assert!(freed == kept, "the hooks read the same either way");
}

#[cfg(unix)]
/// A replay long enough to be caught at work: the running child, and the
/// private folder it works in (found by the copy it holds open).
fn a_long_replay(w: &World) -> (std::process::Child, PathBuf) {
    let pcts: Vec<u64> = (0..6_000).map(|i| 10 + i % 50).collect();
    let t = write(w.dir.path(), "long.jsonl", &calls_at(&pcts));
    let child = w
        .cmd(&["replay", "--defaults", t.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .start();
    let pid = child.id();
    let private = poll(30, "the replay's private folder", || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()?
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .find_map(|p| {
                p.ancestors()
                    .find(|a| {
                        a.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("interband-replay."))
                    })
                    .map(Path::to_path_buf)
            })
    });
    (child, private)
}

#[cfg(unix)]
fn a_replay_stopped_by_a_signal_leaves_nothing_behind() {
    // Its private folder holds a copy of the transcript: stopped by Ctrl-C,
    // a closed terminal or a kill, it goes.
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let w = World::new();
        let (child, private) = a_long_replay(&w);
        let pid = child.id();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&private).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the user's alone");
        assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
        let o = wait_within(child, std::time::Duration::from_secs(60));
        assert_ne!(code(&o), 0, "a stopped replay says so");
        assert!(stderr(&o).contains("stopped"), "{}", stderr(&o));
        assert!(
            !private.exists(),
            "{private:?} left behind after signal {signal}"
        );
    }
}

/// A transcript copied out of its host's folder may not tell its host: the
/// message names every host interband knows and `--host`, which reads the
/// same file; `--help` lists every host's key. All from the profiles.
fn a_copied_transcript_is_told_how_to_name_its_host() {
    let w = World::new();
    let copy = w.dir.path().join("copied.jsonl");
    std::fs::copy(
        repo().join("tests/fixtures/qwen-code-0.24.4/transcript.jsonl"),
        &copy,
    )
    .unwrap();
    let o = w.run(&["replay", copy.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    for host in interband_hosts::Host::ALL {
        let p = host.profile();
        assert!(
            stderr(&o).contains(p.name) && stderr(&o).contains(p.key),
            "{}: {}",
            p.name,
            stderr(&o)
        );
    }
    assert!(stderr(&o).contains("--host"), "{}", stderr(&o));
    let o = w.run(&["replay", "--host", "qwen", copy.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let help = stdout(&w.run(&["replay", "--help"]));
    for host in interband_hosts::Host::ALL {
        assert!(help.contains(host.profile().key), "{help}");
    }
}

#[cfg(unix)]
/// Another local user (nobody: the test acts as one, which needs root) can
/// neither list a replay's private folder nor read the copy in it.
fn another_user_can_neither_list_nor_read_a_replay_s_private_folder() {
    use std::os::unix::process::CommandExt;
    let w = World::new();
    let (child, private) = a_long_replay(&w);
    let pid = child.id();
    for args in [
        vec!["ls", private.to_str().unwrap()],
        vec!["sh", "-c", &format!("cat '{}'/*", private.display())],
    ] {
        let o = std::process::Command::new(args[0])
            .args(&args[1..])
            .uid(65534)
            .gid(65534)
            .finish();
        assert!(
            !o.status.success(),
            "another user could run {args:?}: {}",
            stdout(&o)
        );
    }
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let _ = wait_within(child, std::time::Duration::from_secs(60));
}

fn main() -> std::process::ExitCode {
    #[cfg(unix)]
    let stopped_by_a_signal = Ok(a_replay_stopped_by_a_signal_leaves_nothing_behind as fn());
    #[cfg(unix)]
    let another_user = if unsafe { libc::geteuid() } == 0 {
        Ok(another_user_can_neither_list_nor_read_a_replay_s_private_folder as fn())
    } else {
        Err("acting as another user needs root".to_owned())
    };
    #[cfg(windows)]
    let stopped_by_a_signal = common::trials::unix_only("a stop by SIGINT, SIGTERM or SIGHUP");
    #[cfg(windows)]
    let another_user = common::trials::unix_only("acting as another user by uid");
    common::trials::run(vec![
        (
            "the_real_transcript_replays_with_its_call_and_its_compaction",
            Ok(the_real_transcript_replays_with_its_call_and_its_compaction as fn()),
        ),
        (
            "plot_writes_a_standalone_svg_of_the_series",
            Ok(plot_writes_a_standalone_svg_of_the_series as fn()),
        ),
        (
            "rising_usage_goes_green_yellow_orange_red_and_a_compaction_makes_it_green",
            Ok(rising_usage_goes_green_yellow_orange_red_and_a_compaction_makes_it_green as fn()),
        ),
        (
            "subagent_calls_never_change_the_level",
            Ok(subagent_calls_never_change_the_level as fn()),
        ),
        (
            "a_missing_transcript_is_a_one_line_error_naming_it",
            Ok(a_missing_transcript_is_a_one_line_error_naming_it as fn()),
        ),
        (
            "a_transcript_without_anything_usable_says_so",
            Ok(a_transcript_without_anything_usable_says_so as fn()),
        ),
        (
            "replay_takes_the_window_of_the_model_the_session_asked_for",
            Ok(replay_takes_the_window_of_the_model_the_session_asked_for as fn()),
        ),
        (
            "the_demo_and_its_replay_report_what_the_hooks_did",
            Ok(the_demo_and_its_replay_report_what_the_hooks_did as fn()),
        ),
        (
            "the_hook_and_the_replay_read_generated_sessions_as_a_reader_written_here",
            Ok(the_hook_and_the_replay_read_generated_sessions_as_a_reader_written_here as fn()),
        ),
        (
            "codex_and_gemini_transcripts_replay_through_their_own_hooks",
            Ok(codex_and_gemini_transcripts_replay_through_their_own_hooks as fn()),
        ),
        (
            "a_transcript_past_the_readers_reach_replays_the_same_with_its_copy_given_back",
            Ok(
                a_transcript_past_the_readers_reach_replays_the_same_with_its_copy_given_back
                    as fn(),
            ),
        ),
        (
            "a_replay_stopped_by_a_signal_leaves_nothing_behind",
            stopped_by_a_signal,
        ),
        (
            "a_copied_transcript_is_told_how_to_name_its_host",
            Ok(a_copied_transcript_is_told_how_to_name_its_host as fn()),
        ),
        (
            "another_user_can_neither_list_nor_read_a_replay_s_private_folder",
            another_user,
        ),
    ])
}
