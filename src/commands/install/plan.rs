//! The plan: what is ours, what to add, what to take out, and moving an install to another binary.

use super::*;

// ---------------------------------------------------------------------------------------------
// The plan: what is ours, what to add, what to take out.

/// The array of hook groups of `event`, if any.
pub(super) fn event_groups<'a>(settings: &'a Value, event: &str) -> Option<&'a Vec<Value>> {
    settings.get("hooks")?.get(event)?.as_array()
}

/// Makes what an earlier install recorded run `to`'s program instead of
/// `from`'s: each recorded hook group still in the settings, and the
/// statusline it set (plain or wrapping the user's own), in place. The
/// record follows, so `uninstall` still finds what it added.
pub(super) fn relocate(settings: &mut Value, record: &mut Record, from: &Ours, to: &Ours) -> bool {
    let mut changed = false;
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
                    .is_some_and(|c| from.is_our_hook(c) && c != to.hook)
                {
                    to.set_command(h);
                    changed = true;
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
        let now = to.statusline_with(rest);
        changed |= s.installed["command"] != now.as_str();
        s.installed["command"] = now.into();
        settings["statusLine"] = s.installed.clone();
    }
    changed
}

/// Makes every interband hook at `event` that cannot run (its program gone,
/// or not executable: the host fails it on every call) run ours instead, in
/// place (its group and timeout kept), and takes out any second interband
/// hook there. One that runs another working interband is the user's
/// choice: left as is, and said. Returns what the first moved one ran
/// before, and how many were taken out; `None` when nothing changed.
pub(super) fn adopt_hooks(
    settings: &mut Value,
    event: &str,
    ours: &Ours,
    notes: &mut Vec<String>,
) -> Option<(Option<String>, usize)> {
    let Some(Value::Array(groups)) = settings.get_mut("hooks").and_then(|h| h.get_mut(event))
    else {
        return None;
    };
    let mut first: Option<String> = None;
    let mut seen = 0;
    let mut dropped = 0;
    for g in groups.iter_mut() {
        let Some(Value::Array(hooks)) = g.get_mut("hooks") else {
            continue;
        };
        let before = hooks.len();
        hooks.retain_mut(|h| {
            let Some(c) = h.get("command").and_then(Value::as_str) else {
                return true;
            };
            if !is_interband_hook(c) {
                return true;
            }
            if c != ours.hook {
                if another_working(&program_of(unguarded(c)), ours) {
                    // The user's choice: left, and said.
                    notes.push(format!("{event} already runs `{c}`; left as is"));
                    return true;
                }
                first.get_or_insert_with(|| unguarded(c).to_owned());
            }
            // Ours (now): one per event.
            seen += 1;
            if seen > 1 {
                return false;
            }
            ours.set_command(h);
            true
        });
        dropped += before - hooks.len();
    }
    // The groups the second ones left empty go too.
    if dropped > 0 {
        groups.retain(|g| !matches!(g.get("hooks"), Some(Value::Array(h)) if h.is_empty()));
    }
    match (first, dropped) {
        (None, 0) => None,
        (first, dropped) => Some((first.map(|c| program_of(&c)), dropped)),
    }
}

/// Whether a host could run `program`: a path to an executable file, or a
/// name found as one on the PATH.
pub(super) fn runnable(program: &str) -> bool {
    let program = &expand_home(program);
    let executable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| crate::platform::executable(&m));
    if crate::platform::is_path(program) {
        executable(Path::new(program))
    } else {
        !program.is_empty()
            && std::env::var_os("PATH").is_some_and(|paths| {
                std::env::split_paths(&paths).any(|d| executable(&d.join(program)))
            })
    }
}

/// Whether `program` is another interband than ours that a host can run:
/// the user's choice, left as it is.
fn another_working(program: &str, ours: &Ours) -> bool {
    // One only the host's run could find (a variable, another user's home)
    // is taken to work: never replaced on a guess.
    crate::platform::program_word(program).ok().as_deref() != Some(ours.program.as_str())
        && (!resolvable(program) || runnable(program))
}

/// The program a command runs (its first word).
pub(super) fn program_of(command: &str) -> String {
    shell_words::split(command)
        .ok()
        .and_then(|w| w.into_iter().next())
        .unwrap_or_default()
}

pub(super) enum StatusPlan {
    /// Nothing to do, with a note for the user if it is another install's.
    Present(Option<String>),
    /// Ours alone, as an earlier install wrote it before the host's refresh
    /// was asked for (the install's record keeps what an
    /// uninstall gives back): set `installed`, which asks for it.
    Refresh { installed: Value },
    /// Set `installed`; `original` is what to restore (None: no statusLine).
    Set {
        installed: Value,
        original: Option<Value>,
        how: String,
    },
}

pub(super) fn statusline_plan(settings: &Value, ours: &Ours) -> StatusPlan {
    let Some(current) = settings.get("statusLine") else {
        let mut installed = json!({"type": "command", "command": ours.statusline});
        refreshed(&mut installed, ours);
        return StatusPlan::Set {
            installed,
            original: None,
            how: "statusLine".into(),
        };
    };
    let mut installed = current.clone();
    let how = match current.get("command").and_then(Value::as_str) {
        // Ours as it is, else another install's (another binary, gone
        // perhaps, with no record of it; or this binary's in an older form):
        // it runs this one now, and what it wrapped is what an uninstall
        // gives back.
        Some(c) if any_statusline_rest(c).is_some() => {
            let rest = any_statusline_rest(c).expect("checked");
            let now = ours.statusline_with(rest);
            if now == c {
                let mut installed = current.clone();
                if wrapped_theirs(rest).is_none() {
                    refreshed(&mut installed, ours);
                }
                return if installed == *current {
                    StatusPlan::Present(None)
                } else {
                    StatusPlan::Refresh { installed }
                };
            }
            if another_working(&program_of(unguarded_statusline(c)), ours) {
                return StatusPlan::Present(Some(format!(
                    "statusLine already runs `{c}`; left as is"
                )));
            }
            installed["command"] = now.into();
            let original = wrapped_theirs(rest).map(|theirs| {
                let mut o = current.clone();
                o["command"] = theirs.into();
                o
            });
            return StatusPlan::Set {
                installed,
                original,
                how: format!("statusLine (it ran `{c}`)"),
            };
        }
        Some(c) if !c.trim().is_empty() => {
            installed["command"] = ours.wrapping(c).into();
            if cfg!(windows) && every_shell_quote(c, ours.single_quotes).is_none() {
                "statusLine (wrapping your command in a POSIX shell's quotes: it has quotes or \
                 one of $ ` \\ ! % that the host's Windows shell reads otherwise)"
                    .to_string()
            } else {
                "statusLine (wrapping your command)".to_string()
            }
        }
        _ => {
            installed["command"] = ours.statusline.clone().into();
            refreshed(&mut installed, ours);
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

/// Our statusline, alone, asked to run again every few seconds where the
/// host can (a running subagent's figure moves between the host's redraws),
/// unless the person set how often. One that wraps theirs is not: theirs
/// would run as often, at its own cost.
fn refreshed(statusline: &mut Value, ours: &Ours) {
    if let (Some(secs), Some(o)) = (ours.refresh, statusline.as_object_mut()) {
        o.entry("refreshInterval").or_insert(secs.into());
    }
}

/// Takes out what the record says install added.
pub(super) fn remove_recorded(
    settings: &mut Value,
    record: &Record,
    removed: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    // (Recognised in any system's form.)
    let ours = Ours::new(record.program.clone(), record.host, false);
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
        } else if let Some(rest) = settings
            .pointer("/statusLine/command")
            .and_then(Value::as_str)
            .and_then(any_statusline_rest)
            .map(str::to_owned)
        {
            // Still interband's, its other fields changed since (a padding):
            // theirs comes back with the fields as they are now.
            match (wrapped_theirs(&rest), &s.original) {
                (Some(theirs), _) => settings["statusLine"]["command"] = theirs.into(),
                (None, Some(o)) => settings["statusLine"] = o.clone(),
                (None, None) => remove_key(settings, "statusLine"),
            }
            notes.push(
                "statusLine was changed since interband install: interband's command is taken \
                 out of it, your changes to its other fields kept"
                    .into(),
            );
            removed.push("statusLine".into());
        } else {
            notes.push("statusLine was changed since interband install; left as is".into());
        }
    }
}

/// Without a record: takes out every hook interband wrote, whichever binary
/// it runs (nothing else could take them out), and its statusline.
pub(super) fn remove_found(settings: &mut Value, host: Host, removed: &mut Vec<String>) {
    remove_found_hooks(settings, is_interband_hook, removed);
    remove_found_statusline(settings, host, removed);
}

/// Whether a hook command is one interband writes: this binary's or any
/// other's (one that is gone, named in a settings file synced from
/// elsewhere), guarded or not, naming its host or not.
pub(super) fn is_interband_hook(command: &str) -> bool {
    runs_interband(command, "hook")
}

/// Takes out every hook whose command is `ours` (in any group, at any of
/// the host's events), and the groups that leaves empty.
pub(super) fn remove_found_hooks(
    settings: &mut Value,
    ours: impl Fn(&str) -> bool,
    removed: &mut Vec<String>,
) {
    let events: Vec<String> = settings
        .get("hooks")
        .and_then(Value::as_object)
        .map(|h| h.keys().cloned().collect())
        .unwrap_or_default();
    for event in events {
        remove_hooks_at(settings, &event, &ours, removed);
    }
    if !removed.is_empty() && settings.get("hooks") == Some(&json!({})) {
        remove_key(settings, "hooks");
    }
}

/// [`remove_found_hooks`] at one event.
pub(super) fn remove_hooks_at(
    settings: &mut Value,
    event: &str,
    ours: impl Fn(&str) -> bool,
    removed: &mut Vec<String>,
) {
    let Some(Value::Array(groups)) = settings.get_mut("hooks").and_then(|h| h.get_mut(event))
    else {
        return;
    };
    let before = groups.clone();
    for g in groups.iter_mut() {
        if let Some(Value::Array(hooks)) = g.get_mut("hooks") {
            hooks.retain(|h| !h.get("command").and_then(Value::as_str).is_some_and(&ours));
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
        return;
    }
    if groups.is_empty() {
        remove_key(&mut settings["hooks"], event);
    }
    removed.push(event.to_owned());
}

/// Takes out any interband statusline (this binary's or another's, guarded
/// or not), giving back the one it wrapped.
pub(super) fn remove_found_statusline(settings: &mut Value, host: Host, removed: &mut Vec<String>) {
    if !host.has_statusline() {
        return;
    }
    let Some(c) = settings
        .pointer("/statusLine/command")
        .and_then(Value::as_str)
    else {
        return;
    };
    let Some(rest) = any_statusline_rest(c) else {
        return;
    };
    match wrapped_theirs(rest) {
        Some(theirs) => settings["statusLine"]["command"] = theirs.into(),
        None if rest.is_empty() => remove_key(settings, "statusLine"),
        None => return,
    }
    removed.push("statusLine".into());
}
