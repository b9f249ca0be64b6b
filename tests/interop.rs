//! One root shared with the v1 plugins: values a v1 writer makes (no `seq`,
//! whole-second timestamps, a temp file renamed into place, keys interband
//! never publishes) are delivered, listed and pruned as v1 would, and what
//! interband writes carries integers where v1 wrote them.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use common::*;
use serde_json::{Value, json};

/// A timestamp v1 writers would write for some second.
const SECOND: &str = "2026-11-30T10:00:00Z";

/// Writes `payload` at `ns/ch/key` as a v1 writer does: a `.interband-tmp.*`
/// file in the channel folder, renamed over the key's file; no `seq`.
fn v1_write(
    root: &Path,
    ns: &str,
    ch: &str,
    key: &str,
    timestamp: &str,
    payload: Value,
) -> PathBuf {
    let dir = root.join(ns).join(ch);
    std::fs::create_dir_all(&dir).unwrap();
    let env = json!({"version": "1.0.0", "namespace": ns, "type": "status",
                     "session_id": key, "timestamp": timestamp, "payload": payload});
    let tmp = tempfile::Builder::new()
        .prefix(".interband-tmp.")
        .tempfile_in(&dir)
        .unwrap();
    std::fs::write(tmp.path(), env.to_string()).unwrap();
    let target = dir.join(format!("{key}.json"));
    // Wine fails a rename over a file the watch is reading (docs/hosts.md,
    // Platforms; Windows itself does not): there, tried again until it is
    // read, as a writer on Wine must.
    let mut tmp = tmp;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match tmp.persist(&target) {
            Ok(_) => return target,
            Err(e) if UNDER_WINE && std::time::Instant::now() < deadline => {
                tmp = e.file;
                std::thread::yield_now();
            }
            Err(e) => panic!("{}: {e}", target.display()),
        }
    }
}

/// A running `interband watch` and its output lines.
struct Watching {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Watching {
    fn start(w: &World, glob: &str) -> Self {
        let mut child = w
            .cmd(&["watch", "--existing", "--idle-timeout", "20", glob])
            .stdout(Stdio::piped())
            .start();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Watching { child, lines }
    }

    /// The next delivered value (the watch ends after 20 s without one).
    fn next(&mut self) -> Value {
        let line = self
            .lines
            .next()
            .expect("the watch delivered nothing before its idle timeout")
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ready(w: &World) -> Watching {
    // A value present at start: once it is printed, the watch is running.
    v1_write(&w.root(), "v1", "status", "ready", SECOND, json!({"n": 0}));
    let mut watch = Watching::start(w, "v1/status/*");
    assert_eq!(watch.next()["envelope"]["payload"]["n"], 0);
    watch
}

#[test]
fn a_watch_delivers_every_value_a_v1_writer_makes_within_one_second() {
    let w = World::new();
    let mut watch = ready(&w);
    // Three rewrites of one key, all stamped with the same second, each
    // written once the one before it was delivered.
    for n in 1..=3 {
        v1_write(&w.root(), "v1", "status", "k", SECOND, json!({"n": n}));
        let got = watch.next();
        assert_eq!(got["address"], "v1/status/k");
        assert_eq!(got["envelope"]["payload"]["n"], n, "{got}");
    }
    // The same value rewritten (a new file, same content) is a new value too.
    v1_write(&w.root(), "v1", "status", "k", SECOND, json!({"n": 3}));
    assert_eq!(watch.next()["envelope"]["payload"]["n"], 3);
}

#[test]
fn a_burst_of_v1_rewrites_always_ends_with_the_last_value() {
    let w = World::new();
    let mut watch = ready(&w);
    for n in 1..=3 {
        v1_write(&w.root(), "v1", "status", "k", SECOND, json!({"n": n}));
    }
    // Reads may coalesce values written faster than they are read (stated
    // in docs/protocol.md); the last one always arrives, in order, once.
    let mut seen = Vec::new();
    while seen.last() != Some(&3) {
        seen.push(watch.next()["envelope"]["payload"]["n"].as_u64().unwrap());
    }
    assert!(seen.windows(2).all(|p| p[0] < p[1]), "{seen:?}");
    v1_write(&w.root(), "v1", "status", "k", SECOND, json!({"n": 4}));
    assert_eq!(
        watch.next()["envelope"]["payload"]["n"],
        4,
        "nothing more in between"
    );
}

#[test]
fn mixed_writers_on_one_key_in_one_second_are_each_delivered_in_order() {
    let w = World::new();
    let mut watch = ready(&w);
    let publish = |n: u64| {
        let o = w.run(&[
            "publish",
            "v1",
            "status",
            "k",
            "--type",
            "status",
            "--payload",
            &json!({"n": n}).to_string(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    };
    publish(1);
    let first = watch.next();
    assert_eq!(first["envelope"]["seq"], 1);
    // A v1 writer replaces it within the same second (the same timestamp)...
    let second = first["envelope"]["timestamp"].as_str().unwrap().to_owned();
    v1_write(&w.root(), "v1", "status", "k", &second, json!({"n": 2}));
    let got = watch.next();
    assert_eq!(got["envelope"]["payload"]["n"], 2);
    assert_eq!(got["envelope"]["seq"], 0, "no seq from a v1 writer");
    // ...and interband writes again.
    publish(3);
    let got = watch.next();
    assert_eq!(got["envelope"]["payload"]["n"], 3);
    assert_eq!(got["envelope"]["seq"], 2, "the key's count goes on");
}

fn json_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// Files (name, age in seconds), the retention in seconds, the file cap,
/// and the files a v1 pruner keeps, worked out by hand from the v1 rule
/// (every `*.json` file counts; those older than the retention go, then all
/// but the newest N by modification time, a tie by name, descending).
type PruneCase<'a> = (Vec<(&'a str, u64)>, u64, usize, Vec<&'a str>);

#[test]
fn pruning_keeps_the_files_a_v1_pruner_keeps_and_leaves_no_locks() {
    let w = World::new();
    let long = format!("{}.json", "k".repeat(250));
    // (name, age in seconds): the case first, then every kind of name.
    // `ours.json` is published last, so it is the newest in every case.
    let cases: Vec<PruneCase> = vec![
        (
            vec![("a.json", 30), (".h.json", 20), ("b.json", 40)],
            3600,
            2,
            vec![".h.json", "ours.json"],
        ),
        (
            vec![("a.json", 30), (".h.json", 50), ("b.json", 10)],
            3600,
            2,
            vec!["b.json", "ours.json"],
        ),
        (
            // Three files with the very same modification time: one place
            // left for them, so the tie decides (`y` > `x` > `.`).
            vec![
                ("x.json", 5),
                ("..json", 5),
                ("y.json", 5),
                (&long, 1),
                ("z.json", 100),
            ],
            60,
            3,
            vec![&long, "ours.json", "y.json"],
        ),
        (
            vec![("old.json", 7200), (".old.json", 7200), ("new.json", 1)],
            3600,
            256,
            vec!["new.json", "ours.json"],
        ),
    ];
    for (i, (files, retention, max, kept)) in cases.iter().enumerate() {
        let ch = format!("c{i}");
        let dir = w.root().join("v1").join(&ch);
        // One clock reading for the case: equal ages are equal times.
        let base = SystemTime::now();
        for (name, age) in files {
            let key = name.strip_suffix(".json").unwrap();
            let path = v1_write(&w.root(), "v1", &ch, key, SECOND, json!({}));
            let when = base - Duration::from_secs(*age);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        // Something interband published too: its lock file exists.
        let o = w.run(&[
            "publish",
            "v1",
            &ch,
            "ours",
            "--type",
            "t",
            "--payload",
            "{}",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let o = w
            .cmd(&["prune", &format!("v1/{ch}")])
            .env("INTERBAND_RETENTION_SECS", retention.to_string())
            .env("INTERBAND_MAX_FILES", max.to_string())
            .finish();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            json_files(&dir),
            {
                let mut k: Vec<String> = kept.iter().map(|n| n.to_string()).collect();
                k.sort();
                k
            },
            "case {i}"
        );
        // No lock is left for a message that is gone.
        for f in std::fs::read_dir(&dir).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            if let Some(guarded) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".lock")) {
                assert!(dir.join(guarded).exists(), "case {i}: {name} left behind");
            }
        }
    }
}

#[test]
fn ls_and_watch_show_every_file_in_a_channel_and_flag_the_unusual_ones() {
    let w = World::new();
    let long = "k".repeat(230);
    for key in ["plain", ".hidden", "..", long.as_str()] {
        v1_write(&w.root(), "v1", "odd", key, SECOND, json!({"k": key}));
    }
    let o = w.run(&["ls", "--json", "v1/odd/*"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let listed: Vec<&str> = rows
        .iter()
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 4, "{listed:?}");
    for r in &rows {
        let key = r["address"].as_str().unwrap().trim_start_matches("v1/odd/");
        let flags = r["flags"].to_string();
        assert_eq!(key == "plain", r["flags"] == json!([]), "{r}");
        if key.starts_with('.') {
            assert!(flags.contains("starting with '.'"), "{r}");
        }
        if key.len() > 200 {
            assert!(flags.contains("230 bytes"), "{r}");
        }
    }
    // Each can be read by its address, as `ls` shows it.
    for key in [".hidden", "..", long.as_str()] {
        let o = w.run(&["read", "--payload", &format!("v1/odd/{key}")]);
        assert_eq!(code(&o), 0, "{key}: {}", stderr(&o));
        assert_eq!(
            serde_json::from_str::<Value>(&stdout(&o)).unwrap()["k"],
            key
        );
    }
    // The watch delivers the same four.
    let mut watch = Watching::start(&w, "v1/odd/*");
    let mut delivered: Vec<String> = (0..4)
        .map(|_| watch.next()["address"].as_str().unwrap().to_owned())
        .collect();
    delivered.sort();
    let mut listed: Vec<String> = listed.into_iter().map(str::to_owned).collect();
    listed.sort();
    assert_eq!(delivered, listed);
}

#[test]
fn what_interband_writes_for_v1_contracts_has_integer_times_and_counts() {
    let w = World::new();
    let input = capture("PostToolUse.input.json");
    let o = w.run_with_stdin(&["hook"], &input);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let session = serde_json::from_slice::<Value>(&input).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for channel in ["interpulse/pressure", "intercheck/pressure"] {
        let path = w.root().join(channel).join(format!("{session}.json"));
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let p = &v["payload"];
        assert!(p["ts"].is_u64(), "{channel}: ts {}", p["ts"]);
        assert!(
            p["est_tokens"].is_u64(),
            "{channel}: est_tokens {}",
            p["est_tokens"]
        );
        if p["pressure"].as_f64().is_some_and(|x| x.fract() == 0.0) {
            assert!(
                p["pressure"].is_u64(),
                "{channel}: pressure {}",
                p["pressure"]
            );
        }
    }
}
