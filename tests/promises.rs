//! What the loop promises, checked through the real binary with only the
//! installed hooks (no `interband watch`): a note exists right after the
//! orange call; the note that comes back after a compaction holds the whole
//! red stretch; a checkpoint whose drain is killed any number of times still
//! gets exactly one note; a note that cannot be written is said, once;
//! `SessionStart` brings the note back when nothing can be written; one
//! state shows one figure everywhere.

mod common;

use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use common::*;
use interpulse::synthetic::Writer;
use serde_json::{Value, json};

const SESSION: &str = "7b1e6c3a-55d2-4f0e-9c1b-2a9e8f4d6c10";

struct Session {
    w: World,
    t: Writer,
    path: PathBuf,
    cwd: PathBuf,
}

impl Session {
    fn new() -> Self {
        let w = World::new();
        let cwd = w.dir.path().join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        let path = w.dir.path().join(format!("{SESSION}.jsonl"));
        let mut t = Writer::new(&path, SESSION, &cwd);
        t.prompt("Make the uploader retry with backoff").unwrap();
        Session { w, t, path, cwd }
    }

    fn input(&self, capture_name: &str, extra: Value) -> Vec<u8> {
        let mut v: Value = serde_json::from_slice(&capture(capture_name)).unwrap();
        v["session_id"] = json!(SESSION);
        v["transcript_path"] = json!(self.path);
        v["cwd"] = json!(self.cwd);
        for (k, val) in extra.as_object().unwrap() {
            v[k] = val.clone();
        }
        serde_json::to_vec(&v).unwrap()
    }

    fn hook(&self, stdin: &[u8]) -> String {
        let o = self.w.run_with_stdin(&["hook"], stdin);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o)
    }

    /// A tool call at `used` tokens: the transcript's lines, then its PostToolUse.
    fn call(&mut self, tool: &str, input: Value, used: u64) -> String {
        let stdin = self.made_call(tool, input, used);
        self.hook(&stdin)
    }

    /// A tool call's transcript lines at `used` tokens, and its PostToolUse input.
    fn made_call(&mut self, tool: &str, input: Value, used: u64) -> Vec<u8> {
        self.t
            .tool(tool, input.clone(), "ok", false, used, false)
            .unwrap();
        self.input(
            "PostToolUse.input.json",
            json!({"tool_name": tool, "tool_input": input, "tool_response": {"stdout": "ok"}}),
        )
    }

    /// The hook run as on a full disk, or a read-only root: every write fails.
    /// (On Unix by modes and RLIMIT_FSIZE; on Windows by an access list
    /// that denies every write: [`set_writable`].)
    fn hook_without_writes(&self, stdin: &[u8]) -> std::process::Output {
        let root = self.w.root();
        set_writable(&root, false);
        let mut cmd = self.w.cmd(&["hook"]);
        #[cfg(unix)]
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs before exec.
        #[cfg(unix)]
        unsafe {
            cmd.pre_exec(|| {
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &none) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let o = with_stdin(&mut cmd, stdin);
        set_writable(&root, true);
        o
    }

    fn said(out: &str) -> String {
        serde_json::from_str::<Value>(out)
            .ok()
            .and_then(|v| {
                v["hookSpecificOutput"]["additionalContext"]
                    .as_str()
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }

    fn notes_dir(&self) -> PathBuf {
        self.w.root().join("intermem/notes")
    }

    fn notes(&self) -> Vec<String> {
        files_under(&self.notes_dir())
            .into_iter()
            .filter(|f| f.ends_with(".md") && !f.ends_with("latest.md"))
            .collect()
    }
}

#[test]
fn a_note_exists_right_after_the_orange_call_and_the_agent_is_told_so() {
    let mut s = Session::new();
    let out = s.call("Read", json!({"file_path": "src/lib.rs"}), 60_000);
    assert_eq!(out, "", "green");
    assert!(s.notes().is_empty());
    let out = s.call(
        "Edit",
        json!({"file_path": "src/retry.rs", "old_string": "a", "new_string": "b"}),
        140_000,
    );
    let said = Session::said(&out);
    assert!(said.contains("Context ORANGE"), "{said}");
    let notes = s.notes();
    assert_eq!(
        notes.len(),
        1,
        "written in the orange call itself: {notes:?}"
    );
    assert!(notes[0].contains("orange_pressure"), "{notes:?}");
    assert!(
        said.contains("interband saved a memory note of this session"),
        "{said}"
    );
    assert!(!said.contains("being saved"), "{said}");
}

#[test]
fn with_a_watch_running_the_hook_leaves_the_note_to_it_and_says_so() {
    let mut s = Session::new();
    let claim = interband::consumer::claim_watch(&s.w.bus(), "intermem")
        .unwrap()
        .expect("no other watch");
    let out = s.call("Bash", json!({"command": "cargo build"}), 140_000);
    let said = Session::said(&out);
    assert!(s.notes().is_empty(), "the watch writes it");
    assert!(
        said.contains("interband watch is saving a memory note"),
        "{said}"
    );
    drop(claim);
    // With no watch left, the next Stop writes it.
    s.hook(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
    assert_eq!(s.notes().len(), 1);
}

#[test]
fn the_note_back_after_a_compaction_holds_the_whole_red_stretch() {
    let mut s = Session::new();
    // Red from the first call: its checkpoint's note is written in the call.
    let out = s.call(
        "Edit",
        json!({"file_path": "src/uploader.rs", "old_string": "x", "new_string": "y"}),
        160_000,
    );
    assert!(Session::said(&out).contains("Context RED"), "{out}");
    s.call("Bash", json!({"command": "cargo build --release"}), 161_000);
    s.t.say("Built; now the tests.", 161_500).unwrap();
    let stop = s.hook(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
    assert!(
        stop.contains("systemMessage") && stop.contains("`/compact"),
        "the trigger advises once: {stop}"
    );
    s.call(
        "Write",
        json!({"file_path": "tests/backoff.rs", "content": "#[test] fn f() {}"}),
        162_000,
    );
    s.call("Bash", json!({"command": "cargo test backoff"}), 163_000);
    s.hook(&s.input("PreCompact.auto.input.json", json!({})));
    s.t.compact(163_000, 9_000, "Summary:\nRetry added.")
        .unwrap();
    let out = s.hook(&s.input("SessionStart.compact.input.json", json!({})));
    let back = Session::said(&out);
    for needle in [
        "src/uploader.rs",
        "cargo build --release",
        "tests/backoff.rs",
        "cargo test backoff",
    ] {
        assert!(back.contains(needle), "{needle:?} is not back:\n{back}");
    }
    // Each journal record is in exactly one note file.
    let bodies: Vec<String> = s
        .notes()
        .iter()
        .map(|n| std::fs::read_to_string(s.notes_dir().join(n)).unwrap())
        .collect();
    for needle in ["`cargo build --release`", "`cargo test backoff`"] {
        let in_journals = bodies
            .iter()
            .filter(|b| {
                b.split("## Wind-down journal")
                    .nth(1)
                    .is_some_and(|j| j.contains(needle))
            })
            .count();
        assert_eq!(in_journals, 1, "{needle} in {in_journals} notes' journals");
    }
}

#[test]
fn a_turn_that_ends_on_a_text_reply_is_judged_by_that_reply() {
    // Orange, then red, each reached by a closing text reply with no tool
    // call after it: the end of the turn reads it, saves the note, and at red
    // asks for the compaction.
    for (used, level, trigger, blocks) in [
        (140_000, "orange", "orange_pressure", false),
        (165_000, "red", "red_pressure", true),
    ] {
        let mut s = Session::new();
        s.call("Read", json!({"file_path": "src/lib.rs"}), 60_000);
        s.t.say("Here is the plan.", used).unwrap();
        let stop = s.hook(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
        // (Claude Code shows the advice as the hook's message: no block.)
        assert_eq!(stop.contains("/compact"), blocks, "{level}: {stop}");
        assert!(!stop.contains("\"decision\""), "{level}: {stop}");
        let p = s.w.run(&[
            "read",
            "--payload",
            &format!("interpulse/pressure/{SESSION}"),
        ]);
        let p: Value = serde_json::from_slice(&p.stdout).unwrap();
        assert_eq!(p["level"], level, "{p}");
        assert_eq!(p["used_tokens"], used, "{p}");
        assert_eq!(p["calls"], 1, "a turn's end is no call: {p}");
        let notes = s.notes();
        assert_eq!(notes.len(), 1, "{level}: {notes:?}");
        assert!(notes[0].contains(trigger), "{notes:?}");
        // A second Stop with nothing new writes nothing and asks nothing.
        let written = || {
            let mut seen: Vec<(String, std::time::SystemTime)> = files_under(&s.w.root())
                .into_iter()
                .filter(|f| !f.ends_with(".lock"))
                .filter_map(|f| {
                    let m = std::fs::metadata(s.w.root().join(&f)).ok()?;
                    Some((f, m.modified().ok()?))
                })
                .collect();
            seen.sort();
            seen
        };
        let before = written();
        let again = s.hook(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
        assert_eq!(again, "", "{level}: {again}");
        assert_eq!(written(), before, "{level}: nothing written");
    }
}

#[test]
fn a_checkpoint_is_published_before_the_state_says_it_was() {
    // The session's state cannot be written (its file is a folder), as when
    // the hook is killed just before writing it: the checkpoint the call asks
    // for is published all the same, and its note written.
    let mut s = Session::new();
    let state = s.w.root().join(format!(".state/interpulse/{SESSION}.json"));
    std::fs::create_dir_all(state.join("in-the-way")).unwrap();
    let said = Session::said(&s.call("Bash", json!({"command": "cargo build"}), 140_000));
    assert!(said.contains("Context ORANGE"), "{said}");
    assert!(said.contains("interband saved a memory note"), "{said}");
    assert_eq!(s.notes().len(), 1, "{:?}", s.notes());
}

#[test]
fn a_checkpoint_that_could_not_be_published_is_asked_for_again() {
    let mut s = Session::new();
    // The checkpoint channel's folder is in the way: the orange call cannot
    // publish its checkpoint, and says no note was saved.
    let channel = s.w.root().join("interpulse/checkpoint");
    std::fs::create_dir_all(channel.parent().unwrap()).unwrap();
    std::fs::write(&channel, "in the way").unwrap();
    let said = Session::said(&s.call("Bash", json!({"command": "cargo build"}), 140_000));
    assert!(said.contains("Context ORANGE"), "{said}");
    assert!(!said.contains("memory note"), "{said}");
    assert!(s.notes().is_empty());
    // Once it can, the next call (within the checkpoint throttle) asks again.
    std::fs::remove_file(&channel).unwrap();
    let said = Session::said(&s.call("Read", json!({"file_path": "src/a.rs"}), 141_000));
    assert!(said.contains("interband saved a memory note"), "{said}");
    assert_eq!(s.notes().len(), 1, "{:?}", s.notes());
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "every write refused by an access list, which Wine neither sets (its icacls) nor enforces: runs on Windows"
)]
fn the_agent_is_warned_when_nothing_can_be_written() {
    let mut s = Session::new();
    s.call("Read", json!({"file_path": "src/lib.rs"}), 60_000);
    let stdin = s.made_call("Bash", json!({"command": "cargo build"}), 140_000);
    let o = s.hook_without_writes(&stdin);
    assert_eq!(code(&o), 0);
    let said = Session::said(&stdout(&o));
    assert!(said.contains("Context ORANGE"), "{}", stdout(&o));
    assert!(!said.contains("memory note"), "nothing was saved: {said}");
    // Warned at red while the root could be written, then not: with no
    // state to count the calls since, every call warns again.
    let said = Session::said(&s.call("Bash", json!({"command": "cargo test"}), 165_000));
    assert!(said.contains("Context RED"), "{said}");
    for _ in 0..2 {
        let o = s.hook_without_writes(&stdin);
        let said = Session::said(&stdout(&o));
        assert!(said.contains("Context RED"), "{}", stdout(&o));
    }
}

#[test]
fn the_agent_is_warned_when_there_is_no_root_at_all() {
    let mut s = Session::new();
    let call = s.made_call("Bash", json!({"command": "cargo build"}), 165_000);
    let log = s.w.dir.path().join("interband.log");
    // No INTERBAND_ROOT, no HOME: a hook started by a service or `env -i`.
    let rootless = |stdin: &[u8]| {
        let mut cmd = s.w.cmd(&["hook"]);
        cmd.env_remove("INTERBAND_ROOT")
            .env_remove("HOME")
            .env_remove("USERPROFILE")
            .env("INTERBAND_LOG", &log);
        let o = with_stdin(&mut cmd, stdin);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(stderr(&o), "");
        stdout(&o)
    };
    for _ in 0..2 {
        let said = Session::said(&rootless(&call));
        assert!(said.contains("Context RED"), "every call warns: {said}");
        assert!(!said.contains("memory note was saved"), "{said}");
    }
    let stop = rootless(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
    let v: Value = serde_json::from_str(&stop).unwrap_or_default();
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("`/compact"),
        "{stop}"
    );
    assert!(
        !s.w.root().exists(),
        "nothing was kept anywhere it could be found"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(logged.contains("nothing is kept"), "{logged}");
}

#[test]
fn at_red_the_stop_advises_even_when_no_note_can_be_saved() {
    let mut s = Session::new();
    // The notes' folder is in the way: no note can be written.
    std::fs::create_dir_all(s.w.root().join("intermem")).unwrap();
    std::fs::write(s.notes_dir(), "in the way").unwrap();
    s.call("Bash", json!({"command": "cargo build"}), 165_000);
    let stop = s.hook(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
    let v: Value = serde_json::from_str(&stop).unwrap_or_default();
    let reason = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        reason.contains("no memory note could be saved") && reason.contains("`/compact`"),
        "{reason}"
    );
    assert!(!reason.contains("was saved"), "{reason}");
    // Once per cycle, as when the note is there.
    let again = s.hook(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
    assert_eq!(again, "", "{again}");
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "every write refused by an access list, which Wine neither sets (its icacls) nor enforces: runs on Windows"
)]
fn at_red_the_stop_advises_even_when_the_red_level_could_not_be_published() {
    let mut s = Session::new();
    s.call("Read", json!({"file_path": "src/lib.rs"}), 60_000);
    // From here on the root cannot be written: the bus still says green.
    let call = s.made_call("Bash", json!({"command": "cargo build"}), 165_000);
    let said = Session::said(&stdout(&s.hook_without_writes(&call)));
    assert!(said.contains("Context RED"), "{said}");
    let stop =
        s.hook_without_writes(&s.input("Stop.input.json", json!({"stop_hook_active": false})));
    let v: Value = serde_json::from_str(&stdout(&stop)).unwrap_or_default();
    let reason = v["systemMessage"].as_str().unwrap_or_default();
    assert!(reason.contains("`/compact"), "{}", stdout(&stop));
}

/// The consumer cursor entry of the session's checkpoint, as saved.
fn cursor(w: &World) -> Value {
    let path = w.root().join(".consumers/intermem.json");
    let v: Value = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    v[format!("interpulse/checkpoint/{SESSION}")].clone()
}

#[test]
fn a_drain_killed_any_number_of_times_still_makes_exactly_one_note() {
    let mut s = Session::new();
    // A transcript the note takes a while to read: a kill can land inside.
    for i in 0..40 {
        let big = "x".repeat(100_000);
        s.t.tool(
            "Read",
            json!({"file_path": format!("src/f{i}.rs")}),
            &big,
            false,
            50_000,
            false,
        )
        .unwrap();
    }
    // The checkpoint is published while a watch holds the work, so no note yet.
    let claim = interband::consumer::claim_watch(&s.w.bus(), "intermem")
        .unwrap()
        .unwrap();
    s.call(
        "Bash",
        json!({"command": "cargo test --workspace"}),
        170_000,
    );
    drop(claim);
    assert!(s.notes().is_empty());
    let stop = s.input("Stop.input.json", json!({"stop_hook_active": true}));
    let mut interrupted = 0;
    for delay_ms in [0u64, 0, 1, 0, 2, 0, 5, 0] {
        let mut child =
            s.w.cmd(&["hook"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .start();
        {
            use std::io::Write;
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(&stop).unwrap();
        }
        // Killed once the handler runs (the cursor says so), or when it ends.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if cursor(&s.w)["running"] == json!(true) {
                std::thread::sleep(Duration::from_millis(delay_ms));
                let _ = child.kill();
                break;
            }
            if child.try_wait().unwrap().is_some() || std::time::Instant::now() > deadline {
                break;
            }
        }
        let _ = child.wait();
        if cursor(&s.w)["pending"].is_object() {
            interrupted += 1;
        }
    }
    assert!(
        interrupted >= 4,
        "the kills landed inside the handler only {interrupted} times"
    );
    // The next hook finishes the work: one note, never given up.
    s.hook(&stop);
    let notes = s.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("red_pressure"), "{notes:?}");
    assert!(cursor(&s.w)["pending"].is_null(), "{}", cursor(&s.w));
    let note = std::fs::read_to_string(s.notes_dir().join(&notes[0])).unwrap();
    assert!(note.contains("`cargo test --workspace`"), "{note}");
    // Announced: it is the one that comes back.
    let back = s.hook(&s.input("SessionStart.compact.input.json", json!({})));
    assert!(
        back.contains("red_pressure") && back.contains("cargo test --workspace"),
        "{back}"
    );
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "a folder open to others by its access list, which Wine's icacls does not set: runs on Windows"
)]
fn a_note_that_cannot_be_written_is_said_once_at_the_next_call() {
    let mut s = Session::new();
    let claim = interband::consumer::claim_watch(&s.w.bus(), "intermem")
        .unwrap()
        .unwrap();
    s.call("Bash", json!({"command": "make"}), 140_000);
    drop(claim);
    // The session's notes folder is open to others (as one of another user
    // would be refused too): never written into. Made so without root.
    let project = s
        .notes_dir()
        .join(interband_consumers::intermem::slug(&s.cwd));
    std::fs::create_dir_all(project.join(SESSION)).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            project.join(SESSION),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
    }
    // Everyone allowed to change it.
    #[cfg(windows)]
    icacls(&project.join(SESSION), &["/grant", "*S-1-1-0:(OI)(CI)M"]);
    let stop = s.input("Stop.input.json", json!({"stop_hook_active": true}));
    for _ in 0..interband::consumer::MAX_ATTEMPTS {
        s.hook(&stop);
    }
    assert!(s.notes().is_empty());
    let said = Session::said(&s.call("Read", json!({"file_path": "a"}), 141_000));
    assert!(
        said.contains("could not save a memory note") && said.contains("refusing"),
        "{said}"
    );
    let again = Session::said(&s.call("Read", json!({"file_path": "b"}), 141_500));
    assert!(!again.contains("could not save"), "once: {again}");
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "every write refused by an access list, which Wine neither sets (its icacls) nor enforces: runs on Windows"
)]
fn session_start_brings_the_note_back_when_nothing_can_be_written() {
    let mut s = Session::new();
    s.call("Bash", json!({"command": "cargo build"}), 160_000);
    s.hook(&s.input("PreCompact.auto.input.json", json!({})));
    assert!(!s.notes().is_empty());
    s.t.compact(160_000, 9_000, "Summary:\nBuilt.").unwrap();
    let o = s.hook_without_writes(&s.input("SessionStart.compact.input.json", json!({})));
    assert_eq!(code(&o), 0);
    let back = Session::said(&stdout(&o));
    assert!(
        back.contains("<interband-memory-note") && back.contains("cargo build"),
        "{}",
        stdout(&o)
    );
}

/// The folder `dir` and everything in it made read-only to this user, or
/// writable again: by modes on Unix.
#[cfg(unix)]
fn set_writable(dir: &Path, on: bool) {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mode = if on { 0o700 } else { 0o500 };
        let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode));
        if let Ok(rd) = std::fs::read_dir(&d) {
            stack.extend(
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
}

/// The folder `dir` and everything in it made read-only to everyone, this
/// user included, or writable again: on Windows by an access list that
/// denies Everyone each right that writes (data, appends, attributes, a
/// removal, and in a folder a name added or removed), inherited by
/// everything in it; a denial comes before any allowance. Not the generic
/// write right, which would deny the synchronizing every open asks for.
#[cfg(windows)]
fn set_writable(dir: &Path, on: bool) {
    let change: &[&str] = if on {
        &["/remove:d", "*S-1-1-0"]
    } else {
        &["/deny", "*S-1-1-0:(OI)(CI)(WD,AD,WEA,WA,DE,DC)"]
    };
    icacls(dir, change);
}

/// `icacls DIR ARGS...`, which must succeed.
#[cfg(windows)]
fn icacls(dir: &Path, args: &[&str]) {
    let o = std::process::Command::new("icacls")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "icacls {} {args:?}: {}{}",
        dir.display(),
        stdout(&o),
        stderr(&o)
    );
}

#[test]
fn one_state_shows_one_figure_everywhere() {
    // 155,377 of a 200k window that compacts at 167k: 78% used and 12k to
    // compact wherever the figure is shown (warning, note, its journal,
    // `pressure`, `top`, the statusline); 7% usable only in the old view.
    one_figure_everywhere(155_377, "78%", "155k", "12k", "7%");
    // 165k of 200k is 82.5%: one rounding rule, half up, as the hosts round
    // their own indicator, 83% wherever it is read.
    one_figure_everywhere(165_000, "83%", "165k", "2k", "1%");
}

/// One session at `used` of a 200k window: `pct` used, `tokens`, `left` to
/// compact in every output, and `usable` in the statusline's old view.
fn one_figure_everywhere(used: u64, pct: &str, tokens: &str, left: &str, usable: &str) {
    let mut s = Session::new();
    let out = s.call("Bash", json!({"command": "cargo test"}), used);
    let said = Session::said(&out);
    let sentence = format!("{pct} used ({tokens} of 200k tokens), {left} to compact");
    assert!(said.contains(&sentence), "{said}");
    let pressure = stdout(&s.w.run(&["pressure"]));
    assert!(
        pressure.contains(&format!(" {pct} used ["))
            && pressure.contains(&format!("{tokens}/200k"))
            && pressure.contains(&format!("{left} to compact")),
        "{pressure}"
    );
    let top = stdout(&s.w.run(&["top", "--once"]));
    assert!(
        top.contains("TO COMPACT") && top.contains(&format!(" {pct}")) && top.contains(left),
        "{top}"
    );
    let json: Value = serde_json::from_str(&stdout(&s.w.run(&["top", "--json"]))).unwrap();
    let listed = json
        .as_array()
        .and_then(|a| a.first())
        .cloned()
        .unwrap_or(json.clone());
    let listed = listed
        .get("sessions")
        .and_then(|v| v.get(0))
        .cloned()
        .unwrap_or(listed);
    assert_eq!(
        listed["used_pct"]
            .as_u64()
            .map(|p| format!("{p}%"))
            .as_deref(),
        Some(pct),
        "{json}"
    );
    let note = s
        .notes()
        .first()
        .map(|n| std::fs::read_to_string(s.notes_dir().join(n)).unwrap())
        .unwrap();
    assert!(note.contains(&format!("_pressure, {sentence})")), "{note}");
    assert!(
        note.contains(&format!("({pct} used, {left} to compact)")),
        "{note}"
    );
    assert!(!note.contains("usable"), "{note}");
    let mut line: Value = serde_json::from_slice(&capture("statusLine.input.json")).unwrap();
    line["session_id"] = json!(SESSION);
    line["transcript_path"] = json!(s.path);
    line["context_window"]["context_window_size"] = json!(200_000);
    line["context_window"]["current_usage"] = json!({"input_tokens": used, "output_tokens": 5,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    // What Claude Code itself says of it (its own indicator's figure).
    line["context_window"]["used_percentage"] = json!(used as f64 / 2000.0);
    let status = stdout(&s.w.run_with_stdin(&["statusline"], &serde_json::to_vec(&line).unwrap()));
    assert!(
        status.contains(&format!("{pct} used")) && status.contains(&format!("{left} to compact")),
        "the statusline speaks the same figure, and the room to its compaction: {status}"
    );
    let old_view = stdout(&with_stdin(
        s.w.cmd(&["statusline"])
            .env("INTERBAND_INTERLINE_CONTEXT_STYLE", "usable"),
        &serde_json::to_vec(&line).unwrap(),
    ));
    assert!(old_view.contains(&format!("{usable} usable")), "{old_view}");
    let replayed = stdout(&s.w.run(&["replay", s.path.to_str().unwrap()]));
    assert!(
        replayed.contains(&format!("{pct} ({tokens} tokens)")),
        "replay reads the same figure: {replayed}"
    );
}
