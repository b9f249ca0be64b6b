//! `interband doctor` through the real binary: healthy installs say so (exit
//! 0); a missing binary, a duplicate install and a stale Codex trust hash
//! are each found, with the command that fixes it (exit 1).

mod common;

use interband::paths::under;
use std::path::Path;

use common::*;
use serde_json::Value;

fn doctor(w: &World, dir: &std::path::Path) -> (i32, Vec<Value>) {
    let o = w.cmd(&["doctor", "--json"]).current_dir(dir).finish();
    let found: Vec<Value> =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    (code(&o), found)
}

fn problems(found: &[Value]) -> Vec<&Value> {
    found.iter().filter(|f| f["status"] == "problem").collect()
}

fn install(w: &World, dir: &std::path::Path, args: &[&str]) {
    let o = w.cmd(args).current_dir(dir).finish();
    assert_eq!(code(&o), 0, "{args:?}: {}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_healthy_install_is_said_healthy() {
    let w = World::new();
    let here = w.dir.path();
    install(&w, here, &["install", "--command", BIN]);
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 0, "{found:#?}");
    let said = |check: &str| {
        found
            .iter()
            .find(|f| f["host"] == "claude" && f["check"] == check)
            .cloned()
    };
    assert_eq!(said("hooks").unwrap()["status"], "ok");
    assert_eq!(said("statusline").unwrap()["status"], "ok");
    assert_eq!(said("binary").unwrap()["status"], "ok", "{found:#?}");
    let o = w.cmd(&["doctor"]).current_dir(here).finish();
    assert!(stdout(&o).trim_end().ends_with("healthy"), "{}", stdout(&o));
}

#[test]
fn a_missing_binary_is_found_with_its_fix() {
    let w = World::new();
    let here = w.dir.path();
    install(&w, here, &["install", "--command", "/opt/gone/interband"]);
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1);
    let p = problems(&found);
    assert!(
        p.iter().any(|f| f["check"] == "binary"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("/opt/gone/interband")
            && f["fix"]
                .as_str()
                .unwrap()
                .contains("interband install --host claude")),
        "{found:#?}"
    );
}

#[test]
fn a_binary_npm_cleared_from_npxs_cache_is_found_and_its_hooks_do_nothing() {
    let w = World::new();
    let here = w.dir.path();
    let gone = "/home/u/.npm/_npx/0f1e/node_modules/interband/bin/interband";
    install(&w, here, &["install", "--command", gone]);
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1);
    let p = problems(&found);
    // Guarded by a POSIX shell on Unix; on Windows the shell exits 0 after it.
    let outcome = "does not exist: the hooks do nothing";
    assert!(
        p.iter()
            .any(|f| f["check"] == "binary" && f["message"].as_str().unwrap().ends_with(outcome)),
        "{found:#?}"
    );
}

#[test]
fn a_duplicate_install_is_found_with_its_fix() {
    let w = World::new();
    let project = w.dir.path().join("repo");
    std::fs::create_dir_all(&project).unwrap();
    install(&w, &project, &["install", "--command", BIN]);
    install(&w, &project, &["install", "--project"]);
    let (rc, found) = doctor(&w, &project);
    assert_eq!(rc, 1);
    assert!(
        problems(&found).iter().any(|f| f["check"] == "duplicates"
            && f["fix"].as_str().unwrap().contains("uninstall --project")),
        "{found:#?}"
    );
}

#[test]
fn a_stale_codex_trust_hash_is_found_with_its_fix() {
    let w = World::new();
    let here = w.dir.path();
    install(
        &w,
        here,
        &["install", "--host", "codex", "--command", BIN, "--trust"],
    );
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 0, "trusted as installed: {found:#?}");
    // A hook edited since it was trusted (its timeout): Codex skips it.
    let hooks = under(&w.home(), ".codex/hooks.json");
    let text = std::fs::read_to_string(&hooks).unwrap();
    std::fs::write(&hooks, text.replacen("\"timeout\": 5", "\"timeout\": 7", 1)).unwrap();
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1);
    assert!(
        problems(&found).iter().any(|f| f["check"] == "trust"
            && f["message"].as_str().unwrap().contains("no longer matches")
            && f["fix"].as_str().unwrap().contains("--trust")),
        "{found:#?}"
    );
}

#[test]
fn the_end_of_a_long_log_is_shown() {
    let w = World::new();
    let log = w.dir.path().join("interband.log");
    let mut text = "old line\n".repeat(300_000); // 2.7 MB
    text.push_str("hook Stop s1: the last thing logged\n");
    std::fs::write(&log, text).unwrap();
    let o = w
        .cmd(&["doctor", "--json"])
        .env("INTERBAND_LOG", &log)
        .current_dir(w.dir.path())
        .finish();
    let found: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        found.iter().any(|f| f["check"] == "log"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("the last thing logged")),
        "{found:#?}"
    );
}

/// doctor checks what the host will run: there, a file, executable, and
/// answering `--version` as interband; the statusline's program too.
#[test]
#[cfg(unix)] // shell scripts and modes stand in for what the host would run (Unix only: doctor's other tests run under Wine)
fn a_binary_the_host_cannot_run_is_a_problem_whatever_the_reason() {
    use std::os::unix::fs::PermissionsExt;
    type Break = fn(&std::path::Path);
    let cases: [(&str, Break, &str); 3] = [
        (
            "no execute bit",
            |p| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap(),
            "not executable",
        ),
        (
            "a folder",
            |p| {
                std::fs::remove_file(p).unwrap();
                std::fs::create_dir(p).unwrap();
            },
            "is not a file",
        ),
        (
            "another program",
            |p| {
                std::fs::write(p, "#!/bin/sh\nexit 3\n").unwrap();
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            },
            "does not answer `--version` as interband",
        ),
    ];
    for (what, break_it, said) in cases {
        let w = World::new();
        let here = w.dir.path();
        let copy = under(here, "bin/interband");
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(BIN, &copy).unwrap();
        install(&w, here, &["install", "--command", copy.to_str().unwrap()]);
        assert_eq!(doctor(&w, here).0, 0, "{what}: healthy before");
        break_it(&copy);
        let (rc, found) = doctor(&w, here);
        assert_eq!(rc, 1, "{what}: {found:#?}");
        let p = problems(&found);
        for check in ["binary", "statusline"] {
            assert!(
                p.iter().any(|f| f["check"] == check
                    && f["message"].as_str().unwrap().contains(said)
                    && f["fix"].as_str().unwrap().contains("interband install")),
                "{what}, {check}: {p:#?}"
            );
        }
    }
}

/// A settings file with comments (Copilot CLI documents JSONC; Qwen and
/// Gemini strip them) is no broken file: doctor says comments are why
/// install leaves it alone, never advises moving it, and goes on checking
/// (here it finds a binary that is gone). Install refuses it with that
/// reason and changes nothing.
#[test]
fn a_settings_file_with_comments_is_checked_and_never_moved() {
    let w = World::new();
    let here = w.dir.path();
    let file = under(&w.home(), ".copilot/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = r#"{
  // my model
  "model": "gpt-5",
  /* interband, from a machine it is gone from */
  "hooks": {"PostToolUse": [{"type": "command", "bash": "/gone/interband hook --host copilot", "timeoutSec": 5}]}
}
"#
    .replace("\"bash\"", &format!("\"{COPILOT_SHELL}\""));
    std::fs::write(&file, &text).unwrap();
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1, "{found:#?}");
    let copilot: Vec<&Value> = found.iter().filter(|f| f["host"] == "copilot").collect();
    assert!(
        copilot
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains("has comments")),
        "{copilot:#?}"
    );
    assert!(
        copilot.iter().any(|f| f["check"] == "binary"
            && f["status"] == "problem"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("/gone/interband does not exist")),
        "{copilot:#?}"
    );
    assert!(
        !serde_json::to_string(&found)
            .unwrap()
            .contains("move the file"),
        "{found:#?}"
    );
    let o = w
        .cmd(&["install", "--host", "copilot"])
        .current_dir(here)
        .finish();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("it has comments"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "left byte for byte"
    );
}

/// Two interband hooks on one event in one file run twice; a corrupt
/// install record stops install and uninstall: both are problems, each
/// with its fix, never "healthy".
#[test]
fn a_hook_twice_on_one_event_and_a_corrupt_record_are_problems() {
    let w = World::new();
    let here = w.dir.path();
    install(&w, here, &["install", "--command", BIN]);
    let file = under(&w.home(), ".claude/settings.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let again = s["hooks"]["Stop"][0].clone();
    s["hooks"]["Stop"].as_array_mut().unwrap().push(again);
    std::fs::write(&file, serde_json::to_vec_pretty(&s).unwrap()).unwrap();
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1);
    assert!(
        problems(&found).iter().any(|f| f["check"] == "duplicates"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("more than once at Stop")),
        "{found:#?}"
    );
    // install keeps one.
    install(&w, here, &["install", "--command", BIN]);
    assert_eq!(doctor(&w, here).0, 0);
    let record = w
        .home()
        .join(".claude/settings.json.interband-install.json");
    std::fs::write(&record, "{\"format\": \"something else\"}").unwrap();
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1);
    assert!(
        problems(&found)
            .iter()
            .any(|f| f["check"] == "record" && f["fix"].as_str().unwrap().contains("remove")),
        "{found:#?}"
    );
}

/// Claude Code takes a settings file with comments for broken and ignores
/// all of it: there, comments are a problem (no hook runs), not a style.
#[test]
fn comments_where_the_host_reads_none_are_a_problem() {
    let w = World::new();
    let here = w.dir.path();
    install(&w, here, &["install", "--command", BIN]);
    let file = under(&w.home(), ".claude/settings.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen('{', "{\n  // mine\n", 1)).unwrap();
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1, "{found:#?}");
    assert!(
        problems(&found)
            .iter()
            .any(|f| f["host"] == "claude"
                && f["message"].as_str().unwrap().contains("does not read")),
        "{found:#?}"
    );
}

/// doctor asks each program once, within 5 s, and a program that leaves a
/// child holding its output cannot hold doctor.
#[test]
#[cfg(unix)] // shell scripts and modes stand in for what the host would run (Unix only: doctor's other tests run under Wine)
fn doctor_is_bounded_whatever_the_hooks_program_does() {
    use std::os::unix::fs::PermissionsExt;
    for (what, script) in [
        (
            "a child left running",
            "#!/bin/sh\necho 'interband 9.9.9'\nsleep 60 &\nexit 0\n",
        ),
        ("no answer", "#!/bin/sh\nsleep 60\n"),
    ] {
        let w = World::new();
        let here = w.dir.path();
        let program = under(here, "odd/interband");
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::write(&program, script).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = program.display().to_string();
        let file = under(&w.home(), ".claude/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let hooks = serde_json::json!({"hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": format!("{p} hook --host claude")}]}],
            "PreCompact": [{"hooks": [{"type": "command", "command": format!("{p} hook")}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": format!("[ -x {p} ] && exec {p} hook --host claude || true")}]}]},
            "statusLine": {"type": "command", "command": format!("{p} statusline --host claude")}});
        std::fs::write(&file, hooks.to_string()).unwrap();
        let child = w
            .cmd(&["doctor", "--json"])
            .current_dir(here)
            .stdout(std::process::Stdio::piped())
            .start();
        // A hang detector: one 5 s wait at most, where four would be 20 s.
        let o = wait_within(child, std::time::Duration::from_secs(15));
        let found: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
        let binary_problems = problems(&found)
            .iter()
            .filter(|f| f["check"] == "binary")
            .count();
        assert_eq!(
            binary_problems,
            usize::from(what == "no answer") * 3,
            "{what}: {found:#?}"
        );
    }
}

/// doctor looks at the current folder's project files on their own (a
/// project install alone is seen, its comments judged as its host reads
/// them), and where two hooks on one event run another working interband,
/// its fix is to take one out by hand (install leaves the user's choice).
#[test]
fn project_files_are_checked_on_their_own_and_each_fix_fixes() {
    let w = World::new();
    let here = w.dir.path().join("proj");
    std::fs::create_dir_all(&here).unwrap();
    install(&w, &here, &["install", "--project"]);
    let (_, found) = doctor(&w, &here);
    assert!(
        found.iter().any(|f| f["host"] == "claude"
            && f["check"] == "hooks"
            && f["message"].as_str().unwrap().contains(
                &under(Path::new("proj"), ".claude/settings.json")
                    .display()
                    .to_string()
            )),
        "{found:#?}"
    );
    let file = under(&here, ".claude/settings.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen('{', "{\n  // c\n", 1)).unwrap();
    let (rc, found) = doctor(&w, &here);
    assert_eq!(rc, 1);
    assert!(
        problems(&found).iter().any(|f| f["check"] == "settings"
            && f["message"].as_str().unwrap().contains("does not read")),
        "{found:#?}"
    );
    // Two hooks at Stop, each running another working interband.
    let w = World::new();
    let other = under(&w.home(), "bin").join(format!("interband{}", std::env::consts::EXE_SUFFIX));
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &other).unwrap();
    set_executable(&other);
    // The program word as install writes it (forward slashes on Windows).
    let c = format!(
        "{} hook --host claude",
        other.display().to_string().replace('\\', "/")
    );
    let settings = under(&w.home(), ".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let hooks = serde_json::json!({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": c}]},
        {"matcher": "x", "hooks": [{"type": "command", "command": c}]}]}});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let (_, found) = doctor(&w, w.dir.path());
    assert!(
        problems(&found)
            .iter()
            .any(|f| f["check"] == "duplicates" && f["fix"].as_str().unwrap().contains("by hand")),
        "{found:#?}"
    );
}

/// However many programs hang on `--version`, doctor asks for 15 s in all.
#[test]
#[cfg(unix)] // shell scripts and modes stand in for what the host would run (Unix only: doctor's other tests run under Wine)
fn doctor_asks_programs_for_a_bounded_time_in_all() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let mut groups = Vec::new();
    for i in 0..6 {
        let p = w.dir.path().join(format!("hang{i}/interband"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "#!/bin/sh\nsleep 60\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        groups.push(serde_json::json!({"hooks": [{"type": "command", "command": format!("{} hook --host claude", p.display())}]}));
    }
    let settings = under(&w.home(), ".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        serde_json::json!({"hooks": {"Stop": groups}}).to_string(),
    )
    .unwrap();
    let child = w
        .cmd(&["doctor", "--json"])
        .stdout(std::process::Stdio::piped())
        .start();
    // A hang detector: 15 s of asking in all, where six 5 s waits are 30.
    let o = wait_within(child, std::time::Duration::from_secs(25));
    let found: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        found
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains("not asked")),
        "{found:#?}"
    );
}

/// A statusline-only install (the plugin's route: the hooks come from the
/// plugin) is checked too: its binary gone is a problem, never "healthy".
#[test]
fn a_statusline_alone_is_checked() {
    let w = World::new();
    let here = w.dir.path();
    let copy = under(here, "bin/interband");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &copy).unwrap();
    install(
        &w,
        here,
        &[
            "install",
            "--statusline-only",
            "--command",
            copy.to_str().unwrap(),
        ],
    );
    std::fs::remove_file(&copy).unwrap();
    let (rc, found) = doctor(&w, here);
    assert_eq!(rc, 1, "{found:#?}");
    assert!(
        problems(&found).iter().any(|f| f["check"] == "statusline"
            && f["message"].as_str().unwrap().contains("does not exist")),
        "{found:#?}"
    );
}

/// A project's hooks written for one system alone are a problem on every
/// system (its teammates run the same file): Unix's POSIX guard, which
/// PowerShell and cmd.exe fail at every call, and a Copilot CLI hook without
/// its other system's command; `install --project` rewrites them for every
/// system, after which doctor finds nothing of the kind.
#[test]
fn a_project_s_hooks_for_one_system_alone_are_found_with_their_fix() {
    let w = World::new();
    let project = w.dir.path().join("repo");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let posix = "command -v interband >/dev/null 2>&1 && exec interband hook --host claude || true";
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": posix}]}]}})
            .to_string(),
    )
    .unwrap();
    install(&w, &project, &["install", "--project", "--host", "copilot"]);
    let copilot = under(&project, ".github/hooks/interband.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&copilot).unwrap()).unwrap();
    let other = if cfg!(windows) { "bash" } else { "powershell" };
    for hooks in file["hooks"].as_object_mut().unwrap().values_mut() {
        hooks[0].as_object_mut().unwrap().remove(other);
    }
    std::fs::write(&copilot, file.to_string()).unwrap();

    let (rc, found) = doctor(&w, &project);
    assert_eq!(rc, 1);
    let shell = |host: &str| {
        problems(&found)
            .into_iter()
            .find(|f| f["check"] == "shell" && f["host"] == host)
            .cloned()
    };
    let claude = shell("claude").unwrap_or_else(|| panic!("{found:#?}"));
    assert!(
        claude["message"]
            .as_str()
            .unwrap()
            .contains("POSIX shell's guard"),
        "{claude}"
    );
    assert!(
        claude["fix"]
            .as_str()
            .unwrap()
            .contains("interband install --project --host claude"),
        "{claude}"
    );
    let copilot_found = shell("copilot").unwrap_or_else(|| panic!("{found:#?}"));
    assert!(
        copilot_found["message"]
            .as_str()
            .unwrap()
            .contains(&format!("no `{other}` command")),
        "{copilot_found}"
    );
    // Each fix fixes.
    install(&w, &project, &["install", "--project", "--host", "claude"]);
    install(&w, &project, &["install", "--project", "--host", "copilot"]);
    let (_, found) = doctor(&w, &project);
    assert!(!found.iter().any(|f| f["check"] == "shell"), "{found:#?}");
}
