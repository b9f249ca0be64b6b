//! `interband doctor`: whether what `install` set up still works, host by
//! host, and the one command that fixes each problem found.
//!
//! Per host: the hooks and statusline in the user's settings (and the
//! project's in the current folder, and Claude Code's plugin: the same hooks
//! twice run twice), whether the program they call exists and is this
//! binary, Codex's trust of them (a hook whose hash changed since it was
//! trusted is skipped by Codex); then the root's permissions, the settings'
//! problems, and when a hook last ran. Exit 0 when healthy, 1 with problems.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::{
    Files, Host, Installs, Target, any_statusline_rest, codex_trust, expand_home, group_commands,
    program_of, read_record, read_settings_with_comments, runs_interband, unguarded,
    unguarded_statusline,
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
    let t = target(host, false);
    let (Ok(path), Ok(located)) = (t.path(), t.located()) else {
        found.push(info(name, "hooks", "no home folder: cannot look".into()));
        return;
    };
    let settings = match read_settings_with_comments(&path, host) {
        Ok(Some((o, comments))) => {
            if comments && host.profile().settings_comments {
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
            o.json
        }
        Ok(None) => {
            found.push(info(
                name,
                "hooks",
                format!("not installed ({} does not exist)", shown(&located)),
            ));
            return;
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
            return;
        }
    };
    // A record install and uninstall cannot read stops both.
    let files = Files::new(&path, false);
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
    let hooks = our_hooks(&settings);
    if hooks.is_empty() {
        found.push(info(
            name,
            "hooks",
            format!("not installed in {}", shown(&located)),
        ));
        return;
    }
    let mut events: Vec<&str> = hooks.iter().map(|(e, _)| e.as_str()).collect();
    // The same event twice in one file: the host runs both.
    let twice: Vec<&str> = events
        .iter()
        .enumerate()
        .filter(|(i, e)| events[..*i].contains(e))
        .map(|(_, e)| *e)
        .collect();
    if !twice.is_empty() {
        found.push(problem(
            name,
            "duplicates",
            format!(
                "{} runs interband's hook twice at {}: every call is counted twice, every note comes back twice",
                shown(&located),
                twice.join(", ")
            ),
            format!("`interband install --host {name}` keeps one"),
        ));
    }
    events.dedup();
    found.push(ok(
        name,
        "hooks",
        format!(
            "hooks installed in {}: {}",
            shown(&located),
            events.join(", ")
        ),
    ));
    // The program each hook runs.
    let programs: std::collections::BTreeSet<&str> =
        hooks.iter().map(|(_, c)| c.as_str()).collect();
    for command in programs {
        found.push(check_program(name, command));
    }
    if host.has_statusline() {
        let statusline = settings
            .pointer("/statusLine/command")
            .and_then(Value::as_str)
            .filter(|c| any_statusline_rest(c).is_some());
        match statusline {
            Some(c) => {
                let run = check_program(name, unguarded_statusline(c));
                if run.status == "problem" {
                    found.push(problem(
                        name,
                        "statusline",
                        format!(
                            "the statusline runs `{c}`, which cannot run ({})",
                            run.message
                        ),
                        run.fix.unwrap_or_default(),
                    ));
                } else {
                    found.push(ok(name, "statusline", "statusline installed".into()));
                }
            }
            None => found.push(info(
                name,
                "statusline",
                "no interband statusline (`interband install` adds it, wrapping yours)".into(),
            )),
        }
    }
    if host == Host::Claude {
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
    // The same hooks in the current folder's project settings.
    let project = target(host, true);
    if let Ok(p) = project.located()
        && p != located
        && let Ok(Some((o, _))) = read_settings_with_comments(&p, host)
        && !our_hooks(&o.json).is_empty()
    {
        found.push(problem(
            name,
            "duplicates",
            format!(
                "{} has interband's hooks too: {} runs both on every event",
                shown(&p),
                host.profile().name
            ),
            format!("keep one: `interband uninstall --project --host {name}` here, or `interband uninstall --host {name}`"),
        ));
    }
    // Copilot CLI also runs a repository's Claude Code hooks (its
    // `.claude/settings.json`), with its own input.
    if host == Host::Copilot
        && let Ok(here) = std::env::current_dir()
        && let Ok(Some((o, _))) =
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
    if host == Host::Codex {
        check_codex_trust(&t, &settings, &hooks, found);
    }
}

/// Whether the program a hook command runs is what a host can run (there,
/// a file, executable, and answering `--version` as interband), and is this
/// binary.
fn check_program(host: &'static str, command: &str) -> Finding {
    use std::os::unix::fs::PermissionsExt;
    let program = expand_home(&program_of(unguarded(command)));
    let resolved = if program.contains('/') {
        Some(PathBuf::from(&program)).filter(|p| p.exists())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(&program))
                .find(|p| p.is_file())
        })
    };
    let this = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    // An install from another place moves the hooks to that binary.
    let fix = format!("`interband install --host {host}`, run from the binary to keep");
    // A guarded hook (a project's, one from npx's cache) does nothing
    // where its binary is missing; any other fails on every call.
    let outcome = if unguarded(command) == command {
        "every hook call fails"
    } else {
        "the hooks do nothing"
    };
    let Some(p) = resolved else {
        return problem(
            host,
            "binary",
            format!("the hooks run `{command}`, and {program} does not exist: {outcome}"),
            fix,
        );
    };
    let meta = std::fs::metadata(&p).ok();
    let why_not = if !meta.as_ref().is_some_and(|m| m.is_file()) {
        Some("is not a file".to_owned())
    } else if meta.is_some_and(|m| m.permissions().mode() & 0o111 == 0) {
        Some("is not executable (no execute permission)".to_owned())
    } else {
        answers_version(&p).err()
    };
    if let Some(why) = why_not {
        return problem(
            host,
            "binary",
            format!(
                "the hooks run `{command}`, and {} {why}: {outcome}",
                shown(&p)
            ),
            fix,
        );
    }
    if std::fs::canonicalize(&p).ok() != this {
        info(
            host,
            "binary",
            format!(
                "the hooks run {} (not this binary, {})",
                shown(&p),
                this.as_deref().map_or("?".into(), shown)
            ),
        )
    } else {
        ok(
            host,
            "binary",
            format!("the hooks run this binary ({})", shown(&p)),
        )
    }
}

/// Runs `program --version` as a host would run the hook (nothing on
/// stdin, 5 s at most, once per program however many commands name it): it
/// must exit 0 and name itself interband. Its output goes to a file, not a
/// pipe, so a child it leaves running cannot hold doctor.
fn answers_version(program: &Path) -> Result<(), String> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static ASKED: RefCell<HashMap<PathBuf, Result<(), String>>> = RefCell::new(HashMap::new());
    }
    let key = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_owned());
    if let Some(known) = ASKED.with(|a| a.borrow().get(&key).cloned()) {
        return known;
    }
    let answer = ask_version(program);
    ASKED.with(|a| a.borrow_mut().insert(key, answer.clone()));
    answer
}

fn ask_version(program: &Path) -> Result<(), String> {
    use std::io::{Read, Seek};
    use std::process::{Command, Stdio};
    let mut out = tempfile::tempfile().map_err(|e| e.to_string())?;
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot be run ({e})"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("did not answer `--version` within 5 s".into());
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
