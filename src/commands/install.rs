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
use clap::Args;
use interband_hosts::{HookEvent as Event, Host};
use serde_json::{Value, json};
use similar::TextDiff;

use super::codex_trust;
use crate::exit;

pub mod doctor;
mod purge;

/// `interband install`
#[derive(Args)]
pub struct Install {
    #[command(flatten)]
    target: Target,
    /// Codex CLI: also trust the hooks installed, as Codex's own `/hooks`
    /// review would (entries in its config.toml); Codex skips a hook nobody
    /// trusted. Only when you ask for it.
    #[arg(long)]
    trust: bool,
    /// Claude Code: only the statusline (its segment added to yours), for
    /// those who have the hooks from interband's plugin: a plugin cannot
    /// add a statusline.
    #[arg(long, conflicts_with = "trust")]
    statusline_only: bool,
}

/// `interband uninstall`
#[derive(Args)]
pub struct Uninstall {
    #[command(flatten)]
    target: Target,
    /// Also remove interband's data: its part of the bus (pressure, checkpoints,
    /// notes, state, journals, cursors), the trust file and the install
    /// records; other plugins' channels stay. Asks first, unless --yes.
    #[arg(long)]
    purge: bool,
    /// With --purge: do not ask.
    #[arg(long, requires = "purge")]
    yes: bool,
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
    #[arg(long, value_parser = host_parser(), default_value = "claude")]
    host: Host,
    /// Print the change as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The interband program the host should run (default: this binary's
    /// absolute path; with --project, `interband`, found on each user's PATH).
    #[arg(long, value_name = "PATH")]
    command: Option<PathBuf>,
}

/// `--host`: the hosts by their profiles' keys.
fn host_parser() -> impl clap::builder::TypedValueParser<Value = Host> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Host::ALL.map(|h| {
        let p = h.profile();
        PossibleValue::new(p.key).help(format!("{}: ~/{}", p.name, p.settings_file))
    }))
    .map(|key| Host::from_key(&key).expect("one of the possible values"))
}

/// What `interband install` needs to know of a host, from its profile.
trait Installs {
    /// Its name on the command line.
    fn key(self) -> &'static str;
    /// The settings file, relative to HOME or to the project folder.
    fn file(self) -> &'static str;
    /// The events to register.
    fn events(self) -> &'static [Event];
    /// Whether interband's statusline goes there too.
    fn has_statusline(self) -> bool;
}

impl Installs for Host {
    fn key(self) -> &'static str {
        self.profile().key
    }
    fn file(self) -> &'static str {
        self.profile().settings_file
    }
    fn events(self) -> &'static [Event] {
        self.profile().hook_events
    }
    fn has_statusline(self) -> bool {
        self.profile().statusline
    }
}

impl Target {
    /// Where Codex keeps the trust of the hooks in `hooks_json`: the
    /// `config.toml` beside it, but for a project's hooks the user's own
    /// (`$CODEX_HOME/config.toml`, by default `~/.codex/config.toml`). A
    /// project's folder is shared with everyone who clones it: trust written
    /// there would be one machine's, and a repository that trusts its own
    /// hooks.
    ///
    /// Beside the `hooks.json` where Codex finds it, not beside the file a
    /// link there points to, and itself followed when it is a link.
    fn codex_config(&self) -> Result<PathBuf> {
        let hooks_json = if self.project {
            self.user_path()
                .context("HOME is not set: cannot find Codex's config.toml")?
        } else {
            self.located()?
        };
        through_links(&codex_trust::config_file(&hooks_json))
    }

    /// The `hooks.json` path Codex keys its trust entries by (checked with
    /// the real Codex's `hooks/list`): `$CODEX_HOME` resolved to its real
    /// folder when set, else `~/.codex` as it is; the file's own link is
    /// never followed. A key naming another path is ignored by Codex.
    fn codex_key_path(&self) -> Result<PathBuf> {
        let located = self.located()?;
        if self.settings.is_none()
            && !self.project
            && let Some(h) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty())
            && let Ok(real) = std::fs::canonicalize(&h)
        {
            return Ok(real.join("hooks.json"));
        }
        Ok(located)
    }

    /// The user's own settings file for the host (as without `--project`):
    /// Codex keeps its configuration in `$CODEX_HOME` when set.
    fn user_path(&self) -> Option<PathBuf> {
        self.host
            .profile()
            .user_settings(&interband::settings::ProcessEnv)
    }

    /// The settings at the other level, when they can be told: the user's
    /// for `--project`, the current folder's project settings otherwise.
    /// (Not with `--settings PATH`.)
    fn other_level(&self) -> Option<(PathBuf, Value)> {
        if self.settings.is_some() {
            return None;
        }
        let path = if self.project {
            self.user_path()?
        } else {
            let here = std::env::current_dir().ok()?.join(self.host.file());
            if Some(&here) == self.user_path().as_ref() {
                return None;
            }
            here
        };
        let json = read_settings(&path, self.host).ok()??.json;
        Some((path, json))
    }

    /// The settings file to work on. A symbolic link (a dotfiles manager's) is followed, so the
    /// link stays a link and the backup and record sit next to the real file.
    fn path(&self) -> Result<PathBuf> {
        self.located().and_then(|p| through_links(&p))
    }

    /// The settings file where the host looks for it (a link not followed).
    fn located(&self) -> Result<PathBuf> {
        let path = match (&self.settings, self.project) {
            (Some(p), _) => p.clone(),
            (None, true) => {
                // A project's settings come with the repository: a link in it
                // (`.claude -> ~/.claude`, or `settings.json` pointing at some
                // other file) would make install write outside the project.
                let project = std::env::current_dir().context("the current folder")?;
                let path = project.join(self.host.file());
                let mut at = project.clone();
                for part in Path::new(self.host.file()).components() {
                    at.push(part);
                    if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                        anyhow::bail!(
                            "{}: a symbolic link inside the project; refusing to write through it (--settings PATH names a file outside)",
                            at.display()
                        );
                    }
                }
                return Ok(path);
            }
            (None, false) => self
                .user_path()
                .context("HOME is not set: pass --settings PATH")?,
        };
        Ok(path)
    }

    /// The program the hooks run, shell-quoted (hosts run hook commands through a shell).
    /// A project's settings are shared with everyone who clones it: there the
    /// program is `interband` on each one's PATH, never this machine's path.
    fn program(&self) -> Result<String> {
        let program = match &self.command {
            Some(p) if p.as_os_str().is_empty() => anyhow::bail!("--command is empty"),
            Some(p) => p.clone(),
            None if self.project => PathBuf::from("interband"),
            None => std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .context(
                    "cannot find the path of the running interband binary: pass --command PATH",
                )?,
        };
        let program = program
            .to_str()
            .with_context(|| format!("{}: the path is not UTF-8", program.display()))?;
        Ok(shell_words::quote(program).into_owned())
    }
}

/// The commands interband registers, all starting with one program.
struct Ours {
    program: String,
    /// The hook, naming its host (`hook --host KEY`).
    hook: String,
    /// The hook as an earlier install wrote it, without the host.
    earlier_hook: String,
    /// The statusline, naming its host (`statusline --host KEY`).
    statusline: String,
    /// The statusline as an earlier install wrote it, without the host.
    earlier_statusline: String,
}

/// How a hook runs a program found on each user's PATH (a project's
/// settings, shared with everyone who clones it): where it is missing, the
/// hook does nothing, silently, instead of failing on every event.
const ON_PATH: (&str, &str) = ("command -v interband >/dev/null 2>&1 && exec ", " || true");

/// How a hook runs a binary that may go away by itself (one in npx's
/// cache, which npm clears when it likes): where it is gone, the hook does
/// nothing, silently, instead of failing on every event.
const IF_THERE: (&str, &str, &str) = ("[ -x ", " ] && exec ", " || true");

/// Whether `program` lives where npm may remove it without a word (npx's
/// cache, `~/.npm/_npx/<hash>/`).
fn transient(program: &str) -> bool {
    program.contains("/_npx/")
}

impl Ours {
    fn new(program: String, host: Host) -> Self {
        let hook = |args: &str| {
            if program == "interband" {
                format!("{}interband {args}{}", ON_PATH.0, ON_PATH.1)
            } else if transient(&program) {
                format!(
                    "{}{program}{}{program} {args}{}",
                    IF_THERE.0, IF_THERE.1, IF_THERE.2
                )
            } else {
                format!("{program} {args}")
            }
        };
        Ours {
            hook: hook(&format!("hook --host {}", host.profile().key)),
            earlier_hook: hook("hook"),
            statusline: format!("{program} statusline --host {}", host.profile().key),
            earlier_statusline: format!("{program} statusline"),
            program,
        }
    }
    /// Whether `command` is our hook, as this install writes it or as an
    /// earlier one wrote it (without the host; `interband hook`, unguarded).
    fn is_our_hook(&self, command: &str) -> bool {
        command == self.hook
            || command == self.earlier_hook
            || command == format!("{} hook", self.program)
    }
    /// Our statusline command, running `theirs` too and appending our segment to its line.
    fn wrapping(&self, theirs: &str) -> String {
        format!(
            "{} --wrap sh -c {}",
            self.statusline,
            shell_words::quote(theirs)
        )
    }
    /// Whether a statusLine command is ours (plain or wrapping).
    fn is_our_statusline(&self, command: &str) -> bool {
        self.wrapped_by_ours(command).is_some()
    }
    /// What follows our statusline command in `command` (empty, or ` --wrap
    /// ...`), this install's form or an earlier one's; `None` when it is not ours.
    fn wrapped_by_ours<'c>(&self, command: &'c str) -> Option<&'c str> {
        [&self.statusline, &self.earlier_statusline]
            .into_iter()
            .find_map(|ours| command.strip_prefix(ours.as_str()))
            .filter(|rest| rest.is_empty() || rest.starts_with(" --wrap "))
    }
    /// The hook group added for `e`.
    fn group(&self, e: &Event) -> Value {
        let hooks = json!([{"type": "command", "command": self.hook, "timeout": e.timeout}]);
        match e.matcher {
            Some(m) => json!({"matcher": m, "hooks": hooks}),
            None => json!({ "hooks": hooks }),
        }
    }
}

impl Install {
    pub fn run(self) -> Result<u8> {
        let t = &self.target;
        anyhow::ensure!(
            !self.statusline_only || t.host.has_statusline(),
            "--statusline-only: {} has no statusline interband can add to",
            t.host.key()
        );
        let path = t.path()?;
        let ours = Ours::new(t.program()?, t.host);
        let files = Files::new(&path, t.project);
        files.sweep(t);
        let original = read_settings(&path, t.host)?;
        let mut old_record = read_record(&files.record)?;
        let first_install = old_record.is_none();
        let mut settings = original.as_ref().map_or(json!({}), |o| o.json.clone());
        check_shape(&path, &settings, t.host)?;
        let mut notes = Vec::new();
        // Installed before from another place (another npm prefix, a cargo
        // install, a clone's build): what that install added now runs this
        // binary.
        let mut named_now = false;
        let moved = match &mut old_record {
            Some(r) if r.program != ours.program => {
                let from = std::mem::replace(&mut r.program, ours.program.clone());
                relocate(&mut settings, r, &Ours::new(from.clone(), t.host), &ours);
                Some(from)
            }
            Some(r) => {
                // An earlier install's hooks, which did not name their host, do now.
                let earlier = Ours::new(r.program.clone(), t.host);
                let before = settings.clone();
                relocate(&mut settings, r, &earlier, &ours);
                named_now = settings != before;
                None
            }
            None => None,
        };
        if !(t.host == Host::Codex && self.trust) {
            host_notes(t, &settings, &mut notes);
        }
        let other = t.other_level();
        if let Some((other_path, other_json)) = &other
            && let Some(c) = other_json
                .get("hooks")
                .and_then(Value::as_object)
                .into_iter()
                .flat_map(|events| events.values())
                .filter_map(Value::as_array)
                .flatten()
                .flat_map(group_commands)
                .find(|c| runs_interband(c, "hook"))
        {
            notes.push(format!(
                "interband's hooks are also in {} (`{c}`): {} would run both on every event, and each note \
                 would come back twice; keep one of the two (`interband uninstall` takes out the ones it installed)",
                interband::text::terminal(&other_path.display().to_string()),
                t.host.key(),
            ));
        }
        // A project's statusLine replaces each user's own in that project.
        let users_statusline = other
            .as_ref()
            .filter(|_| t.project)
            .and_then(|(p, json)| Some((p, json.get("statusLine")?.get("command")?.as_str()?)))
            .filter(|(_, c)| !c.trim().is_empty());
        if t.project && t.command.is_none() && !on_path("interband") {
            notes.push(
                "the project's hooks run `interband` from each user's PATH, and it is not on yours: \
                 put the release binary there (e.g. `npm install -g interband`, `cargo install --path . --locked` or copy \
                 target/static/release/interband into ~/.local/bin)"
                    .into(),
            );
        }
        if transient(&ours.program) {
            notes.push(
                "this binary is in npx's cache, which npm may clear at any time: the hooks then do \
                 nothing until the next install. `npm install -g interband` (or pipx, uv, cargo) and \
                 `interband install` from it keep one that stays"
                    .into(),
            );
        }
        if ours.program.contains("/target/debug/") {
            notes.push(
                "this is a debug build: every hook call would be several times slower; \
                 install the release build from `scripts/build-release` instead"
                    .into(),
            );
        }

        // What an earlier install added that is still there.
        let mut record = Record {
            host: t.host,
            program: ours.program.clone(),
            created_file: original.is_none(),
            created_dir: original.is_none()
                && path
                    .parent()
                    .is_some_and(|d| !d.as_os_str().is_empty() && !d.exists()),
            created_hooks: false,
            added: vec![],
            statusline: None,
        };
        // Events whose array an earlier install created (emptied by hand since, maybe).
        let mut created_before = Vec::new();
        if let Some(old) = old_record {
            record.created_file |= old.created_file;
            record.created_dir |= old.created_dir;
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
        let events = if self.statusline_only {
            &[][..]
        } else {
            t.host.events()
        };
        for e in events {
            if let Some(existing) = event_groups(&settings, e.name).and_then(|g| interband_hook(g))
            {
                if existing != ours.hook {
                    notes.push(format!("{} already runs `{existing}`; left as is", e.name));
                }
                continue;
            }
            let hooks = obj(&mut settings).entry("hooks").or_insert_with(|| {
                record.created_hooks = true;
                json!({})
            });
            let hooks = obj(hooks);
            let created_event =
                !hooks.contains_key(e.name) || created_before.iter().any(|c| c == e.name);
            let group = ours.group(e);
            let groups = hooks.entry(e.name).or_insert_with(|| json!([]));
            groups.as_array_mut().expect("checked").push(group.clone());
            record.added.push(Added {
                event: e.name.into(),
                created_event,
                group,
            });
            added_now.push(e.name);
        }
        let mut statusline_now = None;
        if let Some((p, c)) = users_statusline
            && settings.get("statusLine").is_none()
        {
            notes.push(format!(
                "your own statusLine (`{c}`, in {}) is kept: a project's statusLine would replace it in this \
                 project, so none is written here; `interband install` (without --project) adds interband's \
                 segment to yours",
                interband::text::terminal(&p.display().to_string())
            ));
        } else if t.host.has_statusline() {
            match statusline_plan(&settings, &ours) {
                StatusPlan::Present(Some(note)) => notes.push(note),
                StatusPlan::Present(None) => {}
                StatusPlan::Set {
                    installed,
                    original,
                    how,
                } => {
                    settings["statusLine"] = installed.clone();
                    record.statusline = Some(StatusRecord {
                        installed,
                        original,
                    });
                    statusline_now = Some(how);
                }
            }
        }

        let mut out = String::new();
        if let Some(from) = &moved
            && original.as_ref().is_none_or(|o| o.json != settings)
        {
            let _ = writeln!(
                out,
                "interband's hooks in {} ran {}: they now run {}",
                interband::text::terminal(&path.display().to_string()),
                interband::text::terminal(from),
                interband::text::terminal(&ours.program),
            );
        }
        if named_now {
            let _ = writeln!(
                out,
                "interband's hooks in {} now name their host (--host {})",
                interband::text::terminal(&path.display().to_string()),
                t.host.key(),
            );
        }
        if added_now.is_empty() && statusline_now.is_none() && moved.is_none() && !named_now {
            let _ = writeln!(
                out,
                "interband is already installed in {}",
                interband::text::terminal(&path.display().to_string())
            );
            self.trust_codex(&settings, &ours, &mut out)?;
            print_notes(&mut out, &notes);
            say_part!("{out}");
            return Ok(exit::OK);
        }
        let after = pretty_own(&settings, t.host);
        if t.dry_run {
            let before = original.as_ref().map(|o| pretty_own(&o.json, t.host));
            out.push_str(&dry_run_diff(&path, before.as_deref(), Some(&after)));
            let _ = writeln!(out, "(dry run: nothing written)");
            print_notes(&mut out, &notes);
            say_part!("{out}");
            return Ok(exit::OK);
        }

        // The folder, the pristine backup, the record, and then the settings.
        if original.is_none()
            && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create the folder", dir.display()))?;
        }
        // The backup is the file as it was before interband was in it: taken
        // at a first install (a backup left by an earlier install-and-uninstall
        // is stale by now), kept across re-installs.
        if let Some(o) = &original
            && (first_install || !exists(&files.backup)?)
        {
            write_file(&files.backup, &o.bytes, None)?;
        }
        let previous_record = interband::fsio::read_regular(&files.record, MAX_SETTINGS_BYTES).ok();
        write_file(&files.record, pretty(&record.to_json()).as_bytes(), None)?;
        let written = unchanged_since_read(&path, original.as_ref())
            .and_then(|()| write_file(&path, after.as_bytes(), original.as_ref().map(|o| o.mode)));
        if let Err(e) = written {
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
        if !what.is_empty() {
            let _ = writeln!(
                out,
                "installed interband in {}: {}",
                interband::text::terminal(&path.display().to_string()),
                interband::text::terminal(&what)
            );
        }
        if original.is_some() {
            let _ = writeln!(
                out,
                "backup of the original: {}",
                interband::text::terminal(&files.backup.display().to_string())
            );
        }
        let _ = writeln!(
            out,
            "undo with: interband uninstall{}",
            interband::text::terminal(&t.flags())
        );
        self.trust_codex(&settings, &ours, &mut out)?;
        print_notes(&mut out, &notes);
        say_part!("{out}");
        Ok(exit::OK)
    }

    /// With `--trust` for Codex: trusts interband's hooks in `config.toml`.
    fn trust_codex(&self, settings: &Value, ours: &Ours, out: &mut String) -> Result<()> {
        let t = &self.target;
        if !self.trust || t.dry_run {
            return Ok(());
        }
        anyhow::ensure!(
            t.host == Host::Codex,
            "--trust is for Codex CLI (--host codex)"
        );
        let entries = codex_trust::entries(&t.codex_key_path()?, settings, &ours.hook);
        let config = t.codex_config()?;
        if let Some(dir) = config.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create the folder", dir.display()))?;
        }
        let changed = codex_trust::trust(&config, &entries)?;
        let _ = writeln!(
            out,
            "trusted {} hook(s) in {} ({changed} new)",
            entries.len(),
            interband::text::terminal(&config.display().to_string())
        );
        Ok(())
    }
}

impl Uninstall {
    pub fn run(self) -> Result<u8> {
        let code = self.remove()?;
        if self.purge && !self.target.dry_run {
            purge::purge(self.yes)?;
        }
        Ok(code)
    }

    fn remove(&self) -> Result<u8> {
        let t = &self.target;
        let path = t.path()?;
        let files = Files::new(&path, t.project);
        files.sweep(t);
        let record = read_record(&files.record)?;
        let Some(original) = read_settings(&path, t.host)? else {
            if record.is_some() && !t.dry_run {
                remove_file(&files.record)?;
            }
            say!(
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
                // And any copy of our hook the record does not know of (moved
                // to another event or group by hand): none stays installed.
                let mut more = Vec::new();
                remove_found_hooks(
                    &mut settings,
                    &Ours::new(r.program.clone(), r.host),
                    &mut more,
                );
                for e in more {
                    if !removed.contains(&e) {
                        removed.push(e);
                    }
                }
                r.created_file
            }
            None => {
                let ours = Ours::new(t.program()?, host);
                remove_found(&mut settings, host, &ours, &mut removed);
                false
            }
        };

        if removed.is_empty() {
            if record.is_some() && !t.dry_run {
                remove_file(&files.record)?;
            }
            let mut out = format!(
                "interband is not installed in {}\n",
                interband::text::terminal(&path.display().to_string())
            );
            print_notes(&mut out, &notes);
            say_part!("{out}");
            return Ok(exit::OK);
        }
        let delete = created_file && settings == json!({});
        // The file as it was before install, byte for byte, when nothing
        // else changed since (else written anew).
        let backup = interband::fsio::read_regular(&files.backup, MAX_SETTINGS_BYTES)
            .ok()
            .filter(|b| {
                serde_json::from_slice::<Value>(b).is_ok_and(|mut v| {
                    host.profile().hook_shape.to_grouped(&mut v);
                    v == settings
                })
            })
            .and_then(|b| String::from_utf8(b).ok());
        let restored = !delete && backup.is_some();
        let after = (!delete).then(|| backup.unwrap_or_else(|| pretty_own(&settings, host)));
        let mut out = String::new();
        if t.dry_run {
            let before = pretty_own(&original.json, host);
            out.push_str(&dry_run_diff(&path, Some(&before), after.as_deref()));
            let _ = writeln!(out, "(dry run: nothing written)");
            say_part!("{out}");
            return Ok(exit::OK);
        }
        unchanged_since_read(&path, Some(&original))?;
        match &after {
            Some(text) => write_file(&path, text.as_bytes(), Some(original.mode))?,
            None => remove_file(&path)?,
        }
        if host == Host::Codex {
            // The trust entries that still trust exactly the hooks taken out.
            let program = record
                .as_ref()
                .map_or_else(|| t.program(), |r| Ok(r.program.clone()))?;
            // Either form of the hook: this install's, or an earlier one's.
            let ours = Ours::new(program, host);
            let mut entries = Vec::new();
            for hook in [&ours.hook, &ours.earlier_hook] {
                entries.extend(codex_trust::entries(
                    &t.codex_key_path()?,
                    &original.json,
                    hook,
                ));
            }
            codex_trust::untrust(&t.codex_config()?, &entries)?;
        }
        if record.is_some() {
            remove_file(&files.record)?;
        }
        if restored {
            // The file is its backup again, byte for byte: no need of it.
            remove_file(&files.backup)?;
        }
        let _ = writeln!(
            out,
            "removed interband from {}: {}",
            interband::text::terminal(&path.display().to_string()),
            interband::text::terminal(&removed.join(", "))
        );
        if delete {
            let _ = writeln!(
                out,
                "deleted {} (interband install had created it)",
                interband::text::terminal(&path.display().to_string())
            );
            // And its folder, when install made it and nothing else is in it.
            if record.as_ref().is_some_and(|r| r.created_dir)
                && let Some(dir) = path.parent()
            {
                let _ = std::fs::remove_dir(dir);
            }
        }
        print_notes(&mut out, &notes);
        say_part!("{out}");
        Ok(exit::OK)
    }
}

impl Target {
    /// The flags that name the same file again, for the "undo with" hint.
    fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(p) = &self.settings {
            let _ = write!(
                s,
                " --settings {}",
                shell_words::quote(&p.to_string_lossy())
            );
        }
        if self.project {
            s.push_str(" --project");
        }
        if self.host != Host::Claude {
            let _ = write!(s, " --host {}", self.host.key());
        }
        s
    }
}

/// Each note on one line: what a settings file put in it (a plugin's name,
/// a hook's command, an event's name) cannot start another line.
fn print_notes(out: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(out, "note: {}", interband::text::terminal(n));
    }
}

/// What the user must know beyond this file: a switch in another file, or the plugin running the
/// same hooks.
fn host_notes(t: &Target, settings: &Value, notes: &mut Vec<String>) {
    notes.extend((t.host.profile().install_notes)(settings, &t.flags()));
}

// ---------------------------------------------------------------------------------------------
// The plan: what is ours, what to add, what to take out.

/// The array of hook groups of `event`, if any.
fn event_groups<'a>(settings: &'a Value, event: &str) -> Option<&'a Vec<Value>> {
    settings.get("hooks")?.get(event)?.as_array()
}

/// Makes what an earlier install recorded run `to`'s program instead of
/// `from`'s: each recorded hook group still in the settings, and the
/// statusline it set (plain or wrapping the user's own), in place. The
/// record follows, so `uninstall` still finds what it added.
fn relocate(settings: &mut Value, record: &mut Record, from: &Ours, to: &Ours) {
    for a in &mut record.added {
        let Some(Value::Array(groups)) =
            settings.get_mut("hooks").and_then(|h| h.get_mut(&a.event))
        else {
            continue;
        };
        let Some(group) = groups.iter_mut().find(|g| **g == a.group) else {
            continue;
        };
        if let Some(Value::Array(hooks)) = group.get_mut("hooks") {
            for h in hooks {
                if h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| from.is_our_hook(c))
                {
                    h["command"] = to.hook.clone().into();
                }
            }
        }
        a.group = group.clone();
    }
    if let Some(s) = &mut record.statusline
        && settings.get("statusLine") == Some(&s.installed)
        && let Some(rest) = s.installed["command"]
            .as_str()
            .and_then(|c| from.wrapped_by_ours(c))
    {
        s.installed["command"] = format!("{}{rest}", to.statusline).into();
        settings["statusLine"] = s.installed.clone();
    }
}

/// The commands of a hook group's hooks.
fn group_commands(group: &Value) -> impl Iterator<Item = &str> {
    let hooks = group.get("hooks").and_then(Value::as_array);
    hooks
        .into_iter()
        .flatten()
        .filter_map(|h| h.get("command")?.as_str())
}

/// The command of an interband hook already registered in these groups (ours or another
/// install's, e.g. `interband hook` from PATH), if any.
fn interband_hook(groups: &[Value]) -> Option<String> {
    groups
        .iter()
        .flat_map(group_commands)
        .find(|c| runs_interband(c, "hook"))
        .map(str::to_owned)
}

/// A hook command without the [`ON_PATH`] or [`IF_THERE`] guard around it,
/// if it has one.
fn unguarded(command: &str) -> &str {
    let on_path = || {
        command
            .strip_prefix(ON_PATH.0)
            .and_then(|c| c.strip_suffix(ON_PATH.1))
    };
    let if_there = || {
        let (_, run) = command.strip_prefix(IF_THERE.0)?.split_once(IF_THERE.1)?;
        run.strip_suffix(IF_THERE.2)
    };
    on_path().or_else(if_there).unwrap_or(command)
}

/// Whether a shell command runs `interband SUB` (any path to a program named
/// `interband`, or `interband` from PATH behind the [`ON_PATH`] guard).
fn runs_interband(command: &str, sub: &str) -> bool {
    let command = unguarded(command);
    let Ok(words) = shell_words::split(command) else {
        return false;
    };
    let named = words
        .first()
        .is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == "interband"));
    let rest = words.get(2..).unwrap_or_default();
    let hook_args = match rest {
        [] => true,
        [flag, key] => flag == "--host" && Host::from_key(key).is_some(),
        _ => false,
    };
    named && words.get(1).is_some_and(|w| w == sub) && (sub != "hook" || hook_args)
}

enum StatusPlan {
    /// Nothing to do, with a note for the user if it is another install's.
    Present(Option<String>),
    /// Set `installed`; `original` is what to restore (None: no statusLine).
    Set {
        installed: Value,
        original: Option<Value>,
        how: String,
    },
}

fn statusline_plan(settings: &Value, ours: &Ours) -> StatusPlan {
    let Some(current) = settings.get("statusLine") else {
        return StatusPlan::Set {
            installed: json!({"type": "command", "command": ours.statusline}),
            original: None,
            how: "statusLine".into(),
        };
    };
    let mut installed = current.clone();
    let how = match current.get("command").and_then(Value::as_str) {
        Some(c) if ours.is_our_statusline(c) => return StatusPlan::Present(None),
        Some(c) if runs_interband(c, "statusline") => {
            return StatusPlan::Present(Some(format!("statusLine already runs `{c}`; left as is")));
        }
        Some(c) if !c.trim().is_empty() => {
            installed["command"] = ours.wrapping(c).into();
            "statusLine (wrapping your command)".to_string()
        }
        _ => {
            installed["command"] = ours.statusline.clone().into();
            "statusLine".to_string()
        }
    };
    installed["type"] = "command".into();
    StatusPlan::Set {
        installed,
        original: Some(current.clone()),
        how,
    }
}

/// Takes out what the record says install added.
fn remove_recorded(
    settings: &mut Value,
    record: &Record,
    removed: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let ours = Ours::new(record.program.clone(), record.host);
    for a in record.added.iter().rev() {
        let Some(Value::Array(groups)) =
            settings.get_mut("hooks").and_then(|h| h.get_mut(&a.event))
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
                cmds.peek().is_some() && cmds.all(|c| ours.is_our_hook(c))
            })
        });
        let Some(at) = at else {
            // A group the user added a command of their own to: ours goes,
            // theirs stays.
            let shared = groups
                .iter_mut()
                .rev()
                .find(|g| group_commands(g).any(|c| ours.is_our_hook(c)));
            match shared
                .and_then(|g| g.get_mut("hooks"))
                .and_then(Value::as_array_mut)
            {
                Some(hooks) => {
                    hooks.retain(|h| {
                        !h.get("command")
                            .and_then(Value::as_str)
                            .is_some_and(|c| ours.is_our_hook(c))
                    });
                    notes.push(format!(
                        "{}: you had added a command of your own to interband's hook group; \
                         interband's hook is taken out of it and yours is kept",
                        a.event
                    ));
                    removed.push(a.event.clone());
                }
                None => notes.push(format!(
                    "{}: interband's hook group was already gone",
                    a.event
                )),
            }
            continue;
        };
        groups.remove(at);
        if groups.is_empty() && a.created_event {
            remove_key(&mut settings["hooks"], &a.event);
        }
        removed.push(a.event.clone());
    }
    removed.reverse();
    if record.created_hooks && settings.get("hooks") == Some(&json!({})) {
        remove_key(settings, "hooks");
    }
    if let Some(s) = &record.statusline {
        if settings.get("statusLine") == Some(&s.installed) {
            match &s.original {
                Some(o) => settings["statusLine"] = o.clone(),
                None => remove_key(settings, "statusLine"),
            }
            removed.push("statusLine".into());
        } else {
            notes.push("statusLine was changed since interband install; left as is".into());
        }
    }
}

/// Without a record: takes out the hooks running exactly our command, and our statusline.
fn remove_found(settings: &mut Value, host: Host, ours: &Ours, removed: &mut Vec<String>) {
    remove_found_hooks(settings, ours, removed);
    remove_found_statusline(settings, host, ours, removed);
}

/// Takes out every hook running exactly our command (in any group, at any
/// of the host's events), and the groups that leaves empty.
fn remove_found_hooks(settings: &mut Value, ours: &Ours, removed: &mut Vec<String>) {
    let events: Vec<String> = settings
        .get("hooks")
        .and_then(Value::as_object)
        .map(|h| h.keys().cloned().collect())
        .unwrap_or_default();
    for event in events {
        let Some(Value::Array(groups)) = settings.get_mut("hooks").and_then(|h| h.get_mut(&event))
        else {
            continue;
        };
        let before = groups.clone();
        for g in groups.iter_mut() {
            if let Some(Value::Array(hooks)) = g.get_mut("hooks") {
                hooks.retain(|h| {
                    !h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| ours.is_our_hook(c))
                });
            }
        }
        // Drop the groups this left empty (and only those).
        let mut i = 0;
        groups.retain(|g| {
            let was_ours = matches!(before[i].get("hooks"), Some(Value::Array(h)) if !h.is_empty())
                && matches!(g.get("hooks"), Some(Value::Array(h)) if h.is_empty());
            i += 1;
            !was_ours
        });
        if *groups == before {
            continue;
        }
        if groups.is_empty() {
            remove_key(&mut settings["hooks"], &event);
        }
        removed.push(event);
    }
    if !removed.is_empty() && settings.get("hooks") == Some(&json!({})) {
        remove_key(settings, "hooks");
    }
}

/// Takes out our statusline, giving back the one it wrapped.
fn remove_found_statusline(
    settings: &mut Value,
    host: Host,
    ours: &Ours,
    removed: &mut Vec<String>,
) {
    if host.has_statusline()
        && let Some(c) = settings
            .pointer("/statusLine/command")
            .and_then(Value::as_str)
    {
        let rest = ours.wrapped_by_ours(c);
        if rest == Some("") {
            remove_key(settings, "statusLine");
            removed.push("statusLine".into());
        } else if let Some([theirs]) = rest
            .and_then(|r| r.strip_prefix(" --wrap sh -c "))
            .and_then(|r| shell_words::split(r).ok())
            .as_deref()
        {
            settings["statusLine"]["command"] = theirs.as_str().into();
            removed.push("statusLine".into());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The settings file, its backup and the install record.

struct Files {
    settings: PathBuf,
    backup: PathBuf,
    record: PathBuf,
}

impl Files {
    /// Next to the settings file; for a project's (which is usually
    /// committed), in the user's own state folder instead
    /// (`$XDG_STATE_HOME/interband/installs/`, else `~/.local/state/...`),
    /// named after the file's path.
    fn new(path: &Path, project: bool) -> Self {
        let base = if project {
            let name = interband_consumers::intermem::slug(path);
            match state_home() {
                Some(s) => s.join("interband/installs").join(name),
                None => path.to_owned(),
            }
        } else {
            path.to_owned()
        };
        let with = |suffix: &str| {
            let mut s = base.as_os_str().to_owned();
            s.push(suffix);
            PathBuf::from(s)
        };
        Files {
            settings: path.to_owned(),
            backup: with(".interband-backup"),
            record: with(".interband-install.json"),
        }
    }

    /// Removes what an install or uninstall killed mid-write left beside
    /// these files (`.interband-tmp.*` copies of the user's settings, a
    /// minute old or more: never a write under way).
    fn sweep(&self, t: &Target) {
        let age = std::time::Duration::from_secs(60);
        let config = (t.host == Host::Codex)
            .then(|| t.codex_config().ok())
            .flatten();
        for p in [&self.settings, &self.record]
            .into_iter()
            .chain(config.as_ref())
        {
            interband::fsio::sweep_temps_beside(p, age);
        }
    }
}

/// The user's state folder: `$XDG_STATE_HOME`, else `~/.local/state`.
fn state_home() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
}

/// A settings file as read: its bytes, its JSON and its permission bits.
struct Original {
    bytes: Vec<u8>,
    json: Value,
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
    // Never blocking, bounded even if the file grew since the stat.
    let bytes = interband::fsio::read_regular(path, MAX_SETTINGS_BYTES)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid(path, "not valid UTF-8"))?;
    let json =
        serde_json::from_str(text).map_err(|e| invalid(path, format!("not valid JSON: {e}")))?;
    Ok(Some(Original {
        bytes,
        json,
        mode: meta.permissions().mode() & 0o7777,
    }))
}

/// Reads `host`'s settings file, its hooks in the shape interband edits
/// ([`interband_hosts::shape`]; [`pretty_own`] writes them back in the host's).
fn read_settings(path: &Path, host: Host) -> Result<Option<Original>> {
    let mut o = read_json(path)?;
    if let Some(o) = &mut o {
        if !o.json.is_object() {
            return Err(invalid(path, "not a JSON object"));
        }
        host.profile().hook_shape.to_grouped(&mut o.json);
    }
    Ok(o)
}

/// `settings` as `host`'s file holds them, [`pretty`].
fn pretty_own(settings: &Value, host: Host) -> String {
    let mut own = settings.clone();
    host.profile().hook_shape.to_own(&mut own);
    pretty(&own)
}

/// Checks the parts of the settings that install and uninstall change.
fn check_shape(path: &Path, settings: &Value, host: Host) -> Result<()> {
    if !settings.is_object() {
        return Err(invalid(path, "not a JSON object"));
    }
    match settings.get("hooks") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return Err(invalid(path, "\"hooks\" is not an object")),
    }
    for e in host.events() {
        match settings.get("hooks").and_then(|h| h.get(e.name)) {
            None | Some(Value::Array(_)) => {}
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
            None | Some(Value::Object(_)) => {}
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
    group: Value,
}

struct StatusRecord {
    installed: Value,
    /// None: there was no statusLine.
    original: Option<Value>,
}

/// `<file>.interband-install.json`: what install added, so uninstall can take exactly that out.
struct Record {
    host: Host,
    program: String,
    created_file: bool,
    /// Install created the file's folder too (`.claude/` in a project).
    created_dir: bool,
    created_hooks: bool,
    added: Vec<Added>,
    statusline: Option<StatusRecord>,
}

const RECORD_FORMAT: &str = "interband-install/1";

impl Record {
    fn to_json(&self) -> Value {
        let added: Vec<Value> = self
            .added
            .iter()
            .map(|a| json!({"event": a.event, "created_event": a.created_event, "group": a.group}))
            .collect();
        let mut o = json!({
            "format": RECORD_FORMAT,
            "host": self.host.key(),
            "program": self.program,
            "created_file": self.created_file,
            "created_dir": self.created_dir,
            "created_hooks": self.created_hooks,
            "added": added,
        });
        if let Some(s) = &self.statusline {
            o["statusLine"] = json!({
                "installed": s.installed,
                "original": s.original,
                "had_original": s.original.is_some(),
            });
        }
        o
    }

    fn from_json(j: &Value) -> Option<Record> {
        let s = |k: &str| Some(j.get(k)?.as_str()?.to_owned());
        let b = |j: &Value, k: &str| j.get(k)?.as_bool();
        if s("format")? != RECORD_FORMAT {
            return None;
        }
        let host = Host::from_key(&s("host")?)?;
        let added = j
            .get("added")?
            .as_array()?
            .iter()
            .map(|a| {
                Some(Added {
                    event: a.get("event")?.as_str()?.to_owned(),
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
            created_dir: b(j, "created_dir").unwrap_or(false),
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
/// Fails if the settings file changed since it was read (the host or the
/// user wrote it meanwhile): writing now would lose their change.
fn unchanged_since_read(path: &Path, original: Option<&Original>) -> Result<()> {
    let now = match interband::fsio::read_regular(path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(interband::Error::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    if now.as_deref() != original.map(|o| o.bytes.as_slice()) {
        anyhow::bail!(
            "{}: changed while interband was editing it; nothing written, run the command again",
            path.display()
        );
    }
    Ok(())
}

/// Whether an executable `name` is on the PATH.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            std::fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The file a chain of symbolic links at `path` ends at (`path` itself when
/// it is no link): a user's settings kept in a dotfiles repository are
/// written there, so the link stays a link. The end may not exist yet (a
/// link to a file the dotfiles repository does not have yet).
fn through_links(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_owned();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at).with_context(|| {
                    format!("{}: cannot follow the symbolic link", at.display())
                })?;
                at = match at.parent() {
                    Some(dir) => dir.join(to),
                    None => to,
                };
            }
            _ => return Ok(at),
        }
    }
    anyhow::bail!("{}: too many levels of symbolic links", path.display())
}

fn write_file(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| dir.display().to_string())?;
    }
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

/// A unified diff of the settings text before and after (None: no file).
fn dry_run_diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let name = path.display().to_string();
    let label = |text: Option<&str>| {
        if text.is_some() {
            name.as_str()
        } else {
            "/dev/null"
        }
    };
    TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(label(before), label(after))
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// JSON helpers (serde_json's `preserve_order` keeps the keys in the file's order).

/// Pretty text (two-space indent) with a trailing newline.
fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a JSON value serializes");
    s.push('\n');
    s
}

/// The fields of a value checked to be an object.
fn obj(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v.as_object_mut().expect("checked to be an object")
}

/// Removes `key` from an object, keeping the order of the other keys.
fn remove_key(v: &mut Value, key: &str) {
    if let Some(o) = v.as_object_mut() {
        o.shift_remove(key);
    }
}

#[cfg(test)]
mod tests {
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
        assert!(!runs_interband("interband hook --extra", "hook"));
        assert!(!runs_interband("notinterband hook", "hook"));
        assert!(!runs_interband("'/open/interband hook", "hook"));
        assert!(runs_interband(
            "/opt/x/interband hook --host gemini",
            "hook"
        ));
        assert!(!runs_interband(
            "/opt/x/interband hook --host nosuch",
            "hook"
        ));
        assert!(!runs_interband("/opt/x/interband hook --host", "hook"));
        let ours = Ours::new(
            shell_words::quote("/my dir/interband").into_owned(),
            Host::Codex,
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
}
