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

/// Gemini CLI releases: the first whose chat file the hook is given (0.22.4,
/// whole JSON, its AfterAgent still at each reply), the first whose hooks
/// fire as interband uses them (0.24.0), the last whole-JSON one (0.38.2,
/// replies written as they stream), the first JSONL one (0.39.0), today's
/// with a compression (0.61.0). With the figure each AfterTool hook reads:
/// before 0.32.1 a reply that only calls tools is written after them, so
/// the first call sees none.
const GEMINI: &[(&str, &str, &[Option<u64>])] = &[
    ("gemini-cli-0.22.4", "json", &[None, Some(120_000)]),
    ("gemini-cli-0.24.0", "json", &[None, Some(120_000)]),
    ("gemini-cli-0.38.2", "json", &[Some(120_000), Some(190_000)]),
    (
        "gemini-cli-0.39.0",
        "jsonl",
        &[Some(120_000), Some(190_000)],
    ),
    (
        "gemini-cli-0.61.0-compression",
        "jsonl",
        &[Some(120_000), Some(190_000), Some(190_000)],
    ),
];

#[test]
fn gemini_every_release_at_after_tool() {
    for (folder, ext, figures) in GEMINI {
        let dir = fixture(folder);
        for (n, want) in figures.iter().enumerate() {
            let w = World::new();
            let suffix = if n == 0 {
                String::new()
            } else {
                format!(".{}", n + 1)
            };
            let input = dir.join(format!("AfterTool.run_shell_command{suffix}.input.json"));
            let chat = dir.join(format!("chat.at-AfterTool.run_shell_command{suffix}.{ext}"));
            let at = format!(".gemini/tmp/proj/chats/session-2026-12-01T19-48-c6898b15.{ext}");
            let p = hook_on(&w, &input, &chat, &at);
            assert_eq!(
                p["used_tokens"].as_u64(),
                *want,
                "{folder} AfterTool {}: {p}",
                n + 1
            );
            let source = if want.is_some() {
                "transcript"
            } else {
                "heuristic"
            };
            assert_eq!(p["source"], source, "{folder}: {p}");
            if want.is_some() {
                assert_eq!(p["window"], 1_048_576, "{folder}: {p}");
            }
        }
    }
}

#[test]
fn gemini_every_release_replayed() {
    // (folder, chat file, highest figure written, compressions marked)
    let runs = [
        ("gemini-cli-0.21.3", "chat.session.json", 120_000, 0),
        ("gemini-cli-0.22.4", "chat.session.json", 120_000, 0),
        ("gemini-cli-0.24.0", "chat.session.json", 120_000, 0),
        ("gemini-cli-0.38.2", "chat.session.json", 190_000, 0),
        ("gemini-cli-0.39.0", "transcript.session.jsonl", 190_000, 0),
        // Resumed after its first run (the whole history again: no
        // compression), then compressed once.
        (
            "gemini-cli-0.61.0-compression",
            "transcript.session.jsonl",
            195_000,
            1,
        ),
    ];
    for (folder, file, max, compressions) in runs {
        let w = World::new();
        let (s, last) = replay(&w, &fixture(folder).join(file));
        assert_eq!(s["max_used_tokens"], max, "{folder}: {s}");
        assert_eq!(
            last,
            Some(30_000),
            "{folder}: the reply after the compression"
        );
        assert_eq!(s["compactions"], compressions, "{folder}: {s}");
        assert_eq!(s["window"], 1_048_576, "{folder}: {s}");
    }
}

/// Claude Code releases: the first with every event we use (1.0.85), the
/// first whose headless `/compact` is saved (1.0.128, a boundary with no
/// figure), the first boundary with `postTokens` (2.1.105: the summary's
/// size alone, no figure of the context either), today's
/// (2.1.332, `requestedModel` on every response). With the figure each
/// transcript ends on after the compaction, and the window: the models of
/// the older ones (Sonnet 4, Sonnet 4.6) can be opened to 1M, and nothing
/// in their transcripts nor in a hook run outside Claude Code says whether
/// they were: a guess, 1M assumed, 200k told; today's asked for
/// `claude-opus-5-5`, whose window is 1M.
const CLAUDE: &[(&str, Option<u64>, u64, &str)] = &[
    ("claude-code-1.0.85", Some(140_000), 1_000_000, "guess"),
    ("claude-code-1.0.128", None, 1_000_000, "guess"),
    ("claude-code-2.1.105", None, 1_000_000, "guess"),
    ("claude-code-2.1.332-usage", None, 1_000_000, "transcript"),
];

#[test]
fn claude_every_release_replayed_and_at_post_tool_use() {
    for (folder, after_compaction, window, source) in CLAUDE {
        let dir = fixture(folder);
        let w = World::new();
        let (s, last) = replay(&w, &dir.join("transcript.jsonl"));
        assert_eq!(s["max_used_tokens"], 140_000, "{folder}: {s}");
        assert_eq!(last, *after_compaction, "{folder}");
        assert_eq!(s["window"], *window, "{folder}: {s}");
        let next = dir.join("transcript.after_next_turn.jsonl");
        if !next.exists() {
            continue; // 1.0.85 could not resume the compacted session
        }
        let (_, last) = replay(&w, &next);
        assert_eq!(
            last,
            Some(20_000),
            "{folder}: the turn after the compaction"
        );
        let session = read_json(&dir.join("PostToolUse.input.json"))["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let p = hook_on(
            &w,
            &dir.join("PostToolUse.input.json"),
            &next,
            &format!(".claude/projects/-home-dev-work/{session}.jsonl"),
        );
        assert_eq!(p["used_tokens"], 20_000, "{folder}: {p}");
        assert_eq!(p["window"], *window, "{folder}: {p}");
        assert_eq!(p["window_source"], *source, "{folder}: {p}");
        let other = (*source == "guess").then_some(200_000);
        assert_eq!(p["window_other"].as_u64(), other, "{folder}: {p}");
    }
}

/// The statusline inputs the real Claude Code 2.1.332 gave interactively
/// (in tmux, `--model claude-sonnet-4-5`, usage rising to 175k): the figures
/// interband publishes are Claude Code's own (its tokens, its window, its
/// percentage of it), and the session's window is the statusline's.
#[test]
fn claude_interactive_statusline_figures_are_the_hosts_own() {
    let w = World::new();
    let dir = fixture("claude-code-1m/interactive-statusline");
    let text = std::fs::read_to_string(dir.join("sonnet-200k.statusline-inputs.jsonl")).unwrap();
    let mut seen = 0;
    for line in text.lines() {
        let input: Value = serde_json::from_str(line).unwrap();
        let o = w.run_with_stdin(&["statusline"], line.as_bytes());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let cw = &input["context_window"];
        let Some(pct) = cw["used_percentage"].as_f64() else {
            continue; // before the first response
        };
        let session = input["session_id"].as_str().unwrap();
        let published = w
            .bus()
            .read("interline", "context", session)
            .unwrap()
            .envelope
            .payload;
        let u = &cw["current_usage"];
        let used = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .map(|k| u[k].as_u64().unwrap())
        .sum::<u64>();
        assert_eq!(
            published["window"], cw["context_window_size"],
            "{published}"
        );
        assert_eq!(published["used_tokens"], used, "{published}");
        assert_eq!(
            published["used_percentage"].as_f64(),
            Some(pct),
            "{published}"
        );
        seen += 1;
    }
    assert!(seen >= 5, "the rising usage was seen: {seen}");
}
