//! `interband demo`, the README's main command: the whole loop, nothing left behind.

mod common;

use common::*;

#[test]
fn the_demo_plays_the_whole_loop_and_leaves_nothing_behind() {
    let w = World::new();
    let tmp = w.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let o = w
        .cmd(&["demo"])
        .env("TMPDIR", &tmp)
        // (Windows' temporary folder.)
        .env("TMP", &tmp)
        .env("TEMP", &tmp)
        .env("NO_COLOR", "1")
        // The caller's settings do not reach the demo: built-in defaults.
        .env("INTERBAND_COMPACT_STRATEGY", "off")
        .env("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "20")
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "GREEN",
        "to the agent: Context YELLOW",
        "to the agent: Context ORANGE",
        "to the agent: Context RED",
        "do not move the parent's level",
        "Project directives, re-injected",
        "Stop › blocked once",
        "note ›",
        "Add retry with exponential backoff",
        "SessionStart(compact) › the latest note comes back",
        "done:",
    ] {
        assert!(out.contains(needle), "the demo lacks {needle:?}:\n{out}");
    }
    assert!(!out.contains('\x1b'), "NO_COLOR is respected");
    assert_eq!(
        files_under(&tmp),
        Vec::<String>::new(),
        "nothing left behind"
    );
    assert_eq!(
        files_under(&w.root()),
        Vec::<String>::new(),
        "the caller's root is untouched"
    );
    assert_eq!(
        files_under(&w.home()),
        Vec::<String>::new(),
        "the caller's home is untouched"
    );
}

#[test]
fn a_demo_whose_reader_goes_away_still_cleans_up() {
    use std::io::BufRead;
    let w = World::new();
    let tmp = w.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = w
        .cmd(&["demo"])
        .env("TMPDIR", &tmp)
        .env("TMP", &tmp)
        .env("TEMP", &tmp)
        .stdout(std::process::Stdio::piped())
        .start();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap(); // then the pipe is closed, as `| head -1` does
    let status = child.wait().unwrap();
    assert!(first.contains("interband demo"), "{first}");
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        files_under(&tmp),
        Vec::<String>::new(),
        "nothing left behind"
    );
}

/// Starts demos until `stop` (given the child once its private folder is
/// there) stops one mid-run, at most 50 (the demo is quick); each leaves
/// nothing behind, and the one stopped says so.
fn a_demo_is_stopped_mid_run(
    what: &str,
    set: impl Fn(&mut std::process::Command),
    stop: impl Fn(&std::process::Child),
) {
    for _ in 0..50 {
        let w = World::new();
        let tmp = w.dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let mut cmd = w.cmd(&["demo"]);
        cmd.env("TMPDIR", &tmp)
            .env("TMP", &tmp)
            .env("TEMP", &tmp)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        set(&mut cmd);
        let child = cmd.start();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while files_under(&tmp).is_empty() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        stop(&child);
        let o = wait_within(child, std::time::Duration::from_secs(60));
        assert_eq!(
            files_under(&tmp),
            Vec::<String>::new(),
            "{what}: nothing left behind"
        );
        if code(&o) != 0 {
            assert!(stderr(&o).contains("stopped"), "{what}: {}", stderr(&o));
            return;
        }
    }
    panic!("{what}: the demo was never stopped mid-run in 50 runs");
}

#[test]
#[cfg(unix)] // Unix's signals; Windows' below
fn a_demo_stopped_by_a_signal_leaves_nothing_behind() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // Held still (SIGSTOP), told to stop, then let go.
        a_demo_is_stopped_mid_run(
            &format!("signal {signal}"),
            |_| {},
            |child| {
                let pid = child.id() as i32;
                // SAFETY: signals to our own child, waited for after.
                unsafe {
                    libc::kill(pid, libc::SIGSTOP);
                    libc::kill(pid, signal);
                    libc::kill(pid, libc::SIGCONT);
                }
            },
        );
    }
}

/// Windows' counterpart of the signals: Ctrl-Break (and a closed console,
/// which no program can send, through the same handler) stops the demo,
/// which leaves nothing behind.
#[test]
#[cfg(windows)]
#[cfg_attr(
    target_env = "gnu",
    ignore = "Wine sends no console control event (GenerateConsoleCtrlEvent: invalid access): runs on Windows"
)]
fn a_demo_stopped_by_ctrl_break_leaves_nothing_behind() {
    use std::os::windows::process::CommandExt;
    use windows_sys::Win32::System::Console::{
        AllocConsole, CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent,
    };
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x200;
    // The event goes to a process group on this process's console: one is
    // made where the test runs without one (already there: no change).
    // SAFETY: no arguments; fails harmlessly where a console is there.
    unsafe { AllocConsole() };
    a_demo_is_stopped_mid_run(
        "Ctrl-Break",
        |c| {
            c.creation_flags(CREATE_NEW_PROCESS_GROUP);
        },
        |child| {
            // SAFETY: the group is the child's own (its id).
            let sent = unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, child.id()) };
            assert_ne!(sent, 0, "{}", std::io::Error::last_os_error());
        },
    );
}
