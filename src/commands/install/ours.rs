//! The commands interband registers (its hook and statusline, guarded where the binary may go), and how any command is told to be one of them.

use super::*;

/// The commands interband registers, all starting with one program.
pub(super) struct Ours {
    pub(super) program: String,
    /// The hook, naming its host (`hook --host KEY`).
    pub(super) hook: String,
    /// The hook as an earlier install wrote it, without the host.
    pub(super) earlier_hook: String,
    /// The statusline, naming its host (`statusline --host KEY`).
    pub(super) statusline: String,
    /// The statusline as an earlier install wrote it, without the host.
    pub(super) earlier_statusline: String,
}

/// How a hook runs a program found on each user's PATH (a project's
/// settings, shared with everyone who clones it): where it is missing, the
/// hook does nothing, silently, instead of failing on every event.
pub(super) const ON_PATH: (&str, &str) =
    ("command -v interband >/dev/null 2>&1 && exec ", " || true");

/// How a hook runs a binary that may go away by itself (one in npx's
/// cache, which npm clears when it likes): where it is gone, the hook does
/// nothing, silently, instead of failing on every event.
pub(super) const IF_THERE: (&str, &str, &str) = ("[ -x ", " ] && exec ", " || true");

/// Whether `program` lives where npm may remove it without a word (npx's
/// cache, `~/.npm/_npx/<hash>/`).
pub(super) fn transient(program: &str) -> bool {
    program.contains("/_npx/")
}

impl Ours {
    pub(super) fn new(program: String, host: Host) -> Self {
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
    pub(super) fn is_our_hook(&self, command: &str) -> bool {
        command == self.hook
            || command == self.earlier_hook
            || command == format!("{} hook", self.program)
    }
    /// Our statusline command, running `theirs` too and appending our segment to its line.
    pub(super) fn wrapping(&self, theirs: &str) -> String {
        format!(
            "{} --wrap sh -c {}",
            self.statusline,
            shell_words::quote(theirs)
        )
    }
    /// Whether a statusLine command is ours (plain or wrapping).
    pub(super) fn is_our_statusline(&self, command: &str) -> bool {
        self.wrapped_by_ours(command).is_some()
    }
    /// What follows our statusline command in `command` (empty, or ` --wrap
    /// ...`), this install's form or an earlier one's; `None` when it is not ours.
    pub(super) fn wrapped_by_ours<'c>(&self, command: &'c str) -> Option<&'c str> {
        [&self.statusline, &self.earlier_statusline]
            .into_iter()
            .find_map(|ours| command.strip_prefix(ours.as_str()))
            .filter(|rest| rest.is_empty() || rest.starts_with(" --wrap "))
    }
    /// The hook group added for `e`.
    pub(super) fn group(&self, e: &Event) -> Value {
        let hooks = json!([{"type": "command", "command": self.hook, "timeout": e.timeout}]);
        match e.matcher {
            Some(m) => json!({"matcher": m, "hooks": hooks}),
            None => json!({ "hooks": hooks }),
        }
    }
}

/// The commands of a hook group's hooks.
pub(super) fn group_commands(group: &Value) -> impl Iterator<Item = &str> {
    let hooks = group.get("hooks").and_then(Value::as_array);
    hooks
        .into_iter()
        .flatten()
        .filter_map(|h| h.get("command")?.as_str())
}

/// The command of an interband hook already registered in these groups (ours or another
/// install's, e.g. `interband hook` from PATH), if any.
pub(super) fn interband_hook(groups: &[Value]) -> Option<String> {
    groups
        .iter()
        .flat_map(group_commands)
        .find(|c| runs_interband(c, "hook"))
        .map(str::to_owned)
}

/// A hook command without the [`ON_PATH`] or [`IF_THERE`] guard around it,
/// if it has one.
pub(super) fn unguarded(command: &str) -> &str {
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
pub(super) fn runs_interband(command: &str, sub: &str) -> bool {
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
