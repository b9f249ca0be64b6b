//! install's own tests: command recognition, the diff, the JSON helpers.
use super::*;

#[test]
fn a_settings_file_changed_since_it_was_read_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    assert!(unchanged_since_read(&path, None).is_ok(), "still absent");
    std::fs::write(&path, b"{}").unwrap();
    let err = unchanged_since_read(&path, None).unwrap_err();
    assert!(err.to_string().contains("settings.json: changed"), "{err}");
    let original = Original {
        bytes: b"{}".to_vec(),
        json: json!({}),
        mode: 0o600,
    };
    assert!(unchanged_since_read(&path, Some(&original)).is_ok());
    std::fs::write(&path, br#"{"model": "opus"}"#).unwrap();
    assert!(unchanged_since_read(&path, Some(&original)).is_err());
}

#[test]
fn json_keeps_key_order_and_round_trips_pretty_text() {
    let text = "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null,\n    -2.5e3\n  ],\n  \"m\": {},\n  \"s\": \"\\u00e9\\n\\\"q\\\"\"\n}\n";
    let j: Value = serde_json::from_str(text).unwrap();
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["z", "a", "m", "s"]);
    let plain = "{\n  \"b\": [],\n  \"a\": \"x\"\n}\n";
    assert_eq!(pretty(&serde_json::from_str(plain).unwrap()), plain);
}

#[test]
fn a_repeated_key_keeps_its_first_place_and_last_value() {
    let j: Value = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    assert_eq!(pretty(&j), "{\n  \"a\": 3,\n  \"b\": 2\n}\n");
}

#[test]
fn object_equality_ignores_key_order_and_removal_keeps_it() {
    assert_eq!(
        json!({"a": 1, "b": [1, {"c": 2, "d": 3}]}),
        json!({"b": [1, {"d": 3, "c": 2}], "a": 1})
    );
    assert_ne!(json!([1, 2]), json!([2, 1]));
    let mut j = json!({"a": 1, "b": 2, "c": 3});
    remove_key(&mut j, "a");
    assert_eq!(pretty(&j), "{\n  \"b\": 2,\n  \"c\": 3\n}\n");
}

#[test]
fn interband_commands_are_recognised_through_shell_quoting() {
    assert!(runs_interband("/opt/x/interband hook", "hook"));
    assert!(runs_interband("'/my dir/interband' hook", "hook"));
    assert!(runs_interband(
        "interband statusline --wrap x",
        "statusline"
    ));
    // A later release's option, or host, is interband's hook still; a
    // shell's operator after it never is.
    assert!(runs_interband("interband hook --extra", "hook"));
    assert!(runs_interband(
        "interband hook --host=claude --quiet",
        "hook"
    ));
    for chain in [
        "interband hook --host claude;x",
        "interband hook && x",
        "interband hook --host claude | tee y",
        "interband hook --host $(x)",
        "interband hook x",
    ] {
        assert!(!runs_interband(chain, "hook"), "{chain}");
    }
    assert!(!runs_interband("notinterband hook", "hook"));
    assert!(!runs_interband("'/open/interband hook", "hook"));
    assert!(runs_interband(
        "/opt/x/interband hook --host gemini",
        "hook"
    ));
    assert!(runs_interband(
        "/opt/x/interband hook --host nosuch",
        "hook"
    ));
    assert!(!runs_interband("/opt/x/interband hook --host", "hook"));
    let ours = Ours::new(
        shell_words::quote("/my dir/interband").into_owned(),
        Host::Codex,
        false,
    );
    assert_eq!(ours.hook, "'/my dir/interband' hook --host codex");
    assert!(
        ours.is_our_hook("'/my dir/interband' hook"),
        "an earlier install's"
    );
    let theirs = "a 'b' \"c\" $HOME\\ it's";
    let wrapped = ours.wrapping(theirs);
    let prefix = format!("{} --wrap sh -c ", ours.statusline);
    let words = shell_words::split(wrapped.strip_prefix(&prefix).unwrap()).unwrap();
    assert_eq!(words, [theirs]);
}

/// On Windows a hook whose binary may be missing (from each user's PATH,
/// or npx's cache) ends so that every shell its host runs it in there exits
/// 0 after it; it is read back as interband's hook, and a user's chain
/// with it is not.
#[test]
fn a_windows_hook_that_may_miss_its_binary_ends_by_exiting_0_in_its_host_s_shells() {
    let npx = "C:/Users/me/AppData/Local/npm-cache/_npx/1f2e/node_modules/@interband/win32-x64/interband.exe";
    for host in Host::ALL {
        let key = host.profile().key;
        let end = if host == Host::Qwen {
            " || exit 0"
        } else {
            "; exit 0"
        };
        for program in ["interband", npx] {
            let ours = Ours::written_for(program.into(), host, Written::Windows);
            let plain = format!("{program} hook --host {key}");
            assert_eq!(ours.hook, format!("{plain}{end}"));
            assert_eq!(unguarded(&ours.hook), plain);
            // (A program named `interband.exe` is interband's on Windows.)
            if program == "interband" || cfg!(windows) {
                assert!(runs_interband(&ours.hook, "hook"), "{}", ours.hook);
            }
            assert!(ours.is_our_hook(&ours.hook));
            // The statusline has no such end: a statusline that fails shows
            // nothing either way.
            assert_eq!(
                ours.statusline,
                format!("{program} statusline --host {key}")
            );
        }
        // A binary that stays: no end, but where a failing hook is a block.
        let ours = Ours::written_for("C:/tools/interband.exe".into(), host, Written::Windows);
        let stays = if host.profile().failing_hook_blocks {
            end
        } else {
            ""
        };
        assert_eq!(
            ours.hook,
            format!("C:/tools/interband.exe hook --host {key}{stays}")
        );
        // On Unix the POSIX guards, as before.
        let ours = Ours::written_for("interband".into(), host, Written::Unix);
        assert!(ours.hook.starts_with(ON_PATH.0), "{}", ours.hook);
        // A project's, for every system: the Windows form, statusline too.
        let ours = Ours::written_for("interband".into(), host, Written::Everywhere);
        assert_eq!(ours.hook, format!("interband hook --host {key}{end}"));
        assert_eq!(
            ours.statusline,
            format!("interband statusline --host {key}{end}")
        );
        assert_eq!(
            unguarded_statusline(&ours.statusline),
            format!("interband statusline --host {key}")
        );
        // Each form is the others' too.
        let unix = Ours::written_for("interband".into(), host, Written::Unix);
        assert!(unix.is_our_hook(&ours.hook) && ours.is_our_hook(&unix.hook));
    }
    for chain in [
        "interband hook --host claude && x; exit 0",
        "x; interband hook --host claude; exit 0",
        "interband hook --host qwen | y || exit 0",
    ] {
        assert!(!runs_interband(chain, "hook"), "{chain}");
    }
}

/// The Windows ends read in a POSIX shell (Git Bash, where Claude Code and
/// Qwen Code run hooks there): a missing program, exit 0 and nothing on
/// stdout; a present one, its output.
#[cfg(unix)]
#[test]
fn the_windows_ends_exit_0_in_a_posix_shell_whether_or_not_the_program_is_there() {
    for end in [interband_hosts::EXIT_0_AFTER, interband_hosts::OR_EXIT_0] {
        for (program, out) in [("interband-missing-here", ""), ("echo", "hook\n")] {
            let o = std::process::Command::new("bash")
                .args(["-c", &format!("{program} hook{end}")])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(0), "{program}{end}");
            assert_eq!(String::from_utf8_lossy(&o.stdout), out);
        }
    }
}

/// On Windows the wrapped statusline is quoted so that each shell the host
/// may run it in reads it alike: Git Bash and PowerShell (Claude Code),
/// cmd.exe (Copilot CLI).
#[test]
fn a_wrapped_statusline_is_quoted_for_every_shell_where_it_can_be() {
    let (bash_or_powershell, cmd) = (true, false);
    for (theirs, single_quotes, quoted) in [
        ("my-status", bash_or_powershell, Some("'my-status'")),
        ("my-status", cmd, Some("\"my-status\"")),
        (
            r#"node "C:/Program Files/x/status.js" --x $HOME"#,
            bash_or_powershell,
            Some(r#"'node "C:/Program Files/x/status.js" --x $HOME'"#),
        ),
        (r#"node "C:/x/status.js""#, cmd, None),
        ("echo %USERPROFILE%", cmd, None),
        (
            "echo it's mine",
            bash_or_powershell,
            Some(r#""echo it's mine""#),
        ),
        ("echo it's mine", cmd, Some(r#""echo it's mine""#)),
        (
            "echo it\u{2019}s",
            bash_or_powershell,
            Some("\"echo it\u{2019}s\""),
        ),
        (r#"echo it's "mine""#, bash_or_powershell, None),
        ("echo it's $HOME", bash_or_powershell, None),
        ("echo it's `x`", bash_or_powershell, None),
        ("echo it's C:\\x", bash_or_powershell, None),
        ("echo it's great!", bash_or_powershell, None),
    ] {
        let q = every_shell_quote(theirs, single_quotes);
        assert_eq!(q.as_deref(), quoted, "{theirs}");
        if let Some(q) = q {
            assert_eq!(shell_words::split(&q).unwrap(), [theirs], "{q}");
            assert_eq!(
                wrapped_theirs(&format!(" --wrap sh -c {q}")).unwrap(),
                theirs
            );
        }
    }
}

#[test]
fn the_diff_is_unified() {
    let p = Path::new("s.json");
    let a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
    let b = "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n11\n";
    assert_eq!(
        dry_run_diff(p, Some(a), Some(b)),
        "--- s.json\n+++ s.json\n@@ -3,8 +3,9 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n 10\n+11\n"
    );
    assert_eq!(
        dry_run_diff(p, None, Some("x\n")),
        "--- /dev/null\n+++ s.json\n@@ -0,0 +1 @@\n+x\n"
    );
    assert_eq!(
        dry_run_diff(p, Some("x\n"), None),
        "--- s.json\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    );
}

#[test]
fn the_program_is_one_word_every_shell_a_host_uses_reads_back_whole() {
    use crate::platform::{names_interband, program_word};
    if cfg!(windows) {
        // Git Bash, PowerShell and cmd.exe all read a plain word with
        // forward slashes as the same program; a backslash only Git Bash
        // eats (anthropics/claude-code#22449).
        assert_eq!(
            program_word(r"C:\Users\me\.cargo\bin\interband.exe").unwrap(),
            "C:/Users/me/.cargo/bin/interband.exe"
        );
        // A space: the short (8.3) form, one plain word naming the same file.
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("Jo Smith");
        std::fs::create_dir(&spaced).unwrap();
        let exe = spaced.join("interband.exe");
        std::fs::write(&exe, "").unwrap();
        let word = program_word(exe.to_str().unwrap()).unwrap();
        assert!(!word.contains([' ', '\\']), "{word}");
        assert_eq!(
            dunce::canonicalize(&word).unwrap(),
            dunce::canonicalize(&exe).unwrap()
        );
        // A space, a quote or `&` with no short name: refused, with the way out.
        let e = program_word(r"Q:\no such\it's & x\interband.exe").unwrap_err();
        assert!(e.to_string().contains("--command PATH"), "{e}");
        let ours = Ours::new(
            program_word(r"C:\tools\interband.exe").unwrap(),
            Host::Codex,
            false,
        );
        assert_eq!(ours.hook, "C:/tools/interband.exe hook --host codex");
        assert!(runs_interband(&ours.hook, "hook"));
        assert!(names_interband(r"C:\tools\INTERBAND.EXE"));
        // A project's hooks name `interband` from PATH, and the shell
        // exits 0 after it (the POSIX guard is not Windows' shells').
        assert_eq!(
            Ours::new("interband".into(), Host::Gemini, false).hook,
            "interband hook --host gemini; exit 0"
        );
    } else {
        assert_eq!(
            program_word("/my dir/interband").unwrap(),
            "'/my dir/interband'"
        );
        assert_eq!(
            program_word("/opt/x/interband").unwrap(),
            "/opt/x/interband"
        );
        assert!(!names_interband("/opt/x/interband.exe"));
    }
    assert!(names_interband("interband"));
    assert!(!names_interband("/opt/x/interbandx"));
}
