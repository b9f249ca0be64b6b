//! Many writers, killed writers: readers only ever see complete messages, and
//! `seq` counts every publish.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use interband::Error;

const WRITERS: usize = 16;
const EACH: usize = 200;

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine fails a rename over a file a reader holds open, so writers racing a reader stall (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn sixteen_processes_publishing_to_one_key_never_expose_a_partial_file() {
    let w = World::new();
    let path = w.root().join("interpulse/pressure/shared.json");
    let done = AtomicBool::new(false);
    let (reads, last_seq) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let (mut reads, mut last) = (0u64, 0u64);
            while !done.load(Ordering::Relaxed) {
                match interband::read_path(&path) {
                    Ok(m) => {
                        assert!(
                            m.envelope.seq >= last,
                            "seq went back: {} after {last}",
                            m.envelope.seq
                        );
                        last = m.envelope.seq;
                        reads += 1;
                    }
                    Err(Error::NotFound { .. }) => {}
                    Err(e) => panic!("a reader saw a bad file: {e}"),
                }
            }
            (reads, last)
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|wr| {
                let w = &w;
                s.spawn(move || {
                    for i in 0..EACH {
                        let payload = format!(
                            r#"{{"level":"green","pressure":{i},"est_tokens":{wr},"ts":1796000000}}"#
                        );
                        let o = w.run(&[
                            "publish", "interpulse", "pressure", "shared", "--type", "context_pressure",
                            "--payload", &payload,
                        ]);
                        assert_eq!(code(&o), 0, "{}", stderr(&o));
                    }
                })
            })
            .collect();
        for h in writers {
            h.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap()
    });
    let last = interband::read_path(&path).unwrap();
    assert_eq!(last.envelope.seq, (WRITERS * EACH) as u64);
    assert!(reads > 0 && last_seq <= last.envelope.seq);
    let left = files_under(path.parent().unwrap());
    assert!(
        !left.iter().any(|f| f.contains("interband-tmp")),
        "temp files left: {left:?}"
    );
}

/// Deterministic pseudo-random fractions in [0, 1.25): where in a publish the kill lands.
fn fractions(n: usize) -> impl Iterator<Item = f64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1250) as f64 / 1000.0
    })
}

#[test]
fn a_writer_killed_mid_publish_leaves_the_old_or_the_new_complete_file() {
    let w = World::new();
    let path = w.root().join("killtest/blobs/k.json");
    let blob = "x".repeat(700 * 1024);
    let publish = |payload: &str| {
        let mut child = w
            .cmd(&[
                "publish",
                "killtest",
                "blobs",
                "k",
                "--type",
                "blob",
                "--payload",
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .start();
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(payload.as_bytes());
        drop(stdin);
        child
    };
    // Calibrate: how long one whole publish takes here, so kills spread over all of it.
    let start = std::time::Instant::now();
    let first = publish(&format!(r#"{{"i":0,"blob":"{blob}"}}"#))
        .wait()
        .unwrap();
    assert!(first.success());
    let span = start.elapsed();
    let mut completed: Vec<usize> = vec![0];
    for (i, f) in fractions(40).enumerate() {
        let i = i + 1;
        let delay = span.mul_f64(f);
        let mut child = publish(&format!(r#"{{"i":{i},"blob":"{blob}"}}"#));
        std::thread::sleep(delay); // where in the publish the kill lands: anywhere
        let _ = child.kill(); // SIGKILL; TerminateProcess on Windows
        let status = child.wait().unwrap();
        if status.success() {
            completed.push(i);
        }
        match interband::read_path(&path) {
            Ok(m) => {
                let got = m.envelope.payload["i"].as_u64().unwrap() as usize;
                assert!(got <= i, "value from the future");
                assert!(
                    completed.last().is_none_or(|&c| got >= c),
                    "a completed publish was lost"
                );
                assert_eq!(
                    m.envelope.payload["blob"].as_str().unwrap().len(),
                    blob.len(),
                    "partial payload"
                );
            }
            Err(Error::NotFound { .. }) => {
                assert!(completed.is_empty(), "a completed publish vanished")
            }
            Err(e) => panic!("after kill {i}: {e}"),
        }
    }
    let dir = path.parent().unwrap();
    // Kills known to land mid-write (Unix: a stopped process; Windows has no
    // SIGSTOP to hold a writer where it is): the writer is stopped while its temp
    // file is there, then killed. A temp file holds the new value before the
    // switch, or (the switch swaps the two files, then removes the temp name)
    // the old value after it: the file itself holds a whole value either
    // way, the old one before the switch.
    let temps = || -> std::collections::BTreeSet<String> {
        files_under(dir)
            .into_iter()
            .filter(|f| f.starts_with(".interband-tmp."))
            .collect()
    };
    #[cfg(unix)]
    {
        let mut mid_write = 0;
        for attempt in 0..200 {
            if mid_write == 5 {
                break;
            }
            let before = interband::read_path(&path).unwrap().envelope.payload["i"].clone();
            let left = temps();
            let mut child = publish(&format!(r#"{{"i":{},"blob":"{blob}"}}"#, 1000 + attempt));
            let pid = child.id() as i32;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while temps() == left
                && child.try_wait().ok().flatten().is_none()
                && std::time::Instant::now() < deadline
            {
                std::thread::yield_now();
            }
            // SAFETY: signals to our own child, waited for below.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            // A signal is delivered when the child next runs, maybe on another
            // core, a little later: wait until it is stopped (or gone) indeed.
            let mut wstatus = 0;
            let waited = unsafe { libc::waitpid(pid, &mut wstatus, libc::WUNTRACED) } == pid;
            let stopped = waited && libc::WIFSTOPPED(wstatus);
            // This writer's temp file, while it is stopped, and what it holds.
            let own: Vec<String> = if stopped {
                temps().difference(&left).cloned().collect()
            } else {
                Vec::new()
            };
            let held_old = own.iter().any(|t| {
                interband::read_path(&dir.join(t)).is_ok_and(|m| m.envelope.payload["i"] == before)
            });
            // Exited (and reaped) before the stop landed: nothing to kill.
            let succeeded = if waited && !stopped {
                libc::WIFEXITED(wstatus) && libc::WEXITSTATUS(wstatus) == 0
            } else {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                child.wait().unwrap().success()
            };
            let now = interband::read_path(&path).unwrap();
            assert_eq!(
                now.envelope.payload["blob"].as_str().unwrap().len(),
                blob.len(),
                "attempt {attempt}: a whole value"
            );
            if succeeded || own.is_empty() {
                continue;
            }
            if held_old {
                // Stopped after the switch: the new value is in place.
                assert_eq!(
                    now.envelope.payload["i"],
                    1000 + attempt,
                    "the switch happened"
                );
            } else {
                mid_write += 1;
                assert_eq!(now.envelope.payload["i"], before, "the old value stays");
                assert!(
                    own.iter().all(|t| dir.join(t).exists()),
                    "a kill mid-write leaves its temp file"
                );
            }
        }
        assert_eq!(mid_write, 5, "five kills landed mid-write");
        eprintln!("{mid_write} kills landed mid-write");
    }
    // Whatever temp files the killed writers left are swept by retention once stale.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for f in files_under(dir)
        .iter()
        .filter(|f| f.starts_with(".interband-tmp."))
    {
        std::fs::File::options()
            .write(true)
            .open(dir.join(f))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let o = w.run(&["prune", "killtest/blobs"]);
    assert_eq!(code(&o), 0);
    assert!(temps().is_empty(), "{:?}", temps());
    eprintln!(
        "{} of 40 killed publishes had completed first",
        completed.len() - 1
    );
}
