//! No value on the bus can stop a consumer's cursor (SECURITY.md, "Ordering"):
//! a planted message with a far-future timestamp, a seq at `u64::MAX` in the
//! message or in a planted lock, each in watch mode and in a hook's drain. Every
//! real checkpoint published after one still gets its own memory note.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use common::*;
use serde_json::json;

const SESSION: &str = "7b1f3c55-2f7e-4c1e-9a43-0d5b8e1c2a90";

/// The notes written for checkpoints (not `latest.md` nor the summaries).
fn notes(w: &World) -> Vec<String> {
    files_under(&w.root().join("intermem/notes"))
        .into_iter()
        .filter(|f| f.ends_with("_pressure.md"))
        .collect()
}

fn transcript(w: &World) -> (String, String) {
    let cwd = w.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let path = w.dir.path().join(format!("{SESSION}.jsonl"));
    let mut t = interpulse::synthetic::Writer::new(&path, SESSION, &cwd);
    t.prompt("Tidy the parser").unwrap();
    (
        path.to_string_lossy().into_owned(),
        cwd.to_string_lossy().into_owned(),
    )
}

fn checkpoint(w: &World, n: u64, t: &(String, String)) -> u64 {
    let payload = json!({"trigger": "orange_pressure", "ts": 1796000000 + n,
        "context_usable": 30 - n, "transcript_path": t.0, "cwd": t.1});
    let v = w.publish(
        "interpulse",
        "checkpoint",
        SESSION,
        "checkpoint_needed",
        &payload,
    );
    v["seq"].as_u64().unwrap()
}

/// A v1 writer's checkpoint, written straight into the channel as a shell
/// plugin would (no seq unless given), dated `timestamp`.
fn plant(w: &World, t: &(String, String), timestamp: &str, seq: Option<u64>) {
    let dir = w.root().join("interpulse/checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    let mut v = json!({"version": "1.0.0", "namespace": "interpulse", "type": "checkpoint_needed",
        "session_id": SESSION, "timestamp": timestamp,
        "payload": {"trigger": "red_pressure", "ts": 1796000000, "transcript_path": t.0, "cwd": t.1}});
    if let Some(seq) = seq {
        v["seq"] = json!(seq);
    }
    let tmp = dir.join("planted.tmp");
    std::fs::write(&tmp, v.to_string()).unwrap();
    std::fs::rename(&tmp, dir.join(format!("{SESSION}.json"))).unwrap();
}

fn watch(w: &World) -> Child {
    let mut child = w
        .cmd(&["watch", "--idle-timeout", "60"])
        .stderr(Stdio::piped())
        .start();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = err.next().unwrap().unwrap();
    assert!(first.contains("watching"), "{first}");
    // Keep reading stderr so the watcher never blocks on a full pipe.
    std::thread::spawn(move || for _ in err {});
    child
}

fn stop(w: &World, t: &(String, String)) {
    let input = json!({"session_id": SESSION, "transcript_path": t.0, "cwd": t.1,
        "hook_event_name": "Stop", "stop_hook_active": false});
    let o = w.run_with_stdin(&["hook"], input.to_string().as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

type Poison = Box<dyn Fn(&World, &(String, String))>;

/// The poisons: what each plants before the real checkpoints come, and the
/// notes it makes (a planted checkpoint is a checkpoint: it gets one).
fn poisons() -> Vec<(&'static str, Poison, usize)> {
    vec![
        (
            "a v1 message dated 9999",
            Box::new(|w, t| plant(w, t, "9999-12-31T23:59:59Z", None)),
            1,
        ),
        (
            "a message dated 9999 with a seq",
            Box::new(|w, t| plant(w, t, "9999-12-31T23:59:59Z", Some(7))),
            1,
        ),
        (
            "a message whose seq is u64::MAX",
            Box::new(|w, t| plant(w, t, "2026-01-01T00:00:00Z", Some(u64::MAX))),
            1,
        ),
        (
            "a planted lock at u64::MAX",
            Box::new(|w, _t| {
                let dir = w.root().join("interpulse/checkpoint");
                std::fs::create_dir_all(&dir).unwrap();
                let lock = dir.join(format!(".{SESSION}.json.lock"));
                std::fs::write(&lock, format!("{:020}", u64::MAX)).unwrap();
            }),
            0,
        ),
    ]
}

#[test]
fn no_planted_value_stops_a_watching_consumer() {
    for (name, poison, before) in poisons() {
        let w = World::new();
        let t = transcript(&w);
        let mut child = watch(&w);
        poison(&w, &t);
        poll(20, &format!("{name}: the planted value's own note"), || {
            (notes(&w).len() == before).then_some(())
        });
        let mut seqs = Vec::new();
        for n in 1..=5 {
            seqs.push(checkpoint(&w, n, &t));
            let want = before + n as usize;
            poll(
                20,
                &format!("{name}: a note for real checkpoint {n}"),
                || (notes(&w).len() >= want).then_some(()),
            );
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            seqs.iter().all(|s| *s <= 1 << 53) && seqs.windows(2).all(|p| p[1] == p[0] + 1),
            "{name}: the key's seq keeps counting: {seqs:?}"
        );
        let o = w.run(&["read", &format!("interpulse/checkpoint/{SESSION}")]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}

#[test]
fn no_planted_value_stops_a_hooks_drain() {
    for (name, poison, before) in poisons() {
        let w = World::new();
        let t = transcript(&w);
        poison(&w, &t);
        stop(&w, &t);
        assert_eq!(
            notes(&w).len(),
            before,
            "{name}: the planted value's own note"
        );
        for n in 1..=3 {
            checkpoint(&w, n, &t);
            stop(&w, &t);
            assert_eq!(
                notes(&w).len(),
                before + n as usize,
                "{name}: a note for real checkpoint {n}"
            );
        }
        // Drained again: nothing new.
        stop(&w, &t);
        assert_eq!(notes(&w).len(), before + 3, "{name}");
    }
}

#[test]
fn an_implausible_value_is_flagged_where_it_is_read() {
    let w = World::new();
    let t = transcript(&w);
    plant(&w, &t, "9999-12-31T23:59:59Z", Some(u64::MAX));
    let o = w.run(&["read", &format!("interpulse/checkpoint/{SESSION}")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        said.contains("past any real count") && said.contains("ahead of this clock"),
        "{said}"
    );
    let root: &Path = &w.root();
    let o = w.run(&["validate", root.to_str().unwrap()]);
    assert_ne!(code(&o), 0, "validate refuses it: {}", stdout(&o));
}
