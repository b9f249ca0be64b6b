//! Subscription and the consumer runner, in real folders with real file events.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use interband::consumer::{self, HandlerError};
use interband::payloads::Checkpoint;
use interband::{Bus, Consumer, Message, Subscription, WatchOptions};
use serde_json::json;

fn checkpoint(i: usize) -> Checkpoint {
    Checkpoint {
        trigger: "orange_pressure".into(),
        ts: i as f64,
        context_usable: None,
        transcript_path: None,
        cwd: None,
    }
}

fn opts(poll: bool) -> WatchOptions {
    WatchOptions {
        poll,
        ..WatchOptions::default()
    }
}

/// Reads values until `pred` holds for one, or panics after `secs`.
fn wait_for(sub: &mut Subscription, secs: u64, mut pred: impl FnMut(&Message) -> bool) -> Message {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if let Some(m) = sub.next(left).unwrap()
            && pred(&m)
        {
            return m;
        }
    }
    panic!("no matching value within {secs} s");
}

fn burst(poll: bool) {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path());
    let mut sub = Subscription::new(&bus, &["interpulse/checkpoint/*"], opts(poll)).unwrap();
    assert_eq!(sub.uses_events(), !poll);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..1000 {
                bus.publish_typed("burst", "s", &checkpoint(i)).unwrap();
            }
        });
        let mut last = 0;
        let m = wait_for(&mut sub, 30, |m| {
            assert!(
                m.envelope.seq > last || m.envelope.seq == 0,
                "each seq once, in order"
            );
            last = last.max(m.envelope.seq);
            m.envelope.seq == 1000
        });
        assert_eq!(m.envelope.payload["ts"], 999.0);
        assert_eq!(
            m.address.unwrap().to_string(),
            "interpulse/checkpoint/burst"
        );
    });
}

#[test]
fn a_watcher_sees_the_final_value_of_a_1000_publish_burst() {
    burst(false);
}

#[test]
fn the_polling_fallback_sees_it_too() {
    burst(true);
}

#[test]
fn new_folders_corrupt_files_and_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("not-yet"));
    let mut sub = Subscription::new(
        &bus,
        &["fresh/*/k?"],
        WatchOptions {
            initial: false,
            ..opts(false)
        },
    )
    .unwrap();
    // A namespace and channel that do not exist yet, a corrupt file, and a non-matching key.
    bus.publish("fresh", "chan", "other", "t", "", json!({}))
        .unwrap();
    let chan = bus.channel_dir("fresh", "chan").unwrap();
    std::fs::write(chan.join("k1.json"), "{broken").unwrap();
    bus.publish("fresh", "chan", "k2", "t", "", json!({"n": 2}))
        .unwrap();
    let m = wait_for(&mut sub, 10, |_| true);
    assert_eq!(
        m.address.unwrap().key,
        "k2",
        "the corrupt k1 and the unmatched key are skipped"
    );
    // The corrupt key heals with its next valid value.
    bus.publish("fresh", "chan", "k1", "t", "", json!({"n": 1}))
        .unwrap();
    let m = wait_for(&mut sub, 10, |_| true);
    assert_eq!(m.address.unwrap().key, "k1");
}

/// A consumer whose side effect is one line per value in a shared log.
struct Logger {
    log: PathBuf,
}

impl Consumer for Logger {
    fn name(&self) -> &str {
        "logger"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, m: &Message, _: bool) -> Result<(), HandlerError> {
        append(
            &self.log,
            &format!("{} {}", m.address.as_ref().unwrap(), m.envelope.seq),
        )
    }
}

/// Appends one line to a log shared by consumers.
fn append(log: &Path, line: &str) -> Result<(), HandlerError> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    writeln!(f, "{line}")?;
    Ok(())
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_consumer_acts_once_per_seq_across_a_drain_and_a_watch_running_together() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let log = dir.path().join("log");
    let stop = AtomicBool::new(false);
    let mut finals = BTreeMap::new();
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut consumers: Vec<Box<dyn Consumer>> = vec![Box::new(Logger { log: log.clone() })];
            consumer::watch(
                &bus,
                &mut consumers,
                opts(false),
                Duration::from_millis(20),
                |_| !stop.load(Ordering::Relaxed),
            )
            .unwrap()
        });
        let drainer = s.spawn(|| {
            let mut c = Logger { log: log.clone() };
            let mut runs = 0;
            while !stop.load(Ordering::Relaxed) {
                consumer::drain(&bus, &mut c).unwrap();
                runs += 1;
            }
            runs
        });
        for i in 0..300 {
            let key = format!("k{}", i % 5);
            let p = bus.publish_typed(&key, "s", &checkpoint(i)).unwrap();
            finals.insert(format!("interpulse/checkpoint/{key}"), p.seq);
        }
        // Wait (bounded) until every key's final value was acted on.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let lines: HashSet<String> = log_lines(&log).into_iter().collect();
            if finals
                .iter()
                .all(|(k, seq)| lines.contains(&format!("{k} {seq}")))
            {
                break;
            }
            assert!(Instant::now() < deadline, "final values not all handled");
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
        assert!(drainer.join().unwrap() > 0);
    });
    let lines = log_lines(&log);
    let unique: HashSet<&String> = lines.iter().collect();
    assert_eq!(unique.len(), lines.len(), "a value was handled twice");
    // Per key, handled seqs strictly increase: nothing older after something newer.
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for l in &lines {
        let (k, seq) = l.rsplit_once(' ').unwrap();
        let seq: u64 = seq.parse().unwrap();
        let prev = last.insert(k.to_owned(), seq).unwrap_or(0);
        assert!(seq > prev, "{k}: {seq} after {prev}");
    }
    // A later drain finds nothing new.
    let r = consumer::drain(&bus, &mut Logger { log: log.clone() }).unwrap();
    assert_eq!(r.handled, 0);
}

/// Writes an effect file named after the value, then "dies" the first time.
struct Crashy {
    effects: PathBuf,
    crash: bool,
    saw_redelivery: bool,
}

impl Consumer for Crashy {
    fn name(&self) -> &str {
        "crashy"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, m: &Message, redelivered: bool) -> Result<(), HandlerError> {
        self.saw_redelivery |= redelivered;
        let effect = self.effects.join(format!(
            "{}-{}",
            m.address.as_ref().unwrap().key,
            m.envelope.seq
        ));
        // The idempotent pattern: the effect is keyed by (key, seq).
        if !(redelivered && effect.exists()) {
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&effect)?
                .write_all(b"x")?;
        }
        if self.crash {
            panic!("killed mid-way");
        }
        Ok(())
    }
}

#[test]
fn a_consumer_killed_mid_way_gets_the_value_again_marked_redelivered() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let effects = dir.path().join("effects");
    std::fs::create_dir(&effects).unwrap();
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let mut c = Crashy {
        effects: effects.clone(),
        crash: true,
        saw_redelivery: false,
    };
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        consumer::drain(&bus, &mut c)
    }));
    assert!(crashed.is_err());
    c.crash = false;
    let r = consumer::drain(&bus, &mut c).unwrap();
    assert_eq!((r.handled, r.redelivered), (1, 1));
    assert!(c.saw_redelivery);
    assert_eq!(
        std::fs::read(effects.join("k-1")).unwrap(),
        b"x",
        "the effect happened once"
    );
    assert_eq!(consumer::drain(&bus, &mut c).unwrap().handled, 0);
}

/// Fails every time.
struct Failing(usize);

impl Consumer for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, _: &Message, _: bool) -> Result<(), HandlerError> {
        self.0 += 1;
        Err("transcript missing".into())
    }
}

#[test]
fn a_failing_value_is_retried_a_bounded_number_of_times() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path());
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let mut c = Failing(0);
    for _ in 0..5 {
        let r = consumer::drain(&bus, &mut c).unwrap();
        assert!(
            r.errors
                .iter()
                .all(|e| e.to_string().contains("transcript missing"))
        );
    }
    assert_eq!(c.0 as u32, consumer::MAX_ATTEMPTS);
}

/// Fails with a full disk `fails` times, then succeeds.
struct DiskFull {
    fails: u32,
    calls: u32,
}

impl Consumer for DiskFull {
    fn name(&self) -> &str {
        "disk-full"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, _: &Message, _: bool) -> Result<(), HandlerError> {
        self.calls += 1;
        if self.calls <= self.fails {
            return Err(Box::new(std::io::Error::from(
                std::io::ErrorKind::StorageFull,
            )));
        }
        Ok(())
    }
}

#[test]
fn a_transient_failure_is_retried_for_as_long_as_it_lasts() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path());
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let mut c = DiskFull {
        fails: 10,
        calls: 0,
    };
    for _ in 0..10 {
        let r = consumer::drain(&bus, &mut c).unwrap();
        assert_eq!((r.handled, r.given_up.len(), r.errors.len()), (0, 0, 1));
    }
    let r = consumer::drain(&bus, &mut c).unwrap();
    assert_eq!((r.handled, r.redelivered), (1, 1));
    assert!(r.given_up.is_empty());
}

#[test]
fn a_value_whose_handler_keeps_being_killed_is_offered_again_and_again() {
    // Killed three, five, twelve times: handled in the end, never dropped.
    for kills in [3u32, 5, 12] {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("root"));
        bus.publish_typed("a", "s", &checkpoint(1)).unwrap();
        let mut c = DiesOnA {
            attempts_on_a: 0,
            handled: vec![],
            dies: kills,
        };
        let mut finished = None;
        for _ in 0..=kills {
            if let Ok(r) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                consumer::drain(&bus, &mut c)
            })) {
                finished = Some(r.unwrap());
                break;
            }
        }
        let r = finished.expect("a drain finishes");
        assert_eq!((r.handled, r.redelivered), (1, 1), "{kills} kills");
        assert!(r.given_up.is_empty());
        assert_eq!(c.handled, ["a"]);
    }
}

#[test]
fn cursors_of_pruned_keys_are_forgotten_and_a_returning_key_starts_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let log = dir.path().join("log");
    for k in ["a", "b"] {
        bus.publish_typed(k, "s", &checkpoint(1)).unwrap();
    }
    assert_eq!(
        consumer::drain(&bus, &mut Logger { log: log.clone() })
            .unwrap()
            .handled,
        2
    );
    let cursors = dir.path().join("root/.consumers/logger.json");
    let keys = |p: &Path| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        v.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(keys(&cursors).len(), 2);
    // Retention removes key a (file and lock): its cursor goes too.
    assert!(bus.remove("interpulse", "checkpoint", "a").unwrap());
    std::fs::remove_file(dir.path().join("root/interpulse/checkpoint/.a.json.lock")).unwrap();
    consumer::drain(&bus, &mut Logger { log: log.clone() }).unwrap();
    assert_eq!(keys(&cursors), ["interpulse/checkpoint/b"]);
    // Key a comes back with seq 1 again: it is a new value.
    bus.publish_typed("a", "s", &checkpoint(2)).unwrap();
    assert_eq!(
        consumer::drain(&bus, &mut Logger { log }).unwrap().handled,
        1
    );
}

/// Dies on key `a` its first `dies` times (as a panic or a host's kill
/// would), logs the others.
struct DiesOnA {
    attempts_on_a: u32,
    handled: Vec<String>,
    dies: u32,
}

impl Consumer for DiesOnA {
    fn name(&self) -> &str {
        "dies-on-a"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, m: &Message, _: bool) -> Result<(), HandlerError> {
        let key = m.address.as_ref().unwrap().key.clone();
        if key == "a" && self.attempts_on_a < self.dies {
            self.attempts_on_a += 1;
            panic!("killed on a");
        }
        self.handled.push(key);
        Ok(())
    }
}

#[test]
fn a_handler_that_always_dies_is_given_up_on_and_the_keys_after_it_are_handled() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path());
    for k in ["a", "b"] {
        bus.publish_typed(k, "s", &checkpoint(1)).unwrap();
    }
    let mut c = DiesOnA {
        attempts_on_a: 0,
        handled: vec![],
        dies: u32::MAX,
    };
    let mut finished = None;
    for _ in 0..=consumer::MAX_INTERRUPTIONS {
        if let Ok(r) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            consumer::drain(&bus, &mut c)
        })) {
            finished = Some(r.unwrap());
            break;
        }
    }
    let r = finished.expect("a drain gets past key a");
    assert_eq!(c.attempts_on_a, consumer::MAX_INTERRUPTIONS);
    assert!(
        r.given_up.iter().any(|e| e.to_string().contains("died")),
        "{:?}",
        r.given_up
    );
    assert_eq!(c.handled, ["b"]);
}

#[test]
fn an_unreadable_cursor_file_is_an_error_not_a_fresh_start() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let log = dir.path().join("log");
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let mut c = Logger { log: log.clone() };
    assert_eq!(consumer::drain(&bus, &mut c).unwrap().handled, 1);
    let cursors = dir.path().join("root/.consumers/logger.json");
    let good = std::fs::read(&cursors).unwrap();
    std::fs::write(&cursors, b"{\"interpulse/checkpoint/k\": ").unwrap();
    let err = consumer::drain(&bus, &mut c).unwrap_err();
    assert!(err.to_string().contains("logger.json"), "{err}");
    std::fs::write(&cursors, good).unwrap();
    assert_eq!(consumer::drain(&bus, &mut c).unwrap().handled, 0);
    assert_eq!(log_lines(&log).len(), 1, "handled once in all");
}

#[test]
fn a_stale_value_offered_after_a_v1_writer_is_not_handled_again() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let log = dir.path().join("log");
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let stale = bus.read("interpulse", "checkpoint", "k").unwrap(); // held by a slow drain
    let mut c = Logger { log: log.clone() };
    assert_eq!(consumer::drain(&bus, &mut c).unwrap().handled, 1);
    // A v1 writer (no seq) replaces the value a second later.
    let path = bus.path("interpulse", "checkpoint", "k").unwrap();
    let v1 = serde_json::json!({"version": "1.0.0", "namespace": "interpulse", "type": "checkpoint_needed",
        "session_id": "s", "timestamp": "2099-01-01T00:00:00Z",
        "payload": {"trigger": "orange_pressure", "ts": 2.0}});
    std::fs::write(&path, v1.to_string()).unwrap();
    assert_eq!(consumer::drain(&bus, &mut c).unwrap().handled, 1);
    let mut report = consumer::Report::default();
    assert!(!consumer::offer(&bus, &mut c, &stale, &mut report).unwrap());
    assert_eq!(log_lines(&log).len(), 2);
}

#[test]
fn watch_retries_a_failed_value_up_to_the_limit_without_a_new_publish() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path());
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let mut consumers: Vec<Box<dyn Consumer>> = vec![Box::new(Failing(0))];
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut calls_after_the_limit = 0;
    let r = consumer::watch(
        &bus,
        &mut consumers,
        opts(false),
        Duration::from_millis(10),
        |r| {
            if !r.given_up.is_empty() {
                calls_after_the_limit += 1;
            }
            calls_after_the_limit < 20 && Instant::now() < deadline
        },
    )
    .unwrap();
    assert_eq!(
        (r.errors.len(), r.given_up.len()),
        (consumer::MAX_ATTEMPTS as usize - 1, 1),
        "three attempts, then given up: {:?}",
        r.errors
    );
}

#[test]
fn watch_does_not_spin_on_a_consumer_that_cannot_run_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let log = dir.path().join("log");
    std::fs::create_dir_all(dir.path().join("root/.consumers")).unwrap();
    std::fs::write(dir.path().join("root/.consumers/logger.json"), b"{broken").unwrap();
    bus.publish_typed("k", "s", &checkpoint(1)).unwrap();
    let mut consumers: Vec<Box<dyn Consumer>> = vec![Box::new(Logger { log })];
    let mut calls = 0;
    let r = consumer::watch(
        &bus,
        &mut consumers,
        opts(false),
        Duration::from_millis(5),
        |_| {
            calls += 1;
            calls < 100
        },
    )
    .unwrap();
    assert!(!r.errors.is_empty());
    assert!(
        r.errors.len() <= 2,
        "{} errors: {:?}",
        r.errors.len(),
        r.errors[0]
    );
    assert!(
        r.errors[0].to_string().contains("logger.json"),
        "{}",
        r.errors[0]
    );
}

/// Writes a checkpoint as a v1 writer would: no seq, one whole-second
/// timestamp for every value, a temp file renamed into place.
fn v1_checkpoint(bus: &Bus, key: &str, trigger: &str) {
    let dir = bus.root().join("interpulse/checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    let body = format!(
        r#"{{"version":"1.0.0","namespace":"interpulse","type":"checkpoint_needed","session_id":"{key}","timestamp":"2026-11-30T10:00:00Z","payload":{{"trigger":"{trigger}","ts":1}}}}"#
    );
    let tmp = dir.join(".interband-tmp.test");
    std::fs::write(&tmp, body).unwrap();
    std::fs::rename(&tmp, dir.join(format!("{key}.json"))).unwrap();
}

/// Logs each value's trigger: v1 values all have seq 0.
struct Triggers {
    log: PathBuf,
}

impl Consumer for Triggers {
    fn name(&self) -> &str {
        "triggers"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, m: &Message, _: bool) -> Result<(), HandlerError> {
        append(&self.log, m.envelope.payload["trigger"].as_str().unwrap())
    }
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine 8 refuses to rename over a file another thread is reading (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn a_consumer_handles_each_value_a_v1_writer_makes_within_one_second_once() {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("root"));
    let log = dir.path().join("log");
    let mut c = Triggers { log: log.clone() };
    for t in ["t1", "t2", "t3"] {
        v1_checkpoint(&bus, "k", t);
        assert_eq!(consumer::drain(&bus, &mut c).unwrap().handled, 1, "{t}");
        assert_eq!(
            consumer::drain(&bus, &mut c).unwrap().handled,
            0,
            "{t} once"
        );
    }
    assert_eq!(log_lines(&log), ["t1", "t2", "t3"]);

    // A drain and a watch together while a v1 writer rewrites the key in
    // one second: each value handled at most once, the last one handled.
    std::fs::remove_file(&log).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut consumers: Vec<Box<dyn Consumer>> =
                vec![Box::new(Triggers { log: log.clone() })];
            consumer::watch(
                &bus,
                &mut consumers,
                opts(false),
                Duration::from_millis(20),
                |_| !stop.load(Ordering::Relaxed),
            )
            .unwrap()
        });
        let drainer = s.spawn(|| {
            let mut c = Triggers { log: log.clone() };
            while !stop.load(Ordering::Relaxed) {
                consumer::drain(&bus, &mut c).unwrap();
            }
        });
        for i in 0..100 {
            v1_checkpoint(&bus, "k", &format!("v{i}"));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let handled = || log_lines(&log).contains(&"v99".to_owned());
        while !handled() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        // (Stopped before asserting, so a failure cannot leave the threads running.)
        stop.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
        drainer.join().unwrap();
        assert!(handled(), "the last value was not handled");
    });
    let lines = log_lines(&log);
    let unique: HashSet<&String> = lines.iter().collect();
    assert_eq!(
        unique.len(),
        lines.len(),
        "a value handled twice: {lines:?}"
    );
    let order: Vec<usize> = lines.iter().map(|l| l[1..].parse().unwrap()).collect();
    assert!(
        order.windows(2).all(|p| p[0] < p[1]),
        "out of order: {order:?}"
    );
}
