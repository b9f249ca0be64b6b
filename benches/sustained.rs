//! Sustained load on the bus: 100 sessions publishing their pressure 10 times
//! a second each (1000 publishes/s) for 10 s, while one subscription watches
//! them all. Reports publish → delivery latency (p50, p99, max) and how many
//! values were delivered. On a latest-value channel a value overwritten before
//! the watcher reads it is coalesced (the newer one is delivered instead);
//! that is the contract, and the count shows how often it happens.
//!
//! Run: `cargo bench --bench sustained` (`INTERBAND_BENCH_SECS`, `INTERBAND_BENCH_SESSIONS`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use interband::payloads::{Level, Pressure};
use interband::{Bus, Subscription, WatchOptions};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let secs = env("INTERBAND_BENCH_SECS", 10);
    let sessions = env("INTERBAND_BENCH_SESSIONS", 100) as usize;
    let tmp = tempfile::tempdir().expect("temp dir");
    let bus = Bus::new(tmp.path().join("root"));
    let epoch = Instant::now();
    let stop = AtomicBool::new(false);
    let mut sub = Subscription::new(
        &bus,
        &["interpulse/pressure/*"],
        WatchOptions {
            initial: false,
            ..Default::default()
        },
    )
    .expect("subscription");
    let (published, latencies) = std::thread::scope(|s| {
        // Two publisher threads share the sessions; each session publishes every 100 ms.
        let publishers: Vec<_> = (0..2)
            .map(|t| {
                let (bus, stop) = (&bus, &stop);
                s.spawn(move || {
                    let mine: Vec<String> = (0..sessions)
                        .filter(|i| i % 2 == t)
                        .map(|i| format!("s{i}"))
                        .collect();
                    let mut count = 0u64;
                    let mut next = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        for key in &mine {
                            let p = Pressure {
                                level: Level::Yellow,
                                ts: epoch.elapsed().as_secs_f64(),
                                ..Default::default()
                            };
                            bus.publish_typed(key, key, &p).expect("publish");
                            count += 1;
                        }
                        next += Duration::from_millis(100);
                        if let Some(wait) = next.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait); // pacing the load, not synchronization
                        }
                    }
                    count
                })
            })
            .collect();
        let mut lat = Vec::new();
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if let Some(m) = sub.next(Duration::from_millis(100)).expect("watch") {
                let sent = m.envelope.payload["ts"].as_f64().unwrap_or(0.0);
                lat.push((epoch.elapsed().as_secs_f64() - sent) * 1e3);
            }
        }
        stop.store(true, Ordering::Relaxed);
        let published: u64 = publishers
            .into_iter()
            .map(|h| h.join().expect("publisher"))
            .sum();
        (published, lat)
    });
    let mut lat = latencies;
    lat.sort_by(f64::total_cmp);
    let pct = |p: usize| {
        lat.get((p * lat.len()).div_ceil(100).max(1) - 1)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!("{sessions} sessions × 10 publishes/s for {secs} s, one subscription");
    println!("| published | delivered | p50 ms | p99 ms | max ms | p99 within 50 ms |");
    println!("|---:|---:|---:|---:|---:|:---:|");
    println!(
        "| {published} | {} | {:.2} | {:.2} | {:.2} | {} |",
        lat.len(),
        pct(50),
        pct(99),
        lat.last().copied().unwrap_or(f64::NAN),
        if pct(99) <= 50.0 { "yes" } else { "no" }
    );
}
