//! `interband install` and `interband uninstall`: register interband's hooks (and, for Claude Code,
//! its statusline) in a host's settings file, and take exactly them out again.
//!
//! The settings file is merged, never clobbered: every other key, hook group and the order of the
//! keys stay as they were. Before the first change the pristine file is copied to
//! `<file>.interband-backup`; what an install added is recorded in `<file>.interband-install.json`,
//! so an uninstall gives back a file whose JSON equals the original.

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use crate::exit;

/// `interband install`
#[derive(Args)]
pub struct Install {
    #[command(flatten)]
    target: Target,
}

/// `interband uninstall`
#[derive(Args)]
pub struct Uninstall {
    #[command(flatten)]
    target: Target,
}

/// Which settings file, for which host, and the command to register.
#[derive(Args)]
struct Target {
    /// The settings file to change (default: the host's user settings under $HOME).
    #[arg(long, value_name = "PATH", conflicts_with = "project")]
    settings: Option<PathBuf>,
    /// The project's settings in the current folder (e.g. `./.claude/settings.json`).
    #[arg(long)]
    project: bool,
    /// The agent host whose settings to change.
    #[arg(long, value_enum, default_value_t = Host::Claude)]
    host: Host,
    /// Print the change as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The interband program the host should run (default: this binary's absolute path).
    #[arg(long, value_name = "PATH")]
    command: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Host {
    /// Claude Code: `~/.claude/settings.json`, hooks and statusLine.
    Claude,
    /// Codex CLI: `~/.codex/hooks.json` (needs `[features] codex_hooks = true`).
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json`.
    Gemini,
}

/// One hook event to register: its name, tool matcher and timeout (in the host's unit).
struct Event {
    name: &'static str,
    matcher: Option<&'static str>,
    timeout: u64,
}

const fn ev(name: &'static str, matcher: Option<&'static str>, timeout: u64) -> Event {
    Event {
        name,
        matcher,
        timeout,
    }
}

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
        }
    }
    /// The settings file, relative to HOME or to the project folder.
    fn file(self) -> &'static str {
        match self {
            Host::Claude => ".claude/settings.json",
            Host::Codex => ".codex/hooks.json",
            Host::Gemini => ".gemini/settings.json",
        }
    }
    /// Claude Code and Codex CLI count timeouts in seconds, Gemini CLI in milliseconds.
    /// Codex matchers are regular expressions where `*` is invalid: no matcher matches every tool.
    fn events(self) -> &'static [Event] {
        const CLAUDE: &[Event] = &[
            ev("PostToolUse", Some("*"), 5),
            ev("Stop", None, 10),
            ev("PreCompact", None, 10),
            ev("SessionStart", None, 5),
            ev("SessionEnd", None, 10),
        ];
        const CODEX: &[Event] = &[
            ev("PostToolUse", None, 5),
            ev("Stop", None, 10),
            ev("PreCompact", None, 10),
            ev("SessionStart", None, 5),
        ];
        const GEMINI: &[Event] = &[
            ev("AfterTool", Some("*"), 5000),
            ev("PreCompress", None, 10000),
            ev("SessionStart", None, 5000),
            ev("SessionEnd", None, 10000),
        ];
        match self {
            Host::Claude => CLAUDE,
            Host::Codex => CODEX,
            Host::Gemini => GEMINI,
        }
    }
    fn has_statusline(self) -> bool {
        self == Host::Claude
    }
}

impl Target {
    /// The settings file to work on. A symbolic link (a dotfiles manager's) is followed, so the
    /// link stays a link and the backup and record sit next to the real file.
    fn path(&self) -> Result<PathBuf> {
        let path = match (&self.settings, self.project) {
            (Some(p), _) => p.clone(),
            (None, true) => std::env::current_dir()
                .context("the current folder")?
                .join(self.host.file()),
            (None, false) => {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .context("HOME is not set: pass --settings PATH")?;
                PathBuf::from(home).join(self.host.file())
            }
        };
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(&path)
                .with_context(|| format!("{}: cannot follow the symbolic link", path.display())),
            _ => Ok(path),
        }
    }

    /// The program the hooks run, shell-quoted (hosts run hook commands through a shell).
    fn program(&self) -> Result<String> {
        let program = match &self.command {
            Some(p) if p.as_os_str().is_empty() => anyhow::bail!("--command is empty"),
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .context(
                    "cannot find the path of the running interband binary: pass --command PATH",
                )?,
        };
        let program = program
            .to_str()
            .with_context(|| format!("{}: the path is not UTF-8", program.display()))?;
        Ok(sh_quote(program))
    }
}

/// The commands interband registers, all starting with one program.
struct Ours {
    program: String,
    hook: String,
    statusline: String,
}

impl Ours {
    fn new(program: String) -> Self {
        Ours {
            hook: format!("{program} hook"),
            statusline: format!("{program} statusline"),
            program,
        }
    }
    /// Our statusline command, running `theirs` too and appending our segment to its line.
    fn wrapping(&self, theirs: &str) -> String {
        format!("{} --wrap sh -c {}", self.statusline, sh_quote(theirs))
    }
    /// Whether a statusLine command is ours (plain or wrapping).
    fn is_our_statusline(&self, command: &str) -> bool {
        command == self.statusline || command.starts_with(&format!("{} --wrap ", self.statusline))
    }
    /// The hook group added for `e`.
    fn group(&self, e: &Event) -> Json {
        let hook = Json::Obj(vec![
            ("type".into(), Json::Str("command".into())),
            ("command".into(), Json::Str(self.hook.clone())),
            ("timeout".into(), Json::Num(e.timeout.into())),
        ]);
        let mut group = Vec::new();
        if let Some(m) = e.matcher {
            group.push(("matcher".into(), Json::Str(m.into())));
        }
        group.push(("hooks".into(), Json::Arr(vec![hook])));
        Json::Obj(group)
    }
}

impl Install {
    pub fn run(self) -> Result<u8> {
        let t = &self.target;
        let path = t.path()?;
        let ours = Ours::new(t.program()?);
        let files = Files::new(&path);
        let original = read_settings(&path)?;
        let old_record = read_record(&files.record)?;
        if let Some(r) = &old_record
            && r.program != ours.program
        {
            anyhow::bail!(
                "{}: interband is already installed there with the command {}; run `interband uninstall` first",
                path.display(),
                r.program
            );
        }
        let mut settings = original
            .as_ref()
            .map_or(Json::Obj(vec![]), |o| o.json.clone());
        check_shape(&path, &settings, t.host)?;
        let mut notes = Vec::new();
        host_notes(t.host, &settings, &mut notes);

        // What an earlier install added that is still there.
        let mut record = Record {
            host: t.host,
            program: ours.program.clone(),
            created_file: original.is_none(),
            created_hooks: false,
            added: vec![],
            statusline: None,
        };
        // Events whose array an earlier install created (emptied by hand since, maybe).
        let mut created_before = Vec::new();
        if let Some(old) = old_record {
            record.created_file |= old.created_file;
            record.created_hooks = old.created_hooks;
            for a in old.added {
                if event_groups(&settings, &a.event).is_some_and(|g| g.contains(&a.group)) {
                    record.added.push(a);
                } else if a.created_event {
                    created_before.push(a.event);
                }
            }
            record.statusline = old
                .statusline
                .filter(|s| settings.get("statusLine") == Some(&s.installed));
        }

        // Add what is missing.
        let mut added_now = Vec::new();
        for e in t.host.events() {
            if let Some(existing) = event_groups(&settings, e.name).and_then(|g| interband_hook(g))
            {
                if existing != ours.hook {
                    notes.push(format!("{} already runs `{existing}`; left as is", e.name));
                }
                continue;
            }
            let root = settings.obj_mut();
            if !root.iter().any(|(k, _)| k == "hooks") {
                root.push(("hooks".into(), Json::Obj(vec![])));
                record.created_hooks = true;
            }
            let hooks = settings.get_mut("hooks").expect("just checked").obj_mut();
            let exists = hooks.iter().any(|(k, _)| k == e.name);
            if !exists {
                hooks.push((e.name.into(), Json::Arr(vec![])));
            }
            let created_event = !exists || created_before.iter().any(|c| c == e.name);
            let group = ours.group(e);
            set_field(hooks, e.name, |v| v.arr_mut().push(group.clone()));
            record.added.push(Added {
                event: e.name.into(),
                created_event,
                group,
            });
            added_now.push(e.name);
        }
        let mut statusline_now = None;
        if t.host.has_statusline() {
            match statusline_plan(&settings, &ours) {
                StatusPlan::Present(Some(note)) => notes.push(note),
                StatusPlan::Present(None) => {}
                StatusPlan::Set {
                    installed,
                    original,
                    how,
                } => {
                    settings.set("statusLine", installed.clone());
                    record.statusline = Some(StatusRecord {
                        installed,
                        original,
                    });
                    statusline_now = Some(how);
                }
            }
        }

        let mut out = String::new();
        if added_now.is_empty() && statusline_now.is_none() {
            let _ = writeln!(out, "interband is already installed in {}", path.display());
            print_notes(&mut out, &notes);
            print!("{out}");
            return Ok(exit::OK);
        }
        let after = settings.pretty();
        if t.dry_run {
            out.push_str(&dry_run_diff(&path, original.as_ref(), Some(&after)));
            let _ = writeln!(out, "(dry run: nothing written)");
            print_notes(&mut out, &notes);
            print!("{out}");
            return Ok(exit::OK);
        }

        // The folder, the pristine backup, the record, and then the settings.
        if original.is_none()
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create the folder", dir.display()))?;
        }
        if let Some(o) = &original
            && !exists(&files.backup)?
        {
            write_file(&files.backup, &o.bytes, None)?;
        }
        let previous_record = std::fs::read(&files.record).ok();
        write_file(&files.record, record.to_json().pretty().as_bytes(), None)?;
        if let Err(e) = write_file(&path, after.as_bytes(), original.as_ref().map(|o| o.mode)) {
            // Leave the record as it was: nothing was installed.
            let _ = match previous_record {
                Some(bytes) => write_file(&files.record, &bytes, None),
                None => std::fs::remove_file(&files.record).map_err(Into::into),
            };
            return Err(e);
        }

        let mut what = added_now.join(", ");
        if let Some(how) = statusline_now {
            if !what.is_empty() {
                what.push_str("; ");
            }
            what.push_str(&how);
        }
        let _ = writeln!(out, "installed interband in {}: {what}", path.display());
        if original.is_some() {
            let _ = writeln!(out, "backup of the original: {}", files.backup.display());
        }
        let _ = writeln!(out, "undo with: interband uninstall{}", t.flags());
        print_notes(&mut out, &notes);
        print!("{out}");
        Ok(exit::OK)
    }
}

impl Uninstall {
    pub fn run(self) -> Result<u8> {
        let t = &self.target;
        let path = t.path()?;
        let files = Files::new(&path);
        let record = read_record(&files.record)?;
        let Some(original) = read_settings(&path)? else {
            if record.is_some() && !t.dry_run {
                remove_file(&files.record)?;
            }
            println!(
                "interband is not installed in {}: the file does not exist",
                path.display()
            );
            return Ok(exit::OK);
        };
        let host = record.as_ref().map_or(t.host, |r| r.host);
        check_shape(&path, &original.json, host)?;
        let mut settings = original.json.clone();
        let mut notes = Vec::new();
        let mut removed = Vec::new();
        let created_file = match &record {
            Some(r) => {
                remove_recorded(&mut settings, r, &mut removed, &mut notes);
                r.created_file
            }
            None => {
                let ours = Ours::new(t.program()?);
                remove_found(&mut settings, host, &ours, &mut removed);
                false
            }
        };

        if removed.is_empty() {
            if record.is_some() && !t.dry_run {
                remove_file(&files.record)?;
            }
            let mut out = format!("interband is not installed in {}\n", path.display());
            print_notes(&mut out, &notes);
            print!("{out}");
            return Ok(exit::OK);
        }
        let delete = created_file && settings == Json::Obj(vec![]);
        let after = (!delete).then(|| settings.pretty());
        let mut out = String::new();
        if t.dry_run {
            out.push_str(&dry_run_diff(&path, Some(&original), after.as_deref()));
            let _ = writeln!(out, "(dry run: nothing written)");
            print!("{out}");
            return Ok(exit::OK);
        }
        match &after {
            Some(text) => write_file(&path, text.as_bytes(), Some(original.mode))?,
            None => remove_file(&path)?,
        }
        if record.is_some() {
            remove_file(&files.record)?;
        }
        let _ = writeln!(
            out,
            "removed interband from {}: {}",
            path.display(),
            removed.join(", ")
        );
        if delete {
            let _ = writeln!(
                out,
                "deleted {} (interband install had created it)",
                path.display()
            );
        }
        print_notes(&mut out, &notes);
        print!("{out}");
        Ok(exit::OK)
    }
}

impl Target {
    /// The flags that name the same file again, for the "undo with" hint.
    fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(p) = &self.settings {
            let _ = write!(s, " --settings {}", sh_quote(&p.to_string_lossy()));
        }
        if self.project {
            s.push_str(" --project");
        }
        if self.host != Host::Claude {
            let _ = write!(s, " --host {}", self.host.name());
        }
        s
    }
}

fn print_notes(out: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
}

/// What the user must know beyond this file: a switch in another file, or the plugin running the
/// same hooks.
fn host_notes(host: Host, settings: &Json, notes: &mut Vec<String>) {
    match host {
        Host::Claude => {
            if let Some(Json::Obj(plugins)) = settings.get("enabledPlugins") {
                for (name, on) in plugins {
                    if name.split('@').next() == Some("interband") && *on == Json::Bool(true) {
                        notes.push(format!(
                            "the plugin {name} is enabled here and registers the same hooks: disable one of the two"
                        ));
                    }
                }
            }
        }
        Host::Codex => notes.push(
            "Codex CLI runs hooks only with `[features] codex_hooks = true` in ~/.codex/config.toml".into(),
        ),
        Host::Gemini => {
            let enabled = settings.get("hooksConfig").and_then(|c| c.get("enabled"));
            if enabled != Some(&Json::Bool(true)) {
                notes.push(
                    "Gemini CLI releases where hooks are still experimental also need `\"hooksConfig\": {\"enabled\": true}` in settings.json".into(),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The plan: what is ours, what to add, what to take out.

/// The array of hook groups of `event`, if any.
fn event_groups<'a>(settings: &'a Json, event: &str) -> Option<&'a Vec<Json>> {
    match settings.get("hooks")?.get(event)? {
        Json::Arr(groups) => Some(groups),
        _ => None,
    }
}

/// The commands of a hook group's hooks.
fn group_commands(group: &Json) -> impl Iterator<Item = &str> {
    let hooks = match group.get("hooks") {
        Some(Json::Arr(h)) => h.as_slice(),
        _ => &[],
    };
    hooks.iter().filter_map(|h| match h.get("command") {
        Some(Json::Str(c)) => Some(c.as_str()),
        _ => None,
    })
}

/// The command of an interband hook already registered in these groups (ours or another
/// install's, e.g. `interband hook` from PATH), if any.
fn interband_hook(groups: &[Json]) -> Option<String> {
    groups
        .iter()
        .flat_map(group_commands)
        .find(|c| runs_interband(c, "hook"))
        .map(str::to_owned)
}

/// Whether a shell command runs `interband SUB` (any path to a program named `interband`).
fn runs_interband(command: &str, sub: &str) -> bool {
    let Some(words) = split_words(command) else {
        return false;
    };
    let named = words
        .first()
        .is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == "interband"));
    named && words.get(1).is_some_and(|w| w == sub) && (sub != "hook" || words.len() == 2)
}

enum StatusPlan {
    /// Nothing to do, with a note for the user if it is another install's.
    Present(Option<String>),
    /// Set `installed`; `original` is what to restore (None: no statusLine).
    Set {
        installed: Json,
        original: Option<Json>,
        how: String,
    },
}

fn statusline_plan(settings: &Json, ours: &Ours) -> StatusPlan {
    let plain = || {
        Json::Obj(vec![
            ("type".into(), Json::Str("command".into())),
            ("command".into(), Json::Str(ours.statusline.clone())),
        ])
    };
    let Some(current) = settings.get("statusLine") else {
        return StatusPlan::Set {
            installed: plain(),
            original: None,
            how: "statusLine".into(),
        };
    };
    let mut installed = current.clone();
    let how = match current.get("command") {
        Some(Json::Str(c)) if ours.is_our_statusline(c) => return StatusPlan::Present(None),
        Some(Json::Str(c)) if runs_interband(c, "statusline") => {
            return StatusPlan::Present(Some(format!("statusLine already runs `{c}`; left as is")));
        }
        Some(Json::Str(c)) if !c.trim().is_empty() => {
            installed.set("command", Json::Str(ours.wrapping(c)));
            "statusLine (wrapping your command)".to_string()
        }
        _ => {
            installed.set("command", Json::Str(ours.statusline.clone()));
            "statusLine".to_string()
        }
    };
    installed.set("type", Json::Str("command".into()));
    StatusPlan::Set {
        installed,
        original: Some(current.clone()),
        how,
    }
}

/// Takes out what the record says install added.
fn remove_recorded(
    settings: &mut Json,
    record: &Record,
    removed: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let ours = Ours::new(record.program.clone());
    for a in record.added.iter().rev() {
        let Some(Json::Arr(groups)) = settings.get_mut("hooks").and_then(|h| h.get_mut(&a.event))
        else {
            notes.push(format!(
                "{}: interband's hook group was already gone",
                a.event
            ));
            continue;
        };
        // The group as added, else one that only runs our hook (its timeout edited by hand).
        let at = groups.iter().rposition(|g| *g == a.group).or_else(|| {
            groups.iter().rposition(|g| {
                let mut cmds = group_commands(g).peekable();
                cmds.peek().is_some() && cmds.all(|c| c == ours.hook)
            })
        });
        let Some(at) = at else {
            notes.push(format!(
                "{}: interband's hook group was already gone",
                a.event
            ));
            continue;
        };
        groups.remove(at);
        if groups.is_empty() && a.created_event {
            settings
                .get_mut("hooks")
                .expect("just seen")
                .remove(&a.event);
        }
        removed.push(a.event.clone());
    }
    removed.reverse();
    if record.created_hooks && settings.get("hooks") == Some(&Json::Obj(vec![])) {
        settings.remove("hooks");
    }
    if let Some(s) = &record.statusline {
        if settings.get("statusLine") == Some(&s.installed) {
            match &s.original {
                Some(o) => settings.set("statusLine", o.clone()),
                None => settings.remove("statusLine"),
            }
            removed.push("statusLine".into());
        } else {
            notes.push("statusLine was changed since interband install; left as is".into());
        }
    }
}

/// Without a record: takes out the hooks running exactly our command, and our statusline.
fn remove_found(settings: &mut Json, host: Host, ours: &Ours, removed: &mut Vec<String>) {
    for e in host.events() {
        let Some(Json::Arr(groups)) = settings.get_mut("hooks").and_then(|h| h.get_mut(e.name))
        else {
            continue;
        };
        let before = groups.clone();
        for g in groups.iter_mut() {
            if let Some(Json::Arr(hooks)) = g.get_mut("hooks") {
                hooks.retain(|h| h.get("command") != Some(&Json::Str(ours.hook.clone())));
            }
        }
        // Drop the groups this left empty (and only those).
        let mut i = 0;
        groups.retain(|g| {
            let was_ours = matches!(before[i].get("hooks"), Some(Json::Arr(h)) if !h.is_empty())
                && matches!(g.get("hooks"), Some(Json::Arr(h)) if h.is_empty());
            i += 1;
            !was_ours
        });
        if *groups == before {
            continue;
        }
        if groups.is_empty() {
            settings.get_mut("hooks").expect("just seen").remove(e.name);
        }
        removed.push(e.name.into());
    }
    if settings.get("hooks") == Some(&Json::Obj(vec![])) {
        settings.remove("hooks");
    }
    if host.has_statusline()
        && let Some(Json::Str(c)) = settings.get("statusLine").and_then(|s| s.get("command"))
    {
        let c = c.clone();
        let prefix = format!("{} --wrap sh -c ", ours.statusline);
        if c == ours.statusline {
            settings.remove("statusLine");
            removed.push("statusLine".into());
        } else if let Some(theirs) = c
            .strip_prefix(&prefix)
            .and_then(split_words)
            .filter(|w| w.len() == 1)
        {
            let line = settings.get_mut("statusLine").expect("just seen");
            line.set("command", Json::Str(theirs[0].clone()));
            removed.push("statusLine".into());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The settings file, its backup and the install record.

struct Files {
    backup: PathBuf,
    record: PathBuf,
}

impl Files {
    fn new(path: &Path) -> Self {
        let with = |suffix: &str| {
            let mut s = path.as_os_str().to_owned();
            s.push(suffix);
            PathBuf::from(s)
        };
        Files {
            backup: with(".interband-backup"),
            record: with(".interband-install.json"),
        }
    }
}

/// A settings file as read: its bytes, its JSON and its permission bits.
struct Original {
    bytes: Vec<u8>,
    json: Json,
    mode: u32,
}

/// Settings files are small; this bounds what a mistaken path can make us read.
const MAX_SETTINGS_BYTES: u64 = 16 << 20;

fn invalid(path: &Path, reason: impl Into<String>) -> anyhow::Error {
    interband::Error::Invalid {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
    .into()
}

/// Reads and parses a JSON file; None when it does not exist.
fn read_json(path: &Path) -> Result<Option<Original>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::Error::new(e).context(path.display().to_string())),
    };
    if !meta.is_file() {
        anyhow::bail!("{}: not a regular file", path.display());
    }
    if meta.len() > MAX_SETTINGS_BYTES {
        anyhow::bail!(
            "{}: {} bytes is over the {MAX_SETTINGS_BYTES}-byte limit",
            path.display(),
            meta.len()
        );
    }
    let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid(path, "not valid UTF-8"))?;
    let json = Json::parse(text).map_err(|e| invalid(path, format!("not valid JSON: {e}")))?;
    Ok(Some(Original {
        bytes,
        json,
        mode: meta.permissions().mode() & 0o7777,
    }))
}

fn read_settings(path: &Path) -> Result<Option<Original>> {
    let o = read_json(path)?;
    if let Some(o) = &o
        && !matches!(o.json, Json::Obj(_))
    {
        return Err(invalid(path, "not a JSON object"));
    }
    Ok(o)
}

/// Checks the parts of the settings that install and uninstall change.
fn check_shape(path: &Path, settings: &Json, host: Host) -> Result<()> {
    let Json::Obj(_) = settings else {
        return Err(invalid(path, "not a JSON object"));
    };
    match settings.get("hooks") {
        None | Some(Json::Obj(_)) => {}
        Some(_) => return Err(invalid(path, "\"hooks\" is not an object")),
    }
    for e in host.events() {
        match settings.get("hooks").and_then(|h| h.get(e.name)) {
            None | Some(Json::Arr(_)) => {}
            Some(_) => {
                return Err(invalid(
                    path,
                    format!("\"hooks.{}\" is not an array", e.name),
                ));
            }
        }
    }
    if host.has_statusline() {
        match settings.get("statusLine") {
            None | Some(Json::Obj(_)) => {}
            Some(_) => return Err(invalid(path, "\"statusLine\" is not an object")),
        }
    }
    Ok(())
}

/// What one install added to one event.
struct Added {
    event: String,
    /// The event's array did not exist before.
    created_event: bool,
    group: Json,
}

struct StatusRecord {
    installed: Json,
    /// None: there was no statusLine.
    original: Option<Json>,
}

/// `<file>.interband-install.json`: what install added, so uninstall can take exactly that out.
struct Record {
    host: Host,
    program: String,
    created_file: bool,
    created_hooks: bool,
    added: Vec<Added>,
    statusline: Option<StatusRecord>,
}

const RECORD_FORMAT: &str = "interband-install/1";

impl Record {
    fn to_json(&self) -> Json {
        let added = self
            .added
            .iter()
            .map(|a| {
                Json::Obj(vec![
                    ("event".into(), Json::Str(a.event.clone())),
                    ("created_event".into(), Json::Bool(a.created_event)),
                    ("group".into(), a.group.clone()),
                ])
            })
            .collect();
        let mut o = vec![
            ("format".into(), Json::Str(RECORD_FORMAT.into())),
            ("host".into(), Json::Str(self.host.name().into())),
            ("program".into(), Json::Str(self.program.clone())),
            ("created_file".into(), Json::Bool(self.created_file)),
            ("created_hooks".into(), Json::Bool(self.created_hooks)),
            ("added".into(), Json::Arr(added)),
        ];
        if let Some(s) = &self.statusline {
            o.push((
                "statusLine".into(),
                Json::Obj(vec![
                    ("installed".into(), s.installed.clone()),
                    ("original".into(), s.original.clone().unwrap_or(Json::Null)),
                    ("had_original".into(), Json::Bool(s.original.is_some())),
                ]),
            ));
        }
        Json::Obj(o)
    }

    fn from_json(j: &Json) -> Option<Record> {
        let s = |k: &str| match j.get(k) {
            Some(Json::Str(s)) => Some(s.clone()),
            _ => None,
        };
        let b = |j: &Json, k: &str| match j.get(k) {
            Some(Json::Bool(b)) => Some(*b),
            _ => None,
        };
        if s("format")? != RECORD_FORMAT {
            return None;
        }
        let host = Host::from_str(&s("host")?, false).ok()?;
        let Some(Json::Arr(added)) = j.get("added") else {
            return None;
        };
        let added = added
            .iter()
            .map(|a| {
                Some(Added {
                    event: match a.get("event")? {
                        Json::Str(e) => e.clone(),
                        _ => return None,
                    },
                    created_event: b(a, "created_event")?,
                    group: a.get("group")?.clone(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let statusline = match j.get("statusLine") {
            None => None,
            Some(st) => Some(StatusRecord {
                installed: st.get("installed")?.clone(),
                original: if b(st, "had_original")? {
                    Some(st.get("original")?.clone())
                } else {
                    None
                },
            }),
        };
        Some(Record {
            host,
            program: s("program")?,
            created_file: b(j, "created_file")?,
            created_hooks: b(j, "created_hooks")?,
            added,
            statusline,
        })
    }
}

fn read_record(path: &Path) -> Result<Option<Record>> {
    let Some(o) = read_json(path)? else {
        return Ok(None);
    };
    Record::from_json(&o.json)
        .map(Some)
        .ok_or_else(|| invalid(path, "not an interband install record"))
}

fn exists(path: &Path) -> Result<bool> {
    path.try_exists()
        .with_context(|| path.display().to_string())
}

/// Writes atomically and durably; `mode` keeps the permissions of the file replaced.
fn write_file(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    interband::fsio::write_atomic(path, bytes, true)?;
    if let Some(mode) = mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .with_context(|| path.display().to_string())?;
    }
    Ok(())
}

fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::Error::new(e).context(path.display().to_string()))
        }
        _ => Ok(()),
    }
}

fn dry_run_diff(path: &Path, before: Option<&Original>, after: Option<&str>) -> String {
    let name = path.display().to_string();
    let before_text = before.map(|o| o.json.pretty()).unwrap_or_default();
    unified_diff(
        if before.is_some() { &name } else { "/dev/null" },
        if after.is_some() { &name } else { "/dev/null" },
        &before_text,
        after.unwrap_or(""),
    )
}

// ---------------------------------------------------------------------------------------------
// Shell words.

/// Quotes one word for a POSIX shell (bare when it is plainly safe).
fn sh_quote(s: &str) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b);
    if !s.is_empty() && s.bytes().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Splits a simple shell command into words (quotes and backslashes; no expansions).
/// None when a quote is not closed.
fn split_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            '\n' => {}
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next()? {
                    '\n' => {}
                    c => word.push(c),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

// ---------------------------------------------------------------------------------------------
// JSON that keeps its keys in order (the workspace's serde_json sorts them).

#[derive(Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// Equality as JSON values: an object's key order does not matter.
impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Null, Json::Null) => true,
            (Json::Bool(a), Json::Bool(b)) => a == b,
            (Json::Num(a), Json::Num(b)) => a == b,
            (Json::Str(a), Json::Str(b)) => a == b,
            (Json::Arr(a), Json::Arr(b)) => a == b,
            (Json::Obj(a), Json::Obj(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| other.get(k) == Some(v))
            }
            _ => false,
        }
    }
}

impl Json {
    /// Parses JSON text; serde_json checks it first (and words the error).
    fn parse(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str::<serde_json::Value>(text)?;
        let mut p = Parser {
            s: text.as_bytes(),
            text,
            i: 0,
        };
        Ok(p.value())
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(o) => o.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Obj(o) => o.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    /// Sets `key` in place, or appends it. Only for objects.
    fn set(&mut self, key: &str, value: Json) {
        let o = self.obj_mut();
        match o.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => o.push((key.into(), value)),
        }
    }
    fn remove(&mut self, key: &str) {
        if let Json::Obj(o) = self {
            o.retain(|(k, _)| k != key);
        }
    }
    fn obj_mut(&mut self) -> &mut Vec<(String, Json)> {
        match self {
            Json::Obj(o) => o,
            _ => unreachable!("checked to be an object"),
        }
    }
    fn arr_mut(&mut self) -> &mut Vec<Json> {
        match self {
            Json::Arr(a) => a,
            _ => unreachable!("checked to be an array"),
        }
    }

    /// Pretty text as serde_json writes it (two-space indent), with a trailing newline.
    fn pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out.push('\n');
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        let pad = |out: &mut String, d: usize| out.extend(std::iter::repeat_n("  ", d));
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(&n.to_string()),
            Json::Str(s) => out.push_str(&serde_json::to_string(s).expect("strings serialize")),
            Json::Arr(a) if a.is_empty() => out.push_str("[]"),
            Json::Obj(o) if o.is_empty() => out.push_str("{}"),
            Json::Arr(a) => {
                out.push_str("[\n");
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    pad(out, depth + 1);
                    v.write(out, depth + 1);
                }
                out.push('\n');
                pad(out, depth);
                out.push(']');
            }
            Json::Obj(o) => {
                out.push_str("{\n");
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    pad(out, depth + 1);
                    out.push_str(&serde_json::to_string(k).expect("strings serialize"));
                    out.push_str(": ");
                    v.write(out, depth + 1);
                }
                out.push('\n');
                pad(out, depth);
                out.push('}');
            }
        }
    }
}

/// Applies `f` to the value of `key` in an object's fields.
fn set_field(fields: &mut [(String, Json)], key: &str, f: impl FnOnce(&mut Json)) {
    if let Some((_, v)) = fields.iter_mut().find(|(k, _)| k == key) {
        f(v);
    }
}

/// A reader of JSON text already known to be valid: it keeps the order of the keys, and leaves
/// strings and numbers to serde_json. A repeated key keeps its first place and its last value,
/// as serde_json does.
struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }
    fn value(&mut self) -> Json {
        self.ws();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut fields: Vec<(String, Json)> = Vec::new();
                loop {
                    self.ws();
                    match self.s[self.i] {
                        b'}' => {
                            self.i += 1;
                            break;
                        }
                        b',' => self.i += 1,
                        _ => {
                            let key = self.string();
                            self.ws();
                            self.i += 1; // ':'
                            let value = self.value();
                            match fields.iter_mut().find(|(k, _)| *k == key) {
                                Some((_, v)) => *v = value,
                                None => fields.push((key, value)),
                            }
                        }
                    }
                }
                Json::Obj(fields)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    match self.s[self.i] {
                        b']' => {
                            self.i += 1;
                            break;
                        }
                        b',' => self.i += 1,
                        _ => items.push(self.value()),
                    }
                }
                Json::Arr(items)
            }
            b'"' => Json::Str(self.string()),
            b't' => {
                self.i += 4;
                Json::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Json::Bool(false)
            }
            b'n' => {
                self.i += 4;
                Json::Null
            }
            _ => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
                {
                    self.i += 1;
                }
                Json::Num(serde_json::from_str(&self.text[start..self.i]).expect("valid number"))
            }
        }
    }
    fn string(&mut self) -> String {
        let start = self.i;
        self.i += 1;
        while self.s[self.i] != b'"' {
            self.i += if self.s[self.i] == b'\\' { 2 } else { 1 };
        }
        self.i += 1;
        serde_json::from_str(&self.text[start..self.i]).expect("valid string")
    }
}

// ---------------------------------------------------------------------------------------------
// A unified line diff, for --dry-run.

#[derive(Clone, Copy)]
enum Op {
    Same(usize),
    Del(usize),
    Ins(usize),
}

/// The edit script from `a` to `b`: common ends trimmed, then a longest common subsequence.
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<Op> = (0..pre).map(Op::Same).collect();
    let (n, m) = (am.len(), bm.len());
    if n.saturating_mul(m) > 4_000_000 {
        ops.extend((pre..pre + n).map(Op::Del));
        ops.extend((pre..pre + m).map(Op::Ins));
    } else {
        // lcs[i][j]: the LCS length of am[i..] and bm[j..].
        let w = m + 1;
        let mut lcs = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push(Op::Same(pre + i));
                i += 1;
                j += 1;
            } else if j == m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Del(pre + i));
                i += 1;
            } else {
                ops.push(Op::Ins(pre + j));
                j += 1;
            }
        }
    }
    ops.extend((a.len() - suf..a.len()).map(Op::Same));
    ops
}

fn unified_diff(a_name: &str, b_name: &str, a: &str, b: &str) -> String {
    const CONTEXT: usize = 3;
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let ops = edit_script(&a, &b);
    // Where each op starts in a and in b.
    let mut starts = Vec::with_capacity(ops.len());
    let (mut ai, mut bi) = (0, 0);
    for op in &ops {
        starts.push((ai, bi));
        match op {
            Op::Same(_) => {
                ai += 1;
                bi += 1;
            }
            Op::Del(_) => ai += 1,
            Op::Ins(_) => bi += 1,
        }
    }
    let changes: Vec<usize> = (0..ops.len())
        .filter(|&k| !matches!(ops[k], Op::Same(_)))
        .collect();
    let mut out = format!("--- {a_name}\n+++ {b_name}\n");
    let mut k = 0;
    while k < changes.len() {
        let mut last = k;
        while last + 1 < changes.len() && changes[last + 1] - changes[last] <= 2 * CONTEXT + 1 {
            last += 1;
        }
        let from = changes[k].saturating_sub(CONTEXT);
        let to = (changes[last] + 1 + CONTEXT).min(ops.len());
        let hunk = &ops[from..to];
        let a_len = hunk.iter().filter(|o| !matches!(o, Op::Ins(_))).count();
        let b_len = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        let (a0, b0) = starts[from];
        let at = |start: usize, len: usize| if len == 0 { start } else { start + 1 };
        let _ = writeln!(
            out,
            "@@ -{},{a_len} +{},{b_len} @@",
            at(a0, a_len),
            at(b0, b_len)
        );
        for op in hunk {
            let _ = match *op {
                Op::Same(i) => writeln!(out, " {}", a[i]),
                Op::Del(i) => writeln!(out, "-{}", a[i]),
                Op::Ins(j) => writeln!(out, "+{}", b[j]),
            };
        }
        k = last + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_key_order_and_round_trips_pretty_text() {
        let text = "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null,\n    -2.5e3\n  ],\n  \"m\": {},\n  \"s\": \"\\u00e9\\n\\\"q\\\"\"\n}\n";
        let j = Json::parse(text).unwrap();
        let keys: Vec<&str> = match &j {
            Json::Obj(o) => o.iter().map(|(k, _)| k.as_str()).collect(),
            _ => panic!(),
        };
        assert_eq!(keys, ["z", "a", "m", "s"]);
        let again: serde_json::Value = serde_json::from_str(&j.pretty()).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        let plain = "{\n  \"b\": [],\n  \"a\": \"x\"\n}\n";
        assert_eq!(Json::parse(plain).unwrap().pretty(), plain);
        assert!(Json::parse("{\"a\": 1,}").is_err());
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_last_value() {
        let j = Json::parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(j.pretty(), "{\n  \"a\": 3,\n  \"b\": 2\n}\n");
    }

    #[test]
    fn object_equality_ignores_key_order() {
        assert_eq!(
            Json::parse(r#"{"a":1,"b":[1,{"c":2,"d":3}]}"#).unwrap(),
            Json::parse(r#"{"b":[1,{"d":3,"c":2}],"a":1}"#).unwrap()
        );
        assert_ne!(
            Json::parse(r#"[1,2]"#).unwrap(),
            Json::parse(r#"[2,1]"#).unwrap()
        );
    }

    #[test]
    fn shell_words_quote_and_split_back() {
        assert_eq!(sh_quote("/usr/bin/interband"), "/usr/bin/interband");
        assert_eq!(sh_quote("/my dir/it's"), r"'/my dir/it'\''s'");
        for s in ["~/bin/x --short", "a 'b' \"c\" $HOME\\", "it's", ""] {
            assert_eq!(split_words(&sh_quote(s)).unwrap(), [s]);
        }
        assert_eq!(
            split_words(r#"a "b c" 'd e' f\ g "h\"i""#).unwrap(),
            ["a", "b c", "d e", "f g", "h\"i"]
        );
        assert_eq!(split_words("'open"), None);
        assert!(runs_interband("/opt/x/interband hook", "hook"));
        assert!(runs_interband("'/my dir/interband' hook", "hook"));
        assert!(runs_interband(
            "interband statusline --wrap x",
            "statusline"
        ));
        assert!(!runs_interband("interband hook --extra", "hook"));
        assert!(!runs_interband("notinterband hook", "hook"));
    }

    #[test]
    fn the_diff_is_unified() {
        let a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let b = "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n11\n";
        let d = unified_diff("a", "b", a, b);
        assert_eq!(
            d,
            "--- a\n+++ b\n@@ -3,8 +3,9 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n 10\n+11\n"
        );
        assert_eq!(
            unified_diff("/dev/null", "b", "", "x\n"),
            "--- /dev/null\n+++ b\n@@ -0,0 +1,1 @@\n+x\n"
        );
    }
}
