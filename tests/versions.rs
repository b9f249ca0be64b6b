//! Every captured release of each host (`tests/fixtures/<host>-<version>/`,
//! captured from the real CLIs against a loopback mock; docs/hosts.md lists
//! what each changed): the real binary reads each one's own files as the
//! hook does (the captured hook input, the transcript as it was at that
//! moment) and as replay does (the whole transcript), and finds the figure
//! that release's mock reported.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

fn fixture(folder: &str) -> PathBuf {
    repo().join("tests/fixtures").join(folder)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")))
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// `replay --json --defaults` of a captured transcript: its summary and the
/// figure it ends on.
fn replay(w: &World, transcript: &Path) -> (Value, Option<u64>) {
    let o = w.run(&[
        "replay",
        transcript.to_str().unwrap(),
        "--json",
        "--defaults",
    ]);
    assert_eq!(code(&o), 0, "{transcript:?}: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let last = v["series"]
        .as_array()
        .and_then(|s| s.last())
        .and_then(|p| p["used_tokens"].as_u64());
    (v["summary"].clone(), last)
}

/// Runs the hook on a captured input whose transcript is `transcript` (put
/// where the host writes it, under the test's home), and gives the pressure
/// it published.
fn hook_on(w: &World, input: &Path, transcript: &Path, at: &str) -> Value {
    let mut input = read_json(input);
    let copy = w.home().join(at);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(transcript, &copy).unwrap();
    input["transcript_path"] = json!(copy);
    input["cwd"] = json!(w.dir.path());
    let o = w.run_with_stdin(&["hook"], &serde_json::to_vec(&input).unwrap());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    let session = input["session_id"].as_str().unwrap();
    w.bus()
        .read("interpulse", "pressure", session)
        .unwrap()
        .envelope
        .payload
}

/// Codex releases: the first with our hooks' PostToolUse (0.117), the one
/// whose `token_count` moved after the tool's output (0.132+, here 0.135),
/// the first with every event we use (0.145), `token_usage_record` back
/// before the tool (0.153+, here 0.155), today's (0.171). With the figure
/// a PostToolUse hook reads after the response that reported 140,000.
const CODEX: &[(&str, u64)] = &[
    ("codex-0.117.0", 140_000),
    ("codex-0.135.0", 100_000),
    ("codex-0.145.0", 100_000),
    ("codex-0.155.0", 140_000),
    ("codex-0.171.0-compaction", 140_000),
];

#[test]
fn codex_every_release_at_post_tool_use() {
    for (folder, want) in CODEX {
        let w = World::new();
        let dir = fixture(folder);
        let p = hook_on(
            &w,
            &dir.join("PostToolUse.input.json"),
            &dir.join("rollout.at-PostToolUse.jsonl"),
            ".codex/sessions/2026/12/01/rollout-2026-12-01T00-00-00-capture.jsonl",
        );
        assert_eq!(p["used_tokens"], *want, "{folder}: {p}");
        assert_eq!(p["window"], 258_400, "{folder}: {p}");
        assert_eq!(p["source"], "transcript", "{folder}: {p}");
        assert_eq!(p["level"], "green", "{folder}: {p}");
    }
}

#[test]
fn codex_every_release_replayed_never_above_its_window() {
    // 0.104 has no hooks of ours, but its rollouts are what users replay;
    // at each compaction every release writes a token_count of no input and
    // no output (Codex's estimate of the new context), 0.104 one before it too.
    let releases = CODEX.iter().map(|(f, _)| *f).chain(["codex-0.104.0"]);
    for folder in releases {
        let w = World::new();
        let dir = fixture(folder);
        let (s, last) = replay(&w, &dir.join("rollout.jsonl"));
        assert_eq!(
            (s["max_used_tokens"].as_u64(), last),
            (Some(151_000), Some(151_000)),
            "{folder}: {s}"
        );
        let mut runs = vec![dir.join("rollout.compaction.jsonl")];
        if dir.join("rollout.remotecompact.jsonl").exists() {
            runs.push(dir.join("rollout.remotecompact.jsonl"));
        }
        for run in runs {
            let (s, last) = replay(&w, &run);
            assert_eq!(s["window"], 258_400, "{run:?}: {s}");
            assert_eq!(s["compactions"], 2, "{run:?}: {s}");
            assert_eq!(s["max_used_tokens"], 251_000, "{run:?}: {s}");
            assert_eq!(last, Some(251_000), "{run:?}");
        }
    }
}
