//! Retention keeps its word through the real binary: a throttle stamp or a
//! message dated ahead of the clock cannot switch it off or crowd out real
//! values, and no setting removes a live session's value, note or
//! checkpoint (SECURITY.md, "Retention").

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::*;

const YEAR_2000: u64 = 946_684_800;
const YEAR_2099: u64 = 4_070_908_800;

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// A channel folder under the root, made as interband makes it (private).
fn channel(w: &World, ns: &str, ch: &str) -> PathBuf {
    w.bus().channel(ns, ch, true).unwrap();
    w.root().join(ns).join(ch)
}

/// A v1 writer's value at `dir/<key>.json`, dated `t`.
fn plant(dir: &Path, key: &str, t: SystemTime) -> PathBuf {
    let p = dir.join(format!("{key}.json"));
    let v = serde_json::json!({"version": "1.0.0", "namespace": "v1", "type": "status",
        "session_id": key, "timestamp": "2000-01-01T00:00:00Z", "payload": {}});
    std::fs::write(&p, v.to_string()).unwrap();
    set_mtime(&p, t);
    p
}

fn values(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    v.sort();
    v
}

fn publish(w: &World, ns: &str, ch: &str, key: &str) {
    w.publish(ns, ch, key, "status", &serde_json::json!({}));
}

#[test]
fn a_stamp_dated_ahead_cannot_switch_retention_off() {
    // Each way a stamp gets ahead of the clock: planted, restored, stepped back.
    for ahead in [at(YEAR_2099), SystemTime::now() + Duration::from_secs(3600)] {
        let w = World::new();
        let dir = channel(&w, "v1", "status");
        for n in 0..600 {
            plant(&dir, &format!("old-{n:04}"), at(YEAR_2000));
        }
        let stamp = dir.join(".interband-prune.stamp");
        std::fs::write(&stamp, "").unwrap();
        set_mtime(&stamp, ahead);
        // A publish prunes its channel when the throttle lets it.
        publish(&w, "v1", "status", "new");
        assert_eq!(
            values(&dir),
            ["new.json"],
            "values from 2000 outlive a 24 h retention"
        );
    }
}

#[test]
fn values_dated_ahead_cannot_crowd_out_real_ones() {
    let w = World::new();
    let dir = channel(&w, "v1", "status");
    for n in 0..300 {
        plant(&dir, &format!("future-{n:04}"), at(YEAR_2099));
    }
    publish(&w, "v1", "status", "real");
    let o = w.run(&["prune"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let left = values(&dir);
    assert_eq!(left.len(), 256, "the channel's count holds");
    assert!(
        left.contains(&"real.json".to_owned()),
        "the value written last is the newest, whatever the others claim"
    );
}

#[test]
fn no_retention_removes_a_live_sessions_values() {
    let w = World::new();
    let (live, gone) = ("live-session", "ended-session");
    let hours_ago = |h: u64| SystemTime::now() - Duration::from_secs(h * 3600);
    let pressure = channel(&w, "interpulse", "pressure");
    plant(&pressure, live, hours_ago(0));
    plant(&pressure, gone, hours_ago(48));
    let mut kept = Vec::new();
    let mut removed = Vec::new();
    for (ns, ch) in [
        ("interpulse", "checkpoint"),
        ("intermem", "note"),
        ("compact", "pending"),
    ] {
        let dir = channel(&w, ns, ch);
        // The live session's checkpoint and note are two hours old: older
        // than a short retention, but the session is still going.
        kept.push(plant(&dir, live, hours_ago(2)));
        removed.push(plant(&dir, gone, hours_ago(2)));
    }
    for (name, value) in [
        ("INTERBAND_RETENTION_SECS", "3600"),
        ("INTERBAND_RETENTION_INTERMEM_NOTE_SECS", "60"),
    ] {
        let o = w.cmd(&["prune"]).env(name, value).finish();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    for p in &kept {
        assert!(p.exists(), "a live session's value: {}", p.display());
    }
    for p in &removed {
        assert!(
            !p.exists(),
            "an ended session's, past retention: {}",
            p.display()
        );
    }
    assert!(!pressure.join(format!("{gone}.json")).exists());
    assert!(pressure.join(format!("{live}.json")).exists());
}

#[test]
fn a_retention_that_would_remove_values_as_they_are_written_is_refused_and_said() {
    for (name, value) in [
        ("INTERBAND_RETENTION_SECS", "0"),
        ("INTERBAND_RETENTION_SECS", "-5"),
        ("INTERBAND_RETENTION_INTERPULSE_CHECKPOINT_SECS", "1"),
    ] {
        let w = World::new();
        let dir = channel(&w, "interpulse", "checkpoint");
        // A value of a session that is not live, a minute old.
        let p = plant(&dir, "s", SystemTime::now() - Duration::from_secs(60));
        let o = w.cmd(&["prune"]).env(name, value).finish();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            p.exists(),
            "{name}={value}: refused, so the default 24 h holds"
        );
        let o = w.cmd(&["config"]).env(name, value).finish();
        let said = format!("{}{}", stdout(&o), stderr(&o));
        assert!(
            said.contains(&format!("{name}={value}")) && said.contains("refused"),
            "{name}={value}: {said}"
        );
    }
}
