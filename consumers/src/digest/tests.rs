//! The digest's tests: real and generated transcripts, windows cut anywhere, arbitrary bytes.
use super::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::fs::File;
use std::io::Write;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl"
);

/// Counts the bytes read through it.
struct Counting<S> {
    inner: S,
    read: std::sync::atomic::AtomicU64,
}

impl<S: Source> Counting<S> {
    fn new(inner: S) -> Self {
        Counting {
            inner,
            read: 0.into(),
        }
    }

    fn read(&self) -> u64 {
        self.read.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<S: Source> Source for Counting<S> {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let n = self.inner.read_at(buf, at)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Slices of memory as a source (a `&[u8]` is `Sized`).
impl Source for &[u8] {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        (**self).read_at(buf, at)
    }
}

/// Fields every main-thread line carries.
fn base(kind: &str) -> serde_json::Map<String, Value> {
    let Value::Object(map) = json!({
        "type": kind,
        "isSidechain": false,
        "cwd": "/repo",
        "gitBranch": "main",
        "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z",
    }) else {
        unreachable!()
    };
    map
}

fn user(content: Value) -> Value {
    let mut m = base("user");
    m.insert(
        "message".into(),
        json!({"role": "user", "content": content}),
    );
    Value::Object(m)
}

fn assistant(content: Value) -> Value {
    let mut m = base("assistant");
    m.insert(
        "message".into(),
        json!({"role": "assistant", "model": "claude-x", "content": content}),
    );
    Value::Object(m)
}

fn with(mut line: Value, key: &str, value: Value) -> Value {
    if let Value::Object(m) = &mut line {
        m.insert(key.into(), value);
    }
    line
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    assistant(json!([{"type": "tool_use", "id": id, "name": name, "input": input}]))
}

fn tool_result(id: &str, is_error: bool, content: Value) -> Value {
    user(
        json!([{"type": "tool_result", "tool_use_id": id, "is_error": is_error, "content": content}]),
    )
}

fn jsonl(lines: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn todo_write(id: &str, todos: &[(&str, &str)]) -> Value {
    let todos: Vec<Value> = todos
        .iter()
        .map(|(c, s)| json!({"content": c, "status": s, "activeForm": format!("Doing {c}")}))
        .collect();
    tool_use(id, "TodoWrite", json!({ "todos": todos }))
}

#[test]
fn real_fixture() {
    let d = digest_file(Path::new(FIXTURE), &Limits::default()).expect("fixture readable");
    assert_eq!(d.first_prompt.as_deref(), Some("say hi"));
    assert_eq!(d.latest_prompt.as_deref(), Some("say hi"));
    assert_eq!(
        d.commands,
        vec![Command {
            command: "echo hello".into(),
            failed: false,
            runs: 1,
        }]
    );
    let summary = d.compaction_summary.as_deref().expect("compaction summary");
    assert!(
        summary.contains("Mock summary: user asked to say hi"),
        "{summary}"
    );
    assert_eq!(d.cwd.as_deref(), Some("/home/dev/work"));
    assert_eq!(d.git_branch.as_deref(), Some("HEAD"));
    assert_eq!(
        d.last_assistant.as_deref(),
        Some("Done: the command printed hello.")
    );
    assert!(d.todos.is_empty());
    assert!(d.files_changed.is_empty());
    assert!(d.tool_errors.is_empty());
    // The in-memory entry point agrees.
    let bytes = std::fs::read(FIXTURE).unwrap();
    assert_eq!(digest(&bytes, &Limits::default()), d);
}

#[test]
fn codex_and_gemini_transcripts_give_their_prompts_commands_and_replies() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");
    let codex = std::fs::read(format!(
        "{dir}/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl"
    ))
    .unwrap();
    let d = digest_as(&codex, &Limits::default(), Host::Codex);
    assert_eq!(d.first_prompt.as_deref(), Some("run echo please"), "{d:?}");
    assert_eq!(d.commands.len(), 1, "{d:?}");
    assert_eq!(d.commands[0].command, "echo hello-from-mock");
    assert_eq!(d.cwd.as_deref(), Some("/home/user/proj"));
    let gemini =
        std::fs::read(format!("{dir}/gemini-cli-0.61.0/transcript.session.jsonl")).unwrap();
    let d = digest_as(&gemini, &Limits::default(), Host::Gemini);
    assert_eq!(
        d.first_prompt.as_deref(),
        Some("List the files in this folder, then say done."),
        "{d:?}"
    );
    assert_eq!(
        d.last_assistant.as_deref(),
        Some("Mock done: saw 1 tool result(s).")
    );
    // Synthetic Codex lines: a failed command, a patch, a plan.
    let lines = [
        json!({"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
            "arguments": "{\"cmd\": \"cargo test\"}", "call_id": "c1"}}),
        json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
            "output": "Chunk ID: x\nProcess exited with code 101\nOutput:\nerror[E0308]: mismatched types"}}),
        json!({"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
            "input": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n*** End Patch"}}),
        json!({"type": "response_item", "payload": {"type": "function_call", "name": "update_plan", "call_id": "c3",
            "arguments": "{\"plan\": [{\"step\": \"fix types\", \"status\": \"in_progress\"}]}"}}),
    ];
    let d = digest_as(&jsonl(&lines), &Limits::default(), Host::Codex);
    assert!(d.commands[0].failed, "{d:?}");
    assert_eq!(d.tool_errors[0].tool, "exec_command");
    assert_eq!(d.files_changed, ["src/lib.rs"]);
    assert_eq!(d.todos[0].content, "fix types");
}

#[test]
fn a_window_cut_in_two_anywhere_gives_what_one_scan_gives() {
    // The real Claude Code and Codex transcripts, and the two again
    // with their lines reversed (a later value must still win): scanned
    // as two halves cut after every line and joined, against one scan.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");
    let codex = format!("{dir}/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl");
    let limits = Limits::default();
    for (path, host) in [(FIXTURE.to_owned(), Host::Claude), (codex, Host::Codex)] {
        let bytes = std::fs::read(&path).unwrap();
        let reversed: Vec<u8> = bytes
            .split_inclusive(|&b| b == b'\n')
            .rev()
            .flat_map(|l| l.iter().copied())
            .collect();
        for bytes in [bytes, reversed] {
            let len = bytes.len() as u64;
            let scan =
                |from, to| scan_part(&bytes[..], (from, to), (false, false), 512, &limits, host);
            let one = scan(0, len).unwrap().finish(None);
            assert_ne!(one, Digest::default(), "{path}");
            let mut cuts = 0;
            for (i, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
                let cut = i as u64 + 1;
                let halves = scan(0, cut).unwrap().then(scan(cut, len).unwrap());
                assert_eq!(halves.finish(None), one, "{path}, cut at {cut}");
                cuts += 1;
            }
            assert!(cuts >= 10, "{path}");
            // And through the window's own cutting (at its middle).
            let reading = Reading {
                chunk: 512,
                split: 2,
            };
            let d = digest_source(&bytes[..], len, &limits, host, reading).unwrap();
            assert_eq!(d, digest_as(&bytes, &limits, host));
        }
    }
}

#[test]
fn two_halves_join_as_one_scan_of_every_kind_of_line() {
    // Each half has every kind of line a digest keeps, with its own
    // values; the joined scans must give what one scan of both gives,
    // whether the later half has each kind or not.
    let half = |x: &str| {
        vec![
            with(
                with(
                    user(json!(format!("prompt {x}"))),
                    "cwd",
                    json!(format!("/{x}")),
                ),
                "gitBranch",
                json!(format!("branch-{x}")),
            ),
            tool_use(
                &format!("e{x}"),
                "Edit",
                json!({"file_path": format!("/{x}.rs")}),
            ),
            tool_use(
                &format!("b{x}"),
                "Bash",
                json!({"command": format!("make {x}")}),
            ),
            tool_result(&format!("b{x}"), true, json!(format!("failed {x}"))),
            todo_write(&format!("t{x}"), &[(&format!("todo {x}"), "pending")]),
            assistant(json!([{"type": "text", "text": format!("reply {x}")}])),
            with(
                user(json!(format!("summary {x}"))),
                "isCompactSummary",
                json!(true),
            ),
            json!({"type": "last-prompt", "lastPrompt": format!("record {x}")}),
        ]
    };
    let limits = Limits::default();
    // Without prompt lines too: the last-prompt records then tell.
    for skip in [0, 1] {
        let a: Vec<Value> = half("a").into_iter().skip(skip).collect();
        for keep in 0..=a.len() {
            // The later half: the first `keep` kinds of line only (so, for
            // each kind, once with it and once without).
            let b: Vec<Value> = half("b").into_iter().skip(skip).take(keep).collect();
            let (first, second) = (jsonl(&a), jsonl(&b));
            let both = [first.clone(), second.clone()].concat();
            let one = scan_part(
                &both[..],
                (0, both.len() as u64),
                (false, false),
                64,
                &limits,
                Host::Claude,
            )
            .unwrap()
            .finish(None);
            let scan = |bytes: &[u8]| {
                scan_part(
                    bytes,
                    (0, bytes.len() as u64),
                    (false, false),
                    64,
                    &limits,
                    Host::Claude,
                )
                .unwrap()
            };
            let joined = scan(&first).then(scan(&second)).finish(None);
            assert_eq!(joined, one, "with {keep} kinds in the later half");
        }
    }
}

#[test]
fn real_fixture_tail_only() {
    // A tail window that starts after the first prompt and the Bash call
    // still finds what lies within it; the prompt comes from the head.
    let bytes = std::fs::read(FIXTURE).unwrap();
    let limits = Limits {
        head_cap: 4096,
        tail_cap: 12 * 1024,
        ..Limits::default()
    };
    assert!(bytes.len() as u64 > limits.head_cap + limits.tail_cap);
    let d = digest(&bytes, &limits);
    assert_eq!(d.first_prompt.as_deref(), Some("say hi"));
    assert!(d.compaction_summary.is_some());
    assert_eq!(d.cwd.as_deref(), Some("/home/dev/work"));
    // The window holds no prompt line; the client's last-prompt record
    // stands in.
    assert_eq!(d.latest_prompt.as_deref(), Some("say hi"));
    let counting = Counting::new(&bytes[..]);
    let len = bytes.len() as u64;
    let from_source =
        digest_source(&counting, len, &limits, Host::Claude, Reading::DEFAULT).unwrap();
    assert_eq!(from_source, d);
    assert!(counting.read() <= limits.head_cap + limits.tail_cap);
}

fn synthetic() -> Vec<Value> {
    vec![
        json!({"type": "queue-operation", "operation": "enqueue"}),
        with(
            user(json!(
                "<local-command-caveat>Caveat: local commands</local-command-caveat>"
            )),
            "isMeta",
            json!(true),
        ),
        user(json!(
            "<command-name>/model</command-name>\n<command-message>model</command-message>"
        )),
        user(json!(
            "<local-command-stdout>Set model</local-command-stdout>"
        )),
        user(json!("Fix the parser")),
        with(
            user(json!("meta text that is no prompt")),
            "isMeta",
            json!(true),
        ),
        todo_write(
            "t1",
            &[("Read code", "in_progress"), ("Old item", "pending")],
        ),
        tool_result("t1", false, json!("Todos have been modified")),
        tool_use(
            "e1",
            "Edit",
            json!({"file_path": "/repo/a.rs", "old_string": "x", "new_string": "y"}),
        ),
        tool_result("e1", false, json!("ok")),
        tool_use(
            "w1",
            "Write",
            json!({"file_path": "/repo/b.rs", "content": "fn main() {}"}),
        ),
        tool_result(
            "w1",
            true,
            json!(
                "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
            ),
        ),
        tool_use(
            "b1",
            "Bash",
            json!({"command": "cargo build", "description": "build"}),
        ),
        tool_result("b1", false, json!("Finished")),
        tool_use("b2", "Bash", json!({"command": "cargo test"})),
        tool_result(
            "b2",
            true,
            json!([{"type": "text", "text": "Exit code 101\nthread 'x' panicked"}]),
        ),
        // Subagent lines: ignored everywhere.
        with(user(json!("sidechain prompt")), "isSidechain", json!(true)),
        with(
            tool_use("s1", "Edit", json!({"file_path": "/repo/side.rs"})),
            "isSidechain",
            json!(true),
        ),
        with(
            tool_use("s2", "Bash", json!({"command": "rm -rf side"})),
            "isSidechain",
            json!(true),
        ),
        with(
            tool_result("s2", true, json!("side failure")),
            "isSidechain",
            json!(true),
        ),
        with(
            assistant(json!([{"type": "text", "text": "sidechain says"}])),
            "isSidechain",
            json!(true),
        ),
        user(
            json!([{"type": "text", "text": "Now add tests"}, {"type": "text", "text": "<system-reminder>hidden</system-reminder>"}]),
        ),
        tool_use(
            "m1",
            "MultiEdit",
            json!({"file_path": "/repo/c.rs", "edits": []}),
        ),
        tool_result("m1", false, json!("ok")),
        tool_use(
            "n1",
            "NotebookEdit",
            json!({"notebook_path": "/repo/n.ipynb", "new_source": ""}),
        ),
        tool_result("n1", false, json!("ok")),
        tool_use("e2", "Edit", json!({"file_path": "/repo/a.rs"})),
        tool_result("e2", false, json!("ok")),
        tool_use("r1", "Read", json!({"file_path": "/repo/read-only.rs"})),
        tool_result("r1", true, json!("File does not exist.")),
        tool_result("gone", true, json!("\n  orphan failure\nmore")),
        todo_write(
            "t2",
            &[
                ("Read code", "completed"),
                ("Write tests", "in_progress"),
                ("Ship", "pending"),
            ],
        ),
        tool_result("t2", false, json!("ok")),
        tool_use("b3", "Bash", json!({"command": "ls"})),
        assistant(json!([{"type": "text", "text": "All done: tests added."}])),
        user(json!([{"type": "text", "text": "[Request interrupted by user]"}])),
        {
            let mut m = base("assistant");
            m.insert(
                "message".into(),
                json!({"role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "No response requested."}]}),
            );
            Value::Object(m)
        },
        with(
            with(base_value("system"), "cwd", json!("/repo/sub")),
            "gitBranch",
            json!("feature"),
        ),
        json!({"type": "last-prompt", "lastPrompt": "Now add tests"}),
    ]
}

fn base_value(kind: &str) -> Value {
    Value::Object(base(kind))
}

#[test]
fn synthetic_transcript() {
    let d = digest(&jsonl(&synthetic()), &Limits::default());
    assert_eq!(d.first_prompt.as_deref(), Some("Fix the parser"));
    assert_eq!(d.latest_prompt.as_deref(), Some("Now add tests"));
    assert_eq!(
        d.todos,
        vec![
            Todo {
                content: "Read code".into(),
                status: "completed".into()
            },
            Todo {
                content: "Write tests".into(),
                status: "in_progress".into()
            },
            Todo {
                content: "Ship".into(),
                status: "pending".into()
            },
        ]
    );
    assert_eq!(
        d.files_changed,
        vec!["/repo/a.rs", "/repo/n.ipynb", "/repo/c.rs", "/repo/b.rs"]
    );
    assert_eq!(
        d.commands,
        vec![
            Command {
                command: "cargo build".into(),
                failed: false,
                runs: 1,
            },
            Command {
                command: "cargo test".into(),
                failed: true,
                runs: 1,
            },
            Command {
                command: "ls".into(),
                failed: false,
                runs: 1,
            },
        ]
    );
    assert_eq!(
        d.tool_errors,
        vec![
            ToolError {
                tool: "Write".into(),
                message: "File has not been read yet. Read it first before writing to it.".into()
            },
            ToolError {
                tool: "Bash".into(),
                message: "Exit code 101".into()
            },
            ToolError {
                tool: "Read".into(),
                message: "File does not exist.".into()
            },
            ToolError {
                tool: "?".into(),
                message: "orphan failure".into()
            },
        ]
    );
    assert_eq!(d.last_assistant.as_deref(), Some("All done: tests added."));
    assert_eq!(d.compaction_summary, None);
    assert_eq!(d.cwd.as_deref(), Some("/repo/sub"));
    assert_eq!(d.git_branch.as_deref(), Some("feature"));
}

#[test]
fn caps_keep_the_most_recent() {
    let limits = Limits {
        files: 2,
        commands: 2,
        errors: 1,
        ..Limits::default()
    };
    let d = digest(&jsonl(&synthetic()), &limits);
    assert_eq!(d.files_changed, vec!["/repo/a.rs", "/repo/n.ipynb"]);
    let commands: Vec<&str> = d.commands.iter().map(|c| c.command.as_str()).collect();
    assert_eq!(commands, vec!["cargo test", "ls"]);
    assert!(d.commands[0].failed);
    assert_eq!(d.tool_errors.len(), 1);
    assert_eq!(d.tool_errors[0].tool, "?");
}

#[test]
fn compaction_summary_and_latest_prompt_after_it() {
    let lines = vec![
        user(json!("first ask")),
        with(
            user(json!(
                "This session is being continued...\nSummary:\nearlier work"
            )),
            "isCompactSummary",
            json!(true),
        ),
        with(
            user(json!([{"type": "text", "text": "second summary"}])),
            "isCompactSummary",
            json!(true),
        ),
        user(
            json!([{"type": "text", "text": "after compaction"}, {"type": "image", "source": {}}]),
        ),
    ];
    let d = digest(&jsonl(&lines), &Limits::default());
    assert_eq!(d.compaction_summary.as_deref(), Some("second summary"));
    assert_eq!(d.first_prompt.as_deref(), Some("first ask"));
    assert_eq!(d.latest_prompt.as_deref(), Some("after compaction"));
}

#[test]
fn the_requests_are_those_since_the_last_compaction_and_each_command_comes_once() {
    let bash = |id: &str, c: &str| tool_use(id, "Bash", json!({"command": c}));
    let lines = vec![
        user(json!("old ask")),
        with(user(json!("summary")), "isCompactSummary", json!(true)),
        user(json!("port the cache")),
        bash("t1", "cargo test"),
        tool_result("t1", true, json!("1 failed")),
        user(json!("also log each retry")),
        bash("t2", "cargo build"),
        bash("t3", "cargo test"),
        tool_result("t3", false, json!("ok")),
        user(json!("continue")),
    ];
    let bytes = jsonl(&lines);
    let d = digest(&bytes, &Limits::default());
    assert_eq!(
        d.prompts,
        vec!["port the cache", "also log each retry", "continue"]
    );
    assert_eq!(
        d.commands,
        vec![
            Command {
                command: "cargo build".into(),
                failed: false,
                runs: 1,
            },
            Command {
                command: "cargo test".into(),
                failed: false,
                runs: 2,
            },
        ],
        "at its latest run, which passed"
    );
    // Read in two halves side by side, the same (the summary in the first).
    let halves = digest_source(
        &bytes[..],
        bytes.len() as u64,
        &Limits::default(),
        Host::Claude,
        Reading { chunk: 7, split: 2 },
    )
    .unwrap();
    assert_eq!(halves, d);
    let few = Limits {
        prompts: 1,
        ..Limits::default()
    };
    assert_eq!(digest(&bytes, &few).prompts, vec!["continue"]);
}

#[test]
fn bounded_reads_on_a_big_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut file = std::io::BufWriter::new(File::create(&path).unwrap());
    file.write_all(&jsonl(&[user(json!("the very first prompt"))]))
        .unwrap();
    file.write_all(&jsonl(&[todo_write("old", &[("stale todo", "pending")])]))
        .unwrap();
    let filler = format!(
        "{}\n",
        json!({"type": "progress", "data": "x".repeat(1000), "cwd": "/filler"})
    );
    let mut written = 0;
    while written < 10 * 1024 * 1024 {
        file.write_all(filler.as_bytes()).unwrap();
        written += filler.len();
    }
    file.write_all(&jsonl(&[
        user(json!("the latest prompt")),
        todo_write("new", &[("fresh todo", "in_progress")]),
    ]))
    .unwrap();
    // A half-written last line.
    file.write_all(br#"{"type":"assistant","message":{"content":[{"type":"te"#)
        .unwrap();
    drop(file.into_inner().unwrap());

    let limits = Limits::default();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 10 * 1024 * 1024);

    let counting = Counting::new(File::open(&path).unwrap());
    let d = digest_source(&counting, len, &limits, Host::Claude, Reading::DEFAULT).unwrap();
    // (The tail window is scanned in halves: where to cut it is looked
    // for past its middle, at most PROBE bytes.)
    assert!(
        counting.read() <= limits.head_cap + limits.tail_cap + PROBE as u64,
        "read {} bytes",
        counting.read()
    );
    assert!(counting.read() > 0);
    assert_eq!(d.first_prompt.as_deref(), Some("the very first prompt"));
    assert_eq!(d.latest_prompt.as_deref(), Some("the latest prompt"));
    assert_eq!(
        d.todos,
        vec![Todo {
            content: "fresh todo".into(),
            status: "in_progress".into()
        }]
    );
    assert_eq!(d.cwd.as_deref(), Some("/repo"));
    assert_eq!(digest_file(&path, &limits).unwrap(), d);
    assert_eq!(digest(&std::fs::read(&path).unwrap(), &limits), d);
}

#[test]
fn window_edges_are_skipped() {
    // A tail window starting exactly on a line start still skips that
    // line (it cannot know the line is whole), and a head window ending
    // mid-line skips the cut line.
    let mut bytes = jsonl(&[user(json!("first"))]);
    bytes.extend(std::iter::repeat_n(b'\n', 64));
    let last = jsonl(&[user(json!("last")), json!({"type": "mode"})]);
    bytes.extend_from_slice(&last);
    let limits = Limits {
        head_cap: 8,
        tail_cap: last.len() as u64,
        ..Limits::default()
    };
    let d = digest(&bytes, &limits);
    assert_eq!(d.latest_prompt, None);
    assert_eq!(d.first_prompt, None);

    // One byte more of tail: the cut line is skipped, nothing else.
    let limits = Limits {
        tail_cap: last.len() as u64 + 1,
        head_cap: bytes.len() as u64 - last.len() as u64 - 2,
        ..limits
    };
    let d = digest(&bytes, &limits);
    assert_eq!(d.latest_prompt.as_deref(), Some("last"));
    assert_eq!(d.first_prompt.as_deref(), Some("first"));
}

#[test]
fn error_text_falls_back_to_tool_use_result() {
    let lines = vec![
        tool_use("g1", "Grep", json!({"pattern": "x"})),
        with(
            tool_result("g1", true, json!([])),
            "toolUseResult",
            json!("Error: bad pattern\ndetails"),
        ),
    ];
    let d = digest(&jsonl(&lines), &Limits::default());
    assert_eq!(
        d.tool_errors,
        vec![ToolError {
            tool: "Grep".into(),
            message: "Error: bad pattern".into()
        }]
    );
}

#[test]
fn long_prompt_is_truncated() {
    let long = "é".repeat(100 * 1024 / 2);
    let d = digest(&jsonl(&[user(json!(long))]), &Limits::default());
    let prompt = d.first_prompt.unwrap();
    assert!(prompt.ends_with('…'));
    assert_eq!(prompt.chars().count(), 601);
    assert!(prompt.starts_with(&"é".repeat(600)));
    assert_eq!(d.latest_prompt.unwrap(), prompt);
}

#[test]
fn truncate_on_char_boundaries() {
    assert_eq!(truncate("abc", 3), "abc");
    assert_eq!(truncate("abcd", 3), "abc…");
    assert_eq!(truncate("日本語テキスト", 2), "日本…");
    assert_eq!(truncate("", 0), "");
    assert_eq!(truncate("x", 0), "…");
}

#[test]
fn garbage_empty_and_missing() {
    let garbage = b"\xff\xfe\x00 not json\n{\"type\":\"user\",\n[1,2,3]\n\"str\"\n{}\n{\"type\":\"user\",\"message\":{\"content\":42}}\n";
    assert_eq!(digest(garbage, &Limits::default()), Digest::default());
    assert_eq!(digest(b"", &Limits::default()), Digest::default());

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    File::create(&empty).unwrap();
    assert_eq!(
        digest_file(&empty, &Limits::default()).unwrap(),
        Digest::default()
    );

    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, garbage).unwrap();
    assert_eq!(
        digest_file(&junk, &Limits::default()).unwrap(),
        Digest::default()
    );

    let err = digest_file(&dir.path().join("missing.jsonl"), &Limits::default()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[test]
fn serializes() {
    let d = digest(&jsonl(&synthetic()), &Limits::default());
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["first_prompt"], "Fix the parser");
    assert_eq!(v["commands"][1]["failed"], true);
    assert_eq!(v["tool_errors"][0]["tool"], "Write");
}

fn small_limits() -> impl Strategy<Value = Limits> {
    (
        0u64..200,
        0u64..200,
        0usize..5,
        0usize..5,
        0usize..5,
        0usize..20,
    )
        .prop_map(
            |(head_cap, tail_cap, files, commands, errors, text)| Limits {
                head_cap,
                tail_cap,
                files,
                commands,
                prompts: commands,
                errors,
                text,
            },
        )
}

fn check_invariants(d: &Digest, limits: &Limits) {
    assert!(d.files_changed.len() <= limits.files);
    assert!(d.commands.len() <= limits.commands);
    assert!(d.prompts.len() <= limits.prompts);
    let mut lines: Vec<&str> = d.commands.iter().map(|c| c.command.as_str()).collect();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), d.commands.len(), "each command once");
    assert!(d.commands.iter().all(|c| c.runs >= 1));
    assert!(d.tool_errors.len() <= limits.errors);
    let unique: HashSet<&String> = d.files_changed.iter().collect();
    assert_eq!(unique.len(), d.files_changed.len());
    for text in d
        .first_prompt
        .iter()
        .chain(&d.latest_prompt)
        .chain(&d.last_assistant)
    {
        assert!(text.chars().count() <= limits.text + 1);
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), limits in small_limits(), chunk in 1usize..64, split in 2u64..600) {
        let d = digest(&bytes, &limits);
        check_invariants(&d, &limits);
        let d = digest(&bytes, &Limits::default());
        check_invariants(&d, &Limits::default());
        let len = bytes.len() as u64;
        let counting = Counting::new(&bytes[..]);
        let from_source = digest_source(&counting, len, &limits, Host::Claude, Reading::DEFAULT).unwrap();
        prop_assert_eq!(from_source, digest(&bytes, &limits));
        prop_assert!(counting.read() <= limits.head_cap + limits.tail_cap);
        // A few bytes at a time, lines cut anywhere by a chunk's end, and
        // windows scanned in halves: the same digest as read in one piece.
        let by_chunks = digest_source(&bytes[..], len, &limits, Host::Claude, Reading { chunk, split }).unwrap();
        prop_assert_eq!(by_chunks, digest(&bytes, &limits));
    }

    #[test]
    fn shuffled_transcript_lines_never_panic(
        picks in proptest::collection::vec((0usize..40, any::<bool>(), 0usize..64), 0..60),
        limits in small_limits(),
        chunk in 1usize..400,
        split in 2u64..2000,
    ) {
        // Real-looking lines in any order, some cut at any byte.
        let mut pool = synthetic();
        // A second of each latest-wins kind, so that which one is last tells.
        pool.extend([
            assistant(json!([{"type": "text", "text": "Second reply."}])),
            json!({"type": "last-prompt", "lastPrompt": "Second last-prompt"}),
            with(user(json!("Second summary")), "isCompactSummary", json!(true)),
        ]);
        let pool: Vec<Vec<u8>> = pool.iter().map(|l| l.to_string().into_bytes()).collect();
        let mut bytes = Vec::new();
        for (i, cut, at) in picks {
            let line = &pool[i % pool.len()];
            if cut {
                bytes.extend_from_slice(&line[..at.min(line.len())]);
            } else {
                bytes.extend_from_slice(line);
            }
            bytes.push(b'\n');
        }
        let wide = Limits { head_cap: 1 << 20, tail_cap: 1 << 20, ..limits };
        check_invariants(&digest(&bytes, &wide), &wide);
        check_invariants(&digest(&bytes, &limits), &limits);
        // A few bytes at a time, lines cut anywhere by a chunk's end, and
        // windows scanned in halves: the same digest as read in one piece.
        let reading = Reading { chunk, split };
        for l in [&wide, &limits, &Limits { head_cap: 300, tail_cap: 900, ..limits }] {
            let read = digest_source(&bytes[..], bytes.len() as u64, l, Host::Claude, reading).unwrap();
            prop_assert_eq!(read, digest(&bytes, l));
        }
    }
}

/// The real Claude Code 2.1.332 (`tests/fixtures/claude-code-2.1.332-tasks/`):
/// a task made with `TaskCreate`, numbered by its result, set in progress
/// with `TaskUpdate`, is the open todo in progress.
#[test]
fn the_real_task_tools_give_the_todo_in_progress() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/claude-code-2.1.332-tasks/transcript.tasks.jsonl"
    ))
    .unwrap();
    let d = digest(&bytes, &Limits::default());
    let todos: Vec<(&str, &str)> = d
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(todos, [("Make the greeting louder", "in_progress")]);
}

/// Claude Code's task tools (2.1.16 on; the shapes of 2.1.332's
/// `sdk-tools.d.ts`): `TaskCreate` makes a task its result numbers,
/// `TaskUpdate` changes one by id, `TaskList` gives the whole list.
#[test]
fn the_task_tools_keep_a_list_as_todos() {
    let created = |call: &str, id: &str, subject: &str| {
        with(
            tool_result(
                call,
                false,
                json!(format!("Task #{id} created successfully: {subject}")),
            ),
            "toolUseResult",
            json!({"task": {"id": id, "subject": subject}}),
        )
    };
    let create = |call: &str, subject: &str| {
        tool_use(
            call,
            "TaskCreate",
            json!({"subject": subject, "description": "d", "activeForm": "Doing it"}),
        )
    };
    let update = |call: &str, input: Value| tool_use(call, "TaskUpdate", input);
    let lines = [
        create("c1", "Parse the header"),
        created("c1", "1", "Parse the header"),
        create("c2", "Stream the body"),
        created("c2", "2", "Stream the body"),
        create("c3", "Drop me"),
        created("c3", "3", "Drop me"),
        update("u1", json!({"taskId": "1", "status": "completed"})),
        update(
            "u2",
            json!({"taskId": "2", "status": "in_progress", "subject": "Stream the body lazily"}),
        ),
        update("u3", json!({"taskId": "3", "status": "deleted"})),
        // A task whose result is not written yet: made, not numbered.
        create("c4", "Write the docs"),
    ];
    let d = digest(&jsonl(&lines), &Limits::default());
    let todos: Vec<(&str, &str)> = d
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(
        todos,
        [
            ("Parse the header", "completed"),
            ("Stream the body lazily", "in_progress"),
            ("Write the docs", "pending"),
        ]
    );
    // A listing replaces what came before it; later changes apply to it.
    let listed = with(
        tool_result("l1", false, json!("#1 [pending] A\n#2 [completed] B")),
        "toolUseResult",
        json!({"tasks": [
            {"id": "1", "subject": "A", "status": "pending", "blockedBy": []},
            {"id": "2", "subject": "B", "status": "completed", "blockedBy": []}]}),
    );
    let more = [
        listed,
        update("u4", json!({"taskId": "1", "status": "in_progress"})),
    ];
    let all: Vec<Value> = lines.iter().cloned().chain(more).collect();
    let d = digest(&jsonl(&all), &Limits::default());
    let todos: Vec<(&str, &str)> = d
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(todos, [("A", "in_progress"), ("B", "completed")]);
    // Read in two halves (a window of a megabyte or more, cut near its
    // middle: between the tasks made and their changes), the same list.
    let padding = std::iter::repeat_n(user(json!("padding prompt")), 10_000);
    let big: Vec<Value> = all[..6]
        .iter()
        .cloned()
        .chain(padding)
        .chain(all[6..].iter().cloned())
        .collect();
    assert!((1 << 20..4 << 20).contains(&jsonl(&big).len()));
    let d2 = digest(&jsonl(&big), &Limits::default());
    assert_eq!(d2.todos, d.todos);
}

/// Gemini CLI before 0.39 (`tests/fixtures/gemini-cli-0.21.3/`): the chat is
/// one JSON document, a prompt's content its text; its note has the task.
#[test]
fn an_old_gemini_chat_document_gives_its_prompt_and_calls() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/gemini-cli-0.21.3/chat.session.json"
    ));
    let d = digest_file_as(path, &Limits::default(), Host::Gemini).unwrap();
    assert_eq!(
        d.first_prompt.as_deref(),
        Some("Run echo twice, then say done."),
        "{d:?}"
    );
    assert!(!d.commands.is_empty(), "{d:?}");
}
