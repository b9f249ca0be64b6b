//! # interband hosts
//!
//! One profile per agent host — Claude Code, Codex CLI, Gemini CLI — and
//! everything that differs between them, in one place: the hook events and
//! which one ends a turn, how to read the current usage and window from the
//! host's transcript (from the end, bounded, flat in the file's size), where
//! the host compacts and what the command is, its tool names, how a failed
//! call looks, and how it wants a hook's output. The engine, the bus and the
//! consumers are host-agnostic: they ask the profile.
//!
//! The hook picks the profile from its input — the event name, the
//! transcript's shape, fields only one host sends — never from environment
//! variables. Adding a host is one new module, its profile and its fixtures.
//!
//! ```
//! use interband_hosts::Host;
//! let gemini = Host::detect("AfterTool", Some("/h/.gemini/tmp/p/chats/session-2026-11-30T07-27-566ab2a4.jsonl"), false, false);
//! assert_eq!(gemini, Host::Gemini);
//! assert_eq!(gemini.profile().compact_command, "/compress");
//! let codex = Host::detect("PostToolUse", Some("/h/.codex/sessions/2026/11/30/rollout-2026-11-30T07-24-45-01a2.jsonl"), true, false);
//! assert_eq!(codex, Host::Codex);
//! assert_eq!(Host::detect("PostToolUse", Some("/h/.claude/projects/-p/d6d5.jsonl"), false, false), Host::Claude);
//! ```
#![deny(missing_docs)]

pub mod claude;
pub mod codex;
pub mod copilot;
pub mod digest;
pub mod forward;
pub mod gemini;
pub mod history;
pub mod input;
pub mod process;
pub mod project;
pub mod qwen;
pub mod shape;
pub mod tail;
pub mod usage;

use serde::{Deserialize, Serialize};

/// Opens a transcript to read it, and gives its length: a regular file only
/// (never blocking on a FIFO, never reading a device), and only the user's
/// own (one owned by someone else, named by a message on the bus say, is
/// refused with `PermissionDenied`). A link is followed.
pub fn open_transcript(path: &std::path::Path) -> std::io::Result<(std::fs::File, u64)> {
    let (file, meta) = interband::fsio::open_regular_meta(path, interband::fsio::Links::Follow)
        .map_err(interband::Error::into_io)?;
    if meta.uid != interband::fsio::my_uid() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{}: owned by another user", path.display()),
        ));
    }
    Ok((file, meta.len))
}

/// An agent host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    /// Claude Code (the host a statusline input is, unless named).
    #[default]
    Claude,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    Gemini,
    /// Alibaba's Qwen Code.
    Qwen,
    /// GitHub Copilot CLI.
    Copilot,
}

/// What is host-specific, as data.
#[derive(Debug)]
pub struct Profile {
    /// The host.
    pub host: Host,
    /// Its name for people.
    pub name: &'static str,
    /// The events after a tool call (one that succeeded, one that failed,
    /// where the host tells them apart).
    pub tool_events: &'static [&'static str],
    /// The event at the end of a turn (the moment to write notes and act).
    pub end_of_turn: &'static str,
    /// The event before the context is compacted.
    pub pre_compaction: &'static str,
    /// Its name on the command line (`interband install --host KEY`).
    pub key: &'static str,
    /// Its user settings file (hooks and statusline), relative to the home
    /// folder, and to a project's folder for a project's own unless
    /// [`Profile::project_file`] says otherwise.
    pub settings_file: &'static str,
    /// Where a project's hooks go, relative to its folder, when the host
    /// reads them from elsewhere than [`Profile::settings_file`] (Copilot
    /// CLI reads a repository's `.github/hooks/*.json`, never its
    /// `.copilot/settings.json`).
    pub project_file: Option<&'static str>,
    /// Whether the host reads its settings file with `//` and `/* */`
    /// comments in it (Gemini CLI and Qwen Code strip them, Copilot CLI
    /// documents JSONC); Claude Code and Codex CLI take such a file for
    /// broken and ignore it.
    pub settings_comments: bool,
    /// The setting in a settings file's JSON that turns every hook of the
    /// host off, when it is set so (`disableAllHooks: true`, Gemini's
    /// `hooksConfig.enabled: false`).
    pub hooks_off: fn(settings: &serde_json::Value) -> Option<&'static str>,
    /// Other names the host's settings give an event (alias, the name
    /// install writes): Copilot CLI runs a `postToolUse` entry and a
    /// `PostToolUse` one alike, so a hook under either is the event's.
    pub event_aliases: &'static [(&'static str, &'static str)],
    /// The variable that moves the host's own folder (the first part of
    /// [`Profile::settings_file`], `~/.codex` say), when it has one.
    pub home_var: Option<&'static str>,
    /// How that file holds a hook ([`shape::HookShape`]).
    pub hook_shape: shape::HookShape,
    /// The events `interband install` registers there, each with its tool
    /// matcher and its timeout in the host's unit.
    pub hook_events: &'static [HookEvent],
    /// What a person installing interband must know beyond the settings file
    /// (`settings`: the file's JSON; `flags`: the install's flags, to repeat
    /// in a command): another switch, a plugin that runs the same hooks.
    pub install_notes: fn(settings: &serde_json::Value, flags: &str) -> Vec<String>,
    /// Whether the host runs a statusline command interband can take part in.
    pub statusline: bool,
    /// How often, in seconds, the host is asked to run interband's
    /// statusline again between its own redraws, where it can be (Claude
    /// Code's `statusLine.refreshInterval`; a release without it drops the
    /// key). Without it a running subagent's figure shows only as fresh as
    /// the host's last redraw, which waits for the main agent's next message.
    pub statusline_refresh: Option<u64>,
    /// The shell the host runs its statusline command in on Windows when
    /// no POSIX shell does: what runs the person's own statusline that
    /// interband's wraps, there.
    pub statusline_shell_windows: WindowsShell,
    /// What ends a hook command on Windows whose program may be missing (a
    /// project's `interband` from each user's PATH, a binary in npx's
    /// cache, any binary of a host where [`Profile::failing_hook_blocks`];
    /// and a project's hooks on every system), so that every shell the host may run it in there exits 0
    /// then, as a POSIX guard does on Unix: [`EXIT_0_AFTER`] where the host
    /// runs hooks in Git Bash or PowerShell, [`OR_EXIT_0`] where in cmd.exe
    /// or Git Bash.
    pub hook_guard_windows: &'static str,
    /// Whether a release takes a hook that exits with other than 0 or 1 for
    /// a block, as a missing program's 127 (Gemini CLI 0.61.0, Qwen Code
    /// 0.21.2: the tool's result replaced by the shell's error, given to the
    /// model again at each turn, in a loop; seen live). Install guards every
    /// hook of such a host against its binary going, as it guards those
    /// whose binary may go by itself.
    pub failing_hook_blocks: bool,
    /// The window a model's name says, where the host's names say one
    /// (Claude Code's `[1m]`, by its table).
    pub model_window: Option<fn(model: &str) -> u64>,
    /// How its statusline input states the context and the transcript, where
    /// that differs from Claude Code's (`context_window.current_usage`,
    /// `context_window_size`, `transcript_path`).
    pub statusline_context: Option<StatuslineContext>,
    /// The variables of the hook's environment that name the project
    /// folder, best first; without one, the input's `cwd` is the project.
    pub project_vars: &'static [&'static str],
    /// The event before the agent starts a turn, where the host has one
    /// interband listens to (Gemini's `BeforeAgent`: a compression ends the
    /// turn before it, with no event of its own).
    pub turn_start: Option<&'static str>,
    /// The event when a context starts (new, resumed, cleared, compacted).
    pub context_start: &'static str,
    /// The event when the session ends.
    pub session_end: &'static str,
    /// The event when a subagent has finished, where install registers it:
    /// `SubagentStop` (Claude Code: every release from 1.0.85 knows it, and
    /// 2.1.x names the subagent; Codex from 0.135, ignored before; Qwen
    /// Code, 0.21.2 and 0.24.4). Its figure is read once more, the whole of
    /// it written by then. A host's end-of-turn event fired inside a
    /// subagent (Copilot CLI's) is its end too.
    pub subagent_end: Option<&'static str>,
    /// Whether [`Profile::pre_compaction`] means a compaction will happen.
    /// Gemini fires `PreCompress` at every model turn, before it checks any
    /// threshold: alone, it says nothing.
    pub pre_compaction_means_compaction: bool,
    /// Whether `SessionStart` comes with `source: "compact"` after a
    /// compaction (Gemini has no such source).
    pub start_after_compaction: bool,
    /// Whether the host writes a response's line, with the tool calls it
    /// makes and its usage, only after those calls' tool hooks ran (Claude
    /// Code): a tool hook reads the figure one response old.
    pub writes_calls_after_their_hooks: bool,
    /// The stdout that gives the agent `text` with the event `event`'s
    /// result ([`input::additional_context`]: the `hookSpecificOutput` shape).
    pub context_output: fn(event: &str, text: &str) -> String,
    /// How a pre-compaction hook's output reaches the host's own summary
    /// request, where it does (Claude Code, Qwen Code): interband says there
    /// what the summary must keep. `None` where nothing a hook prints reaches
    /// it (docs/hosts.md, "Steering a compaction").
    pub steer: Option<Steer>,
    /// The event after a compaction that carries the host's summary
    /// (`compact_summary`), where the host has one. Install registers it
    /// only where every release interband supports accepts it
    /// ([`Profile::hook_events`]); without it, the summary is read from the
    /// transcript when the next context starts, else at the turn's end.
    pub post_compaction: Option<&'static str>,
    /// Whether the host shows a hook's `systemMessage` to the person at the
    /// start of a context and at a turn's end (how the record of a
    /// compaction is shown there).
    pub shows_system_message: bool,
    /// How the host shows the person a [`Profile::post_compaction`] hook's
    /// output, where it does (Claude Code: its plain stdout, as "PostCompact
    /// [command] completed successfully: ..."; it may come after the next
    /// context's start).
    pub post_compaction_message: Option<fn(event: &str, text: &str) -> String>,
    /// The first release whose hooks may answer with a `terminalSequence`
    /// for the terminal the session runs in (a notification), where the
    /// host has such an answer: Claude Code from 2.1.141.
    pub terminal_sequence_since: Option<&'static str>,
    /// A subagent's own figure, from its own transcript, given the
    /// transcript a hook input names (its session's, or the subagent's own
    /// where the host names that: Codex), the session and the subagent's
    /// id, where the host keeps one (Claude Code:
    /// `<session>/subagents/agent-<id>.jsonl`, every line a sidechain's;
    /// Codex: a rollout of its own beside the session's; Gemini CLI:
    /// `chats/<session>/<id>.jsonl`; Qwen Code:
    /// `subagents/<session>/agent-<id>.jsonl` beside `chats/`; Copilot CLI:
    /// the session's own log, whose lines name the subagent).
    pub subagent_figure: Option<SubagentFigure>,
    /// Whether a subagent's tool calls name its own transcript (Codex: its
    /// rollout) rather than its session's (Claude Code, Gemini CLI): where
    /// they name the session's, its figure is read there at a subagent's
    /// call too.
    pub subagent_calls_name_own_transcript: bool,
    /// Whether a subagent has finished, as its host's records say, where
    /// the host lists no running tasks at the turn's end (Codex: its own
    /// rollout's last turn ended; Gemini CLI: the session's chat was written
    /// since the subagent's own). Same arguments as
    /// [`Profile::subagent_figure`].
    pub subagent_done: Option<fn(transcript: &std::path::Path, session: &str, agent: &str) -> bool>,
    /// The subagent a tool call was made in, and its kind, where the host's
    /// input does not name them and its records do (Gemini CLI: a subagent's calls come with
    /// its session's id and transcript, while the subagent's own chat is
    /// newer than the session's; Qwen Code before 0.23.4: a running
    /// subagent's own transcript names the call; from 0.23.4, whose calls
    /// name the subagent, its kind, from its record): its id, and its kind
    /// where known.
    pub subagent_of: Option<SubagentOf>,
    /// Whether a subagent's hooks carry its own id as `session_id` and its
    /// session's as `parent_agent_id` (Copilot CLI from 1.0.102, whose
    /// subagent also fires a `Stop` of its own): such an event is taken as
    /// its session's, made inside that subagent.
    pub subagent_names_its_session_parent: bool,
    /// The command that compacts.
    pub compact_command: &'static str,
    /// How a person compacts a session from a shell, without its
    /// interactive UI, when the host has a way: `{command}` is the command
    /// with its focus, `{session}` the session (each shell-quoted).
    pub headless_compact: Option<&'static str>,
    /// Whether the compact command takes the person's focus after it
    /// (`/compact keep the failing test`): Codex's `/compact` and Gemini's
    /// `/compress` take no text.
    pub compact_takes_focus: bool,
    /// The command line that opens a session again, interactive: a
    /// `{session}` word is the session's id.
    pub resume: &'static [&'static str],
    /// The command line that starts a fresh interactive session whose first
    /// prompt is a `{prompt}` word (run in the session's folder).
    pub fresh_session: &'static [&'static str],
    /// Where a session's window comes from, best first, for people
    /// (`interband config`; [`Host::limits`] is the rule).
    pub window_order: &'static str,
    /// Tools whose output is typically large (+1.5 pressure each).
    pub heavy_tools: &'static [&'static str],
    /// Tools that change files.
    pub edit_tools: &'static [&'static str],
    /// Tools that run a command.
    pub shell_tools: &'static [&'static str],
    /// What each transcript line says of the context (read from the end
    /// for the figure, see [`tail`]).
    pub reader: usage::LineReader,
    /// Whether its transcript states the window and the model on lines of
    /// their own (Codex's `token_count` and `turn_context`), so a reader
    /// from the end looks for them.
    pub states_window: bool,
    /// A transcript line read forward, for a re-enactment (see [`forward`]).
    pub forward: fn(line: &[u8], offset: u64) -> forward::Seen,
    /// Whether a transcript at this path is the host's (by its place and
    /// name).
    pub owns_transcript: fn(path: &std::path::Path) -> bool,
    /// Where the host keeps a session's transcript (`folder`: the host's own,
    /// [`Profile::host_home`]; `project`: the session's project folder),
    /// named as the host names it: where `interband replay` puts its copy.
    pub transcript_at: fn(
        folder: &std::path::Path,
        project: &std::path::Path,
        session: &str,
    ) -> std::path::PathBuf,
    /// Whether a transcript whose name ends `.json` is one JSON document
    /// (Gemini CLI before 0.39), not JSONL.
    pub json_documents: bool,
    /// Makes a hook input the host sends in a shape of its own the one
    /// [`input::HookInput`] reads (snake_case, with `hook_event_name`), where
    /// it has such a shape.
    pub input_shape: Option<fn(input: &mut input::TopLevel)>,
    /// Events only this host sends, which name it whatever else the input says.
    pub own_events: &'static [&'static str],
    /// Why nobody is at the keyboard of the session running this hook,
    /// when the host lets a hook tell (see [`Host::headless`]).
    pub headless: fn(
        transcript: Option<&std::path::Path>,
        env: &dyn interband::settings::Env,
    ) -> Option<String>,
    /// The window and compaction point of a session, by the host's rules
    /// (see [`Host::limits`]).
    pub limits: fn(known: &Known, env: &dyn interband::settings::Env) -> Limits,
    /// What each transcript line gives a memory note.
    pub digest: digest::Reader,
    /// Whether the host writes a transcript record again as it grows
    /// (Gemini writes a message again as its calls are added): its lines
    /// are read in one order, whole, never as two halves side by side.
    pub rewrites_lines: bool,
    /// What every line that records a compaction contains, so the session's
    /// history is searched for them without parsing anything else
    /// ([`history::History::scan`]); empty where the window never needs the
    /// history (the transcript states it).
    pub compaction_marks: &'static [&'static [u8]],
    /// What the host's own settings files in a project folder set that
    /// interband reads (a window, a threshold, a model), each with whether
    /// it counts: the host's trust of the folder, then the user's of the
    /// file ([`project`]).
    pub project_settings:
        fn(project: &std::path::Path, env: &dyn interband::settings::Env) -> Vec<project::Setting>,
}

/// Reads a statusline input where it differs from Claude Code's
/// ([`Profile::statusline_context`]).
pub type StatuslineContext = fn(input: &serde_json::Value) -> Stated;

/// What a statusline input states, as its host's profile reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stated {
    /// Tokens in context, when it says.
    pub used: Option<u64>,
    /// The window, when it says.
    pub window: Option<u64>,
    /// The session's transcript (the file the hooks name), when it says.
    pub transcript: Option<String>,
}

/// One event `interband install` registers: the host's name for it, the
/// tool matcher (None: every event, or every tool where the host's matcher
/// is a pattern that `*` would break), and the timeout in the host's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookEvent {
    /// The event's name in the host's settings.
    pub name: &'static str,
    /// The tool matcher, when the host needs one.
    pub matcher: Option<&'static str>,
    /// The timeout, in the host's unit (seconds; Gemini: milliseconds).
    pub timeout: u64,
}

const fn ev(name: &'static str, matcher: Option<&'static str>, timeout: u64) -> HookEvent {
    HookEvent {
        name,
        matcher,
        timeout,
    }
}

/// How a pre-compaction hook's output reaches the host's summary request.
#[derive(Debug, Clone, Copy)]
pub struct Steer {
    /// The stdout that carries `text` for the event `event`.
    pub output: fn(event: &str, text: &str) -> String,
    /// The most characters of `text` the host keeps (it cuts the rest).
    pub limit: usize,
}

/// The shell a host runs its statusline command in on Windows when no
/// POSIX shell (Git Bash) runs it: the first of [`WindowsShell::programs`]
/// found, with [`WindowsShell::args`] before the command (docs/hosts.md,
/// "Platforms").
#[derive(Debug)]
pub struct WindowsShell {
    /// The programs looked for, in the host's order (a name on the PATH or
    /// a path).
    pub programs: &'static [&'static str],
    /// The arguments before the command.
    pub args: &'static [&'static str],
    /// Whether it reads `'...'` as one word, as Git Bash does (PowerShell;
    /// cmd.exe does not).
    pub single_quotes: bool,
}

/// `; exit 0` after a hook's command: Git Bash and PowerShell (Windows
/// PowerShell 5.1 and PowerShell 7) all read `;` between two commands and
/// go on after one that failed, so the shell exits 0 whatever the first
/// did. cmd.exe does not: to it `;` is part of the arguments.
pub const EXIT_0_AFTER: &str = "; exit 0";

/// ` || exit 0` after a hook's command: cmd.exe and Git Bash read `||`
/// alike (run the second when the first failed); Windows PowerShell 5.1
/// takes it for a syntax error.
pub const OR_EXIT_0: &str = " || exit 0";

/// PowerShell 7, else Windows PowerShell, reading the command after
/// `-Command`, as Gemini CLI and Codex run one.
const POWERSHELL: WindowsShell = WindowsShell {
    programs: &["pwsh", "powershell"],
    args: &["-NoProfile", "-Command"],
    single_quotes: true,
};

/// `%ComSpec%`, as Node runs a command with `shell: true`.
const CMD: WindowsShell = WindowsShell {
    programs: &["cmd"],
    args: &["/d", "/s", "/c"],
    single_quotes: false,
};

/// How a host's subagent's own figure is read ([`Profile::subagent_figure`]).
pub type SubagentFigure =
    fn(transcript: &std::path::Path, session: &str, agent: &str) -> Option<usage::TailUsage>;

/// How a host's records name the subagent a call was made in
/// ([`Profile::subagent_of`]): its id and its kind.
pub type SubagentOf = fn(input: &input::HookInput) -> Option<(String, Option<String>)>;

/// What a host event means to interband: the front door acts on this, never
/// on a host's own name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// A tool call finished ([`Profile::tool_events`]).
    ToolDone,
    /// The agent is about to start a turn ([`Profile::turn_start`]).
    TurnStart,
    /// A turn ended ([`Profile::end_of_turn`]).
    TurnEnd,
    /// The context is about to be compacted ([`Profile::pre_compaction`]).
    BeforeCompaction,
    /// The context was compacted, and the event carries the host's summary
    /// ([`Profile::post_compaction`]).
    AfterCompaction,
    /// A context started ([`Profile::context_start`]).
    ContextStart,
    /// The session ended ([`Profile::session_end`]).
    SessionEnd,
    /// A subagent finished ([`Profile::subagent_end`]).
    SubagentEnd,
    /// An event interband does nothing with.
    Other,
}

impl Profile {
    /// The host's own folder: [`Profile::home_var`] when set, else the
    /// first part of [`Profile::settings_file`] in the home folder. The
    /// one rule for where a host keeps its files.
    ///
    /// ```
    /// use interband_hosts::Host;
    /// let env = |v: &str| match v {
    ///     "HOME" => Some("/h".to_owned()),
    ///     "CODEX_HOME" => Some("/elsewhere".to_owned()),
    ///     _ => None,
    /// };
    /// assert_eq!(Host::Codex.profile().host_home(&env).unwrap().to_str(), Some("/elsewhere"));
    /// assert_eq!(Host::Codex.profile().user_settings(&env).unwrap().to_str(), Some("/elsewhere/hooks.json"));
    /// assert_eq!(Host::Gemini.profile().user_settings(&env).unwrap().to_str(), Some("/h/.gemini/settings.json"));
    /// ```
    pub fn host_home(&self, env: &dyn interband::settings::Env) -> Option<std::path::PathBuf> {
        let (folder, _) = self.settings_file.split_once('/')?;
        self.home_var
            .and_then(|v| env_path(env, v))
            .or_else(|| interband::paths::home(env).map(|h| h.join(folder)))
    }

    /// The user's settings file for the host, where [`Profile::host_home`] is.
    pub fn user_settings(&self, env: &dyn interband::settings::Env) -> Option<std::path::PathBuf> {
        let (_, file) = self.settings_file.split_once('/')?;
        Some(self.host_home(env)?.join(file))
    }

    /// The name install writes for an event the settings name `event`
    /// ([`Profile::event_aliases`]), else `event`.
    ///
    /// ```
    /// use interband_hosts::Host;
    /// assert_eq!(Host::Copilot.profile().event_named("agentStop"), "Stop");
    /// assert_eq!(Host::Claude.profile().event_named("Stop"), "Stop");
    /// ```
    pub fn event_named<'a>(&self, event: &'a str) -> &'a str {
        self.event_aliases
            .iter()
            .find(|(alias, _)| *alias == event)
            .map_or(event, |(_, name)| name)
    }

    /// What `event` means for this host.
    ///
    /// ```
    /// use interband_hosts::{Host, Moment};
    /// assert_eq!(Host::Gemini.profile().moment("AfterTool"), Moment::ToolDone);
    /// assert_eq!(Host::Claude.profile().moment("PostToolUse"), Moment::ToolDone);
    /// assert_eq!(Host::Gemini.profile().moment("BeforeAgent"), Moment::TurnStart);
    /// assert_eq!(Host::Claude.profile().moment("BeforeAgent"), Moment::Other);
    /// assert_eq!(Host::Codex.profile().moment("Stop"), Moment::TurnEnd);
    /// ```
    pub fn moment(&self, event: &str) -> Moment {
        match event {
            e if self.tool_events.contains(&e) => Moment::ToolDone,
            e if Some(e) == self.turn_start => Moment::TurnStart,
            e if e == self.end_of_turn => Moment::TurnEnd,
            e if e == self.pre_compaction => Moment::BeforeCompaction,
            e if Some(e) == self.post_compaction => Moment::AfterCompaction,
            e if e == self.context_start => Moment::ContextStart,
            e if e == self.session_end => Moment::SessionEnd,
            e if Some(e) == self.subagent_end => Moment::SubagentEnd,
            _ => Moment::Other,
        }
    }
}

/// `disableAllHooks: true` (Claude Code, Qwen Code, Copilot CLI).
fn disable_all_hooks(settings: &serde_json::Value) -> Option<&'static str> {
    (settings
        .get("disableAllHooks")
        .and_then(serde_json::Value::as_bool)
        == Some(true))
    .then_some("`disableAllHooks: true`")
}

/// Gemini CLI's `hooksConfig.enabled: false`.
fn gemini_hooks_off(settings: &serde_json::Value) -> Option<&'static str> {
    (settings
        .pointer("/hooksConfig/enabled")
        .and_then(serde_json::Value::as_bool)
        == Some(false))
    .then_some("`hooksConfig.enabled: false`")
}

/// No setting known to turn every hook off (Codex CLI).
fn no_hooks_off(_settings: &serde_json::Value) -> Option<&'static str> {
    None
}

/// Claude Code.
pub const CLAUDE: Profile = Profile {
    host: Host::Claude,
    name: "Claude Code",
    tool_events: &["PostToolUse"],
    end_of_turn: "Stop",
    pre_compaction: "PreCompact",
    key: "claude",
    settings_file: ".claude/settings.json",
    project_file: None,
    settings_comments: false,
    hooks_off: disable_all_hooks,
    event_aliases: &[],
    // Timeouts in seconds.
    home_var: None,
    hook_shape: shape::HookShape::Grouped,
    hook_events: &[
        ev("PostToolUse", Some("*"), 5),
        ev("Stop", None, 10),
        ev("PreCompact", None, 10),
        // Not PostCompact: a release before it refuses a settings file
        // that names it (1.0.128's schema lists its events), and the
        // summary is read from the transcript at the turn's end anyway.
        ev("SessionStart", None, 5),
        ev("SessionEnd", None, 10),
        ev("SubagentStop", None, 5),
    ],
    statusline: true,
    // Seen in 2.1.332 (tests/fixtures/claude-code-2.1.332-subagent-tmux):
    // at 2 s the running subagent's figure showed; without it, never.
    statusline_refresh: Some(5),
    // Without Git Bash (from 2.1.120): PowerShell 7 where it is installed,
    // else Windows PowerShell, with these arguments (2.1.332's own list).
    statusline_shell_windows: WindowsShell {
        programs: &[
            "C:/Program Files/PowerShell/7/pwsh.exe",
            "C:/Program Files/PowerShell/7-preview/pwsh.exe",
            "powershell",
        ],
        args: &[
            "-NoProfile",
            "-NonInteractive",
            "-ExecutionPolicy",
            "Bypass",
            "-Command",
        ],
        single_quotes: true,
    },
    // Git Bash, else PowerShell, as its statusline.
    hook_guard_windows: EXIT_0_AFTER,
    failing_hook_blocks: false,
    model_window: Some(claude::requested_window),
    statusline_context: None,
    project_vars: &["CLAUDE_PROJECT_DIR"],
    turn_start: None,
    context_start: "SessionStart",
    session_end: "SessionEnd",
    subagent_end: Some("SubagentStop"),
    pre_compaction_means_compaction: true,
    start_after_compaction: true,
    writes_calls_after_their_hooks: true,
    context_output: input::additional_context,
    steer: Some(Steer {
        // Plain stdout, under "Additional Instructions:" after the user's
        // own `/compact` text; a JSON `hookSpecificOutput` reaches nothing
        // (2.1.332, seen against a loopback mock).
        output: input::plain,
        limit: 10_000,
    }),
    post_compaction: Some("PostCompact"),
    shows_system_message: true,
    post_compaction_message: Some(input::plain),
    terminal_sequence_since: Some("2.1.141"),
    subagent_figure: Some(claude::subagent_figure),
    subagent_calls_name_own_transcript: false,
    subagent_done: None,
    subagent_of: None,
    subagent_names_its_session_parent: false,
    compact_command: "/compact",
    headless_compact: Some("claude -p {command} --resume {session}"),
    compact_takes_focus: true,
    resume: &["claude", "--resume", "{session}"],
    fresh_session: &["claude", "{prompt}"],
    window_order: "the statusline for the same session; the model the transcript asked for \
        with `[1m]` (1M); the session's own history (an automatic compaction below 967k: 200k; \
        usage past 200k: 1M); the model the transcript asked for, by its release's table; \
        interpulse.window; how the session was started (`--model`, ANTHROPIC_MODEL, the \
        settings' model); the model's own window in the release that wrote the transcript; \
        where a model can be opened to 1M (or is not in the table) and nothing says which, a \
        guess (1M assumed, both windows told to the agent from 200k's yellow on); \
        CLAUDE_CODE_DISABLE_1M_CONTEXT makes it 200k",
    heavy_tools: &[
        "Read",
        "Grep",
        "Glob",
        "Task",
        "Agent",
        "WebFetch",
        "WebSearch",
    ],
    edit_tools: &["Edit", "MultiEdit", "Write", "NotebookEdit"],
    shell_tools: &["Bash"],
    reader: claude::fact,
    states_window: false,
    forward: claude::forward,
    owns_transcript: claude::owns_transcript,
    transcript_at: claude::transcript_at,
    install_notes: claude::install_notes,
    json_documents: false,
    input_shape: None,
    own_events: &[],
    headless: claude::headless_of,
    limits: claude::limits,
    digest: claude::digest::items,
    rewrites_lines: false,
    compaction_marks: &[b"compact_boundary"],
    project_settings: claude::project_settings,
};

/// Codex CLI.
pub const CODEX: Profile = Profile {
    host: Host::Codex,
    name: "Codex CLI",
    tool_events: &["PostToolUse"],
    end_of_turn: "Stop",
    pre_compaction: "PreCompact",
    key: "codex",
    settings_file: ".codex/hooks.json",
    project_file: None,
    settings_comments: false,
    hooks_off: no_hooks_off,
    event_aliases: &[],
    // Seconds; matchers are regular expressions where `*` is invalid (no
    // matcher matches every tool); Codex clamps SessionEnd's timeout to 3 s.
    home_var: Some("CODEX_HOME"),
    hook_shape: shape::HookShape::Grouped,
    hook_events: &[
        ev("PostToolUse", None, 5),
        ev("Stop", None, 10),
        ev("PreCompact", None, 10),
        ev("SessionStart", None, 5),
        ev("SessionEnd", None, 3),
        // From 0.135; every release from 0.117 runs its other hooks alike
        // with it there (tests/fixtures/codex-0.171.0-subagent/compat-subagentstop.md).
        ev("SubagentStop", None, 5),
    ],
    statusline: false,
    statusline_refresh: None,
    statusline_shell_windows: POWERSHELL,
    // PowerShell; cmd.exe only on a Windows with neither PowerShell.
    hook_guard_windows: EXIT_0_AFTER,
    failing_hook_blocks: false,
    model_window: None,
    statusline_context: None,
    project_vars: &[],
    turn_start: None,
    context_start: "SessionStart",
    session_end: "SessionEnd",
    subagent_end: Some("SubagentStop"),
    pre_compaction_means_compaction: true,
    start_after_compaction: true,
    writes_calls_after_their_hooks: false,
    context_output: input::additional_context,
    steer: None,
    post_compaction: None,
    // Both 0.145.0 and 0.171.0 show a Stop hook's message alone after the
    // answer (`↳ Hook · …`, `• Stop (completed) says: …`), never to the model
    // (tests/fixtures/interactive-stop/).
    shows_system_message: true,
    post_compaction_message: None,
    terminal_sequence_since: None,
    subagent_figure: Some(codex::subagent_figure),
    subagent_calls_name_own_transcript: true,
    subagent_done: Some(codex::subagent_done),
    subagent_of: None,
    subagent_names_its_session_parent: false,
    compact_command: "/compact",
    headless_compact: None,
    compact_takes_focus: false,
    resume: &["codex", "resume", "{session}"],
    fresh_session: &["codex", "{prompt}"],
    window_order: "the rollout's model_context_window; config.toml's model_context_window \
        (95% of it); interpulse.window; 258,400",
    heavy_tools: &["web_search", "view_image"],
    edit_tools: &["apply_patch"],
    shell_tools: &["Bash", "shell", "exec_command", "local_shell"],
    reader: codex::fact,
    states_window: true,
    forward: codex::forward,
    owns_transcript: codex::owns_transcript,
    transcript_at: codex::transcript_at,
    install_notes: codex::install_notes,
    json_documents: false,
    input_shape: None,
    own_events: &[],
    headless: codex::headless_of,
    limits: codex::limits,
    digest: codex::digest::items,
    rewrites_lines: false,
    compaction_marks: &[],
    project_settings: project::none,
};

/// Gemini CLI.
pub const GEMINI: Profile = Profile {
    host: Host::Gemini,
    name: "Gemini CLI",
    tool_events: &["AfterTool"],
    end_of_turn: "AfterAgent",
    pre_compaction: "PreCompress",
    key: "gemini",
    settings_file: ".gemini/settings.json",
    project_file: None,
    settings_comments: true,
    hooks_off: gemini_hooks_off,
    event_aliases: &[],
    // Milliseconds. AfterAgent ends a turn (Gemini's Stop); BeforeAgent
    // brings the note back after a compression Gemini does not announce.
    home_var: None,
    hook_shape: shape::HookShape::Grouped,
    hook_events: &[
        ev("AfterTool", Some("*"), 5000),
        ev("AfterAgent", None, 10000),
        ev("BeforeAgent", None, 5000),
        ev("PreCompress", None, 10000),
        ev("SessionStart", None, 5000),
        ev("SessionEnd", None, 10000),
    ],
    statusline: false,
    statusline_refresh: None,
    statusline_shell_windows: POWERSHELL,
    // PowerShell, from 0.26.0 (its `getShellConfiguration`).
    hook_guard_windows: EXIT_0_AFTER,
    // A missing program's 127 is a block there (0.61.0's `convertPlainTextToHookOutput`).
    failing_hook_blocks: true,
    model_window: None,
    statusline_context: None,
    project_vars: &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
    turn_start: Some("BeforeAgent"),
    context_start: "SessionStart",
    session_end: "SessionEnd",
    subagent_end: None,
    pre_compaction_means_compaction: false,
    start_after_compaction: false,
    writes_calls_after_their_hooks: false,
    context_output: input::additional_context,
    steer: None,
    post_compaction: None,
    // Interactive 0.61.0 shows a hook's `systemMessage` as an info line and
    // never sends it to the model; headless prints it to stderr
    // (tests/fixtures/gemini-cli-0.61.0-compress-canary/).
    shows_system_message: true,
    post_compaction_message: None,
    terminal_sequence_since: None,
    subagent_figure: Some(gemini::subagent_figure),
    subagent_calls_name_own_transcript: false,
    subagent_done: Some(gemini::subagent_done),
    subagent_of: Some(gemini::subagent_of),
    subagent_names_its_session_parent: false,
    compact_command: "/compress",
    headless_compact: None,
    compact_takes_focus: false,
    resume: &["gemini", "--resume", "{session}"],
    fresh_session: &["gemini", "-i", "{prompt}"],
    window_order: "the model's limit (1,048,576; Gemma 4: 256,000); interpulse.window",
    heavy_tools: &[
        "read_file",
        "read_many_files",
        "glob",
        "search_file_content",
        "list_directory",
        "web_fetch",
        "google_web_search",
    ],
    edit_tools: &["write_file", "replace"],
    shell_tools: &["run_shell_command"],
    reader: gemini::fact,
    states_window: false,
    forward: gemini::forward,
    owns_transcript: gemini::owns_transcript,
    transcript_at: gemini::transcript_at,
    install_notes: gemini::install_notes,
    json_documents: true,
    input_shape: None,
    own_events: GEMINI_EVENTS,
    headless: gemini::headless_of,
    limits: gemini::limits,
    digest: gemini::digest::items,
    rewrites_lines: true,
    compaction_marks: &[],
    project_settings: gemini::project_settings,
};

/// Qwen Code.
pub const QWEN: Profile = Profile {
    host: Host::Qwen,
    name: "Qwen Code",
    // A tool that fails (a command's non-zero exit, a missing file) fires
    // PostToolUseFailure instead.
    tool_events: &["PostToolUse", "PostToolUseFailure"],
    end_of_turn: "Stop",
    pre_compaction: "PreCompact",
    key: "qwen",
    settings_file: ".qwen/settings.json",
    project_file: None,
    settings_comments: true,
    hooks_off: disable_all_hooks,
    event_aliases: &[],
    home_var: Some("QWEN_HOME"),
    // Seconds from 0.23.4, milliseconds before; a value of 1000 or more is
    // milliseconds in both.
    hook_shape: shape::HookShape::Grouped,
    hook_events: &[
        ev("PostToolUse", Some("*"), 5000),
        ev("PostToolUseFailure", Some("*"), 5000),
        ev("Stop", None, 10000),
        ev("PreCompact", None, 10000),
        ev("PostCompact", None, 5000),
        ev("SessionStart", None, 5000),
        ev("SessionEnd", None, 10000),
        // Both releases seen (0.21.2, 0.24.4) fire it with the subagent's
        // id (tests/fixtures/qwen-copilot-subagents).
        ev("SubagentStop", None, 5000),
    ],
    statusline: false,
    statusline_refresh: None,
    // `ui.statusLine` in %ComSpec%, where Git Bash did not start it.
    statusline_shell_windows: CMD,
    // %ComSpec% (cmd.exe), or bash where Git Bash started it (0.21.2's
    // and 0.24.4's `getShellConfiguration`).
    hook_guard_windows: OR_EXIT_0,
    // A missing program's 127 is a block there (0.21.2's `convertPlainTextToHookOutput`).
    failing_hook_blocks: true,
    model_window: None,
    statusline_context: None,
    project_vars: &["QWEN_PROJECT_DIR"],
    turn_start: None,
    context_start: "SessionStart",
    session_end: "SessionEnd",
    subagent_end: Some("SubagentStop"),
    pre_compaction_means_compaction: true,
    start_after_compaction: true,
    writes_calls_after_their_hooks: false,
    context_output: input::additional_context,
    steer: Some(Steer {
        // Only the JSON context (plain stdout is a UI message); `<` and `>`
        // arrive escaped (0.24.4).
        output: input::additional_context,
        limit: 4_000,
    }),
    post_compaction: Some("PostCompact"),
    shows_system_message: false,
    post_compaction_message: None,
    terminal_sequence_since: None,
    subagent_figure: Some(qwen::subagent_figure),
    subagent_calls_name_own_transcript: false,
    subagent_done: None,
    subagent_of: Some(qwen::subagent_of),
    subagent_names_its_session_parent: false,
    compact_command: "/compress",
    headless_compact: None,
    compact_takes_focus: true,
    resume: &["qwen", "--resume", "{session}"],
    fresh_session: &["qwen", "-i", "{prompt}"],
    window_order: "the Stop input's context_limit (Qwen's own, when it holds the usage \
        stated with it); model.generationConfig.contextWindowSize in Qwen's settings; \
        interpulse.window; the session's own history (a compression at its limit below 850k: \
        200,000; usage past 200k: 1M); 1,000,000 assumed (200,000 possible, both told) until \
        one of these says",
    heavy_tools: &[
        "read_file",
        "glob",
        "grep_search",
        "list_directory",
        "web_fetch",
    ],
    edit_tools: &["write_file", "edit", "notebook_edit"],
    shell_tools: &["run_shell_command"],
    reader: qwen::fact,
    states_window: false,
    forward: qwen::forward,
    owns_transcript: qwen::owns_transcript,
    transcript_at: qwen::transcript_at,
    install_notes: qwen::install_notes,
    json_documents: false,
    input_shape: None,
    own_events: &[],
    headless: qwen::headless_of,
    limits: qwen::limits,
    digest: qwen::digest::items,
    rewrites_lines: false,
    compaction_marks: &[b"chat_compression"],
    project_settings: qwen::project_settings,
};

/// GitHub Copilot CLI.
pub const COPILOT: Profile = Profile {
    host: Host::Copilot,
    name: "GitHub Copilot CLI",
    // A tool that fails (a missing file; not a command's non-zero exit)
    // fires PostToolUseFailure instead.
    tool_events: &["PostToolUse", "PostToolUseFailure"],
    end_of_turn: "Stop",
    pre_compaction: "PreCompact",
    key: "copilot",
    settings_file: ".copilot/settings.json",
    project_file: Some(".github/hooks/interband.json"),
    settings_comments: true,
    hooks_off: disable_all_hooks,
    event_aliases: &[
        ("postToolUse", "PostToolUse"),
        ("postToolUseFailure", "PostToolUseFailure"),
        ("agentStop", "Stop"),
        ("preCompact", "PreCompact"),
        ("sessionStart", "SessionStart"),
        ("sessionEnd", "SessionEnd"),
    ],
    home_var: Some("COPILOT_HOME"),
    // PascalCase keys, whose inputs are snake_case like Claude Code's; each
    // hook `{type, bash, timeoutSec}`, in seconds. On Windows Copilot runs a
    // hook's `powershell` (pwsh 7, else Windows PowerShell) and never its
    // `bash` (1.0.102's runtime, docs/hosts.md "Platforms").
    hook_shape: shape::HookShape::Flat {
        command: if cfg!(windows) { "powershell" } else { "bash" },
        timeout: "timeoutSec",
        systems: &["bash", "powershell"],
    },
    hook_events: &[
        ev("PostToolUse", None, 5),
        ev("PostToolUseFailure", None, 5),
        ev("Stop", None, 10),
        ev("PreCompact", None, 10),
        ev("SessionStart", None, 5),
        ev("SessionEnd", None, 10),
    ],
    install_notes: copilot::install_notes,
    statusline: true,
    statusline_refresh: None,
    statusline_shell_windows: CMD,
    // Its `powershell` field, in PowerShell 7 or Windows PowerShell.
    hook_guard_windows: EXIT_0_AFTER,
    failing_hook_blocks: false,
    model_window: None,
    statusline_context: Some(copilot::statusline_context),
    project_vars: &[],
    turn_start: None,
    context_start: "SessionStart",
    session_end: "SessionEnd",
    subagent_end: None,
    pre_compaction_means_compaction: true,
    // No hook after its compaction: the note comes back with the next tool call.
    start_after_compaction: false,
    writes_calls_after_their_hooks: false,
    // Only a top-level additionalContext reaches the model.
    context_output: input::top_level_context,
    steer: None,
    post_compaction: None,
    shows_system_message: false,
    post_compaction_message: None,
    terminal_sequence_since: None,
    subagent_figure: Some(copilot::subagent_figure),
    subagent_calls_name_own_transcript: false,
    subagent_done: None,
    subagent_of: None,
    subagent_names_its_session_parent: true,
    compact_command: "/compact",
    headless_compact: None,
    compact_takes_focus: true,
    resume: &["copilot", "--resume", "{session}"],
    fresh_session: &["copilot", "-i", "{prompt}"],
    window_order: "the statusline's displayed_context_limit; the session log's maxPromptTokens \
        (each call's) or a compaction's tokenLimit; COPILOT_PROVIDER_MAX_PROMPT_TOKENS; \
        interpulse.window; the session's own history (a threshold compaction below 102k: 64,000; \
        usage past 64k: 128,000); 128,000 assumed (64,000 possible, both told) until one of \
        these says",
    heavy_tools: &["Read", "Grep", "Glob", "view", "grep", "glob", "web_fetch"],
    edit_tools: &["Edit", "Write", "edit", "create"],
    shell_tools: &["Bash", "bash"],
    reader: copilot::fact,
    states_window: false,
    forward: copilot::forward,
    owns_transcript: copilot::owns_transcript,
    transcript_at: copilot::transcript_at,
    json_documents: false,
    input_shape: Some(copilot::input_shape),
    own_events: &[],
    headless: copilot::headless_of,
    limits: copilot::limits,
    digest: copilot::digest::items,
    rewrites_lines: false,
    compaction_marks: &[b"session.compaction_complete"],
    project_settings: project::none,
};

/// Events only Gemini CLI sends.
const GEMINI_EVENTS: &[&str] = &[
    "AfterTool",
    "BeforeTool",
    "AfterAgent",
    "BeforeAgent",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "Notification",
];

impl Host {
    /// The host whose profile's [`Profile::key`] is `key`.
    ///
    /// ```
    /// use interband_hosts::Host;
    /// assert_eq!(Host::from_key("codex"), Some(Host::Codex));
    /// assert_eq!(Host::from_key("Codex CLI"), None);
    /// ```
    pub fn from_key(key: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|h| h.profile().key == key)
    }

    /// The session's project folder: the first of the host's
    /// [`Profile::project_vars`] that is set, else the input's `cwd`. The
    /// one rule every part of interband uses (another host's variable,
    /// inherited from a shell it was started in, is never read).
    ///
    /// ```
    /// use interband_hosts::Host;
    /// let env = |v: &str| (v == "CLAUDE_PROJECT_DIR").then(|| "/work/claude".to_owned());
    /// let cwd = Some("/work/here");
    /// assert_eq!(Host::Claude.project_dir(cwd, &env).unwrap().to_str(), Some("/work/claude"));
    /// assert_eq!(Host::Codex.project_dir(cwd, &env).unwrap().to_str(), Some("/work/here"));
    /// ```
    pub fn project_dir(
        self,
        cwd: Option<&str>,
        env: &dyn interband::settings::Env,
    ) -> Option<std::path::PathBuf> {
        self.profile()
            .project_vars
            .iter()
            .find_map(|v| env.var(v).filter(|p| !p.trim().is_empty()))
            .or_else(|| cwd.filter(|c| !c.is_empty()).map(str::to_owned))
            .map(std::path::PathBuf::from)
    }

    /// Every host.
    pub const ALL: [Host; 5] = [
        Host::Claude,
        Host::Codex,
        Host::Gemini,
        Host::Qwen,
        Host::Copilot,
    ];

    /// Its profile.
    pub fn profile(self) -> &'static Profile {
        match self {
            Host::Claude => &CLAUDE,
            Host::Codex => &CODEX,
            Host::Gemini => &GEMINI,
            Host::Qwen => &QWEN,
            Host::Copilot => &COPILOT,
        }
    }

    /// Its transcript's line reader (what each line means for the context).
    pub fn reader(self) -> usage::LineReader {
        self.profile().reader
    }

    /// Whether its transcript states the window and the model on lines of
    /// their own ([`Profile::states_window`]).
    pub fn states_window(self) -> bool {
        self.profile().states_window
    }

    /// A transcript line read forward (see [`forward`]): what it says of
    /// the context, what it shows happening, and its time. `offset` is just
    /// past the line.
    pub fn forward(self, line: &[u8], offset: u64) -> forward::Seen {
        (self.profile().forward)(line, offset)
    }

    /// Folds a whole transcript forward, line by line, into its current
    /// figure: what [`tail::read_tail`] finds from the end.
    pub fn read_forward(self, transcript: &[u8]) -> usage::Reading {
        let reader = self.reader();
        let mut r = usage::Reading::default();
        let mut offset = 0u64;
        for line in transcript.split_inclusive(|&b| b == b'\n') {
            offset += line.len() as u64;
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            if let Some(fact) = reader(body, offset) {
                r.apply(fact, offset);
            }
        }
        r
    }

    /// The host that sent a hook input, when the command line did not name
    /// it: by its event name (an event only one host sends), then its
    /// transcript's place and name ([`Profile::owns_transcript`]), then
    /// fields only one host sends (`turn_id`: Codex; a top-level
    /// `timestamp`: Gemini). Claude Code otherwise.
    pub fn detect(
        event: &str,
        transcript: Option<&str>,
        has_turn_id: bool,
        has_timestamp: bool,
    ) -> Host {
        if let Some(host) = Host::ALL
            .into_iter()
            .find(|h| h.profile().own_events.contains(&event))
        {
            return host;
        }
        if let Some(host) = transcript.and_then(Host::of_transcript) {
            return host;
        }
        if has_turn_id {
            Host::Codex
        } else if has_timestamp {
            Host::Gemini
        } else {
            Host::Claude
        }
    }

    /// How a transcript at `path` is laid out ([`Profile::json_documents`]).
    pub fn layout(self, path: &std::path::Path) -> tail::Layout {
        let document = self.profile().json_documents
            && path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if document {
            tail::Layout::Document
        } else {
            tail::Layout::Lines
        }
    }

    /// The host a transcript's path says, when it says.
    pub fn of_transcript(path: &str) -> Option<Host> {
        let path = std::path::Path::new(path);
        Host::ALL
            .into_iter()
            .find(|h| (h.profile().owns_transcript)(path))
    }

    /// Why nobody is at the keyboard of the session that runs this hook
    /// (a headless run: `claude -p`, `codex exec`, `gemini -p`), when the
    /// host lets a hook tell; `None` for an interactive session, and where
    /// nothing tells. Claude Code says it in its hooks' environment, Codex
    /// in the rollout's first line, Gemini only in its process's command
    /// line (see each host's `headless`).
    pub fn headless(
        self,
        transcript: Option<&std::path::Path>,
        env: &dyn interband::settings::Env,
    ) -> Option<String> {
        (self.profile().headless)(transcript, env)
    }

    /// Its short name, the profile's key: `claude`, `codex`, `gemini`.
    pub fn as_str(self) -> &'static str {
        self.profile().key
    }
}

/// A window and the point where the host compacts it, tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The window.
    pub window: u64,
    /// Where the host compacts (summarizes) the context.
    pub compact_at: u64,
    /// Where the window came from.
    pub source: interband::context::WindowSource,
    /// When the window is a guess, the smaller one the session may have.
    pub other: Option<u64>,
    /// Where the host would compact that smaller window.
    pub other_compact_at: Option<u64>,
}

impl Limits {
    /// The figures of `used` tokens (from `source`) in these limits.
    pub fn figures(
        &self,
        used: u64,
        source: interband::context::Source,
    ) -> interband::context::Figures {
        interband::context::Figures {
            used_tokens: used,
            window: self.window,
            autocompact_at: self.compact_at,
            source,
            window_source: Some(self.source),
            window_other: self.other,
            compact_at_other: self.other_compact_at,
        }
    }
}

/// What a session's window and compaction point are known from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Known<'a> {
    /// The window the host itself states for this session, and where: the
    /// hook input's, the statusline's (Claude Code).
    pub stated: Option<(u64, interband::context::WindowSource)>,
    /// The window the session's transcript says (Claude Code's requested
    /// model's, Codex's `model_context_window`, Gemini's model's limit).
    pub transcript: Option<u64>,
    /// The user's `[interpulse] window` (0: unset).
    pub configured: u64,
    /// The model of the latest response, when known.
    pub model: Option<&'a str>,
    /// Tokens in context now.
    pub used: u64,
    /// The project folder (Gemini reads its `.gemini/settings.json`, Claude
    /// Code its settings' `model`).
    pub project: Option<&'a std::path::Path>,
    /// What the session's own history showed of the model in use
    /// ([`history`]): it settles a window nothing states.
    pub history: Option<&'a history::Evidence>,
    /// The host's release that wrote the transcript, when it says (Claude
    /// Code's `version`): its model table is that release's.
    pub version: Option<&'a str>,
}

impl Host {
    /// The window and compaction point of a session, by the host's own
    /// rules, and where the window came from.
    ///
    /// - Claude Code: see [`claude`]'s module documentation (the
    ///   statusline, the requested model, the settings, how the session was
    ///   started, the model's own window); autocompact at the window less
    ///   its output reserve and buffer, or `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`,
    ///   or never (`DISABLE_AUTO_COMPACT`).
    /// - Codex CLI: the rollout's effective window, else `config.toml`'s
    ///   (`$CODEX_HOME`, else `~/.codex`), else configured, or 258,400;
    ///   compaction at `model_auto_compact_token_limit` or a share of it.
    /// - Gemini CLI: the model's limit (1,048,576), else configured;
    ///   compression at `compressionThreshold` × the limit (the project's
    ///   setting only where Gemini trusts the folder).
    pub fn limits(self, k: &Known, env: &dyn interband::settings::Env) -> Limits {
        (self.profile().limits)(k, env)
    }
}

/// A project folder as Claude Code and Qwen Code name its folder of
/// transcripts: every character that is not a letter or digit becomes `-`.
///
/// ```
/// assert_eq!(interband_hosts::project_slug(std::path::Path::new("/home/dev/my_work.2")), "-home-dev-my-work-2");
/// ```
pub fn project_slug(path: &std::path::Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A variable of the environment naming a folder, when it is set.
pub(crate) fn env_path(
    env: &dyn interband::settings::Env,
    var: &str,
) -> Option<std::path::PathBuf> {
    env.var(var)
        .filter(|v| !v.trim().is_empty())
        .map(std::path::PathBuf::from)
}

impl Profile {
    /// True for a tool whose output is typically large.
    pub fn is_heavy(&self, tool: &str) -> bool {
        self.heavy_tools.contains(&tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(host: &str, name: &str) -> serde_json::Value {
        let dir = match host {
            "claude" => "claude-code-2.1.332",
            "codex" => "codex-0.171.0",
            _ => "gemini-cli-0.61.0",
        };
        let path = format!(
            "{}/../tests/fixtures/{dir}/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
            .unwrap()
    }

    fn detect(v: &serde_json::Value) -> Host {
        Host::detect(
            v["hook_event_name"].as_str().unwrap_or(""),
            v["transcript_path"].as_str(),
            v.get("turn_id").is_some(),
            v["timestamp"].is_string(),
        )
    }

    #[test]
    fn every_captured_input_is_told_apart() {
        for name in [
            "PostToolUse.input.json",
            "Stop.input.json",
            "PreCompact.auto.input.json",
            "SessionStart.compact.input.json",
            "SessionEnd.input.json",
            "statusLine.input.json",
        ] {
            assert_eq!(detect(&fixture("claude", name)), Host::Claude, "{name}");
        }
        for name in [
            "PostToolUse.input.json",
            "PostToolUse.ephemeral.input.json",
            "Stop.input.json",
            "PreCompact.auto.input.json",
            "SessionStart.compact.input.json",
            "SessionStart.startup.input.json",
            "SessionEnd.input.json",
        ] {
            assert_eq!(detect(&fixture("codex", name)), Host::Codex, "{name}");
        }
        for name in [
            "AfterTool.run_shell_command.input.json",
            "PreCompress.auto.input.json",
            "SessionStart.startup.input.json",
            "SessionEnd.exit.input.json",
        ] {
            assert_eq!(detect(&fixture("gemini", name)), Host::Gemini, "{name}");
        }
    }
}
