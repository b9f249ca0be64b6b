//! `interband install` and `interband uninstall` through the real binary, on temp settings files
//! (never the real HOME).

mod common;

use common::*;
use interband::paths::under;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A Claude Code user's settings: their own hooks, an env block and a statusLine.
const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "env": {
    "FOO": "1"
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/guard"
          }
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Edit",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/fmt"
          }
        ]
      }
    ]
  },
  "statusLine": {
    "type": "command",
    "command": "~/bin/my-status --short",
    "padding": 0
  }
}
"#;

const CLAUDE_EVENTS: [&str; 6] = [
    "PostToolUse",
    "Stop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
    "SubagentStop",
];

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The absolute path install registers by default: the binary's, as the
/// first word of a command.
fn program() -> String {
    word(dunce::canonicalize(BIN).unwrap().to_str().unwrap())
}

/// A plain path as install writes it as a command's first word: as it is
/// on Unix, with forward slashes on Windows (which every shell a host uses
/// there reads alike).
fn word(path: &str) -> String {
    if cfg!(windows) {
        path.replace('\\', "/")
    } else {
        path.to_owned()
    }
}

/// The commands of every hook of `event` running `interband hook` (with or
/// without the host named).
fn interband_hooks(settings: &Value, event: &str) -> Vec<Value> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().unwrap().clone())
        .filter(|h| {
            let c = h["command"].as_str().unwrap();
            c.contains("interband")
                && (c.contains(" hook --host ")
                    || c.ends_with(" hook")
                    || c.contains(" interband hook || "))
        })
        .collect()
}

fn settings_args<'a>(cmd: &'a str, path: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![cmd, "--settings", path.to_str().unwrap()];
    v.extend_from_slice(extra);
    v
}

fn ok(o: &std::process::Output) {
    assert_eq!(code(o), 0, "stdout: {}\nstderr: {}", stdout(o), stderr(o));
}

#[test]
fn claude_install_merges_wraps_the_statusline_and_uninstall_restores_the_original() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    let original = read(&path);

    let o = w.run(&settings_args("install", &path, &[]));
    ok(&o);
    assert!(stdout(&o).contains("installed interband"), "{}", stdout(&o));
    let s = read(&path);
    let prog = program();

    // Their keys and groups are intact, and first.
    assert_eq!(s["model"], "opus");
    assert_eq!(s["env"], json!({"FOO": "1"}));
    assert_eq!(s["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
    assert_eq!(
        s["hooks"]["PostToolUse"][0],
        original["hooks"]["PostToolUse"][0]
    );
    // Ours is appended to each event, in Claude's format.
    assert_eq!(
        s["hooks"]["PostToolUse"][1],
        json!({"matcher": "*", "hooks": [{"type": "command", "command": format!("{prog} hook --host claude"), "timeout": 5}]})
    );
    for (event, timeout) in [
        ("Stop", 10),
        ("PreCompact", 10),
        ("SessionStart", 5),
        ("SessionEnd", 10),
        ("SubagentStop", 5),
    ] {
        assert_eq!(
            s["hooks"][event],
            json!([{"hooks": [{"type": "command", "command": format!("{prog} hook --host claude"), "timeout": timeout}]}]),
            "{event}"
        );
    }
    // The statusLine wraps theirs and keeps its padding.
    assert_eq!(
        s["statusLine"],
        json!({"type": "command", "command": format!("{prog} statusline --host claude --wrap sh -c '~/bin/my-status --short'"), "padding": 0})
    );
    // The key order of their file is kept.
    let text = std::fs::read_to_string(&path).unwrap();
    let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
    assert!(at("model") < at("env") && at("env") < at("hooks") && at("hooks") < at("statusLine"));
    assert!(text.ends_with("}\n"));
    // A pristine backup and a record.
    assert_eq!(
        std::fs::read_to_string(sibling(&path, ".interband-backup")).unwrap(),
        USER_SETTINGS
    );
    assert!(sibling(&path, ".interband-install.json").exists());

    // Installing again changes nothing.
    let o = w.run(&settings_args("install", &path, &[]));
    ok(&o);
    assert!(stdout(&o).contains("already installed"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    // Uninstall gives back the original, byte for byte (it was pretty-printed to begin with).
    let o = w.run(&settings_args("uninstall", &path, &[]));
    ok(&o);
    assert!(stdout(&o).contains("removed interband"), "{}", stdout(&o));
    assert_eq!(read(&path), original);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), USER_SETTINGS);
    assert!(!sibling(&path, ".interband-install.json").exists());
    assert!(
        !sibling(&path, ".interband-backup").exists(),
        "the file is its backup again: no need of it"
    );

    // And once more: nothing is installed.
    let o = w.run(&settings_args("uninstall", &path, &[]));
    ok(&o);
    assert!(stdout(&o).contains("not installed"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), USER_SETTINGS);
}

#[test]
#[cfg(unix)] // a shell script as the person's statusline (Windows: a_wrapped_statusline_runs_in_the_shell_the_host_runs_it_in)
fn the_wrapped_statusline_runs_their_command_and_appends_ours() {
    let w = World::new();
    let bin = w.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("my-status");
    std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\necho \"MINE $1\"\n").unwrap();
    std::process::Command::new("chmod")
        .args(["+x", script.to_str().unwrap()])
        .status()
        .unwrap();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    let command = read(&path)["statusLine"]["command"]
        .as_str()
        .unwrap()
        .to_owned();

    // As Claude Code runs it: through a shell, the statusLine input on stdin.
    let input = capture("statusLine.input.json");
    let o = {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = std::process::Command::new("sh")
            .args(["-c", &command])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("INTERBAND_ROOT", w.root())
            .env("HOME", w.home())
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .start();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        child.wait_with_output().unwrap()
    };
    ok(&o);
    let line = stdout(&o);
    assert!(line.starts_with("MINE --short │ "), "{line}");
    assert!(line.contains("GREEN"), "{line}");
}

/// Copilot CLI runs a statusline in `sh -c` on Unix and in cmd.exe on
/// Windows (docs/hosts.md, "Platforms"): the installed command wrapping
/// the person's own runs theirs and appends ours in each, and on Windows
/// with no `sh` on the PATH (no Git Bash) theirs runs in cmd.exe as Copilot
/// would run it.
#[test]
fn a_wrapped_statusline_runs_in_the_shell_the_host_runs_it_in() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    let before = r#"{"statusLine": {"type": "command", "command": "echo MINE --short"}}"#;
    std::fs::write(&path, before).unwrap();
    ok(&w.run(&settings_args("install", &path, &["--host", "copilot"])));
    let command = read(&path)["statusLine"]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    // As Node runs a command with `shell: true`: on Windows `cmd.exe /d /s
    // /c "COMMAND"`, the command line verbatim (no C runtime escaping).
    #[cfg(windows)]
    let mut shell = {
        use std::os::windows::process::CommandExt;
        let mut c = std::process::Command::new("cmd");
        c.args(["/d", "/s", "/c"])
            .raw_arg(format!("\"{command}\""))
            .env("PATH", "C:\\windows\\system32;C:\\windows");
        c
    };
    #[cfg(not(windows))]
    let mut shell = {
        let mut c = std::process::Command::new("sh");
        c.args(["-c", &command]);
        c
    };
    shell
        .env("INTERBAND_ROOT", w.root())
        .env("HOME", w.home())
        .env("USERPROFILE", w.home())
        .env("NO_COLOR", "1");
    let input = std::fs::read(
        repo().join("tests/fixtures/copilot-cli-1.0.102/statusLine.input.after-first-prompt.json"),
    )
    .unwrap();
    let o = with_stdin(&mut shell, &input);
    ok(&o);
    let line = stdout(&o);
    assert!(line.starts_with("MINE --short │ "), "{command}: {line}");
    ok(&w.run(&settings_args("uninstall", &path, &["--host", "copilot"])));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn dry_run_prints_a_diff_and_writes_nothing() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    let o = w.run(&settings_args("install", &path, &["--dry-run"]));
    ok(&o);
    let out = stdout(&o);
    let p = path.display().to_string();
    assert!(out.starts_with(&format!("--- {p}\n+++ {p}\n@@ -")), "{out}");
    assert!(
        out.contains(&format!(
            "+            \"command\": \"{} hook --host claude\",",
            program()
        )),
        "{out}"
    );
    assert!(
        out.contains("-    \"command\": \"~/bin/my-status --short\","),
        "{out}"
    );
    assert!(out.contains("dry run: nothing written"), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), USER_SETTINGS);
    assert_eq!(files_under(w.dir.path()), ["settings.json"]);

    // An uninstall dry run shows the way back and leaves the install in place.
    ok(&w.run(&settings_args("install", &path, &[])));
    let installed = std::fs::read_to_string(&path).unwrap();
    let o = w.run(&settings_args("uninstall", &path, &["--dry-run"]));
    ok(&o);
    assert!(
        stdout(&o).contains("+    \"command\": \"~/bin/my-status --short\","),
        "{}",
        stdout(&o)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), installed);
    assert!(sibling(&path, ".interband-install.json").exists());
}

#[test]
fn a_missing_settings_file_is_created_and_uninstall_removes_it() {
    let w = World::new();
    let path = under(&w.home(), ".claude/settings.json");
    let o = w.run(&["install"]);
    ok(&o);
    let s = read(&path);
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["hooks", "statusLine"]);
    for e in CLAUDE_EVENTS {
        assert_eq!(interband_hooks(&s, e).len(), 1, "{e}");
    }
    assert_eq!(
        s["statusLine"],
        json!({
            "type": "command",
            "command": format!("{} statusline --host claude", program()),
            "refreshInterval": 5
        })
    );
    assert!(!sibling(&path, ".interband-backup").exists());

    let o = w.run(&["uninstall"]);
    ok(&o);
    assert!(stdout(&o).contains("deleted"), "{}", stdout(&o));
    assert!(!path.exists());
    assert!(!sibling(&path, ".interband-install.json").exists());
}

/// A file an install created had nothing to back up: installing again
/// (an event added since, say) takes no backup of interband's own hooks,
/// and uninstall leaves nothing behind. It had written one, "of the
/// original", and left it after the uninstall.
#[test]
fn installing_again_into_a_file_install_created_backs_up_nothing() {
    let w = World::new();
    let path = under(&w.home(), ".claude/settings.json");
    ok(&w.run(&["install"]));
    // As an install from before SubagentStop left it.
    let mut s = read(&path);
    s["hooks"].as_object_mut().unwrap().remove("SubagentStop");
    std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    let o = w.run(&["install"]);
    ok(&o);
    assert!(stdout(&o).contains(": SubagentStop\n"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("backup"), "{}", stdout(&o));
    assert!(!sibling(&path, ".interband-backup").exists());
    ok(&w.run(&["uninstall"]));
    assert!(!path.exists());
    assert_eq!(files_under(&w.home()), Vec::<String>::new());
}

/// Claude Code reruns a statusline every `refreshInterval` seconds: ours,
/// alone, asks for 5 (a running subagent's figure moves between redraws),
/// unless the person chose how often; one that wraps theirs asks nothing
/// (theirs would run as often). Uninstall gives each file back as it was.
#[test]
fn the_statusline_alone_is_rerun_every_few_seconds_unless_the_person_said_how_often() {
    for (before, interval) in [
        (
            r#"{"statusLine": {"type": "command", "command": ""}}"#,
            Some(5),
        ),
        (
            r#"{"statusLine": {"type": "command", "command": "", "refreshInterval": 30}}"#,
            Some(30),
        ),
        (
            r#"{"statusLine": {"type": "command", "command": "my-status"}}"#,
            None,
        ),
    ] {
        let w = World::new();
        let path = w.dir.path().join("settings.json");
        std::fs::write(&path, before).unwrap();
        ok(&w.run(&settings_args("install", &path, &[])));
        let s = read(&path);
        assert_eq!(
            s["statusLine"]["refreshInterval"].as_u64(),
            interval,
            "{before}: {s}"
        );
        ok(&w.run(&settings_args("uninstall", &path, &[])));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }
}

/// An install made before interband asked for the refresh (session 22)
/// gets it when install runs again, and uninstall still gives the file
/// back as it was before the first install.
#[test]
fn installing_again_asks_an_earlier_install_s_statusline_to_refresh() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    let before = r#"{"model": "opus"}"#;
    std::fs::write(&path, before).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    // As the earlier install wrote it: no refreshInterval, here or in its record.
    let record = sibling(&path, ".interband-install.json");
    for file in [&path, &record] {
        // (`,"refreshInterval": 5` out, in the file's own layout.)
        let text = std::fs::read_to_string(file).unwrap();
        let at = text
            .find("\"refreshInterval\"")
            .unwrap_or_else(|| panic!("{}: {text}", file.display()));
        let head = text[..at].trim_end().strip_suffix(',').unwrap();
        let tail = text[at..].trim_start_matches(|c: char| c != '5');
        std::fs::write(file, format!("{head}{}", &tail[1..])).unwrap();
    }
    assert!(read(&path)["statusLine"].get("refreshInterval").is_none());
    let o = w.run(&settings_args("install", &path, &[]));
    ok(&o);
    assert!(
        stdout(&o).contains(": statusLine.refreshInterval (5 s)\n"),
        "{}",
        stdout(&o)
    );
    assert_eq!(read(&path)["statusLine"]["refreshInterval"], 5);
    let o = w.run(&settings_args("install", &path, &[]));
    assert!(stdout(&o).contains("already installed"), "{}", stdout(&o));
    ok(&w.run(&settings_args("uninstall", &path, &[])));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn malformed_settings_are_refused_with_one_line_naming_the_file() {
    for (bad, reason) in [
        (r#"{"hooks": [1,2]}"#, "\"hooks\" is not an object"),
        ("not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        (
            r#"{"hooks": {"Stop": {"x": 1}}}"#,
            "\"hooks.Stop\" is not an array",
        ),
        (
            r#"{"statusLine": "my-status"}"#,
            "\"statusLine\" is not an object",
        ),
    ] {
        let w = World::new();
        let path = w.dir.path().join("settings.json");
        std::fs::write(&path, bad).unwrap();
        for cmd in ["install", "uninstall"] {
            let o = w.run(&settings_args(cmd, &path, &[]));
            assert_eq!(code(&o), 1, "{cmd} {bad}: {}", stderr(&o));
            let err = stderr(&o);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
            assert!(err.contains(reason), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), bad);
            assert_eq!(files_under(w.dir.path()), ["settings.json"], "{bad}");
        }
    }
}

#[test]
fn project_writes_the_settings_of_the_current_folder() {
    let w = World::new();
    let project = w.dir.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let o = w
        .cmd(&["install", "--project"])
        .current_dir(&project)
        .finish();
    ok(&o);
    let path = under(&project, ".claude/settings.json");
    let stop = interband_hooks(&read(&path), "Stop");
    assert_eq!(stop.len(), 1);
    // Shared with whoever clones the project: no path of this machine in
    // it, and nothing of this install's own beside it.
    let command = stop[0]["command"].as_str().unwrap();
    // Written for every system the project is cloned on: the shell exits 0
    // after it, as every shell Claude Code runs it in reads alike (a POSIX
    // one, Git Bash, PowerShell: a_hook_from_path_does_nothing_where_...).
    assert_eq!(
        command, "interband hook --host claude; exit 0",
        "interband from each user's PATH, not this machine's path: {stop:?}"
    );
    // Run as the host runs it (through a shell, the event on stdin): where
    // `interband` is not on PATH, it does nothing and exits 0 (the shell's
    // "not found" on stderr, which Claude Code does not show from a hook
    // that exits 0); where it is, it is interband's hook.
    #[cfg(unix)]
    let event = capture("Stop.input.json");
    #[cfg(unix)]
    for (path, present) in [
        ("/usr/bin:/bin".to_owned(), false),
        (
            format!(
                "{}:/usr/bin:/bin",
                Path::new(BIN).parent().unwrap().display()
            ),
            true,
        ),
    ] {
        let o = with_stdin(
            std::process::Command::new("sh")
                .args(["-c", command])
                .env_clear()
                .env("PATH", &path)
                .env("HOME", w.home())
                .env("INTERBAND_ROOT", w.root()),
            &event,
        );
        assert_eq!(code(&o), 0, "present {present}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "present {present}");
        assert_eq!(stderr(&o).is_empty(), present, "{}", stderr(&o));
        assert_eq!(
            w.root().exists(),
            present,
            "the hook ran only where interband is"
        );
    }
    assert_eq!(files_under(&project), [".claude/settings.json"]);
    let said = stdout(&o) + &stderr(&o);
    assert!(said.contains("not on yours"), "{said}");
    let kept = files_under(&under(&w.home(), ".local/state/interband/installs"));
    assert_eq!(
        kept.iter().filter(|f| !f.ends_with(".lock")).count(),
        1,
        "the install's record (and its lock): {kept:?}"
    );
    assert!(!w.home().join(".claude").exists());
    let o = w
        .cmd(&["uninstall", "--project"])
        .current_dir(&project)
        .finish();
    ok(&o);
    assert!(!path.exists());
    assert!(
        !project.join(".claude").exists(),
        "nor the folder install made"
    );
    assert!(files_under(&under(&w.home(), ".local/state/interband/installs")).is_empty());
    // A settings file of the project's own comes back byte for byte.
    std::fs::create_dir(project.join(".claude")).unwrap();
    let theirs = "{\n    \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n    \"env\": {}\n}\n";
    std::fs::write(&path, theirs).unwrap();
    for cmd in ["install", "uninstall"] {
        ok(&w.cmd(&[cmd, "--project"]).current_dir(&project).finish());
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), theirs);
    assert!(
        files_under(&under(&w.home(), ".local/state/interband/installs")).is_empty(),
        "the backup goes once the file is itself again"
    );
}

#[test]
fn a_project_install_keeps_the_users_statusline_and_says_when_hooks_would_run_twice() {
    let w = World::new();
    let user = under(&w.home(), ".claude/settings.json");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        r#"{"statusLine": {"type": "command", "command": "my-status --short\u001b[2J"}}"#,
    )
    .unwrap();
    let project = w.dir.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let o = w
        .cmd(&["install", "--project", "--command", "interband"])
        .current_dir(&project)
        .finish();
    ok(&o);
    let said = stdout(&o) + &stderr(&o);
    let settings = read(&under(&project, ".claude/settings.json"));
    assert!(!said.contains('\u{1b}'), "printed raw: {said:?}");
    assert!(settings.get("statusLine").is_none(), "{settings}");
    assert!(
        said.contains("my-status --short") && said.contains("is kept"),
        "{said}"
    );
    assert!(!said.contains("would run both"), "{said}");
    ok(&w
        .cmd(&["uninstall", "--project"])
        .current_dir(&project)
        .finish());

    // The user's own install, then the project's: both would run.
    std::fs::remove_file(&user).unwrap();
    ok(&w.run(&["install"]));
    let o = w
        .cmd(&["install", "--project", "--command", "interband"])
        .current_dir(&project)
        .finish();
    ok(&o);
    let said = stdout(&o) + &stderr(&o);
    assert!(
        said.contains("would run both") && said.contains(&user.display().to_string()),
        "{said}"
    );
    // And the other way round: from inside the project, the user's install says so too.
    ok(&w.run(&["uninstall"]));
    let o = w.cmd(&["install"]).current_dir(&project).finish();
    ok(&o);
    let said = stdout(&o) + &stderr(&o);
    assert!(
        said.contains("would run both") && said.contains("proj"),
        "{said}"
    );
}

#[test]
fn a_project_codex_install_keeps_its_trust_in_the_users_codex_config() {
    let w = World::new();
    let project = w.dir.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let o = w
        .cmd(&[
            "install",
            "--project",
            "--host",
            "codex",
            "--trust",
            "--command",
            "interband",
        ])
        .current_dir(&project)
        .finish();
    ok(&o);
    assert_eq!(
        files_under(&project),
        [".codex/hooks.json"],
        "nothing else in the project"
    );
    let config = under(&w.home(), ".codex/config.toml");
    let trusted: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let state = trusted["hooks"]["state"].as_table().unwrap();
    let hooks_json = under(&project, ".codex/hooks.json");
    assert!(
        state.contains_key(&format!("{}:stop:0:0", hooks_json.display())),
        "{state:?}"
    );
    let said = stdout(&o) + &stderr(&o);
    assert!(
        !said.contains("run `interband install"),
        "already trusted: {said}"
    );
    ok(&w
        .cmd(&["uninstall", "--project", "--host", "codex"])
        .current_dir(&project)
        .finish());
    assert!(
        files_under(&project).is_empty(),
        "{:?}",
        files_under(&project)
    );
    assert!(
        !config.exists(),
        "the file --trust made goes when its trust does"
    );
}

#[test]
fn codex_hooks_go_to_codex_hooks_json_without_a_statusline() {
    let w = World::new();
    let path = under(&w.home(), ".codex/hooks.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs = r#"{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]}}"#;
    std::fs::write(&path, theirs).unwrap();
    let original = read(&path);

    let o = w.run(&["install", "--host", "codex"]);
    ok(&o);
    assert!(
        stdout(&o).contains("--trust") && stdout(&o).contains("/hooks"),
        "{}",
        stdout(&o)
    );
    let s = read(&path);
    let prog = program();
    assert_eq!(
        s["hooks"]["SessionStart"][0],
        original["hooks"]["SessionStart"][0]
    );
    assert_eq!(
        s["hooks"]["PostToolUse"],
        json!([{"hooks": [{"type": "command", "command": format!("{prog} hook --host codex"), "timeout": 5}]}])
    );
    for e in [
        "PostToolUse",
        "Stop",
        "PreCompact",
        "SessionStart",
        "SessionEnd",
        "SubagentStop",
    ] {
        assert_eq!(interband_hooks(&s, e).len(), 1, "{e}");
    }
    assert!(
        interband_hooks(&s, "SessionEnd")[0]["timeout"].as_u64() <= Some(3),
        "Codex clamps it"
    );
    assert!(s.get("statusLine").is_none());
    let config = under(&w.home(), ".codex/config.toml");
    assert!(!config.exists(), "trust only when asked");

    let text = std::fs::read_to_string(&path).unwrap();
    let o = w.run(&["install", "--host", "codex"]);
    ok(&o);
    assert!(stdout(&o).contains("already installed"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    // Asked for: trust entries as Codex's own review writes them, one per hook.
    // The user's own, written their way (CRLF, an empty table, no final newline).
    let theirs = "model = \"gpt-5.1-codex\"\r\n[hooks]";
    std::fs::write(&config, theirs).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let o = w.run(&["install", "--host", "codex", "--trust"]);
    ok(&o);
    assert!(stdout(&o).contains("trusted 6 hook(s)"), "{}", stdout(&o));
    let trusted: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let state = trusted["hooks"]["state"].as_table().unwrap();
    assert_eq!(state.len(), 6);
    let stop = format!("{}:stop:0:0", path.display());
    assert!(
        state[&stop]["trusted_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(trusted["model"].as_str(), Some("gpt-5.1-codex"));

    ok(&w.run(&["uninstall", "--host", "codex"]));
    assert_eq!(read(&path), original);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        theirs,
        "uninstall takes its trust out, and gives the file back as it was"
    );
    assert!(
        !w.home()
            .join(".codex/config.toml.interband-backup")
            .exists()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&config).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "its mode too");
    }
    // A file the user edited since keeps their edit, and loses only ours.
    ok(&w.run(&["install", "--host", "codex", "--trust"]));
    let edited =
        "approval_policy = \"never\"\n".to_owned() + &std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, edited).unwrap();
    ok(&w.run(&["uninstall", "--host", "codex"]));
    let left: toml::Table = toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    assert!(
        left.get("hooks").and_then(|h| h.get("state")).is_none(),
        "{left:?}"
    );
    assert_eq!(left["model"].as_str(), Some("gpt-5.1-codex"));
    assert_eq!(left["approval_policy"].as_str(), Some("never"));
}

#[test]
fn gemini_hooks_use_its_event_names_and_milliseconds() {
    let w = World::new();
    let path = under(&w.home(), ".gemini/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs = r#"{"theme": "Dracula", "hooksConfig": {"enabled": true}, "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 3000}]}]}}"#;
    std::fs::write(&path, theirs).unwrap();
    let original = read(&path);

    ok(&w.run(&["install", "--host", "gemini"]));
    let s = read(&path);
    let prog = program();
    assert_eq!(s["theme"], "Dracula");
    assert_eq!(s["hooks"]["BeforeTool"], original["hooks"]["BeforeTool"]);
    // Guarded against its binary going: to Gemini CLI 0.61 a failing hook
    // is a block (Profile::failing_hook_blocks).
    let hook = if cfg!(windows) {
        format!("{prog} hook --host gemini; exit 0")
    } else {
        format!("[ -x {prog} ] && exec {prog} hook --host gemini || true")
    };
    assert_eq!(
        s["hooks"]["AfterTool"],
        json!([{"matcher": "*", "hooks": [{"type": "command", "command": hook, "timeout": 5000}]}])
    );
    for e in [
        "AfterTool",
        "AfterAgent",
        "BeforeAgent",
        "PreCompress",
        "SessionStart",
        "SessionEnd",
    ] {
        let h = interband_hooks(&s, e);
        assert_eq!(h.len(), 1, "{e}");
        assert!(h[0]["timeout"].as_u64().unwrap() >= 1000, "{e}");
    }
    for e in ["PostToolUse", "Stop", "PreCompact"] {
        assert!(s["hooks"].get(e).is_none(), "{e}");
    }
    assert!(s.get("statusLine").is_none());

    let text = std::fs::read_to_string(&path).unwrap();
    ok(&w.run(&["install", "--host", "gemini"]));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    ok(&w.run(&["uninstall", "--host", "gemini"]));
    assert_eq!(read(&path), original);
}

#[test]
fn uninstall_keeps_what_the_user_changed_after_install() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    // The user edits the file by hand afterwards.
    let mut s = read(&path);
    s["theme"] = json!("dark");
    s["hooks"]["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "~/bin/notify"}]}));
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();

    ok(&w.run(&settings_args("uninstall", &path, &[])));
    let mut expected: Value = serde_json::from_str(USER_SETTINGS).unwrap();
    expected["theme"] = json!("dark");
    expected["hooks"]["Stop"] =
        json!([{"hooks": [{"type": "command", "command": "~/bin/notify"}]}]);
    assert_eq!(read(&path), expected);
}

#[test]
fn a_group_removed_by_hand_is_added_again_and_uninstall_still_restores() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    let mut s = read(&path);
    s["hooks"]["Stop"] = json!([]);
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();

    let o = w.run(&settings_args("install", &path, &[]));
    ok(&o);
    assert!(stdout(&o).contains(": Stop\n"), "{}", stdout(&o));
    assert_eq!(interband_hooks(&read(&path), "Stop").len(), 1);
    ok(&w.run(&settings_args("uninstall", &path, &[])));
    assert_eq!(
        read(&path),
        serde_json::from_str::<Value>(USER_SETTINGS).unwrap()
    );
}

#[test]
fn an_earlier_install_s_hooks_name_their_host_after_install_and_uninstall_still_restores() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    // As an install from before the hook named its host left it: the
    // settings and the install's record, every hook `PROGRAM hook`.
    let earlier = |text: String| text.replace(" hook --host claude", " hook");
    let mut rewritten = 0;
    for f in files_under(w.dir.path()) {
        let f = w.dir.path().join(f);
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if text.contains(" hook --host claude") {
            std::fs::write(&f, earlier(text)).unwrap();
            rewritten += 1;
        }
    }
    assert_eq!(rewritten, 2, "the settings and the record");
    assert!(
        interband_hooks(&read(&path), "Stop")[0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" hook")
    );

    ok(&w.run(&settings_args("install", &path, &[])));
    let after = read(&path);
    for e in CLAUDE_EVENTS {
        let ours = interband_hooks(&after, e);
        assert_eq!(ours.len(), 1, "{e}: not doubled: {after}");
        assert_eq!(
            ours[0]["command"],
            format!("{} hook --host claude", program()),
            "{e}"
        );
    }
    ok(&w.run(&settings_args("uninstall", &path, &[])));
    assert_eq!(
        read(&path),
        serde_json::from_str::<Value>(USER_SETTINGS).unwrap()
    );
}

/// A folder holding a working `interband` (a script that exits 0), to put
/// on the PATH: another install the user chose.
#[cfg(unix)] // a shell script stands in for another install (Windows: install's plain-word forms are tested above)
fn working_interband_on_path(w: &World) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = w.dir.path().join("their-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = bin.join("interband");
    std::fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
#[cfg(unix)] // a shell script stands in for another install (Windows: install's plain-word forms are tested above)
fn an_interband_hook_that_runs_from_path_is_left_as_is_and_not_doubled() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    let theirs = r#"{"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "interband hook", "timeout": 5}]}]}, "statusLine": {"type": "command", "command": "interband statusline"}}"#;
    std::fs::write(&path, theirs).unwrap();
    let original = read(&path);
    let on_path = working_interband_on_path(&w);
    let run = |args: &[&str]| w.cmd(args).env("PATH", &on_path).finish();
    let o = run(&settings_args("install", &path, &[]));
    ok(&o);
    assert!(
        stdout(&o).contains("PostToolUse already runs `interband hook`; left as is")
            && stdout(&o).contains("statusLine already runs `interband statusline`; left as is"),
        "{}",
        stdout(&o)
    );
    let s = read(&path);
    assert_eq!(s["hooks"]["PostToolUse"], original["hooks"]["PostToolUse"]);
    assert_eq!(s["statusLine"], original["statusLine"]);
    assert_eq!(interband_hooks(&s, "Stop").len(), 1);
    ok(&run(&settings_args("uninstall", &path, &[])));
    assert_eq!(read(&path), original);
}

/// Hooks synced from another machine (or whose record was deleted, or lost)
/// run a binary that is gone: every hook exits 127. doctor names the fix,
/// and the fix works: install moves them to this binary, uninstall takes
/// them out, with no record either way, and says it is not byte for byte.
#[test]
fn hooks_of_a_gone_binary_without_a_record_are_moved_by_install_and_taken_out_by_uninstall() {
    for (form, hook, statusline) in [
        (
            "named",
            "/gone/bin/interband hook --host claude",
            "/gone/bin/interband statusline --host claude --wrap sh -c '~/bin/my-status --short'",
        ),
        (
            "earlier",
            "/gone/bin/interband hook",
            "/gone/bin/interband statusline --wrap sh -c '~/bin/my-status --short'",
        ),
        (
            "equals, and an option of a later release",
            "/gone/bin/interband hook --host=claude --quiet",
            "/gone/bin/interband statusline --host=claude --wrap sh -c '~/bin/my-status --short'",
        ),
        (
            "npx",
            "[ -x /gone/_npx/1/node_modules/interband/bin/interband ] && exec /gone/_npx/1/node_modules/interband/bin/interband hook --host claude || true",
            "[ -x /gone/_npx/1/node_modules/interband/bin/interband ] && exec /gone/_npx/1/node_modules/interband/bin/interband statusline --host claude --wrap sh -c '~/bin/my-status --short' || exec sh -c '~/bin/my-status --short'",
        ),
    ] {
        let w = World::new();
        let path = under(&w.home(), ".claude/settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut synced: Value = serde_json::from_str(USER_SETTINGS).unwrap();
        for e in CLAUDE_EVENTS {
            let groups = synced["hooks"][e].as_array().cloned().unwrap_or_default();
            let mut groups = groups;
            groups.push(json!({"hooks": [{"type": "command", "command": hook, "timeout": 5}]}));
            synced["hooks"][e] = json!(groups);
        }
        synced["statusLine"]["command"] = json!(statusline);
        std::fs::write(&path, serde_json::to_string_pretty(&synced).unwrap()).unwrap();

        let gone = |o: &std::process::Output| {
            stdout(o)
                .lines()
                .any(|l| l.contains("/gone/") && l.contains("does not exist"))
        };
        let o = w.run(&["doctor"]);
        assert!(
            gone(&o) && stdout(&o).contains("interband install --host claude"),
            "{form}: {}",
            stdout(&o)
        );
        // Uninstall alone takes them out (the way back to the user's own file).
        let o = w.run(&["uninstall"]);
        ok(&o);
        assert!(
            stdout(&o).contains("removed interband")
                && stdout(&o).contains("not restored byte for byte"),
            "{form}: {}",
            stdout(&o)
        );
        assert_eq!(
            read(&path),
            serde_json::from_str::<Value>(USER_SETTINGS).unwrap(),
            "{form}: the user's own settings, their statusline unwrapped"
        );
        // Install moves them to this binary, once per event.
        std::fs::write(&path, serde_json::to_string_pretty(&synced).unwrap()).unwrap();
        let o = w.run(&["install"]);
        ok(&o);
        assert!(
            stdout(&o).contains("they now run"),
            "{form}: {}",
            stdout(&o)
        );
        let s = read(&path);
        for e in CLAUDE_EVENTS {
            let ours = interband_hooks(&s, e);
            assert_eq!(ours.len(), 1, "{form} {e}: {s}");
            assert_eq!(
                ours[0]["command"],
                format!("{} hook --host claude", program())
            );
        }
        assert_eq!(
            s["statusLine"]["command"],
            format!(
                "{} statusline --host claude --wrap sh -c '~/bin/my-status --short'",
                program()
            ),
            "{form}"
        );
        let o = w.run(&["doctor"]);
        assert!(!gone(&o), "{form}: {}", stdout(&o));
        // And uninstall gives back the user's own settings.
        ok(&w.run(&["uninstall"]));
        assert_eq!(
            read(&path),
            serde_json::from_str::<Value>(USER_SETTINGS).unwrap(),
            "{form}"
        );
    }
}

#[test]
fn uninstall_without_a_record_removes_our_hooks_and_unwraps_the_statusline() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    let cmd = ["--command", "/opt/interband/bin/interband"];
    ok(&w.run(&settings_args("install", &path, &cmd)));
    std::fs::remove_file(sibling(&path, ".interband-install.json")).unwrap();
    let o = w.run(&settings_args("uninstall", &path, &cmd));
    ok(&o);
    assert_eq!(
        read(&path),
        serde_json::from_str::<Value>(USER_SETTINGS).unwrap()
    );
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine shows a link as what it names (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn a_symlinked_settings_file_stays_a_link_and_keeps_its_mode() {
    let w = World::new();
    let real = w.dir.path().join("dotfiles-settings.json");
    std::fs::write(&real, USER_SETTINGS).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let link = under(&w.home(), ".claude/settings.json");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(&real, &link);

    ok(&w.run(&["install"]));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(interband_hooks(&read(&real), "Stop").len(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
    ok(&w.run(&["uninstall"]));
    assert_eq!(std::fs::read_to_string(&real).unwrap(), USER_SETTINGS);
}

#[test]
fn an_install_from_another_place_moves_the_hooks_to_it_and_uninstall_still_restores() {
    // Installed from one place (an npm prefix, a cargo install), then from
    // another (npx's cache, a new prefix): the hooks and the wrapped
    // statusline follow the newest binary, nothing is doubled, and
    // uninstall still gives back the file as it was.
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    ok(&w.run(&settings_args(
        "install",
        &path,
        &["--command", "/a/interband"],
    )));
    let o = w.run(&settings_args(
        "install",
        &path,
        &["--command", "/b/interband"],
    ));
    ok(&o);
    let at = |p: &str| word(&std::path::absolute(p).unwrap().display().to_string());
    assert!(
        stdout(&o).contains(&format!(
            "ran {}: they now run {}",
            at("/a/interband"),
            at("/b/interband")
        )),
        "{}",
        stdout(&o)
    );
    let after = read(&path);
    for e in CLAUDE_EVENTS {
        let ours = interband_hooks(&after, e);
        assert_eq!(ours.len(), 1, "{e}: {after}");
        assert_eq!(
            ours[0]["command"],
            format!("{} hook --host claude", at("/b/interband")),
            "{e}"
        );
    }
    let status = after["statusLine"]["command"].as_str().unwrap();
    assert!(
        status.starts_with(&format!(
            "{} statusline --host claude --wrap ",
            at("/b/interband")
        )) && status.contains("my-status"),
        "{status}"
    );
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains(&at("/a/interband"))
    );
    // Again from the same place: nothing to do.
    let again = w.run(&settings_args(
        "install",
        &path,
        &["--command", "/b/interband"],
    ));
    ok(&again);
    assert!(
        stdout(&again).contains("already installed"),
        "{}",
        stdout(&again)
    );
    ok(&w.run(&settings_args("uninstall", &path, &[])));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), USER_SETTINGS);
    // A path with a space is quoted for the host's shell; on Windows, where
    // each host has its own shell, one with no short (8.3) form is refused
    // with the way out, and nothing is written.
    let path2 = w.dir.path().join("other.json");
    let o = w.run(&settings_args(
        "install",
        &path2,
        &["--command", "/my tools/interband"],
    ));
    if cfg!(windows) {
        assert_ne!(code(&o), 0, "{}", stdout(&o));
        assert!(stderr(&o).contains("--command PATH"), "{}", stderr(&o));
        assert!(!path2.exists());
    } else {
        ok(&o);
        assert_eq!(
            interband_hooks(&read(&path2), "Stop")[0]["command"],
            "'/my tools/interband' hook --host claude"
        );
    }
}

#[test]
fn the_plugin_files_are_valid() {
    let root = repo();
    let plugin: Value = serde_json::from_str(
        &std::fs::read_to_string(under(&root, "plugin/.claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(plugin["name"], "interband");
    assert_eq!(plugin["version"], "0.1.0");
    assert!(plugin["description"].is_string());
    // hooks/hooks.json is loaded by convention; naming it in the manifest loads it twice.
    assert!(plugin.get("hooks").is_none());
    // Only keys every release with plugins knows: Claude Code 2.0.76 refuses
    // a manifest with one it does not (`icon`), and loads none of its hooks, silently.
    let known = [
        "name",
        "version",
        "description",
        "author",
        "license",
        "keywords",
    ];
    for key in plugin.as_object().unwrap().keys() {
        assert!(
            known.contains(&key.as_str()),
            "{key}: not known to Claude Code 2.0.76"
        );
    }

    // The marketplace's plugin is its own folder: installing it from a
    // built clone copies no build output.
    let market: Value = serde_json::from_str(
        &std::fs::read_to_string(under(&root, ".claude-plugin/marketplace.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(market["plugins"][0]["source"], "./plugin");
    let mut parts: Vec<String> = std::fs::read_dir(root.join("plugin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    parts.sort();
    assert_eq!(parts, [".claude-plugin", "hooks", "skills"]);

    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(under(&root, "plugin/hooks/hooks.json")).unwrap(),
    )
    .unwrap();
    let mut events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    events.sort();
    let mut want = CLAUDE_EVENTS.to_vec();
    want.sort();
    assert_eq!(events, want);
    for e in CLAUDE_EVENTS {
        let groups = hooks["hooks"][e].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{e}");
        let h = groups[0]["hooks"].as_array().unwrap();
        assert_eq!(h.len(), 1, "{e}");
        assert!(
            h[0]["command"]
                .as_str()
                .unwrap()
                .contains("exec interband hook")
        );
        assert!(h[0]["timeout"].as_u64().unwrap() > 0);
    }

    let skill =
        std::fs::read_to_string(under(&root, "plugin/skills/interband-pressure/SKILL.md")).unwrap();
    let front = skill
        .strip_prefix("---\n")
        .and_then(|s| s.split_once("\n---\n"))
        .unwrap()
        .0;
    assert!(front.lines().any(|l| l == "name: interband-pressure"));
    assert!(front.lines().any(|l| l.starts_with("description: ")));
    assert!(skill.contains("interband pressure --json"));
}

/// Runs the plugin's hook command for `event` as Claude Code does (through bash, with
/// `${CLAUDE_PLUGIN_ROOT}` substituted), with `stdin`, the given PATH, HOME and extra variables.
#[cfg(unix)] // the plugin's hook command runs through bash (Claude Code on Windows: Git Bash, which Wine lacks)
fn plugin_hook(
    w: &World,
    event: &str,
    stdin: &[u8],
    path: &str,
    vars: &[(&str, &str)],
) -> std::process::Output {
    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(under(&repo(), "plugin/hooks/hooks.json")).unwrap(),
    )
    .unwrap();
    let command = hooks["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .replace(
            "${CLAUDE_PLUGIN_ROOT}",
            repo().join("plugin").to_str().unwrap(),
        );
    let mut c = std::process::Command::new("bash");
    c.arg("-c")
        .arg(command)
        .env_clear()
        .env("PATH", path)
        .env("HOME", w.home())
        .env("INTERBAND_ROOT", w.root());
    for (k, v) in vars {
        c.env(k, v);
    }
    with_stdin(&mut c, stdin)
}

#[test]
#[cfg(unix)] // through bash, as plugin_hook
fn the_plugin_hooks_find_the_binary_or_say_once_how_to_install_it() {
    let bin_dir = Path::new(BIN)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let system = "/usr/bin:/bin";
    let post = capture("PostToolUse.input.json");
    let session = serde_json::from_slice::<Value>(&post).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let published = |w: &World| w.bus().read("interpulse", "pressure", &session).is_ok();
    // Found on PATH, at $INTERBAND_BIN, or in cargo's bin folder: the hook runs.
    let on_path = World::new();
    let o = plugin_hook(
        &on_path,
        "PostToolUse",
        &post,
        &format!("{bin_dir}:{system}"),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(published(&on_path), "PATH");
    let by_var = World::new();
    let o = plugin_hook(
        &by_var,
        "PostToolUse",
        &post,
        system,
        &[("INTERBAND_BIN", BIN)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(published(&by_var), "INTERBAND_BIN");
    let in_cargo = World::new();
    let cargo_bin = under(&in_cargo.home(), ".cargo/bin");
    std::fs::create_dir_all(&cargo_bin).unwrap();
    symlink(BIN, cargo_bin.join("interband"));
    let o = plugin_hook(&in_cargo, "PostToolUse", &post, system, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(published(&in_cargo), "~/.cargo/bin");

    // Nowhere: every hook succeeds silently; the session's start says how, once.
    let none = World::new();
    for e in CLAUDE_EVENTS {
        let input = if e == "SessionStart" {
            capture("SessionStart.compact.input.json")
        } else {
            post.clone()
        };
        let o = plugin_hook(
            &none,
            e,
            &input,
            system,
            &[("INTERBAND_BIN", "/nonexistent")],
        );
        assert_eq!(code(&o), 0, "{e}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{e}: nothing said");
    }
    let o = plugin_hook(
        &none,
        "SessionStart",
        &capture("SessionStart.startup.input.json"),
        system,
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let said: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let text = said["systemMessage"].as_str().unwrap();
    // The route that needs no Rust first; cargo from the clone it is in last.
    let npm = text.find("npm install -g interband").expect(text);
    let cargo = text.find("cargo install --path . --locked").expect(text);
    assert!(npm < cargo, "{text}");
    assert!(text.contains("pipx install interband"), "{text}");
    assert!(
        text.contains(&format!("cd '{}'", repo().display())),
        "names the clone the plugin is in: {text}"
    );
    assert_eq!(said["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert_eq!(said["hookSpecificOutput"]["additionalContext"], text);
    assert!(!none.root().exists(), "nothing was written");
}

#[test]
fn a_bare_settings_file_name_is_written_in_the_current_folder() {
    let w = World::new();
    let o = w
        .cmd(&[
            "install",
            "--settings",
            "a.json",
            "--command",
            "/opt/interband",
        ])
        .current_dir(w.dir.path())
        .finish();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(w.dir.path().join("a.json")).unwrap()).unwrap();
    assert!(v["hooks"]["PostToolUse"].is_array());
}

#[test]
fn a_reinstall_after_an_uninstall_backs_up_the_file_as_it_is_now() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    let backup = sibling(&path, ".interband-backup");
    std::fs::write(&path, r#"{"a": 1}"#).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    ok(&w.run(&settings_args("uninstall", &path, &[])));
    std::fs::write(&path, r#"{"a": 2, "permissions": {"allow": ["Bash"]}}"#).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    assert_eq!(
        read(&backup),
        json!({"a": 2, "permissions": {"allow": ["Bash"]}})
    );
    // A second install keeps the backup of before the first.
    ok(&w.run(&settings_args("install", &path, &[])));
    assert_eq!(read(&backup)["a"], 2);
}

#[test]
fn codex_home_is_where_codex_hooks_go_when_set() {
    let w = World::new();
    let codex_home = w.dir.path().join("codex-home");
    let o = w
        .cmd(&["install", "--host", "codex"])
        .env("CODEX_HOME", &codex_home)
        .finish();
    ok(&o);
    assert_eq!(
        interband_hooks(&read(&codex_home.join("hooks.json")), "Stop").len(),
        1
    );
    assert!(!w.home().join(".codex").exists());
}

/// How a dotfiles manager links a file: straight, relatively, through a
/// second link, or to a file its repository does not have yet.
#[derive(Debug, Clone, Copy)]
enum Link {
    Absolute,
    Relative,
    Chain,
    Dangling,
}

const LINKS: [Link; 4] = [Link::Absolute, Link::Relative, Link::Chain, Link::Dangling];

/// Puts `content` (none for a dangling link) in a dotfiles folder and links
/// `at` to it as `how` says. Returns the real file.
fn dotfile(w: &World, at: &Path, how: Link, content: Option<&str>) -> PathBuf {
    let name = at.file_name().unwrap().to_str().unwrap();
    let dots = w.dir.path().join("dotfiles");
    std::fs::create_dir_all(&dots).unwrap();
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let real = dots.join(format!("{name}.real"));
    if let Some(c) = content {
        std::fs::write(&real, c).unwrap();
    }
    match how {
        Link::Absolute | Link::Dangling => symlink(&real, at),
        Link::Relative => {
            let up = "../".repeat(
                at.parent()
                    .unwrap()
                    .strip_prefix(w.dir.path())
                    .unwrap()
                    .components()
                    .count(),
            );
            symlink(format!("{up}dotfiles/{name}.real"), at);
        }
        Link::Chain => {
            let middle = dots.join(format!("{name}.middle"));
            symlink(&real, &middle);
            symlink(&middle, at);
        }
    }
    real
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// What is in a folder, but the links, backups and records interband keeps.
fn plain_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine shows a link as what it names (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn every_hosts_linked_settings_file_is_written_through_its_link_and_given_back() {
    for profile in interband_hosts::Host::ALL.map(|h| h.profile()) {
        let host = profile.key;
        for how in LINKS {
            let w = World::new();
            let file = profile.settings_file;
            let at = w.home().join(file);
            let theirs = (!matches!(how, Link::Dangling)).then_some("{\"theirs\": 1}\n");
            let real = dotfile(&w, &at, how, theirs);
            let before = plain_files(at.parent().unwrap());
            let o = w.run(&["install", "--host", host]);
            ok(&o);
            let case = format!("{host}, {how:?} link: {}", stdout(&o));
            assert!(is_link(&at), "{case}: the link stays a link");
            let written = read(&real);
            let at_turn_end = written["hooks"][profile.end_of_turn]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|h| h.to_string().contains(&format!("hook --host {host}")))
                .count();
            assert_eq!(at_turn_end, 1, "{case}: {written}");
            assert_eq!(
                plain_files(at.parent().unwrap()),
                before,
                "{case}: nothing beside the link"
            );
            ok(&w.run(&["uninstall", "--host", host]));
            assert!(is_link(&at), "{case}: still a link");
            match theirs {
                Some(t) => assert_eq!(std::fs::read_to_string(&real).unwrap(), t, "{case}"),
                None => assert!(!real.exists(), "{case}: the file install made is gone"),
            }
            let left: Vec<String> = plain_files(real.parent().unwrap())
                .into_iter()
                .filter(|n| n.contains("interband"))
                .collect();
            assert!(left.is_empty(), "{case}: {left:?}");
        }
    }
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine shows a link as what it names (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn codex_trust_goes_where_codex_reads_it_through_every_link() {
    for (linked, how) in LINKS
        .iter()
        .flat_map(|h| [("hooks.json", *h), ("config.toml", *h), ("both", *h)])
    {
        let w = World::new();
        let codex = w.home().join(".codex");
        std::fs::create_dir_all(&codex).unwrap();
        let hooks = codex.join("hooks.json");
        let config = codex.join("config.toml");
        let user_config = (!matches!(how, Link::Dangling)).then_some("model = \"gpt-5.1-codex\"\n");
        let real_hooks = if linked != "config.toml" {
            dotfile(&w, &hooks, how, Some("{}\n"))
        } else {
            hooks.clone()
        };
        let real_config = if linked != "hooks.json" {
            dotfile(&w, &config, how, user_config)
        } else {
            if let Some(c) = user_config {
                std::fs::write(&config, c).unwrap();
            }
            config.clone()
        };
        let case = format!("{linked} linked, {how:?}");
        let o = w.run(&["install", "--host", "codex", "--trust"]);
        ok(&o);
        assert!(
            stdout(&o).contains("trusted 6 hook(s)"),
            "{case}: {}",
            stdout(&o)
        );
        for p in [&hooks, &config] {
            assert_eq!(
                is_link(p),
                linked == "both" || p.ends_with(linked),
                "{case}: {}",
                p.display()
            );
        }
        // Codex reads `config.toml` beside the hooks.json it found (through
        // its link), and keys the trust by that hooks.json.
        let trusted: toml::Table =
            toml::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        let state = trusted["hooks"]["state"].as_table().unwrap();
        assert_eq!(state.len(), 6, "{case}: {state:?}");
        assert!(
            state.contains_key(&format!("{}:stop:0:0", hooks.display())),
            "{case}: {state:?}"
        );
        assert!(
            linked == "config.toml"
                || plain_files(real_hooks.parent().unwrap())
                    .iter()
                    .all(|n| n != "config.toml"),
            "{case}: no config.toml beside the hooks' real file"
        );
        ok(&w.run(&["uninstall", "--host", "codex"]));
        for p in [&hooks, &config] {
            assert_eq!(
                is_link(p),
                linked == "both" || p.ends_with(linked),
                "{case}: {}",
                p.display()
            );
        }
        match user_config {
            Some(c) => assert_eq!(std::fs::read_to_string(&real_config).unwrap(), c, "{case}"),
            None => assert!(
                !real_config.exists(),
                "{case}: the config.toml --trust made is gone"
            ),
        }
    }
}

#[test]
fn uninstall_takes_our_hook_out_of_a_group_the_user_added_to() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    // The user adds their own command into interband's Stop group, and
    // copies our hook into another event by hand.
    let mut s = read(&path);
    let ours = interband_hooks(&s, "Stop")[0].clone();
    s["hooks"]["Stop"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "~/bin/notify-me"}));
    s["hooks"]["PreToolUse"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(ours);
    std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    let o = w.run(&settings_args("uninstall", &path, &[]));
    ok(&o);
    let said = stdout(&o);
    assert!(!said.contains("already gone"), "{said}");
    assert!(said.contains("yours is kept"), "{said}");
    let after = read(&path);
    for e in ["Stop", "PreToolUse", "PostToolUse", "PreCompact"] {
        assert!(interband_hooks(&after, e).is_empty(), "{e}: {after}");
    }
    assert_eq!(
        after["hooks"]["Stop"][0]["hooks"],
        json!([{"type": "command", "command": "~/bin/notify-me"}]),
        "{after}"
    );
    assert_eq!(
        after["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "~/bin/guard"
    );
}

#[test]
fn an_install_or_uninstall_killed_mid_write_leaves_no_copy_for_long() {
    let w = World::new();
    let claude = w.home().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), USER_SETTINGS).unwrap();
    // What a kill between the temp file and its rename leaves: private
    // copies of the settings, an hour old; and one being written now.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for n in 0..12 {
        let p = claude.join(format!(".interband-tmp.{n:016x}"));
        std::fs::write(&p, USER_SETTINGS).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let fresh = claude.join(".interband-tmp.fresh");
    std::fs::write(&fresh, USER_SETTINGS).unwrap();
    for cmd in ["install", "uninstall"] {
        ok(&w.run(&[cmd]));
        let left: Vec<String> = plain_files(&claude)
            .into_iter()
            .filter(|n| n.starts_with(".interband-tmp."))
            .collect();
        assert_eq!(
            left,
            [".interband-tmp.fresh"],
            "after {cmd}: only a write that may be under way"
        );
    }
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "Wine shows a link as what it names (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn codex_trust_is_keyed_as_codex_keys_it_when_its_home_is_a_link() {
    let trusted_keys = |config: &Path| -> Vec<String> {
        let t: toml::Table = toml::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
        t["hooks"]["state"]
            .as_table()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    // $CODEX_HOME a link: Codex resolves it to the real folder.
    let w = World::new();
    let real = w.dir.path().join("real-codex");
    std::fs::create_dir_all(&real).unwrap();
    let link = w.dir.path().join("codex-link");
    symlink(&real, &link);
    let o = w
        .cmd(&["install", "--host", "codex", "--trust"])
        .env("CODEX_HOME", &link)
        .finish();
    ok(&o);
    let real = dunce::canonicalize(&real).unwrap();
    let keys = trusted_keys(&real.join("config.toml"));
    assert!(
        keys.iter()
            .all(|k| k.starts_with(&format!("{}/hooks.json:", real.display()))),
        "{keys:?}"
    );
    // ~/.codex a link, no $CODEX_HOME: Codex keeps the path as it is.
    let w = World::new();
    let real = w.dir.path().join("dotfiles-codex");
    std::fs::create_dir_all(&real).unwrap();
    symlink(&real, w.home().join(".codex"));
    ok(&w.run(&["install", "--host", "codex", "--trust"]));
    let keys = trusted_keys(&real.join("config.toml"));
    let home_hooks = under(&w.home(), ".codex/hooks.json");
    assert!(
        keys.iter()
            .all(|k| k.starts_with(&format!("{}:", home_hooks.display()))),
        "{keys:?}"
    );
}

#[test]
fn uninstall_purge_removes_interbands_data_only_and_asks_first() {
    let w = World::new();
    ok(&w.run(&["install", "--command", BIN]));
    // interband's data, a v1 plugin's channel on the same root, a trust file.
    let root = w.root();
    for (dir, file) in [
        ("interpulse/pressure", "s.json"),
        ("intermem/notes/p/s", "n.md"),
        (".state/interpulse", "s.json"),
        ("clavain/dispatch", "theirs.json"),
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::write(root.join(dir).join(file), "{}").unwrap();
    }
    let trust = under(&w.home(), ".config/interband/trusted.json");
    std::fs::create_dir_all(trust.parent().unwrap()).unwrap();
    std::fs::write(&trust, "{}").unwrap();
    let trust_lock = trust.with_file_name(".trusted.json.lock");
    std::fs::write(&trust_lock, "").unwrap();
    // Not a terminal, no --yes: nothing removed (the hooks are, as asked).
    let o = w.run(&["uninstall", "--purge"]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("--yes"), "{}", stderr(&o));
    assert!(under(&root, "interpulse/pressure/s.json").exists() && trust.exists());
    ok(&w.run(&["uninstall", "--purge", "--yes"]));
    for gone in ["interpulse", "intermem", ".state"] {
        assert!(!root.join(gone).exists(), "{gone}");
    }
    assert!(!trust.exists() && !trust_lock.exists());
    assert!(
        under(&root, "clavain/dispatch/theirs.json").exists(),
        "another plugin's channel stays"
    );
    // Nothing else left: the root goes too.
    std::fs::remove_dir_all(root.join("clavain")).unwrap();
    std::fs::create_dir_all(root.join("interpulse")).unwrap();
    ok(&w.run(&["uninstall", "--purge", "--yes"]));
    assert!(!root.exists());
}

#[test]
fn statusline_only_adds_the_statusline_alone_and_uninstall_takes_it_out() {
    // For the plugin route: the plugin brings the hooks, and cannot bring a statusline.
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, USER_SETTINGS).unwrap();
    let original = read(&path);
    let o = w.run(&settings_args("install", &path, &["--statusline-only"]));
    ok(&o);
    assert!(stdout(&o).contains("installed interband"), "{}", stdout(&o));
    let s = read(&path);
    assert_eq!(s["hooks"], original["hooks"], "no hook added");
    assert_eq!(
        s["statusLine"]["command"],
        format!(
            "{} statusline --host claude --wrap sh -c '~/bin/my-status --short'",
            program()
        )
    );
    let o = w.run(&settings_args("install", &path, &["--statusline-only"]));
    ok(&o);
    assert!(stdout(&o).contains("already installed"), "{}", stdout(&o));
    let o = w.run(&settings_args("uninstall", &path, &[]));
    ok(&o);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), USER_SETTINGS);

    // A host without a statusline: refused, nothing written.
    let hooks = w.dir.path().join("hooks.json");
    let o = w.run(&[
        "install",
        "--host",
        "codex",
        "--settings",
        hooks.to_str().unwrap(),
        "--statusline-only",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--statusline-only"), "{}", stderr(&o));
    assert!(!hooks.exists());
}

/// A statusline run from npx's cache is guarded like the hooks: once npm
/// clears the cache it prints the user's own line (or nothing), never fails,
/// and the user's wrapped statusline is not lost. Claude Code's and Copilot's.
#[test]
#[cfg(unix)] // a shell script as the person's statusline (Windows: a_wrapped_statusline_runs_in_the_shell_the_host_runs_it_in)
fn a_statusline_from_npx_s_cache_falls_back_to_the_user_s_own_when_npm_clears_it() {
    for host in ["claude", "copilot"] {
        let w = World::new();
        let npx = w
            .dir
            .path()
            .join("npm/_npx/0123/node_modules/interband/bin");
        std::fs::create_dir_all(&npx).unwrap();
        let bin = npx.join("interband");
        std::fs::copy(BIN, &bin).unwrap();
        let path = w.dir.path().join("settings.json");
        std::fs::write(
            &path,
            r#"{"statusLine": {"type": "command", "command": "echo their-line"}}"#,
        )
        .unwrap();
        ok(&w.run(&settings_args(
            "install",
            &path,
            &["--host", host, "--command", bin.to_str().unwrap()],
        )));
        let command = read(&path)["statusLine"]["command"]
            .as_str()
            .unwrap()
            .to_owned();
        let run = || {
            let mut sh = std::process::Command::new("sh");
            sh.args(["-c", &command])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", w.home())
                .env("INTERBAND_ROOT", w.root());
            with_stdin(&mut sh, &capture("statusLine.input.json"))
        };
        let o = run();
        assert_eq!(code(&o), 0, "{host}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("their-line") && stdout(&o).contains("ctx"),
            "{host}: {}",
            stdout(&o)
        );
        std::fs::remove_dir_all(under(w.dir.path(), "npm/_npx")).unwrap();
        let o = run();
        assert_eq!(code(&o), 0, "{host}: {}", stderr(&o));
        assert_eq!(stdout(&o), "their-line\n", "{host}");
        // Uninstall gives back theirs, from the guarded form.
        ok(&w.run(&settings_args(
            "uninstall",
            &path,
            &["--host", host, "--command", "/elsewhere/interband"],
        )));
        assert_eq!(
            read(&path)["statusLine"]["command"],
            "echo their-line",
            "{host}"
        );
    }
}

/// Two installs of one host at once (two terminals, a dotfiles script and
/// a person) each read and write the settings and the record: under one
/// lock, one waits for the other, and the record knows everything added,
/// so uninstall gives the file back byte for byte, the user's own empty
/// `"SessionEnd": []` included.
#[test]
fn simultaneous_installs_keep_the_record_and_uninstall_is_byte_for_byte() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    let theirs = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"SessionEnd\": []\n  }\n}\n";
    for round in 0..40 {
        std::fs::write(&path, theirs).unwrap();
        let spawn = || {
            w.cmd(&settings_args("install", &path, &[]))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .start()
        };
        let (a, b) = (spawn(), spawn());
        for child in [a, b] {
            let o = child.wait_with_output().unwrap();
            // The second may find the file changed under it and say so: it
            // writes nothing then, and the first's install stands.
            assert!(
                code(&o) == 0 || stderr(&o).contains("run the command again"),
                "round {round}: {}",
                stderr(&o)
            );
        }
        let installed = read(&path);
        for e in CLAUDE_EVENTS {
            assert_eq!(
                interband_hooks(&installed, e).len(),
                1,
                "round {round} {e}: {installed}"
            );
        }
        ok(&w.run(&settings_args("uninstall", &path, &[])));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            theirs,
            "round {round}"
        );
    }
}

/// `uninstall --purge` keeps the records of project installs still in
/// place and says which: a later `uninstall --project` there still gives
/// the project's file back (no `{}` left behind in the repository).
#[test]
fn purge_keeps_the_records_of_project_installs_still_in_place() {
    let w = World::new();
    let project = w.dir.path().join("repo");
    std::fs::create_dir_all(&project).unwrap();
    let run = |args: &[&str]| w.cmd(args).current_dir(&project).finish();
    ok(&run(&["install", "--command", BIN]));
    ok(&run(&["install", "--project"]));
    let o = run(&["uninstall", "--purge", "--yes"]);
    ok(&o);
    assert!(
        stdout(&o).contains("kept: the install record of")
            && stdout(&o).contains(
                &std::path::Path::new("repo")
                    .join(".claude")
                    .join("settings.json")
                    .display()
                    .to_string()
            ),
        "{}",
        stdout(&o)
    );
    let o = run(&["uninstall", "--project"]);
    ok(&o);
    assert!(
        !under(&project, ".claude/settings.json").exists(),
        "the file the project install created is gone again: {}",
        stdout(&o)
    );
    // With nothing left in place, a purge takes the state folder too.
    ok(&run(&["uninstall", "--purge", "--yes"]));
    assert!(!under(&w.home(), ".local/state/interband").exists());
}

/// install keeps the file's layout (a compact file stays compact, an
/// indent stays that indent), so it never writes a file interband cannot
/// read back; one that would be over the read limit is refused, unchanged.
#[test]
fn install_keeps_the_file_s_layout_and_never_writes_past_the_read_limit() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    let allow: Vec<String> = (0..200_000).map(|i| format!("Bash(tool-{i}:*)")).collect();
    let compact =
        serde_json::to_string(&json!({"model": "opus", "permissions": {"allow": allow}})).unwrap();
    assert!(compact.len() > 4_000_000);
    for (layout, text) in [
        ("compact", compact.clone()),
        ("compact with a newline", format!("{compact}\n")),
        (
            "tabs",
            "{\n\t\"model\": \"opus\",\n\t\"env\": {\n\t\t\"A\": \"1\"\n\t}\n}\n".to_owned(),
        ),
        ("four spaces", "{\n    \"model\": \"opus\"\n}".to_owned()),
        ("CRLF", "{\r\n\t\"model\": \"opus\"\r\n}\r\n".to_owned()),
    ] {
        std::fs::write(&path, &text).unwrap();
        ok(&w.run(&settings_args("install", &path, &[])));
        let after = std::fs::read_to_string(&path).unwrap();
        match layout {
            "compact" | "compact with a newline" => {
                assert_eq!(after.trim_end().lines().count(), 1, "{layout}");
                assert!(after.len() < text.len() + 4096, "{layout}: {}", after.len());
                assert_eq!(after.ends_with('\n'), text.ends_with('\n'), "{layout}");
            }
            "CRLF" => assert!(
                after.contains("\r\n\t\"hooks\": {\r\n\t\t\"")
                    && !after.replace("\r\n", "").contains('\n'),
                "{layout}: {after:?}"
            ),
            "tabs" => assert!(
                after.contains("\n\t\"hooks\": {\n\t\t\""),
                "{layout}: {after}"
            ),
            _ => assert!(
                after.contains("\n    \"hooks\": {\n        \""),
                "{layout}: {after}"
            ),
        }
        ok(&w.run(&settings_args("uninstall", &path, &[])));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{layout}");
    }
    // Just under the limit, compact: with the hooks it would be over it.
    let limit = 16 << 20;
    let pad = "x".repeat(limit - 200);
    let near = format!("{{\"pad\":\"{pad}\"}}");
    assert!(near.len() < limit);
    std::fs::write(&path, &near).unwrap();
    let o = w.run(&settings_args("install", &path, &[]));
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    assert!(stderr(&o).contains("over the"), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&path).unwrap() == near, "unchanged");
}

/// Copilot CLI reads a repository's hooks from `.github/hooks/*.json` (and
/// never its `.copilot/settings.json`), and runs them beside the user's:
/// `install --project` writes its own file there, hooks only, doctor finds
/// the hooks at both levels, and uninstall takes the file away again.
#[test]
fn a_copilot_project_install_goes_where_copilot_reads_it() {
    let w = World::new();
    let project = w.dir.path().join("repo");
    std::fs::create_dir_all(&project).unwrap();
    let run = |args: &[&str]| w.cmd(args).current_dir(&project).finish();
    ok(&run(&["install", "--project", "--host", "copilot"]));
    let file = under(&project, ".github/hooks/interband.json");
    let s = read(&file);
    assert!(s.get("statusLine").is_none(), "{s}");
    // Shared with everyone who clones the repository: Copilot runs a hook's
    // `bash` on Unix and its `powershell` on Windows, and each has it, in a
    // form every shell reads alike.
    for key in ["bash", "powershell"] {
        assert_eq!(
            s["hooks"]["PostToolUse"][0][key], "interband hook --host copilot; exit 0",
            "{key}: {s}"
        );
    }
    // A file an earlier install wrote for this system gets the other's.
    let other = if cfg!(windows) { "bash" } else { "powershell" };
    let mut one: Value = s.clone();
    for hook in one["hooks"].as_object_mut().unwrap().values_mut() {
        hook[0].as_object_mut().unwrap().remove(other);
    }
    std::fs::write(&file, one.to_string()).unwrap();
    let o = run(&["install", "--project", "--host", "copilot"]);
    ok(&o);
    assert!(
        stdout(&o).contains("now written for every system that shares the file"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        read(&file)["hooks"]["Stop"][0]["powershell"],
        "interband hook --host copilot; exit 0"
    );
    assert!(!project.join(".copilot").exists());
    ok(&run(&["install", "--host", "copilot", "--command", BIN]));
    let o = run(&["doctor"]);
    assert!(
        stdout(&o).contains(&format!(
            "{} has interband's hooks too",
            under(Path::new(".github"), "hooks/interband.json").display()
        )),
        "{}",
        stdout(&o)
    );
    ok(&run(&["uninstall", "--project", "--host", "copilot"]));
    assert!(!file.exists());
}

/// Every host's uninstall gives back the very bytes of a file laid out
/// unlike anything interband writes (spacing of its own, a key order, an
/// escaped character), and leaves no backup or record behind: a
/// re-serialization would pass a test on a file interband had formatted.
#[test]
fn every_host_s_uninstall_gives_back_a_file_laid_out_unlike_interband_s_own() {
    for host in interband_hosts::Host::ALL {
        let key = host.profile().key;
        let w = World::new();
        let path = w.dir.path().join(format!("{key}-settings.json"));
        let theirs = "{ \"zeta\" : 1,\"alpha\":[ 1,2 ,3 ],\n\t\"name\": \"caf\\u00e9\" ,\"nested\" :{\"k\":\"v\"}}\n";
        std::fs::write(&path, theirs).unwrap();
        ok(&w.run(&settings_args("install", &path, &["--host", key])));
        assert_ne!(
            std::fs::read_to_string(&path).unwrap(),
            theirs,
            "{key}: installed"
        );
        ok(&w.run(&settings_args("uninstall", &path, &["--host", key])));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            theirs,
            "{key}: byte for byte"
        );
        for left in [".interband-backup", ".interband-install.json"] {
            assert!(!sibling(&path, left).exists(), "{key}: {left} left behind");
        }
    }
}

/// A file interband cannot rewrite without loss is refused, unchanged, with
/// the reason: a key twice in one object (a parser keeps the last), a
/// byte-order mark.
#[test]
fn a_file_install_would_lose_part_of_is_refused_with_the_reason() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    for (what, text, said) in [
        (
            "a key twice",
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"a.sh\"}]}]},\n \"hooks\": {}}\n",
            "the key \"hooks\" is there twice",
        ),
        (
            "a key twice, deeper",
            "{\"env\": {\"A\": \"1\", \"A\": \"2\"}}",
            "the key \"A\" is there twice",
        ),
        (
            "a byte-order mark",
            "\u{feff}{\"model\": \"opus\"}\n",
            "byte-order mark",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        for args in [&["install"][..], &["install", "--dry-run"], &["uninstall"]] {
            let o = w.run(&settings_args(args[0], &path, &args[1..]));
            assert_ne!(code(&o), 0, "{what} {args:?}: {}", stdout(&o));
            assert!(stderr(&o).contains(said), "{what} {args:?}: {}", stderr(&o));
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                text,
                "{what}: unchanged"
            );
        }
    }
}

/// A hook run by another working interband, named the way a shell finds it
/// (`~/bin/interband`, `$HOME/bin/interband`), is that user's choice: left.
#[test]
#[cfg(unix)] // `~/bin/interband` as a Unix shell names it (Windows: install's plain-word forms are tested above)
fn a_working_interband_named_from_home_is_left_as_is() {
    let w = World::new();
    let bin = under(&w.home(), "bin/interband");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    set_executable(&bin);
    let path = under(&w.home(), ".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs = json!({"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "$HOME/bin/interband hook --host claude"}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "~/bin/interband hook --host claude"}]}]}});
    std::fs::write(&path, serde_json::to_string_pretty(&theirs).unwrap()).unwrap();
    let o = w.run(&["doctor"]);
    assert!(
        !stdout(&o).contains("bin/interband does not exist"),
        "{}",
        stdout(&o)
    );
    let o = w.run(&["install"]);
    ok(&o);
    assert!(!stdout(&o).contains("they now run"), "{}", stdout(&o));
    let s = read(&path);
    assert_eq!(s["hooks"]["Stop"], theirs["hooks"]["Stop"], "{s}");
    assert_eq!(
        s["hooks"]["PostToolUse"], theirs["hooks"]["PostToolUse"],
        "{s}"
    );
}

/// Two projects whose paths read alike (`my/app`, `my-app`) keep a record
/// each: uninstall in either gives its own file back.
#[test]
fn two_projects_whose_paths_read_alike_keep_a_record_each() {
    let w = World::new();
    let (a, b) = (under(w.dir.path(), "my/app"), w.dir.path().join("my-app"));
    for p in [&a, &b] {
        std::fs::create_dir_all(p).unwrap();
        ok(&w.cmd(&["install", "--project"]).current_dir(p).finish());
    }
    for p in [&a, &b] {
        let o = w.cmd(&["uninstall", "--project"]).current_dir(p).finish();
        ok(&o);
        assert!(!stdout(&o).contains("no install record"), "{}", stdout(&o));
        assert!(
            !p.join(".claude").exists(),
            "{}: {}",
            p.display(),
            stdout(&o)
        );
    }
}

/// A user's own chain after interband's hook, however it is spaced, is the
/// user's: install adds interband's own hook beside it, uninstall (with no
/// record) leaves it whole.
#[test]
fn a_user_s_chain_with_interband_s_hook_in_it_is_left_whole() {
    for chain in [
        "/gone/interband hook --host claude;/usr/bin/true -q",
        "/gone/interband hook --host=claude;/usr/bin/true -q",
        "/gone/interband hook --host claude&&/usr/bin/true",
        "/gone/interband hook --host claude|tee -a /tmp/x",
        "/gone/interband hook --host $(/usr/bin/true)",
        "/gone/interband hook --host claude --x=1;/usr/bin/true --y",
        "[ -x /x ] && /usr/bin/true; [ -x /gone/interband ] && exec /gone/interband hook --host claude || true",
    ] {
        let w = World::new();
        let path = w.dir.path().join("settings.json");
        let theirs =
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": chain}]}]}});
        std::fs::write(&path, theirs.to_string()).unwrap();
        ok(&w.run(&settings_args("install", &path, &[])));
        let s = read(&path);
        assert_eq!(
            s["hooks"]["Stop"][0], theirs["hooks"]["Stop"][0],
            "{chain}: {s}"
        );
        std::fs::remove_file(sibling(&path, ".interband-install.json")).unwrap();
        ok(&w.run(&settings_args("uninstall", &path, &[])));
        assert_eq!(read(&path), theirs, "{chain}");
    }
}

/// A project hook whose program only the host can find (Claude Code's
/// `"$CLAUDE_PROJECT_DIR"/...`) is never taken for gone.
#[test]
fn a_program_named_through_a_variable_is_never_taken_for_gone() {
    let w = World::new();
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let command = "\"$CLAUDE_PROJECT_DIR\"/tools/interband hook --host claude";
    let theirs = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}});
    let file = under(&project, ".claude/settings.json");
    std::fs::write(&file, theirs.to_string()).unwrap();
    let o = w
        .cmd(&["install", "--project"])
        .current_dir(&project)
        .finish();
    ok(&o);
    assert_eq!(
        read(&file)["hooks"]["Stop"],
        theirs["hooks"]["Stop"],
        "{}",
        stdout(&o)
    );
    let o = w.cmd(&["doctor"]).current_dir(&project).finish();
    assert!(
        !stdout(&o)
            .lines()
            .any(|l| l.contains("tools/interband") && l.contains("does not exist")),
        "{}",
        stdout(&o)
    );
}

/// A project far down a long path installs and uninstalls (its record's
/// name is bounded), and a record an earlier release named by the slug
/// alone serves only the project whose groups it holds.
#[test]
fn project_records_are_named_for_any_path_and_never_handed_to_another_project() {
    let w = World::new();
    let deep = w.dir.path().join("a".repeat(120)).join("b".repeat(100));
    std::fs::create_dir_all(&deep).unwrap();
    ok(&w.cmd(&["install", "--project"]).current_dir(&deep).finish());
    ok(&w
        .cmd(&["uninstall", "--project"])
        .current_dir(&deep)
        .finish());
    assert!(!deep.join(".claude").exists());
    // An earlier release's record for `my app`, named by its slug alone.
    let (spaced, dashed) = (w.dir.path().join("my app"), w.dir.path().join("my-app"));
    for p in [&spaced, &dashed] {
        std::fs::create_dir_all(p).unwrap();
        ok(&w.cmd(&["install", "--project"]).current_dir(p).finish());
    }
    let installs = under(&w.home(), ".local/state/interband/installs");
    let named = |p: &Path| {
        let slug = files_under(&installs)
            .into_iter()
            .find(|f| {
                f.ends_with(".interband-install.json")
                    && read(&installs.join(f))["settings"]
                        == json!(under(p, ".claude/settings.json"))
            })
            .unwrap();
        installs.join(slug)
    };
    let record = named(&spaced);
    let mut legacy: Value = read(&record);
    legacy.as_object_mut().unwrap().remove("settings");
    let slug_only = installs.join(format!(
        "{}.interband-install.json",
        interband_consumers::intermem::slug(&under(&spaced, ".claude/settings.json"))
    ));
    std::fs::write(&slug_only, legacy.to_string()).unwrap();
    std::fs::remove_file(&record).unwrap();
    // `my-app` has a record of its own, and another file: not `my app`'s.
    std::fs::remove_file(named(&dashed)).unwrap();
    std::fs::write(under(&dashed, ".claude/settings.json"), "{\"theirs\": 1}\n").unwrap();
    ok(&w
        .cmd(&["uninstall", "--project"])
        .current_dir(&dashed)
        .finish());
    assert!(
        slug_only.exists(),
        "my app's record is not handed to my-app"
    );
    let o = w
        .cmd(&["uninstall", "--project"])
        .current_dir(&spaced)
        .finish();
    ok(&o);
    assert!(!stdout(&o).contains("no install record"), "{}", stdout(&o));
    assert!(!spaced.join(".claude").exists(), "{}", stdout(&o));
}

/// A settings file its owner made read-only is left so, with the reason.
#[test]
fn a_read_only_settings_file_is_left_as_its_owner_made_it() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(&path, "{\"model\": \"opus\"}\n").unwrap();
    let mut read_only = std::fs::metadata(&path).unwrap().permissions();
    read_only.set_readonly(true);
    std::fs::set_permissions(&path, read_only).unwrap();
    let o = w.run(&settings_args("install", &path, &[]));
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("read-only"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
}

/// A root set to a folder of the user's holds their own `compact/` or
/// `.journal/`: a purge removes only what interband writes there.
#[test]
fn purge_removes_only_what_interband_writes_under_a_root_it_shares() {
    let w = World::new();
    let root = w.home();
    let theirs = [
        "compact/thesis.tex",
        ".journal/2024.md",
        "intermem/notes.txt",
    ];
    for f in theirs {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::write(root.join(f), "mine").unwrap();
    }
    std::fs::create_dir_all(under(&root, "interpulse/pressure")).unwrap();
    std::fs::write(under(&root, "interpulse/pressure/s.json"), "{}").unwrap();
    let o = w
        .cmd(&["uninstall", "--purge", "--yes"])
        .env("INTERBAND_ROOT", &root)
        .finish();
    ok(&o);
    for f in theirs {
        assert_eq!(
            std::fs::read_to_string(root.join(f)).unwrap(),
            "mine",
            "{f}"
        );
    }
    assert!(!root.join("interpulse").exists());
    assert!(
        stdout(&o).contains("kept 3 file(s) interband did not write"),
        "{}",
        stdout(&o)
    );
}

/// The user changed interband's statusLine (a padding): uninstall still
/// takes interband's command out, theirs back, their change kept.
#[test]
fn uninstall_takes_interband_s_statusline_out_after_the_user_changed_it() {
    let w = World::new();
    let path = w.dir.path().join("settings.json");
    std::fs::write(
        &path,
        r#"{"statusLine": {"type": "command", "command": "echo hi"}}"#,
    )
    .unwrap();
    ok(&w.run(&settings_args("install", &path, &[])));
    let mut s = read(&path);
    s["statusLine"]["padding"] = json!(1);
    std::fs::write(&path, s.to_string()).unwrap();
    ok(&w.run(&settings_args("uninstall", &path, &[])));
    assert_eq!(
        read(&path)["statusLine"],
        json!({"type": "command", "command": "echo hi", "padding": 1})
    );
}

/// A project's statusline runs interband from each user's PATH, its shell
/// exiting 0 after it: a teammate without interband sees nothing fail (the
/// shell's "not found" goes to stderr; a statusline is its stdout).
#[test]
#[cfg(unix)] // a shell script as the person's statusline (Windows: a_wrapped_statusline_runs_in_the_shell_the_host_runs_it_in)
fn a_project_s_statusline_is_guarded_like_its_hooks() {
    let w = World::new();
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    ok(&w
        .cmd(&["install", "--project"])
        .current_dir(&project)
        .finish());
    let command = read(&under(&project, ".claude/settings.json"))["statusLine"]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut sh = std::process::Command::new("sh");
    sh.args(["-c", &command])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", w.home());
    let o = with_stdin(&mut sh, &capture("statusLine.input.json"));
    assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
    assert_eq!(command, "interband statusline --host claude; exit 0");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    ok(&w
        .cmd(&["uninstall", "--project"])
        .current_dir(&project)
        .finish());
    assert!(!project.join(".claude").exists());
}

/// install --project into a host file the user trusted (`interband trust
/// .qwen/settings.json`) keeps that trust: interband's change is its hooks.
#[test]
fn a_trusted_project_file_stays_trusted_through_install_and_uninstall() {
    let w = World::new();
    let project = w.dir.path().join("proj");
    std::fs::create_dir_all(project.join(".qwen")).unwrap();
    let file = under(&project, ".qwen/settings.json");
    std::fs::write(&file, r#"{"context": {"autoCompactThreshold": 0.5}}"#).unwrap();
    let run = |args: &[&str]| w.cmd(args).current_dir(&project).finish();
    ok(&run(&["trust", file.to_str().unwrap()]));
    let o = run(&["install", "--project", "--host", "qwen"]);
    ok(&o);
    assert!(stdout(&o).contains("its trust follows"), "{}", stdout(&o));
    assert!(stdout(&run(&["trust", "--list"])).contains("settings.json  trusted"));
    ok(&run(&["uninstall", "--project", "--host", "qwen"]));
    assert!(stdout(&run(&["trust", "--list"])).contains("settings.json  trusted"));
}

/// What the host runs from anywhere: a relative `--command` is made
/// absolute; commands that write nothing make no folder.
#[test]
fn a_relative_command_is_made_absolute_and_nothing_writes_no_folder() {
    let w = World::new();
    let bin = w.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(BIN, bin.join("interband")).unwrap();
    let o = w
        .cmd(&["install", "--command", "bin/interband"])
        .current_dir(w.dir.path())
        .finish();
    ok(&o);
    let s = read(&under(&w.home(), ".claude/settings.json"));
    let c = s["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        c.starts_with(&format!(
            "{}/bin/interband ",
            word(&w.dir.path().display().to_string())
        )),
        "{c}"
    );
    for args in [
        &["uninstall", "--host", "gemini"][..],
        &["install", "--dry-run", "--host", "copilot"],
    ] {
        ok(&w.run(args));
    }
    assert!(!w.home().join(".gemini").exists() && !w.home().join(".copilot").exists());
}

/// Copilot runs `postToolUse` and `PostToolUse` alike: an interband hook
/// under either name is the event's, never doubled by install, and doctor
/// counts them as one event.
#[test]
fn copilot_s_event_names_in_either_case_are_one_event() {
    let w = World::new();
    let path = under(&w.home(), ".copilot/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = format!("{} hook --host copilot", program());
    std::fs::write(
        &path,
        json!({"hooks": {"postToolUse": [{"type": "command", COPILOT_SHELL: c, "timeoutSec": 5}]}})
            .to_string(),
    )
    .unwrap();
    ok(&w.run(&["install", "--host", "copilot"]));
    let s = read(&path);
    assert!(s["hooks"].get("PostToolUse").is_none(), "{s}");
    assert_eq!(
        s["hooks"]["postToolUse"].as_array().unwrap().len(),
        1,
        "{s}"
    );
    // Both names by hand: doctor sees one event twice.
    let mut s = s;
    s["hooks"]["PostToolUse"] = s["hooks"]["postToolUse"].clone();
    std::fs::write(&path, s.to_string()).unwrap();
    let o = w.run(&["doctor"]);
    assert!(
        stdout(&o).contains("more than once at PostToolUse"),
        "{}",
        stdout(&o)
    );
}

/// Hooks turned off in the file (`disableAllHooks`, Gemini's
/// `hooksConfig.enabled: false`): install says so for every host, and
/// doctor calls it a problem.
#[test]
fn hooks_turned_off_in_the_file_are_said_and_a_problem() {
    for (host, file, off) in [
        (
            "claude",
            ".claude/settings.json",
            json!({"disableAllHooks": true}),
        ),
        (
            "qwen",
            ".qwen/settings.json",
            json!({"disableAllHooks": true}),
        ),
        (
            "gemini",
            ".gemini/settings.json",
            json!({"hooksConfig": {"enabled": false}}),
        ),
    ] {
        let w = World::new();
        let path = w.home().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, off.to_string()).unwrap();
        let o = w.run(&["install", "--host", host, "--command", BIN]);
        ok(&o);
        assert!(
            stdout(&o).contains("hooks are turned off"),
            "{host}: {}",
            stdout(&o)
        );
        let o = w.run(&["doctor"]);
        assert!(
            stdout(&o)
                .lines()
                .any(|l| l.starts_with("!!") && l.contains("turns every")),
            "{host}: {}",
            stdout(&o)
        );
    }
}

/// Every command in a hooks file, wherever it sits.
fn commands_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("command", Value::String(c)) => out.push(c.clone()),
                    _ => commands_in(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| commands_in(v, out)),
        _ => {}
    }
}

/// What install writes for Codex runs as written in the shell Codex uses
/// (PowerShell on Windows, which needs `&` before a quoted program: so a
/// plain word, forward slashes, no quotes), and uninstall gives a CRLF
/// file back byte for byte.
#[test]
fn codex_s_hook_is_one_plain_program_word_and_uninstall_gives_back_a_crlf_file() {
    let w = World::new();
    let hooks = under(&w.home(), ".codex/hooks.json");
    std::fs::create_dir_all(hooks.parent().unwrap()).unwrap();
    let theirs = "{\r\n  \"hooks\": {}\r\n}\r\n";
    std::fs::write(&hooks, theirs).unwrap();
    ok(&w.run(&["install", "--host", "codex"]));
    let mut commands = Vec::new();
    commands_in(&read(&hooks), &mut commands);
    assert!(commands.len() >= 3, "{commands:?}");
    for c in &commands {
        let words: Vec<&str> = c.split(' ').collect();
        assert_eq!(words[0], program(), "{c}");
        assert!(!c.contains(['\'', '"', '\\', '&', '$']), "{c}");
        assert_eq!(&words[1..], ["hook", "--host", "codex"], "{c}");
        // The words, run as any shell splits them, are interband's hook.
        let o = std::process::Command::new(words[0])
            .args(&words[1..])
            .env("HOME", w.home())
            .env("INTERBAND_ROOT", w.root())
            .stdin(std::process::Stdio::null())
            .finish();
        assert!(o.status.success(), "{c}: {o:?}");
    }
    ok(&w.run(&["uninstall", "--host", "codex"]));
    assert_eq!(std::fs::read(&hooks).unwrap(), theirs.as_bytes());
}

/// Every string in `v` that runs `interband hook --host KEY`.
fn hook_commands<'v>(v: &'v Value, key: &str, out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) if s.contains(&format!(" hook --host {key}")) => out.push(s),
        Value::Array(a) => a.iter().for_each(|v| hook_commands(v, key, out)),
        Value::Object(o) => o.values().for_each(|v| hook_commands(v, key, out)),
        _ => {}
    }
}

/// The shells a host runs a hook's command in, each as a command to run
/// `command` in: on Windows (docs/hosts.md, "Platforms") Git Bash or
/// PowerShell, or cmd.exe or Git Bash (Qwen Code), where PowerShell runs
/// only on Windows itself (Wine's is a stub) and Git Bash where Git for
/// Windows is; on Unix, `sh` and `bash`.
fn hook_shells(host: &str, command: &str) -> Vec<(String, std::process::Command)> {
    let mut shells = Vec::new();
    if cfg!(unix) {
        for sh in ["sh", "bash"] {
            let mut c = std::process::Command::new(sh);
            c.args(["-c", command]);
            shells.push((sh.to_owned(), c));
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        // As Node runs `cmd.exe /d /s /c "COMMAND"`: the line verbatim.
        let mut c = std::process::Command::new("cmd");
        c.args(["/d", "/s", "/c"]).raw_arg(format!("\"{command}\""));
        shells.push(("cmd".to_owned(), c));
        // PowerShell, where the host runs it (not Qwen Code, but where
        // %ComSpec% names it), as Codex and Gemini CLI run it.
        // Found on this process's PATH (the child's has only the test's
        // folders).
        let on_path = |name: &str, only_in: &str| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .filter(|d| d.to_string_lossy().contains(only_in))
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        };
        if host != "qwen" && cfg!(target_env = "msvc") {
            // Windows PowerShell is on every Windows.
            for ps in ["powershell.exe", "pwsh.exe"] {
                let found = on_path(ps, "");
                assert!(found.is_some() || ps == "pwsh.exe", "no {ps} on PATH");
                if let Some(ps) = found {
                    let mut c = std::process::Command::new(&ps);
                    c.args(["-NoProfile", "-Command", command]);
                    shells.push((ps.display().to_string(), c));
                }
            }
        }
        // Git Bash, where Git for Windows is (the release workflow's
        // runners); never System32's bash.exe, which is WSL's.
        if let Some(bash) = on_path("bash.exe", "Git") {
            let mut c = std::process::Command::new(&bash);
            c.args(["-c", command]);
            shells.push((bash.display().to_string(), c));
        }
    }
    let _ = host;
    shells
}

/// A hook that runs `interband` from each user's PATH (a project's, or
/// `--command interband`) exits 0 and tells the host nothing where it is
/// missing, in every shell its host runs it in, on Unix (a POSIX guard)
/// and on Windows (the shell exits 0 after it); where it is there, it is
/// interband's hook, its answer on stdout.
#[test]
fn a_hook_from_path_does_nothing_where_interband_is_missing_in_every_shell_its_host_runs() {
    // A folder with interband in it, and one without.
    let w = World::new();
    let with = w.dir.path().join("with");
    std::fs::create_dir(&with).unwrap();
    let name = if cfg!(windows) {
        "interband.exe"
    } else {
        "interband"
    };
    std::fs::copy(BIN, with.join(name)).unwrap();
    set_executable(&with.join(name));
    let system: Vec<PathBuf> = if cfg!(windows) {
        vec!["C:\\windows\\system32".into(), "C:\\windows".into()]
    } else {
        vec!["/usr/bin".into(), "/bin".into()]
    };
    let path_with = |dir: Option<&Path>| {
        std::env::join_paths(dir.into_iter().map(Path::to_path_buf).chain(system.clone())).unwrap()
    };
    for host in ["claude", "codex", "gemini", "qwen", "copilot"] {
        let settings = w.dir.path().join(format!("{host}.json"));
        ok(&w.run(&settings_args(
            "install",
            &settings,
            &["--host", host, "--command", "interband"],
        )));
        let mut commands = Vec::new();
        let written = read(&settings);
        hook_commands(&written, host, &mut commands);
        let command = commands[0].to_owned();
        if cfg!(windows) {
            let end = if host == "qwen" {
                " || exit 0"
            } else {
                "; exit 0"
            };
            assert_eq!(command, format!("interband hook --host {host}{end}"));
        }
        // Claude Code's red warning through each shell to the host; for
        // the others, an input that is none, which the hook logs.
        let transcript = claude_transcript(w.dir.path(), "session.jsonl", 160_000);
        let mut red: Value = serde_json::from_slice(&capture("PostToolUse.input.json")).unwrap();
        red["transcript_path"] = json!(transcript);
        red["cwd"] = json!(w.dir.path());
        let input = if host == "claude" {
            red.to_string()
        } else {
            "not a hook input".to_owned()
        };
        let mut shells_seen = 0;
        for (shell, mut c) in hook_shells(host, &command) {
            // cmd.exe is not the shell of a host whose hooks end `; exit 0`
            // (it runs one there only where Windows has no PowerShell):
            // there the hook runs, unguarded.
            let unguarded = shell == "cmd" && host != "qwen";
            for present in [false, true] {
                if unguarded && !present {
                    continue;
                }
                let log = w
                    .dir
                    .path()
                    .join(format!("{host}-{}-{present}.log", shells_seen));
                shells_seen += 1;
                // (Windows' shells keep the rest of the environment they
                // need to start: SystemRoot, TEMP, the profile's folders.)
                if cfg!(unix) {
                    c.env_clear();
                }
                c.env("PATH", path_with(present.then_some(with.as_path())))
                    .env("HOME", w.home())
                    .env("USERPROFILE", w.home())
                    // A bus of its own: a warning is said once a level.
                    .env("INTERBAND_ROOT", sibling(&log, ".root"))
                    .env("INTERBAND_LOG", &log)
                    .current_dir(w.dir.path());
                let o = with_stdin(&mut c, input.as_bytes());
                let what = format!("{host} in {shell}, interband there: {present}: `{command}`");
                assert_eq!(code(&o), 0, "{what}: {}", stderr(&o));
                let out = stdout(&o);
                let ran = if host == "claude" {
                    // (cmd.exe passes `;` and `exit 0` on as arguments: the
                    // host's key is read without the `;`.)
                    out.contains("Context RED: 80% used")
                } else {
                    assert_eq!(out, "", "{what}");
                    std::fs::read_to_string(&log).is_ok_and(|l| l.contains("not a hook input"))
                };
                assert_eq!(
                    ran, present,
                    "{what}: the hook ran only where interband is: {out}"
                );
                if !present {
                    assert_eq!(out, "", "{what}");
                }
            }
        }
    }
}

/// A project's settings, installed on one system and committed, are read
/// as interband's on the other: uninstall takes out Unix's guarded hooks
/// and Windows' alike, and install puts this system's form in their place.
#[test]
fn a_project_s_hooks_written_on_either_system_are_recognised_on_the_other() {
    let w = World::new();
    let forms = [
        "command -v interband >/dev/null 2>&1 && exec interband hook --host claude || true",
        "interband hook --host claude; exit 0",
        "interband hook --host claude || exit 0",
    ];
    for form in forms {
        let path = w.dir.path().join("settings.json");
        let file = json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": form}]}]}});
        std::fs::write(&path, file.to_string()).unwrap();
        ok(&w.run(&settings_args("uninstall", &path, &[])));
        assert_eq!(read(&path), json!({"model": "opus"}), "{form}");
        std::fs::write(&path, file.to_string()).unwrap();
        ok(&w.run(&settings_args(
            "install",
            &path,
            &["--command", "interband"],
        )));
        let stop = interband_hooks(&read(&path), "Stop");
        assert_eq!(stop.len(), 1, "{form}: {stop:?}");
        let ours = if cfg!(windows) {
            "interband hook --host claude; exit 0"
        } else {
            forms[0]
        };
        assert_eq!(stop[0]["command"], ours, "{form}");
        ok(&w.run(&settings_args("uninstall", &path, &[])));
    }
}

/// Gemini CLI 0.61 and Qwen Code 0.21.2 take a hook that exits with other
/// than 0 or 1 for a block (a missing program's 127: the tool's result
/// replaced, a loop; tests/fixtures/windows-guard-exit0): their hooks are
/// guarded against the binary going, wherever it is, in every shell the
/// host runs them in, and exit 0 then; doctor says they do nothing.
#[test]
fn where_a_failing_hook_is_a_block_a_binary_gone_leaves_hooks_that_exit_0() {
    for host in ["gemini", "qwen"] {
        let w = World::new();
        let bin = w.dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join(if cfg!(windows) {
            "interband.exe"
        } else {
            "interband"
        });
        std::fs::copy(BIN, &exe).unwrap();
        set_executable(&exe);
        ok(&w.run(&[
            "install",
            "--host",
            host,
            "--command",
            exe.to_str().unwrap(),
        ]));
        let settings = under(
            &w.home(),
            if host == "gemini" {
                ".gemini/settings.json"
            } else {
                ".qwen/settings.json"
            },
        );
        let mut commands = Vec::new();
        let written = read(&settings);
        hook_commands(&written, host, &mut commands);
        let command = commands[0].to_owned();
        std::fs::remove_file(&exe).unwrap();
        for (shell, mut c) in hook_shells(host, &command) {
            if shell == "cmd" && host != "qwen" {
                continue; // not Gemini CLI's shell
            }
            if cfg!(unix) {
                c.env_clear().env("PATH", "/usr/bin:/bin");
            }
            c.env("HOME", w.home())
                .env("USERPROFILE", w.home())
                .env("INTERBAND_ROOT", w.root());
            let o = with_stdin(&mut c, b"{}");
            let what = format!("{host} in {shell}: `{command}`");
            assert_eq!(code(&o), 0, "{what}: {}", stderr(&o));
            assert_eq!(stdout(&o), "", "{what}");
            if cfg!(unix) {
                assert_eq!(stderr(&o), "", "{what}: silent");
            }
        }
        let o = w.run(&["doctor", "--json"]);
        assert!(
            stdout(&o).contains("the hooks do nothing"),
            "{host}: {}",
            stdout(&o)
        );
    }
}
