//! `interband config` and `interband statusline` flags through the real binary.

mod common;

use interband::paths::under;

use common::*;

#[test]
fn config_shows_each_value_and_where_it_came_from() {
    let w = World::new();
    let user = under(&w.home(), ".config/interband/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        "[interpulse]\ndebounce_calls = 3\n[compact]\nstrategy = \"tmux\"\n",
    )
    .unwrap();
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(project.join(".interband")).unwrap();
    std::fs::write(
        under(&project, ".interband/config.toml"),
        "[compact]\nstrategy = \"off\"\n",
    )
    .unwrap();
    let o = w
        .cmd(&["config"])
        .current_dir(&project)
        .env("INTERBAND_INTERMEM_MAX_BYTES", "4000")
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key}: {out}"))
            .to_owned()
    };
    assert!(line("interpulse.debounce_calls").contains(&format!("3    # {}", user.display())));
    // The project's file is not trusted: its [compact] is ignored, and the header says so.
    assert!(
        line("compact.strategy").contains("\"tmux\"")
            && line("compact.strategy").contains(&user.display().to_string()),
        "{out}"
    );
    assert!(
        out.contains("config.toml (project: NOT trusted; ignored: compact.strategy;"),
        "{out}"
    );
    // Once trusted, it counts.
    let o = w.cmd(&["trust"]).current_dir(&project).finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("it may now set: compact.strategy"),
        "{}",
        stdout(&o)
    );
    let o = w
        .cmd(&["config"])
        .current_dir(&project)
        .env("INTERBAND_INTERMEM_MAX_BYTES", "4000")
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key}: {out}"))
            .to_owned()
    };
    assert!(
        line("compact.strategy").contains("\"off\"")
            && line("compact.strategy").contains(
                &under(std::path::Path::new("proj"), ".interband/config.toml")
                    .display()
                    .to_string()
            ),
        "{out}"
    );
    assert!(out.contains("config.toml (project: trusted)"), "{out}");
    assert!(line("intermem.max_bytes").contains("4000    # env INTERBAND_INTERMEM_MAX_BYTES"));
    assert!(line("interpulse.window").contains("# default; 0: no fixed window"));

    // A bad value is reported (exit 1) and ignored.
    std::fs::write(&user, "[interpulse]\ndebounce_calls = \"often\"\n").unwrap();
    let o = w.cmd(&["config"]).current_dir(&project).finish();
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("interpulse.debounce_calls"));
    assert!(stdout(&o).contains("interpulse.debounce_calls = 5    # default"));
    // A file every part reads is broken: said once, not once per part.
    std::fs::write(&user, "[interline\n").unwrap();
    let o = w.run(&["config"]);
    assert_eq!(code(&o), 1);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("config.toml"), "{}", stderr(&o));
    // The header does not call a broken file absent, nor trusted or not:
    // it is ignored whole. Likewise one that cannot be read (a FIFO).
    let broken = format!("{} (not valid: ignored whole", user.display());
    assert!(stdout(&o).contains(&broken), "{}", stdout(&o));
    std::fs::write(under(&project, ".interband/config.toml"), "[compact\n").unwrap();
    let o = w.cmd(&["config"]).current_dir(&project).finish();
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains(&format!(
            "{} (not valid: ignored whole",
            under(std::path::Path::new("proj"), ".interband/config.toml").display()
        )),
        "{}",
        stdout(&o)
    );
    // A FIFO where the file was (Unix's alone): said, never waited on.
    #[cfg(unix)]
    {
        std::fs::remove_file(&user).unwrap();
        mkfifo(&user);
        let o = w.run(&["config"]);
        assert_eq!(code(&o), 1);
        assert!(stdout(&o).contains(&broken), "{}", stdout(&o));
    }
}

/// A statusline command printing `theirs` (Windows has no `echo` program:
/// cmd.exe's).
fn echo_theirs() -> Vec<&'static str> {
    if cfg!(windows) {
        vec!["cmd", "/d", "/c", "echo theirs"]
    } else {
        vec!["echo", "theirs"]
    }
}

/// A statusline command that fails with code 7.
fn exit_7() -> Vec<&'static str> {
    if cfg!(windows) {
        vec!["cmd", "/d", "/c", "exit 7"]
    } else {
        vec!["sh", "-c", "exit 7"]
    }
}

#[test]
fn statusline_wraps_an_existing_command_and_reports_timings() {
    let w = World::new();
    let input = capture("statusLine.input.json");
    let o = with_stdin(
        w.cmd(&[&["statusline", "--timings", "--wrap"][..], &echo_theirs()].concat())
            .env("NO_COLOR", "1"),
        &input,
    );
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    let mut lines = out.lines();
    let first = lines.next().unwrap();
    assert!(first.starts_with("theirs │ Opus 5.5"), "{first}");
    assert!(first.contains("GREEN"), "{first}");
    let timings: Vec<&str> = lines.collect();
    assert!(
        timings.iter().any(|l| l.starts_with("context"))
            && timings.iter().all(|l| l.ends_with("µs")),
        "{timings:?}"
    );
}

#[test]
fn a_wrapped_statusline_that_fails_is_said_in_the_line_and_logged_once() {
    let w = World::new();
    let input = capture("statusLine.input.json");
    let log = w.dir.path().join("interband.log");
    for (argv, why) in [
        (vec!["/no/such/statusline"], "could not run"),
        (exit_7(), "failed"),
    ] {
        for _ in 0..2 {
            let mut args = vec!["statusline", "--wrap"];
            args.extend(&argv);
            let o = with_stdin(
                w.cmd(&args).env("NO_COLOR", "1").env("INTERBAND_LOG", &log),
                &input,
            );
            assert_eq!(code(&o), 0);
            let line = stdout(&o);
            assert!(
                line.starts_with("[your statusline: ") && line.contains(why),
                "{line}"
            );
            assert!(line.contains("GREEN"), "ours is still there: {line}");
        }
        let logged = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            logged.lines().filter(|l| l.contains(why)).count(),
            1,
            "once: {logged}"
        );
    }
}

/// Install's form, `--wrap sh -c CMD`, runs the person's own statusline on
/// every system: where no `sh` is on the PATH (Windows without Git Bash),
/// CMD runs in the shell the host runs its statusline in: Copilot CLI's
/// cmd.exe here (Claude Code's PowerShell, which Wine lacks, is the unit
/// test's).
#[test]
fn installs_form_of_a_wrapped_statusline_runs_even_where_no_sh_is() {
    let w = World::new();
    let input = capture("statusLine.input.json");
    let mut cmd = w.cmd(&[
        "statusline",
        "--host",
        "copilot",
        "--wrap",
        "sh",
        "-c",
        "echo theirs",
    ]);
    if cfg!(windows) {
        cmd.env("PATH", "C:\\windows\\system32;C:\\windows");
    }
    let o = with_stdin(cmd.env("NO_COLOR", "1"), &input);
    assert_eq!(code(&o), 0);
    let line = stdout(&o);
    assert!(line.starts_with("theirs"), "{line}");
}

#[test]
fn the_statusline_still_prints_a_line_without_a_bus() {
    let w = World::new();
    let input = capture("statusLine.input.json");
    let o = with_stdin(
        w.cmd(&["statusline"])
            .env_remove("INTERBAND_ROOT")
            .env_remove("HOME")
            .env_remove("USERPROFILE")
            .env("NO_COLOR", "1"),
        &input,
    );
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("Opus 5.5") && stdout(&o).contains("GREEN"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn thresholds_and_config_agree_on_whether_the_settings_are_valid() {
    let w = World::new();
    let user = under(&w.home(), ".config/interband/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    for (bad, names) in [
        ("[compact]\nstrategy = \"bogus\"\n", "compact.strategy"),
        (
            "[interline]\ngauge_width = \"wide\"\n",
            "interline.gauge_width",
        ),
        (
            "[interpulse.thresholds.usable]\nyellow = 5\norange = 20\nred = 30\n",
            "interpulse.thresholds.usable",
        ),
        (
            "[interpulse.thresholds.usable]\nyellow = -5\n",
            "interpulse.thresholds.usable",
        ),
        (
            "[interpulse.thresholds.usable]\nyellow = 150\n",
            "interpulse.thresholds.usable",
        ),
        ("[compcat]\nstrategy = \"off\"\n", "unknown table [compcat]"),
        ("[intermem]\nmax_bytes = 10\n", "intermem.max_bytes"),
        ("[compact]\nused_pct = 150\n", "compact.used_pct"),
        (
            "[interline]\nwrap_timeout_ms = 6000\n",
            "interline.wrap_timeout_ms",
        ),
        (
            "[interpulse.reinject]\nfiles = [\"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\", \"8\", \"9\"]\n",
            "interpulse.reinject.files",
        ),
        ("debounce_calls = 3\n", "outside any table"),
        (
            "[interpulse.reinject]\nthresholds = [-5]\n",
            "interpulse.reinject.thresholds",
        ),
    ] {
        std::fs::write(&user, bad).unwrap();
        for cmd in ["config", "thresholds"] {
            let o = w.cmd(&[cmd]).current_dir(&project).finish();
            assert_eq!(code(&o), 1, "{cmd} on {bad}: {}", stderr(&o));
            assert!(stderr(&o).contains(names), "{cmd} on {bad}: {}", stderr(&o));
        }
    }
    // Out of order thresholds are not used: the hook's levels keep the defaults.
    std::fs::write(
        &user,
        "[interpulse.thresholds.usable]\nyellow = 5\norange = 20\nred = 30\n",
    )
    .unwrap();
    let o = w.cmd(&["thresholds", "--markdown"]).finish();
    assert!(
        stdout(&o).contains("| usable context remaining, % | < 35 | < 20 | < 10 |"),
        "{}",
        stdout(&o)
    );
}

/// `interband trust` at the same time as others (two terminals, a script)
/// never loses another's change: every file trusted stays trusted, and a
/// revoke is never undone by a trust of another file.
#[test]
fn simultaneous_trusts_and_revokes_are_each_kept() {
    let w = World::new();
    let projects: Vec<std::path::PathBuf> = (0..12)
        .map(|i| {
            let p = w.dir.path().join(format!("p{i}/.interband"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("config.toml"), "[compact]\n").unwrap();
            p.parent().unwrap().to_owned()
        })
        .collect();
    assert_eq!(code(&w.run(&["trust", projects[0].to_str().unwrap()])), 0);
    let mut children: Vec<std::process::Child> = projects[1..]
        .iter()
        .map(|p| w.cmd(&["trust", p.to_str().unwrap()]).start())
        .collect();
    children.push(
        w.cmd(&["trust", "--revoke", projects[0].to_str().unwrap()])
            .start(),
    );
    for c in children {
        assert!(c.wait_with_output().unwrap().status.success());
    }
    let listed = stdout(&w.run(&["trust", "--list"]));
    for p in &projects[1..] {
        assert!(
            listed.contains(&format!(
                "{}  trusted",
                under(p, ".interband/config.toml").display()
            )),
            "{p:?}: {listed}"
        );
    }
    assert!(
        !listed.contains(&format!("p0{}", std::path::MAIN_SEPARATOR)),
        "the revoke stands: {listed}"
    );
}
