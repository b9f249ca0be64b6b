//! `interband install` and `interband uninstall`: register interband's hooks (and, for Claude Code,
//! its statusline) in a host's settings file, and take exactly them out again.
//!
//! The settings file is merged, never clobbered: every other key, hook group and the order of the
//! keys stay as they were. Before the first change the pristine file is copied to
//! `<file>.interband-backup`; what an install added is recorded in `<file>.interband-install.json`,
//! so an uninstall gives back a file whose JSON equals the original.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use interband_hosts::{HookEvent as Event, Host};
use serde_json::{Value, json};
use similar::TextDiff;

use super::codex_trust;
use crate::exit;

pub mod doctor;
mod files;
mod ours;
mod plan;
mod purge;
mod target;

use files::*;
use ours::*;
use plan::*;
use target::*;

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

/// `interband uninstall`. (`--command` stays, hidden: uninstall finds
/// interband's hooks whatever program they run; it names the program only to
/// untrust Codex's hooks where no install record does.)
#[derive(Args)]
#[command(mut_arg("command", |a| a.hide(true)))]
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

impl Install {
    pub fn run(self) -> Result<u8> {
        let path = self.target.path()?;
        Files::new(&path, self.target.project).locked(|| self.install())
    }

    fn install(&self) -> Result<u8> {
        let t = &self.target;
        anyhow::ensure!(
            !self.statusline_only || t.host.has_statusline(),
            "--statusline-only: {} has no statusline interband can add to",
            t.host.key()
        );
        let path = t.path()?;
        let ours = Ours::new(t.program()?, t.host, t.project);
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
                relocate(
                    &mut settings,
                    r,
                    &Ours::new(from.clone(), t.host, t.project),
                    &ours,
                );
                Some(from)
            }
            Some(r) => {
                // An earlier install's hooks, which did not name their host, do now.
                let earlier = Ours::new(r.program.clone(), t.host, t.project);
                named_now = relocate(&mut settings, r, &earlier, &ours);
                None
            }
            None => None,
        };
        if !(self.statusline_only || t.host == Host::Codex && self.trust) {
            host_notes(t, &settings, &mut notes);
        }
        if let Some(off) = (t.host.profile().hooks_off)(&settings) {
            notes.push(format!(
                "{} hooks are turned off in this file ({off}): interband's will not run",
                t.host.profile().name
            ));
        }
        let other = t.other_level();
        if let Some((other_path, other_json)) = &other
            && let Some(c) = hook_groups(other_json)
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
        if in_npx_cache(&ours.program) {
            let then = if transient(&ours.program) || !t.host.has_statusline() {
                "the hooks then do nothing until the next install"
            } else {
                "the hooks then do nothing, and the statusline shows nothing (nor yours where \
                 interband's wraps it: on Windows it cannot fall back to it), until the next install"
            };
            notes.push(format!(
                "this binary is in npx's cache, which npm may clear at any time: {then}. \
                 `npm install -g interband` (or pipx, uv, cargo) and `interband install` from it \
                 keep one that stays"
            ));
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
            settings: Some(path.to_string_lossy().into_owned()),
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
        let mut adopted: Vec<String> = Vec::new();
        let mut one_kept = false;
        for e in events {
            // The event under its own name or another the host runs alike
            // (Copilot's `postToolUse` for `PostToolUse`).
            let names: Vec<&str> = std::iter::once(e.name)
                .chain(
                    t.host
                        .profile()
                        .event_aliases
                        .iter()
                        .filter(|(_, name)| *name == e.name)
                        .map(|(alias, _)| *alias),
                )
                .filter(|k| {
                    event_groups(&settings, k)
                        .and_then(|g| interband_hook(g))
                        .is_some()
                })
                .collect();
            if !names.is_empty() {
                // Another install's hook (another binary, one gone, an
                // earlier form; its record lost or never there): it runs
                // this binary now, and a second one on the event goes.
                let mut dropped_all = 0;
                for (i, key) in names.iter().enumerate() {
                    if let Some((from, dropped)) =
                        adopt_hooks(&mut settings, key, &ours, &mut notes)
                    {
                        adopted.extend(from);
                        dropped_all += dropped;
                    }
                    if i > 0 {
                        let mut gone = Vec::new();
                        remove_hooks_at(&mut settings, key, |c| c == ours.hook, &mut gone);
                        dropped_all += gone.len();
                    }
                }
                one_kept |= dropped_all > 0;
                if dropped_all > 0 {
                    notes.push(format!(
                        "{}: interband's hook was there {} times; one is kept",
                        e.name,
                        dropped_all + 1
                    ));
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
        } else if t.host.has_statusline() && !(t.project && t.host.profile().project_file.is_some())
        {
            // (A project's hooks file of its own holds hooks only: Copilot
            // CLI runs a statusline from the user's settings alone.)
            match statusline_plan(&settings, &ours) {
                StatusPlan::Present(Some(note)) => notes.push(note),
                StatusPlan::Present(None) => {}
                // Only over the record of the install that wrote it: what an
                // uninstall gives back stays what that record says.
                StatusPlan::Refresh { installed } => {
                    if let Some(r) = record.statusline.as_mut() {
                        statusline_now = Some(format!(
                            "statusLine.refreshInterval ({} s)",
                            installed["refreshInterval"]
                        ));
                        settings["statusLine"] = installed.clone();
                        r.installed = installed;
                    }
                }
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
        adopted.sort();
        adopted.dedup();
        adopted.retain(|from| moved.as_deref() != Some(from.as_str()));
        // The same program, its hooks written another way (another
        // system's guard, or a project's keys for every system).
        let reformed = adopted.contains(&ours.program);
        adopted.retain(|from| *from != ours.program);
        let nothing_else = added_now.is_empty()
            && statusline_now.is_none()
            && moved.is_none()
            && !named_now
            && adopted.is_empty()
            && !one_kept;
        let rewritten =
            reformed || nothing_else && original.as_ref().is_some_and(|o| o.json != settings);
        if rewritten {
            let _ = writeln!(
                out,
                "interband's hooks in {} are now written for {}",
                interband::text::terminal(&path.display().to_string()),
                if t.project {
                    "every system that shares the file"
                } else {
                    "this system"
                },
            );
        }
        if !adopted.is_empty() {
            let _ = writeln!(
                out,
                "interband's hooks in {} ran {}: they now run {}",
                interband::text::terminal(&path.display().to_string()),
                interband::text::terminal(&adopted.join(", ")),
                interband::text::terminal(&ours.program),
            );
        }
        if nothing_else && !rewritten {
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
        let after = pretty_own(&settings, t.host, original.as_ref().map(|o| &o.bytes[..]));
        // Never a file interband could not read back (and uninstall).
        anyhow::ensure!(
            after.len() as u64 <= MAX_SETTINGS_BYTES,
            "{}: with interband's hooks it would be {} bytes, over the {MAX_SETTINGS_BYTES}-byte \
             limit interband reads settings files to; nothing was changed",
            path.display(),
            after.len()
        );
        if t.dry_run {
            let before = original
                .as_ref()
                .map(|o| pretty_own(&o.json, t.host, Some(&o.bytes)));
            out.push_str(&dry_run_diff(&path, before.as_deref(), Some(&after)));
            let _ = writeln!(out, "(dry run: nothing written)");
            print_notes(&mut out, &notes);
            say_part!("{out}");
            return Ok(exit::OK);
        }

        refuse_read_only(&path, original.as_ref())?;
        if self.trust && t.host == Host::Codex {
            // Codex's config.toml must be one trust can go into, before the
            // hooks are written: never hooks written and their trust refused.
            codex_trust::standing(&t.codex_config()?, &[])?;
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
        // is stale by now), kept across re-installs. A file an install created
        // had no such state: a later install backs up nothing (it would back
        // up interband's own hooks, and uninstall would leave that behind).
        let backs_up = original.is_some() && !record.created_file;
        if let Some(o) = original.as_ref().filter(|_| backs_up)
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
        if let Some(o) = &original
            && keep_trust(&path, &o.bytes, after.as_bytes())
        {
            notes.push(format!(
                "you had trusted {} (interband trust): its trust follows interband's change, which is its hooks alone",
                path.display()
            ));
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
        if backs_up {
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
        let path = self.target.path()?;
        let code = Files::new(&path, self.target.project).locked(|| self.remove())?;
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
                let ours = Ours::new(r.program.clone(), r.host, t.project);
                remove_found_hooks(&mut settings, |c| ours.is_our_hook(c), &mut more);
                for e in more {
                    if !removed.contains(&e) {
                        removed.push(e);
                    }
                }
                r.created_file
            }
            None => {
                remove_found(&mut settings, host, &mut removed);
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
        if !delete && !restored {
            notes.push(match &record {
                None => "no install record (synced from elsewhere, or deleted): interband's hooks \
                         were recognised by their commands and taken out; the file is written anew, \
                         not restored byte for byte"
                    .into(),
                Some(_) => "the file changed since install (or holds interband hooks the record does \
                            not know of): it is written anew, not restored byte for byte from its backup"
                    .into(),
            });
        }
        let after = (!delete)
            .then(|| backup.unwrap_or_else(|| pretty_own(&settings, host, Some(&original.bytes))));
        let mut out = String::new();
        if t.dry_run {
            let before = pretty_own(&original.json, host, Some(&original.bytes));
            out.push_str(&dry_run_diff(&path, Some(&before), after.as_deref()));
            let _ = writeln!(out, "(dry run: nothing written)");
            say_part!("{out}");
            return Ok(exit::OK);
        }
        refuse_read_only(&path, Some(&original))?;
        unchanged_since_read(&path, Some(&original))?;
        match &after {
            Some(text) => {
                write_file(&path, text.as_bytes(), Some(original.mode))?;
                keep_trust(&path, &original.bytes, text.as_bytes());
            }
            None => remove_file(&path)?,
        }
        if host == Host::Codex {
            // The trust entries that still trust exactly the hooks taken out.
            let program = record
                .as_ref()
                .map_or_else(|| t.program(), |r| Ok(r.program.clone()))?;
            // Either form of the hook: this install's, or an earlier one's.
            let ours = Ours::new(program, host, t.project);
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

/// A file the user trusted as it was (`interband trust`, for a host's
/// project settings) stays trusted once interband's own change is written:
/// that change is its hooks alone. True when it was trusted.
fn keep_trust(path: &Path, before: &[u8], after: &[u8]) -> bool {
    let Some(store) = interband::trust::store_path(&interband::settings::ProcessEnv) else {
        return false;
    };
    let trusted = interband::trust::Store::load_from(&store).is_ok_and(|s| s.trusts(path, before));
    trusted
        && interband::trust::Store::update(&store, |s| {
            if s.trusts(path, before) {
                s.add(path, after);
            }
        })
        .is_ok()
}

/// A settings file its owner made read-only is left so: interband does not
/// write around that choice.
fn refuse_read_only(path: &Path, original: Option<&Original>) -> Result<()> {
    if original.is_some_and(|o| o.mode & 0o200 == 0) {
        anyhow::bail!(
            "{}: it is read-only (mode {:o}), as you made it: nothing was changed; `chmod u+w` it \
             first if interband may change it",
            path.display(),
            original.map_or(0, |o| o.mode)
        );
    }
    Ok(())
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

#[cfg(test)]
mod tests;
