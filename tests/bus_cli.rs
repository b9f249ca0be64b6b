//! The bus commands through the real binary: round trips, and bad input to
//! every command (a clear one-line error naming the file, the right exit code,
//! nothing partially written).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use common::*;
use serde_json::{Value, json};

const PRESSURE: &str = r#"{"level":"yellow","pressure":61,"est_tokens":1200,"ts":1796000000}"#;

fn publish(w: &World, key: &str, payload: &str) -> std::process::Output {
    w.run(&[
        "publish",
        "intercheck",
        "pressure",
        key,
        "--type",
        "context_pressure",
        "--session",
        key,
        "--payload",
        payload,
    ])
}

fn publish_then_read_round_trips_and_counts_seq() {
    let w = World::new();
    for seq in 1..=3 {
        let o = publish(&w, "sess 1/a", PRESSURE);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let out: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(out["seq"], seq);
        assert!(
            Path::new(out["path"].as_str().unwrap())
                .ends_with(Path::new("intercheck/pressure/sess_1_a.json")),
            "{}",
            out["path"]
        );
    }
    let o = w.run(&["read", "intercheck/pressure/sess 1/a"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let env: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(env["seq"], 3);
    assert_eq!(env["session_id"], "sess 1/a");
    assert_eq!(env["payload"]["level"], "yellow");
    let o = w.run(&["read", "--payload", "intercheck/pressure/sess_1_a"]);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&o)).unwrap(),
        serde_json::from_str::<Value>(PRESSURE).unwrap()
    );
    // By path too.
    let path = w.root().join("intercheck/pressure/sess_1_a.json");
    let o = w.run(&["read", path.to_str().unwrap()]);
    assert_eq!(code(&o), 0);
    // Private files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}

fn publish_reads_the_payload_from_stdin() {
    let w = World::new();
    let o = w.run_with_stdin(
        &[
            "publish",
            "myplugin",
            "status",
            "k",
            "--type",
            "status",
            "--payload",
            "-",
        ],
        br#"{"ok":true}"#,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        w.bus()
            .read("myplugin", "status", "k")
            .unwrap()
            .envelope
            .payload,
        json!({"ok": true})
    );
}

fn ls_lists_matching_messages_and_flags_corrupt_ones() {
    let w = World::new();
    publish(&w, "a", PRESSURE);
    publish(&w, "b", PRESSURE);
    w.run(&[
        "publish",
        "other",
        "chan",
        "c",
        "--type",
        "t",
        "--payload",
        "{}",
    ]);
    let o = w.run(&["ls", "intercheck/*/*"]);
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("intercheck/pressure/a\tcontext_pressure\tseq 1"));
    std::fs::write(w.root().join("other/chan/bad.json"), "{").unwrap();
    let o = w.run(&["ls", "--json"]);
    assert_eq!(code(&o), 1);
    let rows: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter().any(|r| r["address"] == "other/chan/bad"
            && r["error"].as_str().unwrap().contains("bad.json"))
    );
    // A file name no key maps to is flagged, and never printed raw.
    // (Windows has no control characters below 32 in a name: a C1 CSI and
    // a right-to-left override there.)
    let (name, shown) = if cfg!(windows) {
        (
            "a\u{9b}2Jb\u{202e}c",
            "other/chan/a\\x9b2Jb\\u{202e}c\tINVALID\t",
        )
    } else {
        ("a\x1b[2Jb\nc", "other/chan/a\\x1b[2Jb\\x0ac\tINVALID\t")
    };
    std::fs::write(w.root().join(format!("other/chan/{name}.json")), "{}").unwrap();
    let o = w.run(&["ls", "other/*/*"]);
    assert_eq!(code(&o), 1);
    let out = stdout(&o);
    assert!(!out.contains(['\x1b', '\u{9b}', '\u{202e}']), "{out:?}");
    let row = out
        .lines()
        .find(|l| l.starts_with(shown))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("not a key name the bus writes"), "{row}");
}

fn prune_removes_expired_messages_and_stale_temp_files() {
    let w = World::new();
    publish(&w, "old", PRESSURE);
    publish(&w, "new", PRESSURE);
    let dir = w.root().join("intercheck/pressure");
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for name in ["old.json", ".interband-tmp.crashed"] {
        let p = dir.join(name);
        std::fs::write(&p, "{").ok();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(two_hours_ago).unwrap();
    }
    let o = w.run(&["prune", "intercheck/pressure"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let left = files_under(&dir);
    assert!(left.contains(&"new.json".to_owned()), "{left:?}");
    assert!(!left.contains(&"old.json".to_owned()), "{left:?}");
    assert!(
        !left.iter().any(|f| f.starts_with(".interband-tmp")),
        "{left:?}"
    );
    let o = w.run(&["prune", "nochannel"]);
    assert_eq!(code(&o), 2);
}

fn watch_prints_one_line_per_new_value_and_runs_exec_with_argv() {
    let w = World::new();
    publish(&w, "s", PRESSURE);
    let mut child = w
        .cmd(&[
            "watch",
            "--existing",
            "--idle-timeout",
            "30",
            "--count",
            "3",
            "intercheck/pressure/*",
        ])
        .stdout(Stdio::piped())
        .start();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The value present at start comes first: the watcher is now running.
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["address"], "intercheck/pressure/s");
    assert_eq!(first["envelope"]["seq"], 1);
    publish(&w, "s", PRESSURE);
    let second: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(second["envelope"]["seq"], 2);
    publish(&w, "t", PRESSURE);
    let third: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(third["address"], "intercheck/pressure/t");
    assert!(child.wait().unwrap().success());

    // --exec runs Unix programs here (tee, echo, true); on Windows the
    // watch itself is tested above.
    #[cfg(unix)]
    {
        // --exec: the envelope on the command's stdin.
        let out = w.dir.path().join("exec.out");
        let o = w
            .cmd(&[
                "watch",
                "--existing",
                "--idle-timeout",
                "30",
                "--count",
                "1",
                "intercheck/pressure/t",
                "--exec",
                "tee",
                out.to_str().unwrap(),
            ])
            .current_dir(w.dir.path())
            .finish();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let env: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(env["payload"]["level"], "yellow");
        assert_eq!(
            stdout(&o).trim(),
            std::fs::read_to_string(&out).unwrap().trim(),
            "tee copied stdin"
        );

        // Argv, never a shell: `; touch` stays a literal argument of echo.
        let pwned = w.dir.path().join("pwned");
        let o = w
            .cmd(&[
                "watch",
                "--existing",
                "--idle-timeout",
                "30",
                "--count",
                "1",
                "intercheck/pressure/t",
                "--exec",
                "echo",
                "$INTERBAND_SEQ;",
                "touch",
                pwned.to_str().unwrap(),
            ])
            .current_dir(w.dir.path())
            .finish();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            stdout(&o).trim(),
            format!("$INTERBAND_SEQ; touch {}", pwned.display())
        );
        assert!(!pwned.exists());

        // A command that never reads its stdin (here a value bigger than a pipe holds) is fine.
        let big = format!(r#"{{"blob":"{}"}}"#, "x".repeat(300_000));
        let o = w.run_with_stdin(
            &[
                "publish",
                "big",
                "chan",
                "k",
                "--type",
                "t",
                "--payload",
                "-",
            ],
            big.as_bytes(),
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let o = w.run(&[
            "watch",
            "--existing",
            "--idle-timeout",
            "30",
            "--count",
            "1",
            "big/chan/k",
            "--exec",
            "true",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}

/// One stderr line, naming `needle`, and the exit code.
fn assert_fails(o: &std::process::Output, exit: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(code(o), exit, "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

fn bad_payloads_are_refused_and_nothing_is_written() {
    let w = World::new();
    assert_fails(&publish(&w, "k", "{\"level\":"), 1, "not valid JSON");
    assert_fails(
        &publish(
            &w,
            "k",
            r#"{"level":"purple","pressure":1,"est_tokens":1,"ts":1}"#,
        ),
        1,
        "intercheck/pressure/k",
    );
    assert_fails(
        &publish(
            &w,
            "k",
            r#"{"level":"red","pressure":"1","est_tokens":1,"ts":1}"#,
        ),
        1,
        "pressure must be",
    );
    assert_fails(&publish(&w, "k", "[1]"), 1, "payload must be an object");
    let big = format!("{{\"blob\":\"{}\"}}", "x".repeat(5 << 20));
    let o = w.run_with_stdin(
        &["publish", "n", "c", "k", "--type", "t", "--payload", "-"],
        big.as_bytes(),
    );
    assert_fails(&o, 1, "limit");
    assert_fails(
        &w.run(&[
            "publish",
            "../n",
            "c",
            "k",
            "--type",
            "t",
            "--payload",
            "{}",
        ]),
        2,
        "namespace",
    );
    assert_eq!(
        files_under(&w.root()),
        Vec::<String>::new(),
        "nothing written"
    );
}

fn bad_files_get_one_line_naming_them() {
    let w = World::new();
    let dir = w.dir.path();
    let big = dir.join("big.json");
    std::fs::write(&big, vec![b' '; 5 << 20]).unwrap();
    let broken = dir.join("broken.json");
    std::fs::write(&broken, r#"{"version":"1.0.0","namespace":"#).unwrap();
    let link = dir.join("link.json");
    symlink(repo().join("tests/fixtures/v1/valid/pressure.json"), &link);
    let wrong = dir.join("wrong.json");
    std::fs::write(&wrong, r#"{"version":"1.0.0","namespace":"interphase","type":"bead_phase","session_id":"s","timestamp":"t","payload":{"id":"b","phase":"bogus","ts":1}}"#).unwrap();
    // Broken for interband, tolerated by the Go reader (it checks no
    // intercheck contract): read with a warning, invalid for validate.
    let tolerated = dir.join("tolerated.json");
    std::fs::write(&tolerated, r#"{"version":"1.0.0","namespace":"intercheck","type":"checkpoint_needed","session_id":"s","timestamp":"t","payload":{"trigger":7,"ts":1}}"#).unwrap();
    let p = tolerated.to_str().unwrap();
    let o = w.run(&["read", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("tolerated: intercheck/checkpoint_needed: trigger must be"));
    let o = w.run(&["validate", p]);
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains("a v1 reader tolerates it"),
        "{}",
        stdout(&o)
    );

    for (path, exit, needle) in [
        (&big, 1, "limit"),
        (&broken, 1, "not valid JSON"),
        (&link, 2, "symbolic link"),
        (&wrong, 1, "phase must be"),
    ] {
        let p = path.to_str().unwrap();
        let o = w.run(&["read", p]);
        assert_fails(&o, exit, p);
        assert!(stderr(&o).contains(needle), "{needle:?}: {}", stderr(&o));
        let o = w.run(&["validate", p]);
        assert_eq!(code(&o), exit, "validate {p}");
        assert!(
            stdout(&o).starts_with(p) && stdout(&o).lines().count() == 1,
            "{}",
            stdout(&o)
        );
    }
    assert_fails(
        &w.run(&["read", "intercheck/pressure/none"]),
        2,
        "none.json: no such file",
    );
    assert_fails(
        &w.run(&["read", "not-an-address"]),
        2,
        "NAMESPACE/CHANNEL/KEY",
    );
    // A link inside a folder is reported, not followed and not skipped in silence.
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    symlink(
        repo().join("tests/fixtures/v1/invalid"),
        folder.join("more"),
    );
    symlink(&wrong, folder.join("wrong.json"));
    let o = w.run(&["validate", folder.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        stdout(&o).matches("a symbolic link, not followed").count(),
        2,
        "{}",
        stdout(&o)
    );
    let o = w.run(&["validate", "/does/not/exist.json"]);
    assert_eq!(code(&o), 2);
    assert!(
        stdout(&o).starts_with("/does/not/exist.json: "),
        "{}",
        stdout(&o)
    );
    assert_fails(&w.run(&["watch", "a/[/c"]), 2, "pattern");
    let o = w.run(&["publish", "a", "b"]);
    assert_eq!(code(&o), 2, "usage error");
}

fn an_unwritable_root_is_a_clear_error_and_leaves_nothing_behind() {
    let w = World::new();
    // A root below a regular file cannot be created, even by root.
    let blocker = w.dir.path().join("blocker");
    std::fs::write(&blocker, "").unwrap();
    let root = blocker.join("root");
    let o = w
        .cmd(&["publish", "n", "c", "k", "--type", "t", "--payload", "{}"])
        .env("INTERBAND_ROOT", &root)
        .finish();
    assert_fails(&o, 2, blocker.to_str().unwrap());
    for args in [
        &["watch", "a/b/*"][..],
        &["prune"],
        &["ls"],
        &["read", "a/b/c"],
    ] {
        let o = w.cmd(args).env("INTERBAND_ROOT", &root).finish();
        assert_fails(&o, 2, blocker.to_str().unwrap());
    }
    let o = w.run(&["schema", "--out", root.to_str().unwrap()]);
    assert_fails(&o, 2, blocker.to_str().unwrap());
}

fn no_root_and_no_home_is_a_clear_error() {
    let w = World::new();
    let o = w
        .cmd(&["ls"])
        .env_remove("INTERBAND_ROOT")
        .env_remove("HOME")
        .env_remove("USERPROFILE")
        .finish();
    assert_fails(&o, 2, "INTERBAND_ROOT");
}

#[cfg(unix)] // /dev/full
fn output_that_cannot_be_written_is_a_one_line_error_not_a_panic() {
    let w = World::new();
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = w.cmd(&["thresholds", "--markdown"]).stdout(full).finish();
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o).trim(),
        "interband: cannot write to standard output: No space left on device (os error 28)"
    );
}

fn a_cause_is_said_once_and_a_linked_channel_folder_is_refused() {
    let w = World::new();
    std::fs::create_dir_all(w.root()).unwrap();
    std::fs::write(w.root().join("ns"), b"").unwrap();
    let o = w.run(&["publish", "ns", "ch", "k", "--type", "t", "--payload", "{}"]);
    assert_fails(&o, 2, "root/ns: not a folder");
    assert_eq!(
        stderr(&o).matches("not a folder").count(),
        1,
        "{}",
        stderr(&o)
    );

    let outside = w.dir.path().join("project");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(w.root().join("interpulse")).unwrap();
    symlink(&outside, w.root().join("interpulse/checkpoint"));
    let o = w.run(&[
        "publish",
        "interpulse",
        "checkpoint",
        "k",
        "--type",
        "checkpoint_needed",
        "--payload",
        r#"{"trigger":"orange_pressure","ts":1}"#,
    ]);
    assert_fails(&o, 2, "checkpoint: is a symbolic link");
    let o = w.run(&["prune", "interpulse/checkpoint"]);
    assert_ne!(code(&o), 0);
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written outside the root"
    );
}

fn a_bridge_that_cannot_start_never_stops_the_watch() {
    let w = World::new();
    let o = w
        .cmd(&["watch", "--idle-timeout", "0.3"])
        .env("INTERBAND_BRIDGE_URL", "nats://127.0.0.1:1")
        .env("INTERBAND_BRIDGE_NKEY", w.dir.path().join("no-such-seed"))
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("bridge not started"), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-seed"), "{}", stderr(&o));
}

/// A channel folder that exists but is read-only for us: publishing there is
/// a clear error naming it, and the message before it stays. (Root writes
/// there all the same: reported ignored as root.)
#[cfg(unix)]
fn a_read_only_channel_folder_is_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    publish(&w, "k", PRESSURE);
    let dir = w.root().join("intercheck/pressure");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
    let o = publish(&w, "k", PRESSURE);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_fails(&o, 2, "pressure");
    assert_eq!(
        w.bus()
            .read("intercheck", "pressure", "k")
            .unwrap()
            .envelope
            .seq,
        1
    );
}

fn main() -> std::process::ExitCode {
    #[cfg(unix)]
    let read_only = if unsafe { libc::geteuid() } == 0 {
        Err("root writes into a read-only folder all the same: run the tests as a user".to_owned())
    } else {
        Ok(a_read_only_channel_folder_is_a_clear_error as fn())
    };
    #[cfg(windows)]
    let read_only = trials::unix_only("a read-only mode on a folder");
    #[cfg(unix)]
    let full_output = Ok(output_that_cannot_be_written_is_a_one_line_error_not_a_panic as fn());
    #[cfg(windows)]
    let full_output = trials::unix_only("a full disk as /dev/full");
    common::trials::run(vec![
        (
            "publish_then_read_round_trips_and_counts_seq",
            Ok(publish_then_read_round_trips_and_counts_seq as fn()),
        ),
        (
            "publish_reads_the_payload_from_stdin",
            Ok(publish_reads_the_payload_from_stdin as fn()),
        ),
        (
            "ls_lists_matching_messages_and_flags_corrupt_ones",
            Ok(ls_lists_matching_messages_and_flags_corrupt_ones as fn()),
        ),
        (
            "prune_removes_expired_messages_and_stale_temp_files",
            Ok(prune_removes_expired_messages_and_stale_temp_files as fn()),
        ),
        (
            "watch_prints_one_line_per_new_value_and_runs_exec_with_argv",
            Ok(watch_prints_one_line_per_new_value_and_runs_exec_with_argv as fn()),
        ),
        (
            "bad_payloads_are_refused_and_nothing_is_written",
            Ok(bad_payloads_are_refused_and_nothing_is_written as fn()),
        ),
        (
            "bad_files_get_one_line_naming_them",
            trials::with_links(bad_files_get_one_line_naming_them),
        ),
        (
            "an_unwritable_root_is_a_clear_error_and_leaves_nothing_behind",
            Ok(an_unwritable_root_is_a_clear_error_and_leaves_nothing_behind as fn()),
        ),
        (
            "no_root_and_no_home_is_a_clear_error",
            Ok(no_root_and_no_home_is_a_clear_error as fn()),
        ),
        (
            "output_that_cannot_be_written_is_a_one_line_error_not_a_panic",
            full_output,
        ),
        (
            "a_cause_is_said_once_and_a_linked_channel_folder_is_refused",
            trials::with_links(a_cause_is_said_once_and_a_linked_channel_folder_is_refused),
        ),
        (
            "a_bridge_that_cannot_start_never_stops_the_watch",
            Ok(a_bridge_that_cannot_start_never_stops_the_watch as fn()),
        ),
        ("a_read_only_channel_folder_is_a_clear_error", read_only),
    ])
}
