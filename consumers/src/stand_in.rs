//! For tests: the test binary itself stands in for the command a consumer
//! runs (a wrapped statusline, a compaction command), so that the same
//! tests run on Unix and on Windows with no shell. [`command`] gives the
//! argv; started with it, the binary does the steps before its test
//! harness starts, and exits.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const FLAG: &str = "--interband-stand-in";

/// The argv of a stand-in that does `steps`, in order: `["print", TEXT]`,
/// `["drain"]` (reads stdin to its end), `["count"]` (reads stdin and
/// prints how many bytes it had), `["append", PATH]` (adds a line `x` to
/// PATH), `["sleep", MS]`, `["background", STEPS, PID_FILE]` (starts a
/// stand-in doing STEPS that keeps this one's stdout, writes its process
/// id to PID_FILE, and does not wait for it), `["exit", CODE]`.
pub(crate) fn command(steps: Value) -> Vec<String> {
    let exe = std::env::current_exe().expect("the test binary's path");
    vec![
        exe.display().to_string(),
        FLAG.to_owned(),
        steps.to_string(),
    ]
}

#[ctor::ctor]
fn stand_in() {
    let mut args = std::env::args();
    if args.nth(1).as_deref() != Some(FLAG) {
        return;
    }
    let steps: Value = serde_json::from_str(&args.next().unwrap_or_default()).unwrap_or_default();
    std::process::exit(run(&steps));
}

fn run(steps: &Value) -> i32 {
    let mut out = std::io::stdout();
    for step in steps.as_array().into_iter().flatten() {
        let text = |i: usize| step[i].as_str().unwrap_or_default().to_owned();
        match step[0].as_str().unwrap_or_default() {
            "print" => {
                let _ = out.write_all(text(1).as_bytes());
                let _ = out.flush();
            }
            "drain" => {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            }
            "count" => {
                let mut all = Vec::new();
                let _ = std::io::stdin().read_to_end(&mut all);
                let _ = writeln!(out, "{}", all.len());
            }
            "append" => {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(text(1))
                    .expect("the stand-in's file");
                let _ = f.write_all(b"x\n");
            }
            "sleep" => std::thread::sleep(Duration::from_millis(step[1].as_u64().unwrap_or(0))),
            // Left running on purpose: it outlives this stand-in.
            #[allow(clippy::zombie_processes)]
            "background" => {
                let argv = command(step[1].clone());
                let child = Command::new(&argv[0])
                    .args(&argv[1..])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("the stand-in's child");
                std::fs::write(text(2), child.id().to_string()).expect("the child's id");
            }
            "exit" => return step[1].as_i64().unwrap_or(1) as i32,
            other => panic!("stand-in: no step {other:?}"),
        }
    }
    0
}

/// Whether process `pid` is running (not ended, nor a zombie waiting for
/// whoever inherited it).
pub(crate) fn alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    return std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    });
    #[cfg(all(unix, not(target_os = "linux")))]
    // SAFETY: kill(2) with signal 0 only checks; no memory is involved.
    return unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
    #[cfg(windows)]
    {
        use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
        use windows_sys::Win32::System::Threading::{
            GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
        };
        // SAFETY: the handle is checked, read once and closed.
        unsafe {
            let process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
            if process.is_null() {
                return false;
            }
            let mut code = 0;
            let ok = GetExitCodeProcess(process, &mut code) != 0;
            CloseHandle(process);
            ok && code == STILL_ACTIVE as u32
        }
    }
}
