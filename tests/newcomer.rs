//! What a newcomer meets at the command line, through the real binary: each
//! message says what is true and what to do, and nothing waits in silence.

mod common;

use std::process::Stdio;

use common::*;
use serde_json::json;

/// A session with a published pressure, as a hook call makes one.
fn a_session(w: &World) {
    let mut input: serde_json::Value =
        serde_json::from_slice(&capture("PostToolUse.input.json")).unwrap();
    input["cwd"] = json!(w.dir.path());
    let o = w.run_with_stdin(&["hook"], input.to_string().as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn trusting_a_file_that_is_not_there_says_so() {
    let w = World::new();
    let o = w.run(&["trust", "/nonexistent/config.toml"]);
    assert_ne!(code(&o), 0);
    let said = stderr(&o);
    assert!(
        said.contains("/nonexistent") && said.contains("no such file"),
        "{said}"
    );
    assert!(!said.contains("message"), "{said}");
}

#[test]
fn a_filter_that_matches_nothing_is_not_an_empty_bus() {
    let w = World::new();
    let o = w.run(&["top", "--once"]);
    assert!(stdout(&o).contains("no sessions yet"), "{}", stdout(&o));
    a_session(&w);
    let o = w.run(&["top", "--once", "--filter", "zzz"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let said = stdout(&o);
    assert!(!said.contains("no sessions yet"), "{said}");
    assert!(
        said.contains("no session matches") && said.contains("1 session in all"),
        "{said}"
    );
}

#[test]
fn a_refused_value_is_shown() {
    let w = World::new();
    let o = w.run(&[
        "publish",
        "interpulse",
        "pressure",
        "s",
        "--type",
        "context_pressure",
        "--payload",
        r#"{"level": "purple"}"#,
    ]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains(r#"(got "purple")"#), "{}", stderr(&o));
}

#[test]
fn a_replaced_value_is_not_put_down_to_the_users_file() {
    let w = World::new();
    let config = w.home().join(".config/interband/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[intermem]\nmax_bytes = 10\n").unwrap();
    let o = w.run(&["config"]);
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("intermem.max_bytes"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        line.contains("= 1024") && line.contains("bounded") && line.contains("says 10"),
        "{line}"
    );
}

#[test]
#[cfg(unix)] // a pseudo-terminal; on Windows a console is not told apart yet (docs/hosts.md, Platforms)
fn a_hook_typed_in_a_terminal_says_what_it_is_for() {
    for (args, what) in [
        (&["hook"][..], "hook event"),
        (&["statusline"], "statusline input"),
    ] {
        let w = World::new();
        let tty = pty().expect("a pseudo-terminal (/dev/ptmx) to stand for the user's terminal");
        let o = w
            .cmd(args)
            .stdin(tty)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .finish();
        assert_eq!(code(&o), 0);
        let said = stderr(&o);
        assert!(
            said.contains(what) && said.contains("interband install"),
            "{args:?}: {said}"
        );
    }
    // Run by a host (a pipe), it says nothing.
    let w = World::new();
    let o = w.run_with_stdin(&["hook"], b"");
    assert_eq!(stderr(&o), "");
}

/// The terminal end of a new pseudo-terminal, as a file to give a child as stdin.
#[cfg(unix)] // a pseudo-terminal; on Windows a console is not told apart yet (docs/hosts.md, Platforms)
fn pty() -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a descriptor this function owns; the
    // master end is leaked on purpose so the terminal stays open for the test.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if master < 0 || libc::grantpt(master) != 0 || libc::unlockpt(master) != 0 {
            return None;
        }
        let mut name = [0 as libc::c_char; 128];
        #[cfg(target_os = "linux")]
        if libc::ptsname_r(master, name.as_mut_ptr(), name.len()) != 0 {
            return None;
        }
        // (No `ptsname_r` in macOS's libc bindings: the static buffer,
        // copied at once; the test makes one terminal at a time.)
        #[cfg(not(target_os = "linux"))]
        {
            let p = libc::ptsname(master);
            if p.is_null() {
                return None;
            }
            let bytes = std::ffi::CStr::from_ptr(p).to_bytes_with_nul();
            if bytes.len() > name.len() {
                return None;
            }
            std::ptr::copy_nonoverlapping(p, name.as_mut_ptr(), bytes.len());
        }
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        (slave >= 0).then(|| std::fs::File::from_raw_fd(slave))
    }
}

#[test]
fn a_bridge_that_cannot_connect_says_so() {
    let w = World::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Nothing listens on that port now.
    let mut child = w
        .cmd(&[
            "bridge",
            "--url",
            &format!("nats://127.0.0.1:{port}"),
            "--host",
            "h",
        ])
        .stderr(Stdio::piped())
        .start();
    use std::io::BufRead;
    let lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut said = Vec::new();
    while !said.iter().any(|l: &String| l.contains("not connected")) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => said.push(l),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        said.iter()
            .any(|l| l.contains("not connected") && l.contains("retrying")),
        "{said:?}"
    );
}

#[test]
fn replay_takes_a_window_as_people_write_it_and_says_when_it_is_not_used() {
    let w = World::new();
    let t =
        repo().join("tests/fixtures/claude-code-2.1.332-usage/transcript.after_next_turn.jsonl");
    for (window, shown) in [("200k", "200k"), ("20000", "20k")] {
        let o = w.run(&[
            "replay",
            t.to_str().unwrap(),
            "--window",
            window,
            "--defaults",
        ]);
        assert_eq!(code(&o), 0, "{window}: {}", stderr(&o));
        let said = stderr(&o);
        assert!(
            said.contains(&format!("--window {shown} was not used")) && said.contains("1M"),
            "{window}: {said}"
        );
    }
    let o = w.run(&["replay", t.to_str().unwrap(), "--window", "lots"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("200k"), "{}", stderr(&o));
}

#[test]
fn the_version_names_its_commit() {
    let w = World::new();
    let o = w.run(&["--version"]);
    assert_eq!(code(&o), 0);
    let said = stdout(&o);
    assert!(
        said.starts_with(&format!("interband {}", env!("CARGO_PKG_VERSION"))),
        "{said}"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(c) if std::env::var_os("INTERBAND_COMMIT").is_none() => {
            assert!(said.contains(&format!("commit {c}")), "{said} (HEAD {c})")
        }
        _ => assert!(said.contains("commit"), "{said}"),
    }
}

#[test]
fn completions_for_every_shell_and_a_man_page() {
    let w = World::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = w.run(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        assert!(
            script.contains("interband") && script.contains("replay"),
            "{shell}"
        );
    }
    let o = w.run(&["completions", "tcsh"]);
    assert_eq!(code(&o), 2, "an unknown shell is a usage error");
    let o = w.run(&["man"]);
    assert_eq!(code(&o), 0);
    let page = stdout(&o);
    assert!(
        page.contains(".TH interband 1") && page.contains("install"),
        "{page}"
    );
}

#[test]
fn config_init_writes_every_setting_commented_out_and_never_over_a_file() {
    let w = World::new();
    let o = w.run(&["config", "init"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let file = w.home().join(".config/interband/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // Every setting `interband config` lists is in it, commented out.
    let o = w.run(&["config", "--json"]);
    assert_eq!(
        code(&o),
        0,
        "the template itself is valid and changes nothing: {}",
        stderr(&o)
    );
    let rows: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(rows.len() > 30, "{}", rows.len());
    for r in &rows {
        assert_eq!(r["from"], "default", "{r}");
        let key = r["key"].as_str().unwrap();
        let leaf = key.rsplit('.').next().unwrap();
        assert!(
            text.contains(&format!("# {leaf} = ")),
            "{key} missing from the template"
        );
    }
    // Uncommenting a line sets it.
    std::fs::write(
        &file,
        text.replace("# debounce_calls = 5", "debounce_calls = 9"),
    )
    .unwrap();
    let o = w.run(&["config"]);
    assert!(
        stdout(&o).contains("interpulse.debounce_calls = 9"),
        "{}",
        stdout(&o)
    );
    // Never over a file that exists.
    let before = std::fs::read(&file).unwrap();
    let o = w.run(&["config", "init"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let o = w.run(&["config", "init", "--print"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("[interpulse.warnings]"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn no_sessions_yet_says_whether_the_hooks_are_installed() {
    let w = World::new();
    for command in [&["pressure"][..], &["top", "--once"]] {
        let o = w.run(command);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            stdout(&o).contains("`interband install` puts them there"),
            "{command:?}: {}",
            stdout(&o)
        );
    }
    let o = w.run(&["install", "--host", "claude"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for command in [&["pressure"][..], &["top", "--once"]] {
        let said = stdout(&w.run(command));
        assert!(
            said.contains(
                "installed for Claude Code; a session shows here from its first tool call"
            ),
            "{command:?} right after a healthy install: {said}"
        );
        assert!(
            !said.contains("once `interband hook` is installed"),
            "{said}"
        );
    }
}

#[test]
fn the_help_and_config_say_what_they_do() {
    let w = World::new();
    let help = stdout(&w.run(&["--help"]));
    for host in [
        "Claude Code",
        "Codex CLI",
        "Gemini CLI",
        "Qwen Code",
        "Copilot CLI",
    ] {
        assert!(help.contains(host), "{host} in --help: {help}");
    }
    assert!(
        help.contains("thresholds   Print the thresholds in force, as JSON"),
        "{help}"
    );
    let uninstall = stdout(&w.run(&["uninstall", "--help"]));
    assert!(
        !uninstall.contains("--command"),
        "uninstall finds the hooks whatever they run: {uninstall}"
    );
    let config = stdout(&w.run(&["config"]));
    let heavy = config
        .lines()
        .find(|l| l.starts_with("interpulse.heavy_tools = "))
        .unwrap();
    let list: Vec<String> = serde_json::from_str(
        heavy
            .trim_start_matches("interpulse.heavy_tools = ")
            .split("    #")
            .next()
            .unwrap(),
    )
    .unwrap();
    let mut once = list.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), list.len(), "each tool once: {heavy}");
    assert!(
        config.contains("interpulse.window = 0    # default; 0: no fixed window"),
        "{config}"
    );
}
