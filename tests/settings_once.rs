//! A hook call opens each settings file at most once: interband's own (the
//! user's and the project's `config.toml`) and the host's (Claude Code's
//! three `settings.json`, Codex's `config.toml`, Gemini's and Qwen's user
//! and project `settings.json`), read once and passed down to the producer
//! and the consumers. Counted from outside, as the kernel sees it: the real
//! binary runs each host's real captured events under `strace`, at a level
//! that warns and asks for a checkpoint (so every part of the call runs),
//! and each file named here is opened exactly once in some event (a count
//! of a file never opened could not fail). Copilot CLI's settings are read
//! by no hook. Without `strace`, the test reports itself ignored, with the
//! reason.

mod common;

use common::{BIN, World, repo, trials};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One host's case: its fixture folder, its events (fixture files, in the
/// order a session sends them), its transcript and where the host keeps it
/// under the home folder, and its own settings files (relative to the home
/// and to the project).
struct Case {
    /// The fixture folder, `<host key>-...` (`claude-code`, `qwen-code` and
    /// `copilot-cli` name their host by the first word).
    fixtures: &'static str,
    events: &'static [&'static str],
    transcript: &'static str,
    transcript_at: &'static str,
    host_files: &'static [&'static str],
    /// Text replaced in the transcript, so the call reads what this case
    /// counts (Claude Code's settings are read for a model whose window
    /// depends on how the session was started).
    edits: &'static [(&'static str, &'static str)],
}

const CASES: &[Case] = &[
    Case {
        fixtures: "claude-code-2.1.332",
        events: &[
            "SessionStart.compact.input.json",
            "PostToolUse.input.json",
            "Stop.input.json",
            "PreCompact.auto.input.json",
            "SessionEnd.input.json",
        ],
        transcript: "transcript.compacted_session.jsonl",
        transcript_at: ".claude/projects/-p/d6d5a7f1-e821-4196-b0bd-c3da854c1920.jsonl",
        host_files: &[
            ".claude/settings.json",
            "PROJECT/.claude/settings.json",
            "PROJECT/.claude/settings.local.json",
        ],
        // A model whose window depends on how the session was started,
        // asked for by no line, with its last figure standing (no
        // compaction after it): the settings' model is looked for.
        edits: &[
            ("claude-opus-5-5", "claude-sonnet-4-5"),
            ("\"requestedModel\"", "\"requested\""),
            ("compact_boundary", "no_boundary"),
        ],
    },
    Case {
        fixtures: "codex-0.171.0",
        events: &[
            "SessionStart.compact.input.json",
            "PostToolUse.140k.input.json",
            "Stop.input.json",
            "PreCompact.auto.input.json",
            "SessionEnd.input.json",
        ],
        transcript: "rollout.at-PostToolUse.140k.jsonl",
        transcript_at: ".codex/sessions/2026/11/30/rollout-2026-11-30T07-28-31-01a22b5a-f865-7f42-bd9a-3be6150b497a.jsonl",
        host_files: &[".codex/config.toml"],
        edits: &[],
    },
    Case {
        fixtures: "gemini-cli-0.39.0",
        events: &[
            "SessionStart.startup.input.json",
            "BeforeAgent.input.json",
            "AfterTool.run_shell_command.input.json",
            "PreCompress.auto.input.json",
            "AfterAgent.input.json",
            "SessionEnd.exit.input.json",
        ],
        transcript: "chat.at-AfterTool.run_shell_command.jsonl",
        transcript_at: ".gemini/tmp/proj/chats/session-2026-11-30T07-27-d41c4108.jsonl",
        host_files: &[".gemini/settings.json", "PROJECT/.gemini/settings.json"],
        edits: &[],
    },
    Case {
        fixtures: "qwen-code-0.24.4",
        events: &[
            "SessionStart.startup.input.json",
            "PostToolUse.run_shell_command.input.json",
            "PostToolUseFailure.run_shell_command.nonzero-exit.input.json",
            "Stop.input.json",
            "PreCompact.auto.input.json",
            "SessionStart.compact.auto.input.json",
            "SessionEnd.clear.interactive.input.json",
        ],
        transcript: "transcript.jsonl",
        transcript_at: ".qwen/projects/-proj/chats/0baac381-e77f-4421-938d-4c91905576b9.jsonl",
        host_files: &[".qwen/settings.json", "PROJECT/.qwen/settings.json"],
        edits: &[],
    },
    Case {
        fixtures: "copilot-cli-1.0.102",
        events: &[
            "SessionStart.new.input.json",
            "PostToolUse.bash.input.json",
            "PostToolUseFailure.view-missing.input.json",
            "Stop.input.json",
            "PreCompact.auto.input.json",
            "SessionEnd.complete.input.json",
        ],
        transcript: "events.compaction-headless.jsonl",
        transcript_at: ".copilot/session-state/db515af9-183e-40ee-ad11-80d0b386f015/events.jsonl",
        host_files: &[],
        edits: &[],
    },
];

/// Every threshold at once: any figure is red, so a tool call warns and
/// asks for a checkpoint, and the turn's end acts.
const RED_AT_ONCE: &str =
    "[interpulse.thresholds.usable]\nyellow = 99.9\norange = 99.8\nred = 99.7\n";

fn each_settings_file_is_opened_at_most_once_per_hook_call() {
    for case in CASES {
        let w = World::new();
        let home = w.home();
        let project = w.dir.path().join("proj");
        let resolve = |rel: &str| match rel.strip_prefix("PROJECT/") {
            Some(r) => project.join(r),
            None => home.join(rel),
        };
        let mut watched: Vec<PathBuf> = vec![
            home.join(".config/interband/config.toml"),
            project.join(".interband/config.toml"),
        ];
        watched.extend(case.host_files.iter().map(|f| resolve(f)));
        for f in &watched {
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            let body = match f.extension().and_then(|e| e.to_str()) {
                Some("toml") if f.ends_with("interband/config.toml") => RED_AT_ONCE,
                Some("toml") => "# empty\n",
                _ => "{}\n",
            };
            std::fs::write(f, body).unwrap();
        }
        // The project's interband file is the project's: trusted, so its
        // settings count as the user's would.
        std::fs::write(project.join(".interband/config.toml"), "[compact]\n").unwrap();
        let dir = repo().join("tests/fixtures").join(case.fixtures);
        let transcript = home.join(case.transcript_at);
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(dir.join(case.transcript)).unwrap();
        let text = case
            .edits
            .iter()
            .fold(text, |text, (from, to)| text.replace(from, to));
        std::fs::write(&transcript, text).unwrap();
        let mut most: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for event in case.events {
            let mut input: Value =
                serde_json::from_slice(&std::fs::read(dir.join(event)).unwrap()).unwrap();
            if input.get("transcript_path").is_some() {
                input["transcript_path"] = transcript.to_string_lossy().into();
            }
            input["cwd"] = project.to_string_lossy().into();
            let host = case.fixtures.split('-').next().unwrap();
            let opens = opens_in_one_call(&w, &project, host, &input);
            for f in &watched {
                let n = opens.get(f).copied().unwrap_or(0);
                let m = most.entry(f.clone()).or_insert(0);
                *m = (*m).max(n);
                assert!(
                    n <= 1,
                    "{}/{event}: {} opened {n} times in one hook call",
                    case.fixtures,
                    f.display()
                );
            }
            // The call did read interband's settings: the count is of a real read.
            assert_eq!(
                opens.get(&watched[0]).copied(),
                Some(1),
                "{}/{event}: the user's settings were not read ({opens:?})",
                case.fixtures
            );
        }
        for f in &watched {
            assert_eq!(
                most.get(f).copied(),
                Some(1),
                "{}: {} is opened exactly once in some event (else this count could not fail)",
                case.fixtures,
                f.display()
            );
        }
    }
}

/// Runs one hook call under `strace` and counts the successful opens of each path.
fn opens_in_one_call(
    w: &World,
    project: &Path,
    host: &str,
    input: &Value,
) -> BTreeMap<PathBuf, usize> {
    let trace = w.dir.path().join("trace");
    let _ = std::fs::remove_file(&trace);
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(&trace)
        .arg(BIN)
        .args(["hook", "--host", host])
        .current_dir(project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("INTERBAND_ROOT", w.root())
        .env("HOME", w.home())
        .env("CLAUDE_PROJECT_DIR", project);
    let out = common::with_stdin(&mut cmd, input.to_string().as_bytes());
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut opens = BTreeMap::new();
    for line in text.lines().filter(|l| !l.contains("= -1 ")) {
        let Some(start) = line.find('"') else {
            continue;
        };
        let Some(len) = line[start + 1..].find('"') else {
            continue;
        };
        let path = PathBuf::from(&line[start + 1..start + 1 + len]);
        *opens.entry(path).or_insert(0) += 1;
    }
    opens
}

fn main() -> std::process::ExitCode {
    let strace = trials::runs("strace", "-V")
        .then_some(())
        .ok_or_else(|| "no strace to count the opens (apt install strace)".to_owned());
    trials::run(vec![(
        "each_settings_file_is_opened_at_most_once_per_hook_call",
        strace.map(|()| each_settings_file_is_opened_at_most_once_per_hook_call as fn()),
    )])
}
