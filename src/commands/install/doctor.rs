//! `interband doctor`: whether what `install` set up still works, host by
//! host, and the one command that fixes each problem found.
//!
//! Per host: the hooks and statusline in the user's settings (and the
//! project's in the current folder, and Claude Code's plugin: the same hooks
//! twice run twice), whether the program they call exists and is this
//! binary, whether they are written for the systems that run them, Codex's
//! trust of them (a hook whose hash changed since it was
//! trusted is skipped by Codex); then the root's permissions, the settings'
//! problems, and when a hook last ran. Exit 0 when healthy, 1 with problems.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::ours::{IF_THERE, ON_PATH};
use super::{
    Files, Host, Installs, Target, any_statusline_rest, codex_trust, expand_home, group_commands,
    hook_groups, program_of, read_record, read_settings_with_comments, resolvable, runs_interband,
    unguarded, unguarded_statusline,
};
use crate::exit;

/// `interband doctor`
#[derive(Args)]
pub struct Doctor {
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

/// One thing looked at.
#[derive(Debug, Serialize)]
struct Finding {
    /// `claude`, `codex`, `gemini`, or `interband` for what is no host's.
    host: &'static str,
    /// What was looked at.
    check: &'static str,
    /// `ok`, `info` (worth knowing, nothing broken) or `problem`.
    status: &'static str,
    /// What was found.
    message: String,
    /// The command (or step) that fixes it, for a problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

fn ok(host: &'static str, check: &'static str, message: String) -> Finding {
    Finding {
        host,
        check,
        status: "ok",
        message,
        fix: None,
    }
}

fn info(host: &'static str, check: &'static str, message: String) -> Finding {
    Finding {
        host,
        check,
        status: "info",
        message,
        fix: None,
    }
}

fn problem(host: &'static str, check: &'static str, message: String, fix: String) -> Finding {
    Finding {
        host,
        check,
        status: "problem",
        message,
        fix: Some(fix),
    }
}

impl Doctor {
    pub fn run(self) -> Result<u8> {
        let mut found = Vec::new();
        for host in Host::ALL {
            check_host(host, &mut found);
        }
        check_root(&mut found);
        check_settings(&mut found);
        let problems = found.iter().filter(|f| f.status == "problem").count();
        if self.json {
            say_json!(serde_json::to_string_pretty(&found)?);
        } else {
            for f in &found {
                let mark = match f.status {
                    "ok" => "ok  ",
                    "info" => "--  ",
                    _ => "!!  ",
                };
                say!("{mark}{:<9} {}", f.host, f.message);
                if let Some(fix) = &f.fix {
                    say!("               fix: {fix}");
                }
            }
            say!(
                "{}",
                match problems {
                    0 => "healthy".to_owned(),
                    1 => "1 problem".to_owned(),
                    n => format!("{n} problems"),
                }
            );
        }
        Ok(if problems == 0 {
            exit::OK
        } else {
            exit::INVALID
        })
    }
}

/// The user-level target of `host` (as `interband install --host <host>`).
fn target(host: Host, project: bool) -> Target {
    Target {
        settings: None,
        project,
        host,
        dry_run: false,
        command: None,
    }
}

/// The interband hook commands in a settings file, by event.
fn our_hooks(settings: &Value) -> Vec<(String, String)> {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(event, groups)| {
            groups
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(group_commands)
                .filter(|c| runs_interband(c, "hook"))
                .map(move |c| (event.clone(), c.to_owned()))
        })
        .collect()
}

fn check_host(host: Host, found: &mut Vec<Finding>) {
    let name = host.key();
    let user = check_file(host, false, found);
    // The current folder's project file, on its own, and beside the user's:
    // the host runs the hooks of both.
    let project = check_file(host, true, found);
    if let (Some((u, true)), Some((p, true))) = (&user, &project) {
        found.push(problem(
            name,
            "duplicates",
            format!(
                "{} has interband's hooks too, as {} has: {} runs both on every event",
                shown(p),
                shown(u),
                host.profile().name
            ),
            format!("keep one: `interband uninstall --project --host {name}` here, or `interband uninstall --host {name}`"),
        ));
    }
    // Copilot CLI also runs a repository's Claude Code hooks (its
    // `.claude/settings.json`), with its own input.
    if host == Host::Copilot
        && let Ok(here) = std::env::current_dir()
        && let Ok(Some((o, false))) =
            read_settings_with_comments(&here.join(Host::Claude.file()), Host::Claude)
        && !our_hooks(&o.json).is_empty()
    {
        found.push(info(
            name,
            "duplicates",
            format!(
                "Copilot CLI also runs the hooks of {} here (Claude Code's, named for Claude \
                 Code): in a trusted folder a Copilot session runs interband twice",
                shown(&here.join(Host::Claude.file()))
            ),
        ));
    }
}

/// One settings file of `host` (the user's, or the current folder's
/// project file): what it holds of interband's and whether that can run.
/// Returns the file and whether the host runs interband's hooks from it;
/// `None` where there is nothing to look at.
fn check_file(host: Host, project: bool, found: &mut Vec<Finding>) -> Option<(PathBuf, bool)> {
    let name = host.key();
    let t = target(host, project);
    let (Ok(path), Ok(located)) = (t.path(), t.located()) else {
        if !project {
            found.push(info(name, "hooks", "no home folder: cannot look".into()));
        }
        return None;
    };
    if project && Some(&located) == t.user_path().as_ref() {
        return None;
    }
    let (settings, host_reads) = match read_settings_with_comments(&path, host) {
        Ok(Some((o, comments))) => {
            let host_reads = !comments || host.profile().settings_comments;
            if comments && host_reads {
                found.push(info(
                    name,
                    "settings",
                    format!(
                        "{} has comments, which {} allows: interband checks it, but install and \
                         uninstall do not edit a file with comments (they would lose them)",
                        shown(&located),
                        host.profile().name
                    ),
                ));
            } else if comments {
                found.push(problem(
                    name,
                    "settings",
                    format!(
                        "{} has comments, which {} does not read: it takes the file for broken and \
                         ignores all of it, so none of its hooks runs",
                        shown(&located),
                        host.profile().name
                    ),
                    "take the comments out (your settings are in the file: keep it)".to_owned(),
                ));
            }
            (o.json, host_reads)
        }
        Ok(None) if project => return None,
        Ok(None) => {
            found.push(info(
                name,
                "hooks",
                format!("not installed ({} does not exist)", shown(&located)),
            ));
            return None;
        }
        Err(e) => {
            found.push(problem(
                name,
                "hooks",
                format!("{e:#}"),
                "correct the file where it says (your settings are in it: keep it), then \
                 `interband doctor` again"
                    .to_owned(),
            ));
            return None;
        }
    };
    // A record install and uninstall cannot read stops both.
    let files = Files::new(&path, project);
    if let Err(e) = read_record(&files.record) {
        found.push(problem(
            name,
            "record",
            format!("{e:#}: install and uninstall refuse to work without it"),
            format!(
                "remove {} (uninstall then recognises interband's hooks by their commands)",
                shown(&files.record)
            ),
        ));
    }
    let statusline_here =
        host.has_statusline() && !(project && host.profile().project_file.is_some());
    if statusline_here {
        let statusline = settings
            .pointer("/statusLine/command")
            .and_then(Value::as_str)
            .filter(|c| any_statusline_rest(c).is_some());
        match statusline {
            Some(c) => {
                // Guarded as the hooks are, or not: as it is written.
                let run = check_program(name, c, "the statusline");
                if run.status == "problem" {
                    found.push(problem(
                        name,
                        "statusline",
                        run.message,
                        run.fix.unwrap_or_default(),
                    ));
                } else {
                    found.push(ok(name, "statusline", "statusline installed".into()));
                }
            }
            None if !project => found.push(info(
                name,
                "statusline",
                "no interband statusline (`interband install` adds it, wrapping yours)".into(),
            )),
            None => {}
        }
    }
    let hooks = our_hooks(&settings);
    if hooks.is_empty() {
        if !project {
            found.push(info(
                name,
                "hooks",
                format!("not installed in {}", shown(&located)),
            ));
        }
        return Some((located, false));
    }
    // Each event by the name install writes (Copilot runs `postToolUse`
    // and `PostToolUse` alike: two hooks, one event).
    let events: Vec<&str> = hooks
        .iter()
        .map(|(e, _)| host.profile().event_named(e))
        .collect();
    let mut once: Vec<&str> = Vec::new();
    for e in &events {
        if !once.contains(e) {
            once.push(e);
        }
    }
    // The same event twice in one file: the host runs both.
    let mut twice: Vec<&str> = events
        .iter()
        .enumerate()
        .filter(|(i, e)| events[..*i].contains(e))
        .map(|(_, e)| *e)
        .collect();
    twice.sort_unstable();
    twice.dedup();
    if !twice.is_empty() {
        // install keeps one of its own (this binary's, or one gone); two
        // that run another working interband are the user's to choose.
        let this = std::env::current_exe().and_then(dunce::canonicalize).ok();
        let another = hooks
            .iter()
            .filter(|(e, _)| twice.contains(&host.profile().event_named(e)))
            .any(|(_, c)| {
                let p = PathBuf::from(expand_home(&program_of(unguarded(c))));
                dunce::canonicalize(&p)
                    .ok()
                    .is_some_and(|p| Some(p) != this)
            });
        found.push(problem(
            name,
            "duplicates",
            format!(
                "{} runs interband's hook more than once at {}: every call is counted again, every note comes back again",
                shown(&located),
                twice.join(", ")
            ),
            if another {
                format!("take one out of {} by hand: they run another interband than this one", shown(&located))
            } else {
                format!("`interband install{} --host {name}` keeps one", if project { " --project" } else { "" })
            },
        ));
    }
    found.push(ok(
        name,
        "hooks",
        format!(
            "hooks installed in {}: {}",
            shown(&located),
            once.join(", ")
        ),
    ));
    if let Some(off) = (host.profile().hooks_off)(&settings) {
        found.push(problem(
            name,
            "hooks",
            format!(
                "{} turns every {} hook off ({off}): none of interband's runs",
                shown(&located),
                host.profile().name
            ),
            format!("take {off} out of the file, or, if that is meant, `interband uninstall --host {name}`"),
        ));
    }
    // The program each hook runs.
    let programs: std::collections::BTreeSet<&str> =
        hooks.iter().map(|(_, c)| c.as_str()).collect();
    for command in &programs {
        found.push(check_program(name, command, "the hooks"));
    }
    check_systems(host, project, &settings, &programs, &located, found);
    if host == Host::Claude && !project {
        let plugin = settings
            .get("enabledPlugins")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .find(|(k, on)| k.split('@').next() == Some("interband") && on.as_bool() == Some(true));
        if let Some((plugin, _)) = plugin {
            found.push(problem(
                name,
                "duplicates",
                format!("the plugin {plugin} is enabled too: every hook runs twice, every note comes back twice"),
                format!("`claude plugin disable {plugin}`, or `interband uninstall --host {name}`"),
            ));
        }
    }
    if host == Host::Codex && !project {
        check_codex_trust(&t, &settings, &hooks, found);
    }
    Some((located, host_reads))
}

/// Whether the hooks are written for the systems that run them: on
/// Windows none with a POSIX shell's guard (Git Bash alone reads it; the
/// hosts' PowerShell and cmd.exe fail it at every call), and in a
/// project's file, shared by every system, none for one system alone (a
/// POSIX guard; a Copilot CLI hook without its other system's command).
fn check_systems(
    host: Host,
    project: bool,
    settings: &Value,
    commands: &std::collections::BTreeSet<&str>,
    located: &Path,
    found: &mut Vec<Finding>,
) {
    let name = host.key();
    let posix = commands
        .iter()
        .find(|c| c.starts_with(ON_PATH.0) || c.starts_with(IF_THERE.0));
    let missing: Vec<&str> = if project {
        let keys = host.profile().hook_shape.other_systems();
        keys.into_iter()
            .filter(|k| {
                our_hook_objects(settings).any(|h| h.get(*k).and_then(Value::as_str).is_none())
            })
            .collect()
    } else {
        Vec::new()
    };
    let fix = if project {
        format!("`interband install --project --host {name}` writes them for every system")
    } else {
        format!("`interband install --host {name}` writes them for this system")
    };
    if let Some(c) = posix.filter(|_| project || cfg!(windows)) {
        let who = if project {
            "a teammate on Windows runs them"
        } else {
            "on Windows the host runs them"
        };
        found.push(problem(
            name,
            "shell",
            format!(
                "{} runs `{c}`, a POSIX shell's guard: {who} in PowerShell or cmd.exe (Git Bash \
                 alone reads it), where every hook call fails",
                shown(located)
            ),
            fix,
        ));
    } else if !missing.is_empty() {
        found.push(problem(
            name,
            "shell",
            format!(
                "{}'s hooks have no `{}` command: {} does not run them on the system that reads it",
                shown(located),
                missing.join("`, `"),
                host.profile().name
            ),
            fix,
        ));
    }
}

/// The hook objects (grouped) in a settings file that run interband's hook.
fn our_hook_objects(settings: &Value) -> impl Iterator<Item = &Value> {
    hook_groups(settings)
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter(|h| {
            h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| runs_interband(c, "hook"))
        })
}

/// Whether the program a hook command runs is what a host can run (there,
/// a file, executable, and answering `--version` as interband), and is this
/// binary.
fn check_program(host: &'static str, command: &str, what: &str) -> Finding {
    let program = expand_home(&program_of(unguarded_statusline(unguarded(command))));
    if !resolvable(&program) {
        return info(
            host,
            "binary",
            format!(
                "{what} run `{command}`: its program is found only when the host runs it (a \
                 variable, another user's home), so it is not checked here"
            ),
        );
    }
    let resolved = if crate::platform::is_path(&program) {
        Some(PathBuf::from(&program)).filter(|p| p.exists())
    } else {
        // As the shell finds it: on Windows `interband` is `interband.exe`.
        crate::platform::path_candidates(&program).find(|p| p.is_file())
    };
    let this = std::env::current_exe().and_then(dunce::canonicalize).ok();
    // An install from another place moves the hooks to that binary.
    let fix = format!("`interband install --host {host}`, run from the binary to keep");
    // A guarded hook (a project's, one from npx's cache) does nothing
    // where its binary is missing; any other fails on every call.
    let guarded = unguarded_statusline(unguarded(command)) != command;
    let outcome = match (guarded, what) {
        (false, "the statusline") => "the statusline fails at every redraw",
        (false, _) => "every hook call fails",
        (true, "the statusline") => "the statusline shows nothing of interband's",
        (true, _) => "the hooks do nothing",
    };
    let Some(p) = resolved else {
        return problem(
            host,
            "binary",
            format!("{what} run `{command}`, and {program} does not exist: {outcome}"),
            fix,
        );
    };
    let meta = std::fs::metadata(&p).ok();
    let why_not = if !meta.as_ref().is_some_and(|m| m.is_file()) {
        Some("is not a file".to_owned())
    } else if meta.is_some_and(|m| !crate::platform::executable(&m)) {
        Some("is not executable (no execute permission)".to_owned())
    } else {
        match answers_version(&p) {
            Ok(true) => None,
            Ok(false) => {
                return info(
                    host,
                    "binary",
                    format!(
                        "{what} run {}: not asked for its version (doctor's {} s for asking \
                         programs ran out)",
                        shown(&p),
                        ASKING.as_secs()
                    ),
                );
            }
            Err(why) => Some(why),
        }
    };
    if let Some(why) = why_not {
        return problem(
            host,
            "binary",
            format!("{what} run `{command}`, and {} {why}: {outcome}", shown(&p)),
            fix,
        );
    }
    if dunce::canonicalize(&p).ok() != this {
        info(
            host,
            "binary",
            format!(
                "{what} run {} (not this binary, {})",
                shown(&p),
                this.as_deref().map_or("?".into(), shown)
            ),
        )
    } else {
        ok(
            host,
            "binary",
            format!("{what} run this binary ({})", shown(&p)),
        )
    }
}

/// The most doctor spends asking programs their version, all told.
const ASKING: std::time::Duration = std::time::Duration::from_secs(15);

/// Runs `program --version` as a host would run the hook (nothing on
/// stdin, 5 s at most, once per program however many commands name it,
/// [`ASKING`] in all): it must exit 0 and name itself interband. `Ok(false)`
/// when the time for asking ran out before this one.
// (Clippy 1.96 asks for `const` initializers these already have.)
#[allow(clippy::missing_const_for_thread_local)]
fn answers_version(program: &Path) -> Result<bool, String> {
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::time::Instant;
    thread_local! {
        static ASKED: RefCell<BTreeMap<PathBuf, Result<(), String>>> = const { RefCell::new(BTreeMap::new()) };
        static UNTIL: RefCell<Option<Instant>> = const { RefCell::new(None) };
    }
    let key = dunce::canonicalize(program).unwrap_or_else(|_| program.to_owned());
    if let Some(known) = ASKED.with(|a| a.borrow().get(&key).cloned()) {
        return known.map(|()| true);
    }
    let until = UNTIL.with(|u| {
        *u.borrow_mut()
            .get_or_insert_with(|| Instant::now() + ASKING)
    });
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Ok(false);
    }
    let answer = ask_version(program, left.min(std::time::Duration::from_secs(5)));
    ASKED.with(|a| a.borrow_mut().insert(key, answer.clone()));
    answer.map(|()| true)
}

/// One `--version`, its output into a file (a pipe a child left running
/// would hold), which it may not grow past 64 KiB (a flood stops there).
fn ask_version(program: &Path, wait: std::time::Duration) -> Result<(), String> {
    use std::io::{Read, Seek};
    use std::process::{Command, Stdio};
    let mut out = tempfile::tempfile().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(program);
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(Stdio::null());
    // (Unix: on Windows a flood is only bounded in time.)
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    #[cfg(unix)]
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot be run ({e})"))?;
    let deadline = std::time::Instant::now() + wait;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "did not answer `--version` within {} s",
                    wait.as_secs()
                ));
            }
        }
    };
    let mut said = String::new();
    out.rewind().map_err(|e| e.to_string())?;
    let _ = out.take(4096).read_to_string(&mut said);
    if status.success() && said.starts_with("interband") {
        Ok(())
    } else {
        Err(format!(
            "does not answer `--version` as interband ({status}{})",
            if said.trim().is_empty() {
                String::new()
            } else {
                format!(", said {:?}", said.lines().next().unwrap_or(""))
            }
        ))
    }
}

fn check_codex_trust(
    t: &Target,
    settings: &Value,
    hooks: &[(String, String)],
    found: &mut Vec<Finding>,
) {
    let (Ok(key_path), Ok(config)) = (t.codex_key_path(), t.codex_config()) else {
        return;
    };
    let commands: std::collections::BTreeSet<&str> =
        hooks.iter().map(|(_, c)| c.as_str()).collect();
    let entries: Vec<_> = commands
        .into_iter()
        .flat_map(|c| codex_trust::entries(&key_path, settings, c))
        .collect();
    let standing = match codex_trust::standing(&config, &entries) {
        Ok(s) => s,
        Err(e) => {
            found.push(problem(
                "codex",
                "trust",
                format!("{e:#}"),
                format!("fix {}", shown(&config)),
            ));
            return;
        }
    };
    let stale = standing.iter().filter(|s| **s == Some(false)).count();
    let missing = standing.iter().filter(|s| s.is_none()).count();
    let fix = "`interband install --host codex --trust` (or review them with `/hooks` in Codex)"
        .to_owned();
    found.push(if stale > 0 {
        problem(
            "codex",
            "trust",
            format!("{stale} hook(s) trusted with a hash that no longer matches: Codex skips them"),
            fix,
        )
    } else if missing > 0 {
        problem(
            "codex",
            "trust",
            format!(
                "{missing} of {} hook(s) not trusted: Codex skips them",
                entries.len()
            ),
            fix,
        )
    } else {
        ok(
            "codex",
            "trust",
            format!(
                "all {} hook(s) trusted in {}",
                entries.len(),
                shown(&config)
            ),
        )
    });
}

fn check_root(found: &mut Vec<Finding>) {
    let bus = match interband::Bus::from_env() {
        Ok(b) => b,
        Err(e) => {
            found.push(problem(
                "interband",
                "root",
                e.to_string(),
                "set HOME, or INTERBAND_ROOT to a folder of yours".into(),
            ));
            return;
        }
    };
    match bus.root_dir(false) {
        Ok(_) => found.push(ok(
            "interband",
            "root",
            format!("the root {} is yours alone", shown(bus.root())),
        )),
        Err(interband::Error::NotFound { .. }) => found.push(info(
            "interband",
            "root",
            format!(
                "no root yet at {} (the first hook call makes it)",
                shown(bus.root())
            ),
        )),
        Err(e) => found.push(problem(
            "interband",
            "root",
            e.to_string(),
            format!("`chmod -R go-w {}` (and own it)", shown(bus.root())),
        )),
    }
    // When a hook last ran: the newest pressure any session published.
    let newest = bus
        .channel("interpulse", "pressure", false)
        .ok()
        .and_then(|d| {
            let entries = d.entries().ok()?;
            entries
                .iter()
                .filter_map(|e| e.name_str())
                .filter(|n| n.ends_with(".json"))
                .filter_map(|n| {
                    Some((
                        d.stat(n).ok()??.mtime,
                        n.trim_end_matches(".json").to_owned(),
                    ))
                })
                .max()
        });
    found.push(match newest {
        Some((t, session)) => {
            let ago = t.elapsed().map_or(0, |d| d.as_secs());
            info(
                "interband",
                "last run",
                format!(
                    "a hook last ran {} ago (session {session})",
                    super::super::top::age(ago as f64)
                ),
            )
        }
        None => info(
            "interband",
            "last run",
            "no hook has run on this root yet".into(),
        ),
    });
    if let Some(log) = std::env::var_os("INTERBAND_LOG").filter(|l| !l.is_empty()) {
        let text = log_end(Path::new(&log)).unwrap_or_default();
        let last: Vec<&str> = text.lines().rev().take(3).collect();
        if !last.is_empty() {
            found.push(info(
                "interband",
                "log",
                format!(
                    "the hooks' log ({}) ends: {}",
                    log.to_string_lossy(),
                    last.join(" / ")
                ),
            ));
        }
    }
}

fn check_settings(found: &mut Vec<Finding>) {
    let here = std::env::current_dir().ok();
    let env = interband::settings::ProcessEnv;
    let pulse = interpulse::config::Config::load(here.as_deref(), &env);
    let theirs = interband_consumers::hooks::AllSettings::load(here.as_deref(), &env);
    let mut problems: Vec<String> = pulse.problems.clone();
    for p in theirs.problems() {
        if !problems.contains(&p) {
            problems.push(p);
        }
    }
    if problems.is_empty() {
        found.push(ok(
            "interband",
            "settings",
            "the settings have no problem".into(),
        ));
    }
    for p in problems {
        found.push(problem(
            "interband",
            "settings",
            p,
            "edit the file named (`interband config` shows every value and where it came from)"
                .into(),
        ));
    }
}

/// The last 16 KiB of a log, however long it grew (a regular file only,
/// opened without blocking).
fn log_end(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut f, meta) =
        interband::fsio::open_regular_meta(path, interband::fsio::Links::Follow).ok()?;
    f.seek(SeekFrom::Start(meta.len.saturating_sub(16 << 10)))
        .ok()?;
    let mut bytes = Vec::new();
    f.take(16 << 10).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A path for a person: terminal-safe.
fn shown(p: &Path) -> String {
    interband::text::terminal(&p.display().to_string()).into_owned()
}

/// The hosts whose user settings hold interband's hooks (where a session
/// will show once it makes its first call).
pub(crate) fn installed_for() -> Vec<Host> {
    Host::ALL
        .into_iter()
        .filter(|&host| {
            target(host, false)
                .path()
                .ok()
                .and_then(|p| read_settings_with_comments(&p, host).ok().flatten())
                .is_some_and(|(o, _)| !our_hooks(&o.json).is_empty())
        })
        .collect()
}

/// What an empty list of sessions means, for `pressure` and `top`: the
/// hooks are in place and no session has made a call yet, or nothing is
/// installed.
pub(crate) fn no_sessions_yet() -> String {
    let hosts = installed_for();
    if hosts.is_empty() {
        return "no sessions yet, and interband's hooks are in no agent's user settings: \
                `interband install` puts them there (`interband doctor` says what it finds)"
            .to_owned();
    }
    let names: Vec<&str> = hosts.iter().map(|h| h.profile().name).collect();
    format!(
        "no sessions yet: interband's hooks are installed for {}; a session shows here from its first tool call",
        names.join(", ")
    )
}
