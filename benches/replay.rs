//! `interband replay` of a large transcript, side by side with the cost of
//! merely reading the file (`wc -l`, the floor any replay pays).
//!
//! The transcript is generated in Claude Code's shapes: a long session of
//! tool calls whose results are 2-40 KB of code-like text (each written twice, as the client
//! does: in the message and in `toolUseResult`), usage rising to the
//! compaction point and compacting (with the checkpoints, notes, trigger
//! firings and re-injections that brings), text-only answers ending turns.
//! The replay runs every one of those hook events through the hooks' own
//! code, so it is measured with the notes on (as installed) and off.
//!
//! Run: `cargo bench --bench replay`. Environment:
//! - `INTERBAND_BENCH_REPLAY_MB`: the transcript's size, default 200.
//! - `INTERBAND_BENCH_ROUNDS`: rounds, default 3.
//! - `INTERBAND_BENCH_BASELINE`: another `interband` binary (say, an earlier
//!   commit's release build): its replay is measured in the same rounds,
//!   marked "(baseline)", for a before/after comparison side by side.
//!
//! Prints a markdown table (median wall time, ratio to the floor, MB/s,
//! calls/s, peak memory, and the most `/dev/shm` grew: the replay's private
//! folder, its copy of the transcript included, lives there) and writes it
//! as JSON to `target/bench-replay.json`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_interband");

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// About `len` bytes of what tools return: source code and its output, in
/// words, punctuation, quotes and line breaks (which JSON escapes), as a
/// real result has; not one byte repeated, which would flatter any search
/// through it.
fn text(r: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "fn",
        "let",
        "mut",
        "self",
        "return",
        "match",
        "Some(x)",
        "None",
        "Ok(())",
        "impl",
        "pub",
        "struct",
        "use",
        "crate::bus",
        "the",
        "file",
        "error:",
        "warning:",
        "at",
        "src/lib.rs:42:7",
        "=>",
        "{",
        "}",
        "(",
        ")",
        ";",
        "&str",
        "Vec<u8>",
        "0x1f",
        "\"path\"",
        "'a'",
        "//",
        "test",
        "passed",
        "failed",
        "ok",
        "value",
        "line",
        "\\n",
        "\n",
        "\n    ",
        "\n        ",
        "\t",
        "+",
        "-",
        "*",
        "==",
        "!=",
        "<",
        ">",
        "config",
        "read",
        "write",
        "session",
        "context",
        "tokens",
        "42",
        "1.5",
        "true",
        "false",
        "[]",
    ];
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(WORDS[r.below(WORDS.len() as u64) as usize]);
        out.push(' ');
    }
    out
}

/// Writes a session of about `mb` MB; returns its tool calls. With
/// `usage` false its responses state no usage (Copilot CLI before 1.0.102,
/// a Claude transcript written without it): every figure is the heuristic's.
fn generate(path: &Path, mb: u64, with_usage: bool) -> std::io::Result<u64> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let size = std::cell::Cell::new(0u64);
    let (mut n, mut t, mut used) = (0u64, 0u64, 20_000u64);
    let session = "3c9d1e2f-0a4b-4c5d-8e6f-7a8b9c0d1e2f";
    let mut line = |f: &mut std::io::BufWriter<std::fs::File>, mut v: serde_json::Value| {
        t += 3;
        v["sessionId"] = session.into();
        v["cwd"] = "/work/big".into();
        v["isSidechain"] = false.into();
        v["timestamp"] = format!(
            "2026-11-30T{:02}:{:02}:{:02}.000Z",
            t / 3600 % 24,
            t / 60 % 60,
            t % 60
        )
        .into();
        let text = v.to_string();
        size.set(size.get() + text.len() as u64 + 1);
        writeln!(f, "{text}")
    };
    let usage = |u: u64| {
        if with_usage {
            serde_json::json!({"input_tokens": u / 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": u - u / 10, "output_tokens": 50})
        } else {
            serde_json::Value::Null
        }
    };
    line(
        &mut f,
        serde_json::json!({"type": "user", "message": {"role": "user", "content": "Refactor the parser"}}),
    )?;
    let tools = ["Read", "Bash", "Edit", "Grep"];
    while size.get() < mb << 20 {
        n += 1;
        used = (used + 500 + r.below(2500)).min(180_000);
        let tool = tools[r.below(4) as usize];
        line(
            &mut f,
            serde_json::json!({"type": "assistant", "message": {"id": format!("msg_{n}"), "type": "message", "role": "assistant",
                "model": "claude-opus-5-5", "stop_reason": "tool_use", "usage": usage(used),
                "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": tool,
                    "input": {"command": format!("cargo test step{n}"), "file_path": format!("src/f{n}.rs")}}]}}),
        )?;
        let len = 2000 + r.below(38_000) as usize;
        let body = text(&mut r, len);
        line(
            &mut f,
            serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"tool_use_id": format!("toolu_{n}"),
                "type": "tool_result", "content": body, "is_error": false}]}, "toolUseResult": {"stdout": body}}),
        )?;
        if n % 40 == 0 {
            line(
                &mut f,
                serde_json::json!({"type": "assistant", "message": {"id": format!("msg_t{n}"), "type": "message", "role": "assistant",
                    "model": "claude-opus-5-5", "stop_reason": "end_turn", "usage": usage(used),
                    "content": [{"type": "text", "text": "Done with this step."}]}}),
            )?;
            line(
                &mut f,
                serde_json::json!({"type": "user", "message": {"role": "user", "content": "Go on"}}),
            )?;
        }
        if used >= 170_000 {
            line(
                &mut f,
                serde_json::json!({"type": "system", "subtype": "compact_boundary", "uuid": format!("b{n}"),
                    "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": used}}),
            )?;
            line(
                &mut f,
                serde_json::json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": "Summary: parser work so far"}}),
            )?;
            used = 15_000;
        }
    }
    f.flush()?;
    Ok(n)
}

/// Bytes in use on the file system holding `path` (0 when unknown, and
/// on Windows, which has no `/dev/shm`).
#[cfg(windows)]
fn used_bytes(_path: &std::ffi::CStr) -> u64 {
    0
}

/// Bytes in use on the file system holding `path` (0 when unknown).
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)]
fn used_bytes(path: &std::ffi::CStr) -> u64 {
    // SAFETY: an all-zero statvfs is valid; statvfs fills it for a valid path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
        return 0;
    }
    // (The fields' widths differ between systems: u64 on Linux, u32 and
    // u64 on macOS.)
    (s.f_blocks as u64).saturating_sub(s.f_bfree as u64) * s.f_frsize as u64
}

/// Runs `argv` to completion; returns the wall time (s), the child's peak
/// memory (KB) and the most `/dev/shm` (where replay keeps its private
/// folder, in memory) grew meanwhile (KB).
fn run(argv: &[&str], env: &[(&str, &str)]) -> Result<(f64, u64, u64), String> {
    let shm = c"/dev/shm";
    let base = used_bytes(shm);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(used_bytes(shm).saturating_sub(base));
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            peak
        })
    };
    let start = Instant::now();
    let child = Command::new(argv[0])
        .args(&argv[1..])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{argv:?}: {e}"))?;
    #[cfg(windows)]
    {
        // Windows: the time alone (no wait4's peak memory there yet).
        let mut child = child;
        let status = child.wait().map_err(|e| format!("{argv:?}: {e}"))?;
        let secs = start.elapsed().as_secs_f64();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = sampler.join();
        if !status.success() {
            return Err(format!("{argv:?} failed with {status}"));
        }
        Ok((secs, 0, 0))
    }
    #[cfg(unix)]
    {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = child.id() as libc::pid_t;
        // SAFETY: waits for the child just spawned, with valid out-pointers.
        if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } != pid {
            return Err(format!("{argv:?}: wait4 failed"));
        }
        let secs = start.elapsed().as_secs_f64();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let shm_peak = sampler.join().unwrap_or(0) / 1024;
        if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            return Err(format!("{argv:?} failed with status {status}"));
        }
        Ok((secs, usage.ru_maxrss as u64, shm_peak))
    }
}

fn bench() -> Result<(), String> {
    let mb: u64 = std::env::var("INTERBAND_BENCH_REPLAY_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let rounds: usize = std::env::var("INTERBAND_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3);
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path: PathBuf = tmp
        .path()
        .join("3c9d1e2f-0a4b-4c5d-8e6f-7a8b9c0d1e2f.jsonl");
    let calls =
        generate(&path, mb, true).map_err(|e| format!("cannot write the transcript: {e}"))?;
    // The same session with no usage stated, a quarter of the size: each
    // call's hook finds no figure, and must not read the whole file again.
    let bare_path = tmp
        .path()
        .join("5d2e3f4a-1b2c-4d3e-9f4a-8b9c0d1e2f3a.jsonl");
    let bare_calls = generate(&bare_path, mb.div_ceil(4), false)
        .map_err(|e| format!("cannot write the transcript: {e}"))?;
    let bare = bare_path.to_str().ok_or("a non-UTF-8 temp path")?;
    if let Some(keep) = std::env::var_os("INTERBAND_BENCH_KEEP") {
        // For profiling: keep a copy of the generated transcript and stop.
        std::fs::copy(&path, &keep).map_err(|e| e.to_string())?;
        println!(
            "transcript: {} calls, kept at {}",
            calls,
            Path::new(&keep).display()
        );
        return Ok(());
    }
    let bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    let file = path.to_str().ok_or("a non-UTF-8 temp path")?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let home = home.to_str().ok_or("a non-UTF-8 temp path")?;
    let base = [("HOME", home), ("PATH", "/usr/bin:/bin")];
    let mut off = base.to_vec();
    off.push(("INTERBAND_INTERMEM_ENABLED", "false"));
    let mut keep = base.to_vec();
    keep.push(("INTERBAND_REPLAY_KEEP_COPY", "1"));
    let cases: Vec<Case> = vec![
        (
            "wc -l (reading the file: the floor)",
            vec!["wc", "-l", file],
            base.to_vec(),
        ),
        (
            "interband replay",
            vec![BIN, "replay", "--defaults", file],
            base.to_vec(),
        ),
        // (Without --defaults, which drops every INTERBAND_* variable.)
        (
            "interband replay, notes off",
            vec![BIN, "replay", file],
            off,
        ),
        (
            "interband replay, the whole copy kept",
            vec![BIN, "replay", "--defaults", file],
            keep,
        ),
        (
            "interband replay, no usage stated (a quarter of the size)",
            vec![BIN, "replay", "--defaults", bare],
            base.to_vec(),
        ),
    ];
    let baseline = std::env::var("INTERBAND_BENCH_BASELINE").ok();
    let mut cases = cases;
    if let Some(b) = &baseline {
        if !Path::new(b).is_file() {
            return Err(format!("INTERBAND_BENCH_BASELINE={b}: not a file"));
        }
        cases.push((
            "interband replay (baseline)",
            vec![b.as_str(), "replay", "--defaults", file],
            base.to_vec(),
        ));
        cases.push((
            "interband replay, no usage stated (baseline)",
            vec![b.as_str(), "replay", "--defaults", bare],
            base.to_vec(),
        ));
    }
    let mut samples = vec![Vec::new(); cases.len()];
    let mut peak = vec![0u64; cases.len()];
    let mut shm = vec![0u64; cases.len()];
    for r in 0..rounds {
        for i in (0..cases.len()).map(|i| (r + i) % cases.len()) {
            let (_, argv, env) = &cases[i];
            let (secs, kb, shm_kb) = run(argv, env)?;
            samples[i].push(secs);
            peak[i] = peak[i].max(kb);
            shm[i] = shm[i].max(shm_kb);
        }
    }
    let medians: Vec<f64> = samples
        .iter_mut()
        .map(|xs| {
            xs.sort_by(f64::total_cmp);
            xs[xs.len() / 2]
        })
        .collect();
    let floor = medians[0];
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let bare_bytes = std::fs::metadata(&bare_path)
        .map_err(|e| e.to_string())?
        .len();
    println!(
        "transcript: {:.0} MB, {calls} tool calls; with no usage: {:.0} MB, {bare_calls} tool calls; machine: nproc={cpus}, rounds={rounds}\n",
        bytes as f64 / (1 << 20) as f64,
        bare_bytes as f64 / (1 << 20) as f64
    );
    println!(
        "| case | median s | ratio to the floor | MB/s | calls/s | peak memory MB | peak /dev/shm growth MB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut json = Vec::new();
    for (i, (name, _, _)) in cases.iter().enumerate() {
        let m = medians[i];
        let (bytes, calls) = if name.contains("no usage") {
            (bare_bytes, bare_calls)
        } else {
            (bytes, calls)
        };
        let mbs = bytes as f64 / (1 << 20) as f64 / m;
        let cps = if i == 0 { 0.0 } else { calls as f64 / m };
        println!(
            "| {name} | {m:.2} | {:.1}× | {mbs:.0} | {} | {:.1} | {:.1} |",
            m / floor,
            if i == 0 {
                "-".to_owned()
            } else {
                format!("{cps:.0}")
            },
            peak[i] as f64 / 1024.0,
            shm[i] as f64 / 1024.0
        );
        json.push(
            serde_json::json!({"case": name, "median_s": m, "ratio": m / floor,
            "mb_per_s": mbs, "calls_per_s": cps, "peak_mb": peak[i] as f64 / 1024.0,
            "shm_growth_mb": shm[i] as f64 / 1024.0}),
        );
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let out = target.join("bench-replay.json");
    std::fs::create_dir_all(&target)
        .and_then(|()| {
            std::fs::write(
                &out,
                serde_json::to_string_pretty(&json).expect("serializes") + "\n",
            )
        })
        .map_err(|e| format!("cannot write {}: {e}", out.display()))
}

/// A case: its name, its command line and its environment.
type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>);

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay bench: {e}");
            ExitCode::FAILURE
        }
    }
}
