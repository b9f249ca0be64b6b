//! What a hook call costs in memory for a large input, measured from the
//! outside (the child's peak resident set, which the kernel reports when it
//! is waited on): a few times the input, whatever the host's input shape.
//! One test in this binary, so the peak is this child's alone.

// A child's peak memory as its system counts it: on Unix the peak
// resident set from getrusage(2) (the children waited on so far); on
// Windows the child's own peak working set, read from its handle once it
// has ended.

mod common;

use common::*;
use serde_json::{Value, json};
use std::process::{Command, Output};

/// Runs `cmd` to its end: what it printed, and the peak memory it used, in bytes.
#[cfg(unix)]
fn run_measured(cmd: &mut Command) -> (Output, u64) {
    let o = cmd.finish();
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    (o, usage.ru_maxrss as u64 * 1024)
}

/// Runs `cmd` to its end: what it printed, and the peak memory it used, in bytes.
#[cfg(windows)]
fn run_measured(cmd: &mut Command) -> (Output, u64) {
    use std::io::Read as _;
    use std::os::windows::io::AsRawHandle as _;
    use std::process::Stdio;
    use windows_sys::Win32::System::ProcessStatus::{
        K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
    };
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).start();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let mut stderr = Vec::new();
    err.read_to_end(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    let stdout = reader.join().unwrap();
    // SAFETY: a zeroed plain struct, its size given; the child's handle is
    // open until `child` is dropped.
    let mut counters: PROCESS_MEMORY_COUNTERS = unsafe { std::mem::zeroed() };
    counters.cb = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
    let read =
        unsafe { K32GetProcessMemoryInfo(child.as_raw_handle(), &mut counters, counters.cb) };
    assert_ne!(read, 0, "{}", std::io::Error::last_os_error());
    (
        Output {
            status,
            stdout,
            stderr,
        },
        counters.PeakWorkingSetSize as u64,
    )
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine 8.0 counts no memory for a process that has ended (its peak working set reads 0); runs on the release workflow's Windows"
)]
fn a_large_hook_input_or_settings_file_costs_a_few_times_its_size() {
    let w = World::new();
    // A tool result of 14 MB in many small values, in Copilot's camelCase
    // shape (1.0.30 to 1.0.49), which the profile reshapes: the case that
    // cost 40x. Written to a file and dropped before the hook starts, so
    // the child's peak (which counts from the fork) is the hook's own.
    let input_file = w.dir.path().join("input.json");
    let size = {
        let mut camel: Value = serde_json::from_slice(
            &std::fs::read(
                repo().join("tests/fixtures/copilot-cli-1.0.30/camel.postToolUse.input.json"),
            )
            .unwrap(),
        )
        .unwrap();
        camel["toolResult"]["textResultForLlm"] = json!("@BIG@");
        camel["cwd"] = json!(w.dir.path());
        let mut list = String::from("[");
        for i in 0..200_000 {
            if i > 0 {
                list.push(',');
            }
            list.push_str(&format!(
                r#"{{"line":{i},"text":"some output of a tool, in a list of many small values"}}"#
            ));
        }
        list.push(']');
        let text = camel.to_string().replace("\"@BIG@\"", &list);
        std::fs::write(&input_file, &text).unwrap();
        text.len() as u64
    };
    assert!(size > 14_000_000, "{size}");
    let (o, peak) = run_measured(
        w.cmd(&["hook", "--host", "copilot"])
            .stdin(std::fs::File::open(&input_file).unwrap()),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(peak > 1 << 20, "a peak was read: {peak}");
    assert!(
        peak < 6 * size,
        "the hook's peak resident set was {} MB for a {} MB input",
        peak >> 20,
        size >> 20
    );
    // install on a settings file of 15 MB (compact, as a script writes
    // it): bounded too, however the file is laid out.
    let settings = w.dir.path().join("settings.json");
    let allow: Vec<String> = (0..700_000).map(|i| format!("Bash(tool-{i}:*)")).collect();
    let text =
        serde_json::to_string(&json!({"model": "opus", "permissions": {"allow": allow}})).unwrap();
    std::fs::write(&settings, &text).unwrap();
    let size = text.len() as u64;
    drop((allow, text));
    let (o, peak) =
        run_measured(&mut w.cmd(&["install", "--settings", settings.to_str().unwrap()]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        peak < 24 * size,
        "install's peak resident set was {} MB for a {} MB settings file",
        peak >> 20,
        size >> 20
    );
    // And it was handled: the call counted for the session.
    let session = "c926bb6f-7b34-4332-a869-d84319338e17";
    let p = w.bus().read("interpulse", "pressure", session).unwrap();
    assert_eq!(
        serde_json::to_value(p.envelope.payload).unwrap()["calls"],
        1
    );
}
