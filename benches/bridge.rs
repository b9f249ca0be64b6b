//! Publish on one machine to delivery on another, through a real NATS server, side by side
//! with a local watch's latency, at a sustained load; then the bridge's memory while the server
//! is down under the same load.
//!
//! Two roots stand for two machines: root A with `interband bridge --host a`, root B with
//! `--host b`, one `nats-server` (JetStream, temp store, loopback). A writer publishes on A's
//! shared channel `interlock/coordination`, `SESSIONS` keys at `RATE` values per second each,
//! the send time in the payload; a subscription on B times each value's arrival, and a
//! subscription on A times the same values locally. Reports p50/p90/p99 for both.
//!
//! Run: `cargo bench --bench bridge`. Environment: `INTERBAND_BENCH_SESSIONS` (100),
//! `INTERBAND_BENCH_RATE` (10 values/s per session), `INTERBAND_BENCH_SECS` (10),
//! `INTERBAND_BENCH_DOWN_SECS` (60), `INTERBAND_NATS_SERVER` (else `nats-server` on PATH),
//! `INTERBAND_BENCH_DIR`: where the two roots and the server's store go (default `/dev/shm`
//! when there is one, else the temp folder). Two machines would each write to their own disk;
//! here both roots share one, and at this load (2,000 files created and removed a second)
//! ext4's inode allocator becomes the bottleneck (it scans past recently deleted inodes), so
//! memory stands in for two disks unless told otherwise.
//! With `INTERBAND_BENCH_ONLY=flood`, instead: another machine floods the bucket with
//! `INTERBAND_BENCH_FLOOD_KEYS` (200,000) distinct keys, and the receiving bridge's memory is
//! reported against its stated bound (BENCHMARKS.md, SECURITY.md).
//! A benchmark, not a test: exits 0 whatever the numbers, 1 when it cannot run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use interband::{Bus, Subscription, WatchOptions};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_interband");

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn server(bin: &Path, store: &Path, port: u16) -> Result<Kill, String> {
    let child = Command::new(bin)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("the server never listened".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Kill(child))
}

fn bridge(root: &Path, url: &str, host: &str) -> Result<Kill, String> {
    let child = Command::new(BIN)
        .args(["bridge", "--url", url, "--host", host])
        .env("INTERBAND_ROOT", root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    Ok(Kill(child))
}

fn connected(bus: &Bus) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !interband_bridge::status(bus).is_some_and(|s| s.connected) {
        if Instant::now() > deadline {
            return Err("a bridge never connected".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Collects, on `bus`, each arriving value's latency (now - its `sent_us`), in µs.
fn timer(bus: Bus, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        let mut sub = Subscription::new(
            &bus,
            &["interlock/coordination/*"],
            WatchOptions {
                initial: false,
                ..WatchOptions::default()
            },
        )
        .expect("subscription");
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            if let Ok(Some(m)) = sub.next(Duration::from_millis(100))
                && let Some(sent) = m.envelope.payload["sent_us"].as_u64()
            {
                out.push(now_us().saturating_sub(sent));
            }
        }
        out
    })
}

/// Publishes on A for `secs` at the configured load.
fn load(bus: &Bus, sessions: u64, rate: u64, secs: u64) -> Result<u64, String> {
    let period = Duration::from_secs_f64(1.0 / (sessions * rate) as f64);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        let key = format!("s{}", n % sessions);
        let payload = json!({"layer": "bench", "icon": "b", "text": format!("v{n}"),
            "priority": 1, "ts": "2026-11-30T00:00:00Z", "sent_us": now_us()});
        bus.publish(
            "interlock",
            "coordination",
            &key,
            "coordination_signal",
            &key,
            payload,
        )
        .map_err(|e| e.to_string())?;
        n += 1;
        let due = start + period * n as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    Ok(n)
}

fn pct(xs: &mut [u64], p: usize) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_unstable();
    xs[((xs.len() - 1) * p) / 100] as f64 / 1000.0
}

fn rss_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A process's CPU time so far (user + system), seconds (Linux's `/proc`;
/// 0 elsewhere).
fn cpu_secs(pid: u32) -> f64 {
    let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the command's closing parenthesis; utime and stime are 14 and 15.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    #[cfg(unix)]
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    // (No /proc on Windows: the ticks are 0 there, said as 0 s.)
    #[cfg(not(unix))]
    let hz = 100;
    ticks as f64 / hz as f64
}

/// `INTERBAND_NATS_SERVER`, else `nats-server` on PATH.
fn nats_bin() -> PathBuf {
    std::env::var_os("INTERBAND_NATS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nats-server"))
}

/// Where the roots and the server's store go (see the module's docs).
fn bench_dir() -> PathBuf {
    std::env::var_os("INTERBAND_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from("/dev/shm")).filter(|p| p.is_dir()))
        .unwrap_or_else(std::env::temp_dir)
}

fn bench() -> Result<(), String> {
    let nats = nats_bin();
    let (sessions, rate) = (
        env_num("INTERBAND_BENCH_SESSIONS", 100),
        env_num("INTERBAND_BENCH_RATE", 10),
    );
    let secs = env_num("INTERBAND_BENCH_SECS", 10);
    let down = env_num("INTERBAND_BENCH_DOWN_SECS", 60);
    let parent = bench_dir();
    let tmp = tempfile::tempdir_in(&parent).map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let store = tmp.path().join("store");
    let mut srv = Some(server(&nats, &store, port)?);
    let (root_a, root_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (a, b) = (Bus::new(&root_a), Bus::new(&root_b));
    a.root_dir(true).map_err(|e| e.to_string())?;
    b.root_dir(true).map_err(|e| e.to_string())?;
    let bridge_a = bridge(&root_a, &url, "a")?;
    let bridge_b = bridge(&root_b, &url, "b")?;
    connected(&a)?;
    connected(&b)?;

    let stop = Arc::new(AtomicBool::new(false));
    let remote = timer(b.clone(), stop.clone());
    let local = timer(a.clone(), stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    let sent = load(&a, sessions, rate, secs)?;
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let mut remote = remote.join().map_err(|_| "timer panicked")?;
    let mut local = local.join().map_err(|_| "timer panicked")?;

    println!(
        "load: {sessions} sessions x {rate} values/s for {secs} s = {sent} values; nats-server on loopback; roots in {}\n",
        parent.display()
    );
    println!("| path | delivered | p50 ms | p90 ms | p99 ms |");
    println!("|---|---:|---:|---:|---:|");
    for (name, xs) in [
        ("local watch (publish on A, seen on A)", &mut local),
        ("bridged (publish on A, applied and seen on B)", &mut remote),
    ] {
        let n = xs.len();
        println!(
            "| {name} | {n} | {:.1} | {:.1} | {:.1} |",
            pct(xs, 50),
            pct(xs, 90),
            pct(xs, 99)
        );
    }
    println!(
        "\nCPU during the run: bridge A {:.1} s, bridge B {:.1} s, the server {:.1} s",
        cpu_secs(bridge_a.0.id()),
        cpu_secs(bridge_b.0.id()),
        srv.as_ref().map_or(0.0, |s| cpu_secs(s.0.id()))
    );
    if local.len() as u64 != sent || remote.len() as u64 != sent {
        println!(
            "\n(A watch coalesces values of one key written faster than it reads them: delivered can be fewer than sent.)"
        );
    }

    // The server down for a while, under the same load: the bridge holds the latest per key.
    let pid = bridge_a.0.id();
    let before = rss_kb(pid, "VmRSS:");
    srv.take();
    let sent = load(&a, sessions, rate, down)?;
    let during = rss_kb(pid, "VmHWM:");
    let held = interband_bridge::status(&a).map_or(0, |s| s.pending);
    srv = Some(server(&nats, &store, port)?);
    let deadline = Instant::now() + Duration::from_secs(60);
    while interband_bridge::status(&a).is_none_or(|s| s.pending > 0 || !s.connected) {
        if Instant::now() > deadline {
            return Err("the bridge did not catch up".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "\nserver down {down} s under load ({sent} values sent meanwhile): bridge RSS {before} kB before, peak {during} kB; held {held} values (one per key), all sent once the server was back"
    );
    drop(srv);
    Ok(())
}

/// Another machine floods the bucket with `keys` distinct keys, half on a
/// shared channel (`interlock/coordination`, from 10 made-up hosts), half on
/// an observed one (`interline/context`, from 1,000 made-up hosts), written
/// straight into the server as fast as it takes them (the NATS protocol's
/// `PUB` on the bucket's subjects). Reports the receiving bridge's memory
/// against its stated bound, and what it kept, pruned and dropped.
fn flood(nats: &Path, parent: &Path, keys: u64) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Write};
    let tmp = tempfile::tempdir_in(parent).map_err(|e| e.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let _srv = server(nats, &tmp.path().join("store"), port)?;
    let root = tmp.path().join("b");
    let b = Bus::new(&root);
    b.root_dir(true).map_err(|e| e.to_string())?;
    let victim = bridge(&root, &url, "b")?;
    connected(&b)?;
    let pid = victim.0.id();
    let before = rss_kb(pid, "VmRSS:");

    let conn = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(conn.try_clone().map_err(|e| e.to_string())?);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, conn);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?; // INFO
    let started = Instant::now();
    write!(out, "CONNECT {{\"verbose\":false,\"pedantic\":false}}\r\n")
        .map_err(|e| e.to_string())?;
    for i in 0..keys {
        let (subject, envelope) = if i % 2 == 0 {
            let payload = json!({"layer": "flood", "icon": "f", "text": format!("v{i}"),
                "priority": 1, "ts": "2026-11-30T00:00:00Z"});
            (
                format!("x{}/interlock/coordination/k{i}", i % 10),
                json!({"version": "1.0.0", "namespace": "interlock", "type": "coordination_signal",
                    "session_id": format!("k{i}"), "timestamp": "2026-11-30T00:00:00Z", "seq": 1,
                    "payload": payload}),
            )
        } else {
            (
                format!("o{}/interline/context/k{i}", i % 1000),
                json!({"version": "1.0.0", "namespace": "interline", "type": "flood",
                    "session_id": format!("k{i}"), "timestamp": "2026-11-30T00:00:00Z", "seq": 1,
                    "payload": {"n": i}}),
            )
        };
        let body = envelope.to_string();
        write!(
            out,
            "PUB $KV.interband.{subject} {}\r\n{body}\r\n",
            body.len()
        )
        .map_err(|e| e.to_string())?;
    }
    write!(out, "PING\r\n").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 || line.starts_with("PONG")
        {
            break;
        }
    }
    let sent_in = started.elapsed();
    // Until the bridge has seen every value the server stored (its
    // revisions count them; a server under this flood may refuse some), and
    // says it is caught up, for 3 s on end.
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut peak = 0;
    let mut last = (0, Instant::now());
    loop {
        peak = peak.max(rss_kb(pid, "VmRSS:"));
        let s = interband_bridge::status(&b).unwrap_or_default();
        if s.last_revision >= keys {
            break;
        }
        if s.last_revision != last.0 || s.behind > 0 {
            last = (s.last_revision, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(3) {
            break;
        }
        if Instant::now() > deadline {
            return Err("the bridge did not take in the flood".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = last.1.duration_since(started);
    let hwm = rss_kb(pid, "VmHWM:").max(peak);
    let after = rss_kb(pid, "VmRSS:");
    let s = interband_bridge::status(&b).unwrap_or_default();
    println!(
        "\nflood: {keys} distinct keys from 1,010 made-up machines, sent in {:.1} s; the server stored {}; the bridge took them in by {:.1} s",
        sent_in.as_secs_f64(),
        s.last_revision,
        took.as_secs_f64()
    );
    println!("| bridge B | kB |\n|---|---:|");
    println!("| RSS before | {before} |\n| RSS peak (VmHWM) | {hwm} |\n| RSS after | {after} |");
    println!(
        "applied or kept {}, dropped {} (invalid, or past {} machines), pruned {}, own writes forgotten {} (past {} addresses); files left under the root: {}",
        s.applied,
        s.dropped,
        interband_bridge::MAX_ORIGINS,
        s.pruned,
        s.forgotten,
        interband_bridge::MAX_REMEMBERED,
        walk(&root)
    );
    Ok(())
}

/// The files under `dir`, every level.
fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path()),
                _ => 1,
            })
            .sum()
    })
}

fn main() -> ExitCode {
    if std::env::var("INTERBAND_BENCH_ONLY").as_deref() == Ok("flood") {
        let keys = env_num("INTERBAND_BENCH_FLOOD_KEYS", 200_000);
        return match flood(&nats_bin(), &bench_dir(), keys) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bridge bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bridge bench: {e}");
            ExitCode::FAILURE
        }
    }
}
