//! Latency from a published `checkpoint_needed` to the memory note written by
//! a watching intermem (the consumer runner in watch mode, file events), over
//! 200 events, one session each. Reports p50, p90, p99 and max; the design's
//! budget is p99 ≤ 50 ms. A benchmark, not a test: it always exits 0 unless
//! the setup fails.
//!
//! Run: `cargo bench --bench notes` (`INTERBAND_BENCH_EVENTS` to change 200).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use interband::payloads::{Checkpoint, MemoryNote};
use interband::{Bus, Consumer, WatchOptions};
use interband_consumers::intermem::Intermem;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude-code-2.1.332"
);

fn main() {
    let events: usize = std::env::var("INTERBAND_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let tmp = tempfile::tempdir().expect("temp dir");
    let bus = Bus::new(tmp.path().join("root"));
    let transcript = Path::new(FIXTURES).join("transcript.compacted_session.jsonl");
    let stop = AtomicBool::new(false);
    let mut lat = Vec::with_capacity(events);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut consumers: Vec<Box<dyn Consumer>> = vec![Box::new(Intermem::default())];
            interband::consumer::watch(
                &bus,
                &mut consumers,
                WatchOptions::default(),
                Duration::from_millis(20),
                |_| !stop.load(Ordering::Relaxed),
            )
        });
        // Let the watcher start (its first scan finds nothing).
        std::thread::sleep(Duration::from_millis(200));
        for i in 0..events {
            let session = format!("bench-{i}");
            let cp = Checkpoint {
                trigger: "orange_pressure".into(),
                ts: i as f64,
                context_usable: Some(18.0),
                transcript_path: Some(transcript.to_string_lossy().into_owned()),
                cwd: Some("/home/dev/work".into()),
            };
            let start = Instant::now();
            bus.publish_typed(&session, &session, &cp).expect("publish");
            loop {
                if bus.read_typed::<MemoryNote>(&session).is_ok() {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no note for {session} within 10 s"
                );
                std::thread::sleep(Duration::from_micros(200));
            }
            lat.push(start.elapsed().as_secs_f64() * 1e3);
        }
        stop.store(true, Ordering::Relaxed);
        watcher.join().expect("watch thread").expect("watch");
    });
    lat.sort_by(f64::total_cmp);
    let pct = |p: usize| lat[(p * lat.len()).div_ceil(100).max(1) - 1];
    println!("publish → note by a watching intermem, {events} events");
    println!("| p50 ms | p90 ms | p99 ms | max ms | p99 within 50 ms |");
    println!("|---:|---:|---:|---:|:---:|");
    println!(
        "| {:.2} | {:.2} | {:.2} | {:.2} | {} |",
        pct(50),
        pct(90),
        pct(99),
        lat[lat.len() - 1],
        if pct(99) <= 50.0 { "yes" } else { "no" }
    );
}
