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
pub(super) fn relocate(settings: &mut Value, record: &mut Record, from: &Ours, to: &Ours) {
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

pub(super) enum StatusPlan {
    /// Nothing to do, with a note for the user if it is another install's.
    Present(Option<String>),
    /// Set `installed`; `original` is what to restore (None: no statusLine).
    Set {
        installed: Value,
        original: Option<Value>,
        how: String,
    },
}

pub(super) fn statusline_plan(settings: &Value, ours: &Ours) -> StatusPlan {
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
pub(super) fn remove_recorded(
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
pub(super) fn remove_found(
    settings: &mut Value,
    host: Host,
    ours: &Ours,
    removed: &mut Vec<String>,
) {
    remove_found_hooks(settings, ours, removed);
    remove_found_statusline(settings, host, ours, removed);
}

/// Takes out every hook running exactly our command (in any group, at any
/// of the host's events), and the groups that leaves empty.
pub(super) fn remove_found_hooks(settings: &mut Value, ours: &Ours, removed: &mut Vec<String>) {
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
pub(super) fn remove_found_statusline(
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
