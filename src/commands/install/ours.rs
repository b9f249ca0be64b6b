//! The commands interband registers (its hook and statusline, guarded where the binary may go), and how any command is told to be one of them.

use super::*;
use interband_hosts::shape::HookShape;
use interband_hosts::{EXIT_0_AFTER, OR_EXIT_0};

/// The commands interband registers, all starting with one program.
pub(super) struct Ours {
    pub(super) program: String,
    /// The hook, naming its host (`hook --host KEY`).
    pub(super) hook: String,
    /// The hook as an earlier install wrote it, without the host.
    pub(super) earlier_hook: String,
    /// The statusline, naming its host (`statusline --host KEY`), guarded
    /// like the hooks where the binary may go by itself.
    pub(super) statusline: String,
    /// The statusline's own command, unguarded.
    plain_statusline: String,
    /// The statusline as an earlier install wrote it, without the host.
    earlier_statusline: String,
    /// The host's rerun of a statusline alone, in seconds, where it has one
    /// (`Profile::statusline_refresh`).
    pub(super) refresh: Option<u64>,
    /// Whether the shells the host runs its statusline in on Windows read
    /// `'...'` as one word (Git Bash and PowerShell; not cmd.exe).
    pub(super) single_quotes: bool,
    /// The keys the hook's command goes under, in the file's order:
    /// `command` (this system's, in the grouped shape), and in a file every
    /// system reads, the other systems' (Copilot CLI's `bash` and
    /// `powershell` in a project's, in that order on every system).
    keys: Vec<&'static str>,
}

/// How a hook runs a program found on each user's PATH (a project's
/// settings, shared with everyone who clones it): where it is missing, the
/// hook does nothing, silently, instead of failing on every event.
pub(super) const ON_PATH: (&str, &str) =
    ("command -v interband >/dev/null 2>&1 && exec ", " || true");

/// How a hook runs a binary that may go away by itself (one in npx's
/// cache, which npm clears when it likes), or any binary of a host that
/// takes a failing hook for a block (`Profile::failing_hook_blocks`):
/// where it is gone, the hook does nothing, silently, instead of failing
/// on every event. A statusline that
/// wraps the user's own runs theirs alone then (see [`Ours::wrapping`]).
pub(super) const IF_THERE: (&str, &str, &str) = ("[ -x ", " ] && exec ", " || true");

/// What a guarded statusline that wraps the user's own runs when interband
/// is gone: theirs, as it was.
const OR_THEIRS: &str = " || exec sh -c ";

/// Whether `program` lives where npm may remove it without a word (npx's
/// cache, `~/.npm/_npx/<hash>/`; a Windows program word has forward
/// slashes too).
pub(super) fn in_npx_cache(program: &str) -> bool {
    program.contains("/_npx/")
}

/// Whether the statusline running `program` is guarded against its going
/// away ([`IF_THERE`]): one in npx's cache, on Unix. On Windows (PowerShell,
/// cmd.exe or Git Bash, one command for all) no guard can run theirs once
/// ours is gone, and install says what follows.
pub(super) fn transient(program: &str) -> bool {
    cfg!(unix) && in_npx_cache(program)
}

/// The systems a command is written for: the one install runs on, or
/// every one (a project's settings, shared with everyone who clones it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    /// Unix: a POSIX shell's guards.
    Unix,
    /// Windows: its hosts' shells.
    Windows,
    /// Both: the Windows form, which a POSIX shell reads alike.
    Everywhere,
}

impl Written {
    /// For this system, or every one where the file is a project's.
    pub(super) fn here(project: bool) -> Self {
        match (project, cfg!(windows)) {
            (true, _) => Written::Everywhere,
            (false, true) => Written::Windows,
            (false, false) => Written::Unix,
        }
    }
}

impl Ours {
    /// The commands `program` runs for `host`, written for this system, or
    /// for every one where they go in a project's settings (`project`).
    pub(super) fn new(program: String, host: Host, project: bool) -> Self {
        Self::written_for(program, host, Written::here(project))
    }
    /// The commands as install writes them for `written` (the tests read
    /// every form on any system).
    pub(super) fn written_for(program: String, host: Host, written: Written) -> Self {
        // A project's `interband`, from each user's PATH, or npx's cache:
        // the binary may be missing when the host runs the hook; and any
        // binary where a failing hook is a block.
        let from_path = program == "interband";
        let may_go = from_path || in_npx_cache(&program) || host.profile().failing_hook_blocks;
        let unix = written == Written::Unix;
        // Every shell the host runs it in on Windows (and any POSIX one)
        // exits 0 after it.
        let end = host.profile().hook_guard_windows;
        let hook = |args: &str| {
            if !unix && may_go {
                format!("{program} {args}{end}")
            } else if !unix {
                format!("{program} {args}")
            } else if from_path {
                format!("{}interband {args}{}", ON_PATH.0, ON_PATH.1)
            } else if may_go {
                format!(
                    "{}{program}{}{program} {args}{}",
                    IF_THERE.0, IF_THERE.1, IF_THERE.2
                )
            } else {
                format!("{program} {args}")
            }
        };
        let plain_statusline = format!("{program} statusline --host {}", host.profile().key);
        Ours {
            hook: hook(&format!("hook --host {}", host.profile().key)),
            earlier_hook: hook("hook"),
            statusline: if unix && in_npx_cache(&program) {
                format!(
                    "{}{program}{}{plain_statusline}{}",
                    IF_THERE.0, IF_THERE.1, IF_THERE.2
                )
            } else if unix && from_path {
                // From each user's PATH: nothing where it is missing.
                format!("{}{plain_statusline}{}", ON_PATH.0, ON_PATH.1)
            } else if written == Written::Everywhere && may_go {
                // A project's: its shell exits 0 where it is missing.
                format!("{plain_statusline}{end}")
            } else {
                plain_statusline.clone()
            },
            plain_statusline,
            earlier_statusline: format!("{program} statusline"),
            refresh: host.profile().statusline_refresh,
            single_quotes: host.profile().statusline_shell_windows.single_quotes,
            keys: match host.profile().hook_shape {
                HookShape::Flat {
                    command, systems, ..
                } if written == Written::Everywhere => systems
                    .iter()
                    .map(|k| if *k == command { "command" } else { k })
                    .collect(),
                _ => vec!["command"],
            },
            program,
        }
    }
    /// Makes `hook` (grouped: `{type, command, ...}`) run ours, under every
    /// key its file's systems read.
    pub(super) fn set_command(&self, hook: &mut Value) {
        for key in &self.keys {
            hook[*key] = self.hook.clone().into();
        }
    }
    /// Whether `command` is our hook, as this install writes it or as an
    /// earlier one wrote it (without the host; `interband hook`, unguarded),
    /// guarded for any system.
    pub(super) fn is_our_hook(&self, command: &str) -> bool {
        let run = unguarded(command);
        run == unguarded(&self.hook)
            || run == unguarded(&self.earlier_hook)
            || run == format!("{} hook", self.program)
    }
    /// Our statusline command, running `theirs` too and appending our
    /// segment to its line; where our binary may go by itself, theirs alone
    /// runs once it is gone.
    pub(super) fn wrapping(&self, theirs: &str) -> String {
        let quoted = match every_shell_quote(theirs, self.single_quotes) {
            Some(q) if cfg!(windows) => q.into(),
            _ => shell_words::quote(theirs),
        };
        let run = format!("{} --wrap sh -c {quoted}", self.plain_statusline);
        if transient(&self.program) {
            format!(
                "{}{}{}{run}{OR_THEIRS}{quoted}",
                IF_THERE.0, self.program, IF_THERE.1
            )
        } else {
            run
        }
    }
    /// Our statusline with what followed another interband statusline
    /// (`rest`: empty, or ` --wrap sh -c ...` with the user's own).
    pub(super) fn statusline_with(&self, rest: &str) -> String {
        match wrapped_theirs(rest) {
            Some(theirs) => self.wrapping(&theirs),
            None if rest.is_empty() => self.statusline.clone(),
            None => format!("{}{rest}", self.plain_statusline),
        }
    }
    /// What follows our statusline command in `command` (empty, or ` --wrap
    /// ...`), this install's form or an earlier one's, guarded or not;
    /// `None` when it is not ours.
    pub(super) fn wrapped_by_ours<'c>(&self, command: &'c str) -> Option<&'c str> {
        let run = unguarded_statusline(command);
        [&self.plain_statusline, &self.earlier_statusline]
            .into_iter()
            .find_map(|ours| run.strip_prefix(ours.as_str()))
            .filter(|rest| rest.is_empty() || rest.starts_with(" --wrap "))
    }
    /// The hook group added for `e`.
    pub(super) fn group(&self, e: &Event) -> Value {
        let mut hook = json!({"type": "command"});
        self.set_command(&mut hook);
        hook["timeout"] = e.timeout.into();
        let hooks = json!([hook]);
        match e.matcher {
            Some(m) => json!({"matcher": m, "hooks": hooks}),
            None => json!({ "hooks": hooks }),
        }
    }
}

/// `command` as one word that every shell the host may run its statusline
/// in on Windows reads back as it is, and a POSIX split gives back too:
/// Git Bash and PowerShell (Claude Code's), in single quotes where it has
/// none; those and cmd.exe (Copilot CLI's), in double quotes where it has
/// nothing any of them reads inside them. `None` when neither can be
/// (Git Bash's form is written then, and install says so).
pub(super) fn every_shell_quote(command: &str, single_quotes: bool) -> Option<String> {
    // PowerShell takes the typographic quotes for its own quote characters.
    const SINGLE: &[char] = &['\'', '\u{2018}', '\u{2019}', '\u{201a}', '\u{201b}'];
    const IN_DOUBLE: &[char] = &[
        '"', '$', '`', '\\', '!', '%', '\u{201c}', '\u{201d}', '\u{201e}',
    ];
    if single_quotes && !command.contains(SINGLE) {
        Some(format!("'{command}'"))
    } else if !command.contains(IN_DOUBLE) {
        Some(format!("\"{command}\""))
    } else {
        None
    }
}

/// Every hook group of every event in a settings file (grouped).
pub(super) fn hook_groups(settings: &Value) -> impl Iterator<Item = &Value> {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(Value::as_array)
        .flatten()
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

/// `command` without the end a Windows or a project's install writes after
/// it ([`EXIT_0_AFTER`], [`OR_EXIT_0`]), if it has one.
fn without_exit_0(command: &str) -> Option<&str> {
    [EXIT_0_AFTER, OR_EXIT_0]
        .into_iter()
        .find_map(|end| command.strip_suffix(end))
}

/// A hook command without the [`ON_PATH`] or [`IF_THERE`] guard around it,
/// or the end a Windows install writes after it ([`EXIT_0_AFTER`],
/// [`OR_EXIT_0`]), if it has one.
pub(super) fn unguarded(command: &str) -> &str {
    if let Some(run) = without_exit_0(command) {
        return run;
    }
    let on_path = || {
        command
            .strip_prefix(ON_PATH.0)
            .and_then(|c| c.strip_suffix(ON_PATH.1))
    };
    let if_there = || {
        let (guard, run) = guarded_run(command)?;
        run.strip_suffix(IF_THERE.2).filter(|r| {
            r.strip_prefix(guard)
                .is_some_and(|rest| rest.starts_with(' '))
        })
    };
    on_path().or_else(if_there).unwrap_or(command)
}

/// `[ -x P ] && exec RUN`: the guard's program `P` and `RUN`, when the
/// command has the [`IF_THERE`] shape with one program, `P` a single word
/// (a user's own chain, `[ -x A ] && B; [ -x P ] && exec P ...`, is not).
fn guarded_run(command: &str) -> Option<(&str, &str)> {
    let (guard, run) = command.strip_prefix(IF_THERE.0)?.split_once(IF_THERE.1)?;
    (!guard.contains(' ') || shell_words::split(guard).is_ok_and(|w| w.len() == 1))
        .then_some((guard, run))
        .filter(|(guard, _)| !guard.contains("]"))
}

/// A statusline command without the [`IF_THERE`] guard (and the fallback
/// to the user's own statusline) around it, or a project's end
/// ([`EXIT_0_AFTER`]), if it has one.
pub(super) fn unguarded_statusline(command: &str) -> &str {
    if let Some(run) = without_exit_0(command) {
        return run;
    }
    if let Some(run) = command
        .strip_prefix(ON_PATH.0)
        .and_then(|c| c.strip_suffix(ON_PATH.1))
    {
        return run;
    }
    let Some((guard, run)) = guarded_run(command) else {
        return command;
    };
    if !run
        .strip_prefix(guard)
        .is_some_and(|rest| rest.starts_with(' '))
    {
        return command;
    }
    if let Some(run) = run.strip_suffix(IF_THERE.2) {
        return run;
    }
    // `... --wrap sh -c Q || exec sh -c Q`: the same Q twice.
    run.match_indices(OR_THEIRS)
        .map(|(at, _)| (&run[..at], &run[at + OR_THEIRS.len()..]))
        .find(|(cmd, theirs)| cmd.ends_with(&format!(" --wrap sh -c {theirs}")))
        .map_or(command, |(cmd, _)| cmd)
}

/// What follows `interband statusline [--host KEY]` in a statusline command
/// any interband install wrote (empty, or ` --wrap sh -c ...`), whatever
/// program it names and guarded or not; `None` when it is no interband
/// statusline.
pub(super) fn any_statusline_rest(command: &str) -> Option<&str> {
    let run = unguarded_statusline(command);
    if !runs_interband(run, "statusline")
        && !run.contains(" statusline --wrap ")
        && !run.contains(" statusline --host ")
    {
        return None;
    }
    let words = shell_words::split(run).ok()?;
    let named = words
        .first()
        .is_some_and(|p| crate::platform::names_interband(p));
    if !named || words.get(1).map(String::as_str) != Some("statusline") {
        return None;
    }
    match run.find(" --wrap ") {
        Some(at) => Some(&run[at..]),
        None if only_options(&words[2..]) => Some(""),
        None => None,
    }
}

/// The user's own statusline command an interband statusline wraps, from
/// what follows `statusline` (` --wrap sh -c Q`).
pub(super) fn wrapped_theirs(rest: &str) -> Option<String> {
    match shell_words::split(rest.strip_prefix(" --wrap sh -c ")?)
        .ok()?
        .as_slice()
    {
        [theirs] => Some(theirs.clone()),
        _ => None,
    }
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
        .is_some_and(|p| crate::platform::names_interband(p));
    let rest = words.get(2..).unwrap_or_default();
    named && words.get(1).is_some_and(|w| w == sub) && (sub != "hook" || only_options(rest))
}

/// Whether `words` are options only (`--host KEY`, `--host=KEY`, any other
/// `-x` a newer or older release may add), never a shell's `&&`, `|` or a
/// command of the user's after interband's.
pub(super) fn only_options(words: &[String]) -> bool {
    // A word a shell reads as one option: letters, digits, `-`, `_`, `=`,
    // `.` (never `;`, `&`, `|`, `$`, quotes or brackets: `--host claude;x`
    // is one word to a splitter, two commands to a shell).
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '.'))
    };
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if !plain(w) || !w.starts_with('-') {
            return false;
        }
        if w == "--host" && !it.next().is_some_and(|k| plain(k) && !k.starts_with('-')) {
            return false;
        }
    }
    true
}

/// Whether a shell would find `program` as written, unaided: not through a
/// variable other than the home folder's (`"$CLAUDE_PROJECT_DIR"/bin/...`)
/// nor another user's home (`~user/`), which only the host's run can tell.
pub(super) fn resolvable(program: &str) -> bool {
    let p = expand_home(program);
    !p.contains('$') && !p.starts_with('~') && !p.contains('`')
}

/// A program word as the shell that runs a hook expands it: `~/` and
/// `$HOME/` (or `${HOME}/`) at its start name the home folder.
pub(super) fn expand_home(program: &str) -> String {
    let home = interband::paths::home(&interband::settings::ProcessEnv)
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    for prefix in ["~/", "$HOME/", "${HOME}/"] {
        if let Some(rest) = program.strip_prefix(prefix)
            && !home.is_empty()
        {
            return format!("{}/{rest}", home.trim_end_matches('/'));
        }
    }
    program.to_owned()
}
