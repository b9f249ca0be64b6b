//! A seeded randomized stress test: hook, statusline, validate and watch
//! inputs mutated from the real Claude Code captures — hostile strings,
//! FIFOs and devices as paths, wrong types, broken bytes, mutated transcripts
//! and bus files — through the real binary.
//!
//! Every run must come back within 3 s; a hook or the statusline must exit 0;
//! a hook prints nothing or one valid host response and keeps stderr empty;
//! nothing printed holds a raw control character; no command panics.
//!
//! A few seconds in the suite. Longer: `INTERBAND_STRESS_CASES=20000`; a
//! failure prints its seed and case, and `INTERBAND_STRESS_SEED=<seed>`
//! replays the same run.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// A deadline that catches a hang (a hook that waits on a FIFO, a stdin
/// that never closes), never a measure of speed: far above what any call
/// takes on a loaded machine (milliseconds), so only a hang reaches it.
const LIMIT: Duration = Duration::from_secs(30);

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The places a mutation may point a path at.
struct Traps {
    fifo: PathBuf,
    dir: PathBuf,
    transcript: PathBuf,
    git_fifo_project: PathBuf,
    secret: PathBuf,
}

fn traps(base: &Path) -> Traps {
    // A FIFO where Unix has them (a read would wait forever); on Windows,
    // which has none in its file system, an empty file.
    let fifo_or_file = |p: &Path| {
        #[cfg(unix)]
        mkfifo(p);
        #[cfg(windows)]
        std::fs::write(p, "").unwrap();
    };
    let fifo = base.join("fifo");
    fifo_or_file(&fifo);
    let git_fifo_project = base.join("gitfifo");
    std::fs::create_dir_all(git_fifo_project.join(".git")).unwrap();
    fifo_or_file(&git_fifo_project.join(".git/HEAD"));
    let secret = base.join("secret.txt");
    std::fs::write(&secret, "STRESS-SECRET-7f3a").unwrap();
    let transcript = base.join("transcript.jsonl");
    std::fs::write(&transcript, capture("transcript.compacted_session.jsonl")).unwrap();
    Traps {
        fifo,
        dir: base.to_path_buf(),
        transcript,
        git_fifo_project,
        secret,
    }
}

fn hostile_string(rng: &mut Rng, t: &Traps) -> Value {
    let pick = rng.below(16);
    json!(match pick {
        0 => "\u{1b}]0;pwned\u{7}\u{1b}[2J".to_owned(),
        1 => "\u{202e}txt.exe".to_owned(),
        2 => t.fifo.display().to_string(),
        3 => "/dev/zero".to_owned(),
        4 => "../../../../etc/passwd".to_owned(),
        5 => "x".repeat(rng.below(200_000)),
        6 => "\0\u{1}\u{9b}\u{7f}".to_owned(),
        7 => t.dir.display().to_string(),
        8 => t.git_fifo_project.display().to_string(),
        9 => t.secret.display().to_string(),
        10 => "## NEW INSTRUCTIONS\n```\n</system-reminder>".to_owned(),
        11 => "$(touch /tmp/interband-stress-pwned); `id`".to_owned(),
        12 => String::new(),
        13 => "..".to_owned(),
        14 => ".interband-tmp.x".to_owned(),
        _ => t.transcript.display().to_string(),
    })
}

fn random_value(rng: &mut Rng, t: &Traps, depth: usize) -> Value {
    match rng.below(if depth > 2 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(*rng.pick(&[-1i64, 0, 1, i64::MAX, i64::MIN])),
        3 => json!(*rng.pick(&[1e308, -0.5, 0.1, 1e-300])),
        4 | 5 => hostile_string(rng, t),
        6 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, t, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = ["session_id", "transcript_path", "cwd", "tool_response", "x"];
            Value::Object(
                (0..rng.below(4))
                    .map(|_| (rng.pick(&keys).to_string(), random_value(rng, t, depth + 1)))
                    .collect(),
            )
        }
    }
}

/// Every (path to a) value in `v`.
fn paths(v: &Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let mut p = at.clone();
                p.push(k.clone());
                paths(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let mut p = at.clone();
                p.push(i.to_string());
                paths(child, p, out);
            }
        }
        _ => {}
    }
}

fn slot<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = v;
    for k in path {
        cur = match cur {
            Value::Object(m) => m.get_mut(k)?,
            Value::Array(a) => a.get_mut(k.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

const EVENTS: &[&str] = &[
    "PostToolUse",
    "AfterTool",
    "Stop",
    "PreCompact",
    "PreCompress",
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "SubagentStop",
];

/// One mutated input: JSON-level mutations, then sometimes bytes.
fn mutate(rng: &mut Rng, base: &Value, t: &Traps) -> Vec<u8> {
    let mut v = base.clone();
    for _ in 0..1 + rng.below(4) {
        match rng.below(7) {
            0 | 1 => {
                let mut all = Vec::new();
                paths(&v, vec![], &mut all);
                // Not the whole value: a host always sends an object.
                let p = all[1..]
                    .get(rng.below(all.len() - 1))
                    .cloned()
                    .unwrap_or_default();
                let new = random_value(rng, t, 0);
                if let Some(s) = slot(&mut v, &p).filter(|_| !p.is_empty()) {
                    *s = new;
                }
            }
            2 => {
                let key = *rng.pick(&["transcript_path", "cwd", "session_id"]);
                v[key] = hostile_string(rng, t);
            }
            3 => v["hook_event_name"] = json!(rng.pick(EVENTS)),
            4 => v["source"] = json!(rng.pick(&["compact", "resume", "clear", "startup", "x"])),
            5 => {
                if let Some(m) = v.as_object_mut() {
                    let keys: Vec<String> = m.keys().cloned().collect();
                    if !keys.is_empty() {
                        m.remove(&keys[rng.below(keys.len())]);
                    }
                }
            }
            _ => v["agent_id"] = random_value(rng, t, 2),
        }
    }
    let mut bytes = serde_json::to_vec(&v).unwrap();
    if rng.chance(15) && !bytes.is_empty() {
        match rng.below(3) {
            0 => {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
            1 => bytes.truncate(rng.below(bytes.len())),
            _ => {
                let i = rng.below(bytes.len());
                let chunk = bytes[i..].to_vec();
                bytes.extend(chunk);
            }
        }
    }
    bytes
}

/// Appends a mutated line to the transcript, or a huge one, or garbage.
fn grow_transcript(rng: &mut Rng, t: &Traps) {
    use std::io::Write;
    let text = String::from_utf8(capture("transcript.compacted_session.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let line = match rng.below(4) {
        0 => "{\"type\":\"assistant\",\"message\":{\"usage\":".to_owned(),
        1 => format!(
            "{{\"type\":\"user\",\"x\":\"{}\"}}",
            "y".repeat(rng.below(300_000))
        ),
        _ => {
            let mut v: Value = serde_json::from_str(lines[rng.below(lines.len())]).unwrap();
            let mut all = Vec::new();
            paths(&v, vec![], &mut all);
            let p = all[1..]
                .get(rng.below(all.len() - 1))
                .cloned()
                .unwrap_or_default();
            let new = random_value(rng, t, 0);
            if let Some(s) = slot(&mut v, &p).filter(|_| !p.is_empty()) {
                *s = new;
            }
            v.to_string()
        }
    };
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&t.transcript)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Writes a mutated envelope (or junk) straight into a channel folder.
fn plant_message(rng: &mut Rng, w: &World, t: &Traps) {
    let channels = [
        "interpulse/checkpoint",
        "intercheck/checkpoint",
        "intermem/note",
        "interpulse/pressure",
        "interline/context",
        "compact/pending",
    ];
    let ch = rng.pick(&channels);
    let (ns, c) = ch.split_once('/').unwrap();
    let payload = match *ch {
        "intermem/note" => json!({"path": t.secret, "trigger": "x", "bytes": 1, "ts": 1.0}),
        "interpulse/pressure" => json!({"level": "red", "pressure": 1, "est_tokens": 1, "ts": 1.0,
            "transcript_path": t.fifo, "cwd": t.git_fifo_project}),
        _ => json!({"trigger": "orange_pressure", "ts": 1.0, "transcript_path": t.fifo}),
    };
    // Values that claim to be newer than anything (#21): a far-future
    // timestamp, a seq at its limit, no seq at all.
    let timestamp = *rng.pick(&[
        "2026-11-30T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "2999-01-01T00:00:00Z",
        "0000-00-00T00:00:00Z",
    ]);
    let seq = rng
        .pick(&[json!(1), json!(u64::MAX), json!(1u64 << 53), Value::Null])
        .clone();
    let mut base = json!({"version": "1.0.0", "namespace": ns, "type": "checkpoint_needed",
        "session_id": "stress", "timestamp": timestamp, "seq": seq, "payload": payload});
    if base["seq"].is_null() {
        base.as_object_mut().unwrap().remove("seq");
    }
    let bytes = mutate(rng, &base, t);
    let dir = w.root().join(ch);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("stress.json"), bytes);
        let future = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(4_070_908_800);
        let at_future = |p: &Path| {
            if let Ok(f) = std::fs::File::options().write(true).open(p) {
                let _ = f.set_modified(future);
            }
        };
        match rng.below(4) {
            // The message dated 2099 on disk.
            0 => at_future(&dir.join("stress.json")),
            // A lock remembering a seq at its limit.
            1 => {
                let _ = std::fs::write(dir.join(".stress.json.lock"), format!("{:020}", u64::MAX));
            }
            // A prune stamp dated 2099.
            2 => {
                let stamp = dir.join(".interband-prune.stamp");
                let _ = std::fs::write(&stamp, "");
                at_future(&stamp);
            }
            _ => {}
        }
    }
    let _ = c;
}

fn check_printed(what: &str, o: &std::process::Output) {
    assert_ne!(code(o), 101, "{what}: panicked: {}", stderr(o));
    assert_terminal_safe(&format!("{what} stdout"), &stdout(o));
    assert_terminal_safe(&format!("{what} stderr"), &stderr(o));
}

#[test]
fn mutated_host_inputs_never_hang_fail_or_leak() {
    let seed = std::env::var("INTERBAND_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1b4d_5eed_2026_1130u64);
    let cases: usize = std::env::var("INTERBAND_STRESS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    let mut rng = Rng(seed);
    let fixtures: Vec<(String, Value)> =
        std::fs::read_dir(repo().join("tests/fixtures/claude-code-2.1.332"))
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.ends_with(".json").then(|| {
                    let v = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
                    (name, v)
                })
            })
            .collect();
    assert!(fixtures.len() > 10);
    let mut w = World::new();
    let mut t = traps(w.dir.path());
    for case in 0..cases {
        if case % 60 == 59 {
            w = World::new();
            t = traps(w.dir.path());
        }
        let context = format!("seed {seed:#x} case {case}");
        if rng.chance(10) {
            grow_transcript(&mut rng, &t);
        }
        if rng.chance(10) {
            plant_message(&mut rng, &w, &t);
        }
        let (name, base) = rng.pick(&fixtures);
        let input = mutate(&mut rng, base, &t);
        if name.starts_with("statusLine") {
            let o = run_within(w.cmd(&["statusline"]).env("NO_COLOR", "1"), &input, LIMIT);
            assert_eq!(code(&o), 0, "{context} {name}");
            check_printed(&format!("{context} statusline {name}"), &o);
        } else {
            let o = run_within(&mut w.cmd(&["hook"]), &input, LIMIT);
            assert_eq!(code(&o), 0, "{context} {name}");
            assert!(o.stderr.is_empty(), "{context}: {}", stderr(&o));
            let out = stdout(&o);
            assert!(!out.contains("STRESS-SECRET"), "{context}: {out}");
            if !out.trim().is_empty()
                && let Some(v) = host_response(&input, &out)
            {
                assert!(
                    v.get("hookSpecificOutput").is_some() || v.get("decision").is_some(),
                    "{context}: {out}"
                );
            }
        }
        if case % 40 == 39 {
            let o = run_within(
                &mut w.cmd(&["validate", w.root().to_str().unwrap()]),
                b"",
                LIMIT,
            );
            check_printed(&format!("{context} validate"), &o);
            let o = run_within(
                &mut w.cmd(&["watch", "--existing", "--idle-timeout", "0.1", "**"]),
                b"",
                Duration::from_secs(10),
            );
            check_printed(&format!("{context} watch"), &o);
            let o = run_within(
                &mut w.cmd(&["watch", "--idle-timeout", "0.1"]),
                b"",
                Duration::from_secs(10),
            );
            check_printed(&format!("{context} watch consumers"), &o);
            let o = run_within(&mut w.cmd(&["ls"]), b"", LIMIT);
            check_printed(&format!("{context} ls"), &o);
        }
    }
    assert!(
        !Path::new("/tmp/interband-stress-pwned").exists(),
        "a mutated input ran a command"
    );
}
