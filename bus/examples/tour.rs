//! A tour of the bus in a private temporary root: a producer publishes rising
//! context pressure and, at orange, a checkpoint request; a consumer watching
//! the bus reacts to each checkpoint exactly once; a one-shot drain afterwards
//! finds nothing left to do.
//!
//! Run it with `cargo run -p interband --example tour`.

use std::time::Duration;

use interband::consumer::{self, HandlerError};
use interband::payloads::{Checkpoint, Level, Pressure};
use interband::{Bus, Consumer, Message, WatchOptions};

/// Prints what it would externalize; a real intermem writes a memory note here.
struct NoteTaker;

impl Consumer for NoteTaker {
    fn name(&self) -> &str {
        "tour-notes"
    }
    fn patterns(&self) -> Vec<String> {
        vec!["interpulse/checkpoint/*".into()]
    }
    fn handle(&mut self, _: &Bus, m: &Message, _: bool) -> Result<(), HandlerError> {
        let cp: Checkpoint = serde_json::from_value(m.envelope.payload.clone())?;
        println!(
            "  consumer   {} seq {}: checkpoint ({}) → writing a memory note",
            m.address
                .as_ref()
                .expect("watched messages have an address"),
            m.envelope.seq,
            cp.trigger
        );
        Ok(())
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let bus = Bus::new(dir.path().join("root"));
    println!("interband bus tour, root {}", bus.root().display());

    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| -> Result<(), Box<dyn std::error::Error>> {
        let watcher = s.spawn(|| {
            let mut consumers: Vec<Box<dyn Consumer>> = vec![Box::new(NoteTaker)];
            consumer::watch(
                &bus,
                &mut consumers,
                WatchOptions::default(),
                Duration::from_millis(50),
                |_| !done.load(std::sync::atomic::Ordering::Relaxed),
            )
        });

        let session = "demo-session";
        for (calls, used) in [(10u64, 40u64), (25, 62), (40, 72), (55, 80), (70, 88)] {
            // Usable = what is left before autocompact (a 16.5% reserve on a 200k window).
            let usable = ((83.5 - used as f64) / 83.5 * 100.0).max(0.0);
            let level = match usable {
                u if u < 10.0 => Level::Red,
                u if u < 20.0 => Level::Orange,
                u if u < 35.0 => Level::Yellow,
                _ => Level::Green,
            };
            let p = bus.publish_typed(
                session,
                session,
                &Pressure {
                    level,
                    ts: now(),
                    context_usable: Some(usable.round()),
                    used_tokens: Some(used * 2000),
                    window: Some(200_000),
                    source: Some("tour".into()),
                    calls: Some(calls),
                    ..Default::default()
                },
            )?;
            println!(
                "  producer   interpulse/pressure/{session} seq {}: {used}% used, {:.0}% usable → {}",
                p.seq,
                usable,
                level.as_str()
            );
            if level >= Level::Orange {
                let trigger = if level == Level::Red {
                    "red_pressure"
                } else {
                    "orange_pressure"
                };
                let cp = Checkpoint {
                    trigger: trigger.into(),
                    ts: now(),
                    context_usable: Some(usable.round()),
                    transcript_path: None,
                    cwd: None,
                };
                bus.publish_typed(session, session, &cp)?;
            }
            std::thread::sleep(Duration::from_millis(150)); // pacing for the reader, not synchronization
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let report = watcher.join().expect("watch thread")?;
        println!(
            "  watch      handled {} checkpoint value(s)",
            report.handled
        );
        Ok(())
    })?;

    let again = consumer::drain(&bus, &mut NoteTaker)?;
    println!(
        "  drain      {} value(s) left for a one-shot drain: each value is acted on once, by whichever runner gets it first",
        again.handled
    );
    Ok(())
}
