//! The compaction trigger: when a session reaches red, once per compaction
//! cycle, make sure a fresh memory note exists, then get a compaction started
//! by the configured strategy.

use std::path::Path;
use std::time::Duration;

use interband::Bus;
use interband::lock::{DEFAULT_WAIT, update_json};
use interband::paths::safe_key;
use interband::payloads::{Checkpoint, CompactionRequested, Level, MemoryNote, Payload, Pressure};
use serde::{Deserialize, Serialize};

use crate::intermem::{self, SessionInfo, Trigger};
use crate::{Error, now_secs};

/// The channel announcing a requested compaction (the statusline shows it as pending).
pub const PENDING: (&str, &str) = (CompactionRequested::NAMESPACE, CompactionRequested::CHANNEL);

/// How to get a compaction started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// At `Stop`, block once with a reason that asks the agent to tell the user to run `/compact`.
    Advise,
    /// At `Stop`, type `/compact <focus>` into the session's tmux pane.
    Tmux,
    /// Run a command (argv) with the session and note in its environment.
    Command,
    /// Do nothing.
    Off,
}

/// The trigger's settings (`[compact]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// What to do.
    pub strategy: Strategy,
    /// The level that triggers it.
    pub level: Level,
    /// Or a raw used percentage (0: use the level).
    pub used_pct: f64,
    /// For `command`: the program and its arguments.
    pub command: Vec<String>,
    /// For `command`: seconds it may run (from `interband watch`; a `Stop`
    /// hook waits at most [`STOP_WAIT`] and leaves it running after that).
    pub command_timeout_secs: f64,
    /// Also advise by blocking the stop of a headless run (`claude -p`,
    /// `codex exec`, `gemini -p`): the agent's last answer then relays the
    /// advice, at the cost of one more model round. Off by default: nobody
    /// is there to type the command, so the note is written and the advice
    /// goes to whoever ran the session, at no model cost.
    pub advise_headless: bool,
}

impl Settings {
    /// What the agent is told, with a warning at `level`, when this
    /// trigger will compact the session at the turn's end: a strategy that
    /// runs a compaction (`tmux`, `command`) at a level it triggers on.
    /// `None` otherwise: `advise` leaves it to the user, so nothing says a
    /// compaction follows.
    ///
    /// ```
    /// use interband_consumers::compact::{Settings, Strategy};
    /// use interband::payloads::Level;
    /// assert_eq!(Settings::default().compaction_follows(Level::Red), None);
    /// let tmux = Settings { strategy: Strategy::Tmux, ..Settings::default() };
    /// assert!(tmux.compaction_follows(Level::Red).unwrap().contains("a compaction follows"));
    /// ```
    pub fn compaction_follows(&self, level: Level) -> Option<String> {
        let how = match self.strategy {
            Strategy::Tmux => "types `/compact` into the session's terminal",
            Strategy::Command => "runs your compaction command",
            Strategy::Advise | Strategy::Off => return None,
        };
        (self.used_pct == 0.0 && level >= self.level).then(|| {
            format!(
                "When this turn ends, a compaction follows: interband {how} ([compact] strategy)."
            )
        })
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            strategy: Strategy::Advise,
            level: Level::Red,
            used_pct: 0.0,
            command: vec![],
            command_timeout_secs: 30.0,
            advise_headless: false,
        }
    }
}

/// Per-session trigger state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CycleState {
    /// Already acted in this compaction cycle.
    pub fired: bool,
    /// The tmux pane recorded at `SessionStart`.
    pub pane: Option<String>,
    /// The note last injected at `SessionStart`, so a resume does not inject it again.
    pub injected: Option<String>,
    /// When a note was last injected (Unix seconds): the journal since
    /// then comes back with the next one.
    pub injected_at: f64,
    /// What failed when `interband watch` acted in this cycle: the next
    /// `Stop` advises instead, once.
    pub watch_failure: Option<String>,
    /// The producer's context cycle whose note was last brought back, on a
    /// host with no start event after a compaction (Gemini CLI). `None` in a
    /// state written before it was kept: then a note already brought back
    /// (`injected`) counts as this cycle's.
    #[serde(rename = "reinjected_cycle")]
    pub restored_cycle: Option<u64>,
    /// A hook bringing a cycle's note back, and since when (Unix seconds):
    /// the hooks of parallel tool calls leave it to that one, unless it died
    /// (it has not recorded the cycle after [`RESTORE_LEASE_SECS`]).
    #[serde(rename = "reinjecting")]
    pub restoring: Option<(u64, f64)>,
}

/// How long a hook bringing a note back has before another may do it.
pub const RESTORE_LEASE_SECS: f64 = 10.0;

/// The trigger's state folder, `<root>/.state/compact/`.
fn state_dir(bus: &Bus) -> Result<interband::fsio::Dir, interband::Error> {
    bus.dir(&[".state", "compact"], true)
}

/// A session's cycle state as it is now, without the lock (for a look that
/// writes nothing); anything unreadable reads as the default.
pub fn read_state(bus: &Bus, session: &str) -> CycleState {
    let name = format!("{}.json", safe_key(session));
    bus.dir(&[".state", "compact"], false)
        .map(|dir| interband::lock::read_json_or_default::<CycleState>(&dir, &name))
        .unwrap_or_default()
}

/// Reads or changes a session's cycle state under its lock.
pub fn with_state<R>(
    bus: &Bus,
    session: &str,
    f: impl FnOnce(&mut CycleState) -> R,
) -> Result<R, Error> {
    let name = format!("{}.json", safe_key(session));
    Ok(update_json(&state_dir(bus)?, &name, DEFAULT_WAIT, f)?)
}

/// A new compaction cycle (after `SessionStart` compact, resume or clear): fire again when due.
pub fn new_cycle(bus: &Bus, session: &str) -> Result<(), Error> {
    with_state(bus, session, |s| {
        s.fired = false;
        s.watch_failure = None;
    })?;
    bus.remove(PENDING.0, PENDING.1, session)?;
    Ok(())
}

/// True when the session's published pressure has reached the trigger point.
pub fn due(bus: &Bus, session: &str, settings: &Settings) -> bool {
    let Ok(p) = bus.read_typed::<Pressure>(session) else {
        return false;
    };
    let p = p.payload;
    if settings.used_pct > 0.0 {
        return p
            .context_raw
            .is_some_and(|raw| 100.0 - raw >= settings.used_pct);
    }
    p.level >= settings.level
}

/// What the trigger did.
#[derive(Debug, Clone, PartialEq)]
pub enum Acted {
    /// Not due, already fired, or off.
    Nothing,
    /// Advise compacting: the host blocks the stop with [`Advice::agent`],
    /// or, where nobody is at the keyboard, the person who ran the session
    /// reads [`Advice::person`].
    Advise(Advice),
    /// Sent `/compact` to a tmux pane.
    Tmux(String),
    /// Ran the command.
    Command,
}

/// Advice to compact, in the words of whoever relays it.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// For the agent, to tell the user (the reason of a blocked stop).
    pub agent: String,
    /// For the person who ran a headless session, directly.
    pub person: String,
    /// For the person at the keyboard of an interactive session, shown
    /// beside the blocked stop: interband's own words, so the advice does
    /// not read as a hook failing.
    pub user: String,
}

impl Advice {
    /// The advice for a session at `info`, naming what went wrong on the
    /// way (`why`: " and typing … failed", or empty), the note saved (or why
    /// none could be), and the command with its focus.
    fn new(info: &SessionInfo, why: &str, note: Result<&str, &Error>, focus: &str) -> Advice {
        let profile = info.host.profile();
        let command = profile.compact_command;
        // The focus is the person's words, without the sentence's own end
        // (a request "…then say done." is no command "…say done..").
        // A backtick of theirs would end the command's mark early.
        let focus = focus.replace('`', "'");
        let focus = focus
            .trim()
            .trim_end_matches(['.', '!', '?', ';', ':', ',']);
        let with_focus = if focus.is_empty() || !profile.compact_takes_focus {
            command.to_owned()
        } else {
            format!("{command} {focus}")
        };
        let handoff = format!(
            "interband handoff --session {} --run",
            shell_words::quote(&info.session)
        );
        // Plain text, for a terminal: the command as a shell reads it (the
        // focus is the user's words, quoted so they are never run).
        let how = match profile.headless_compact {
            Some(t) => format!(
                "`{}` (or `{with_focus}` in the session)",
                t.replace("{session}", &shell_words::quote(&info.session))
                    .replace("{command}", &shell_words::quote(&with_focus))
            ),
            None => {
                let resume: Vec<String> = profile
                    .resume
                    .iter()
                    .map(|w| w.replace("{session}", &info.session))
                    .collect();
                format!(
                    "resume it (`{}`) and run `{with_focus}`",
                    shell_words::join(&resume)
                )
            }
        };
        match note {
            Ok(path) => Advice {
                agent: format!(
                    "Context is nearly full{why}. A memory note of this session was saved to {path}; it comes back after a compaction. The turn's end is a good moment for the user to run `{with_focus}`, or to start a fresh session from the note (`{handoff}`): let them know."
                ),
                person: for_terminal(format!(
                    "interband: session {}'s context is nearly full{why}. A memory note of it was saved to {path}. To compact it before its next turn, {how}; or start a fresh session from the note: `{handoff}`.",
                    info.session
                )),
                user: for_terminal(format!(
                    "interband: the context is nearly full{why}. A memory note was saved to {path}. The turn has ended: a good moment to run `{with_focus}` (the note comes back after it), or to start a fresh session from the note: `{handoff}`."
                )),
            },
            Err(e) => Advice {
                agent: format!(
                    "Context is nearly full, and interband could not save a memory note of this session ({e}). The turn's end is a good moment for the user to run `{command}`: let them know."
                ),
                person: for_terminal(format!(
                    "interband: session {}'s context is nearly full, and no memory note of it could be saved ({e}). To compact it before its next turn, {how}.",
                    info.session
                )),
                user: for_terminal(format!(
                    "interband: the context is nearly full, and no memory note could be saved ({e}). The turn has ended: a good moment to run `{command}`."
                )),
            },
        }
    }
}

/// Text a host prints to a terminal as it is (Gemini on stderr): the
/// session's words in it (its id, the focus) never carry a control character.
fn for_terminal(text: String) -> String {
    interband::text::terminal(&text).into_owned()
}

/// The longest a `Stop` hook waits for the compaction command (the hook's
/// registered timeout is 10 s).
pub const STOP_WAIT: Duration = Duration::from_secs(5);

/// Where the trigger runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// The host's `Stop` hook; `hook_active` when a block already happened.
    Stop {
        /// The input's `stop_hook_active`.
        hook_active: bool,
        /// The level the producer found at this turn's end and could not
        /// publish (a read-only or full root): due by it too.
        level: Option<Level>,
    },
    /// `interband watch`: no host to answer, so a failure leaves the cycle to the next `Stop`.
    Watch,
}

/// Acts once per cycle when due; at `Stop`, never when a block already happened.
/// When the tmux pane or the command fails, at `Stop` it advises instead,
/// naming the failure; in watch mode it returns the error and the next
/// `Stop` advises, naming it.
///
/// At `Stop` the user always hears that it is time to compact: when no note
/// can be saved, the advice says so and why; when the root cannot remember
/// that the cycle fired (a full disk, a read-only root), each `Stop` advises
/// again; what cannot be announced on the bus goes to `problem`.
pub fn act(
    bus: &Bus,
    info: &SessionInfo,
    at: At,
    settings: &Settings,
    notes: &intermem::Settings,
    home: Option<&Path>,
    problem: &dyn Fn(&str),
) -> Result<Acted, Error> {
    let (hook_active, level) = match at {
        At::Stop { hook_active, level } => (hook_active, level),
        At::Watch => (false, None),
    };
    let due = due(bus, &info.session, settings)
        || level.is_some_and(|l| settings.used_pct <= 0.0 && l >= settings.level);
    if settings.strategy == Strategy::Off || hook_active || !due {
        return Ok(Acted::Nothing);
    }
    // Once per cycle; but when the watch's attempt failed, the next Stop
    // (a host to answer at last) advises.
    let at_stop = matches!(at, At::Stop { .. });
    // Already acted in this cycle, with nothing left to say: seen without
    // the lock, so a turn's end with nothing new writes nothing.
    let known = read_state(bus, &info.session);
    if known.fired && (!at_stop || known.watch_failure.is_none()) {
        return Ok(Acted::Nothing);
    }
    let fired = with_state(bus, &info.session, |s| {
        let already = std::mem::replace(&mut s.fired, true);
        (
            already,
            if at_stop {
                s.watch_failure.take()
            } else {
                None
            },
        )
    });
    let (already, watch_failure) = match fired {
        Ok(fired) => fired,
        // A root that cannot remember: advise all the same.
        Err(e) if at_stop => {
            problem(&e.to_string());
            (false, None)
        }
        Err(e) => return Err(e),
    };
    if already && watch_failure.is_none() {
        return Ok(Acted::Nothing);
    }
    // Whatever fails on the way, the user still hears that it is time to compact.
    let command = info.host.profile().compact_command;
    let note = match fresh_note(bus, info, notes, home) {
        Ok(note) => note,
        Err(e) if at_stop => {
            problem(&e.to_string());
            let acted = Acted::Advise(Advice::new(info, "", Err(&e), ""));
            // (Nothing is announced: an announcement names its note.)
            return Ok(acted);
        }
        Err(e) => {
            let why = format!(" and no memory note could be saved ({e})");
            with_state(bus, &info.session, |s| s.watch_failure = Some(why))?;
            return Err(e);
        }
    };
    let focus = focus(&note.1);
    let path = &note.0.path;
    let advise = |why: &str| Acted::Advise(Advice::new(info, why, Ok(path), &focus));
    let failed = |e: Error, why: String| match at {
        At::Stop { .. } => Ok(advise(&why)),
        At::Watch => {
            with_state(bus, &info.session, |s| s.watch_failure = Some(why))?;
            Err(e)
        }
    };
    let acted = match settings.strategy {
        _ if already => advise(&watch_failure.unwrap_or_default()),
        Strategy::Advise | Strategy::Off => advise(""),
        Strategy::Tmux => match with_state(bus, &info.session, |s| s.pane.clone())? {
            Some(pane) => match type_compact(&pane, command, &focus) {
                Ok(()) => Acted::Tmux(pane),
                Err(e) => {
                    let why = format!(" and typing /compact into tmux pane {pane} failed ({e})");
                    failed(e, why)?
                }
            },
            None => failed(
                Error::Command {
                    command: "tmux".into(),
                    reason: "no pane was recorded at SessionStart".into(),
                },
                " and no tmux pane was recorded for this session".into(),
            )?,
        },
        Strategy::Command => {
            let env = [
                ("INTERBAND_SESSION", info.session.clone()),
                ("INTERBAND_NOTE", path.clone()),
                ("INTERBAND_FOCUS", focus.clone()),
            ];
            let timeout = Duration::try_from_secs_f64(settings.command_timeout_secs)
                .unwrap_or(Duration::ZERO)
                .min(Duration::from_secs(86_400));
            // At Stop the hook must answer within the host's timeout: a quick
            // failure is still caught, a long command is left to finish.
            let (wait, overrun) = match at {
                At::Stop { .. } => (timeout.min(STOP_WAIT), Overrun::LeaveRunning),
                At::Watch => (timeout, Overrun::Kill),
            };
            match run(&settings.command, &env, wait, overrun) {
                Ok(()) => Acted::Command,
                Err(e) => {
                    let why = format!(" and the compaction command failed ({e})");
                    failed(e, why)?
                }
            }
        }
    };
    if at_stop {
        announce(bus, info, &acted, path, focus, problem);
    } else {
        bus.publish_typed(&info.session, &info.session, &request(&acted, path, focus))?;
    }
    Ok(acted)
}

/// What the trigger did, as announced on `compact/pending/<session>`.
fn request(acted: &Acted, note: &str, focus: String) -> CompactionRequested {
    let done = match acted {
        Acted::Tmux(_) => Strategy::Tmux,
        Acted::Command => Strategy::Command,
        _ => Strategy::Advise,
    };
    CompactionRequested {
        strategy: serde_json::to_value(done)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        note: note.to_owned(),
        focus,
        ts: now_secs(),
    }
}

/// Announces what the trigger did at `Stop`, where a failure to announce
/// must not cost the host its answer: it goes to `problem`.
fn announce(
    bus: &Bus,
    info: &SessionInfo,
    acted: &Acted,
    note: &str,
    focus: String,
    problem: &dyn Fn(&str),
) {
    if let Err(e) = bus.publish_typed(&info.session, &info.session, &request(acted, note, focus)) {
        problem(&e.to_string());
    }
}

/// The latest note if it is newer than the last checkpoint request, else a new one.
fn fresh_note(
    bus: &Bus,
    info: &SessionInfo,
    notes: &intermem::Settings,
    home: Option<&Path>,
) -> Result<(MemoryNote, String), Error> {
    let checkpoint_ts = bus
        .read_typed::<Checkpoint>(&info.session)
        .map_or(0.0, |e| e.payload.ts);
    if let Some((note, text)) =
        intermem::latest_note(bus, &info.session).filter(|(n, _)| n.ts >= checkpoint_ts)
    {
        return Ok((note, text));
    }
    let trigger = Trigger {
        name: "compaction".into(),
        context_usable: None,
        figure: None,
        id: None,
        again: false,
    };
    intermem::write_note(bus, info, &trigger, notes, home)?;
    intermem::latest_note(bus, &info.session).ok_or_else(|| Error::Command {
        command: "intermem".into(),
        reason: "the note just written cannot be read back".into(),
    })
}

/// A short focus for `/compact`, from the session's task: the todo in
/// progress, else the latest prompt when it says something (not a bare
/// follow-up such as "continue" or "yes"), else the first prompt.
fn focus(note: &str) -> String {
    fn section<'a>(note: &'a str, heading: &'a str) -> impl Iterator<Item = &'a str> {
        note.lines()
            .skip_while(move |l| !l.starts_with(heading))
            .skip(1)
            .take_while(|l| !l.starts_with("## "))
    }
    let quoted = |heading: &str| {
        section(note, heading)
            .find(|l| l.starts_with("> "))
            .map(|l| l.trim_start_matches("> ").trim().to_owned())
    };
    let doing = section(note, "## Todo list")
        .find_map(|l| l.strip_prefix("- [~] "))
        .map(|t| t.trim().trim_matches('`').to_owned());
    let latest = quoted("## Latest prompt").filter(|p| !is_bare_follow_up(p));
    let line = doing
        .or(latest)
        .or_else(|| quoted("## Task"))
        .unwrap_or_default();
    let one: String = line.chars().filter(|c| !c.is_control()).take(120).collect();
    if one.is_empty() {
        "keep the task, todos and changed files".into()
    } else {
        format!("keep: {one}")
    }
}

/// A prompt that only moves the session along ("continue", "yes, go on"):
/// it says nothing of the task.
pub(crate) fn is_bare_follow_up(prompt: &str) -> bool {
    const BARE: &[&str] = &[
        "continue",
        "go on",
        "keep going",
        "go ahead",
        "proceed",
        "next",
        "yes",
        "y",
        "ok",
        "okay",
        "sure",
        "do it",
        "please continue",
        "continue please",
        "carry on",
        "resume",
        "go",
        "sounds good",
        "thanks",
        "thank you",
        "yes please",
        "yes, go on",
        "yep",
        "lgtm",
    ];
    let p: String = prompt
        .trim()
        .trim_end_matches(['.', '!', '?'])
        .to_lowercase();
    BARE.contains(&p.as_str())
}

/// True for the name tmux gives the agent as a pane's foreground program:
/// `claude`, `codex`, `gemini`, or a version number (Claude Code's native
/// binary is named after its version). Not `node`: a Node REPL would run
/// what is typed as JavaScript (Gemini CLI runs as `node`: it gets advice).
///
/// ```
/// use interband_consumers::compact::is_agent;
/// assert!(is_agent("claude") && is_agent("2.1.332") && is_agent("codex"));
/// assert!(!is_agent("node") && !is_agent("bash") && !is_agent("vim") && !is_agent(""));
/// ```
pub fn is_agent(command: &str) -> bool {
    let command = command.trim();
    let version = {
        let mut parts = command.split('.');
        parts.clone().count() >= 2
            && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    version || matches!(command, "claude" | "codex" | "gemini")
}

/// True for a tmux pane id as `$TMUX_PANE` gives it: `%` and digits.
///
/// ```
/// assert!(interband_consumers::compact::is_pane("%12"));
/// assert!(!interband_consumers::compact::is_pane("%1; kill-server") && !interband_consumers::compact::is_pane("main:0"));
/// ```
pub fn is_pane(pane: &str) -> bool {
    pane.strip_prefix('%')
        .is_some_and(|n| !n.is_empty() && n.len() <= 10 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The focus as typed into a terminal: letters, digits, spaces and
/// `.,:;-_/+=@%` only (nothing a shell or tmux would read as syntax), at most
/// 120 characters.
///
/// ```
/// assert_eq!(interband_consumers::compact::typeable("keep: fix $(rm -rf ~); `x` ok"), "keep: fix rm -rf x ok");
/// ```
pub fn typeable(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " .,:-_/+=@%".contains(c) {
                c
            } else {
                ' '
            }
        })
        .collect();
    kept.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(120)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Types `/compact <focus>` into a tmux pane, only when the agent is the
/// pane's foreground program (never into a shell): the text literally
/// (`send-keys -l`, so no key name or `;` is interpreted), restricted to
/// [`typeable`] characters, then `Enter` as its own key.
fn type_compact(pane: &str, command: &str, focus: &str) -> Result<(), Error> {
    if !is_pane(pane) {
        return Err(Error::Command {
            command: "tmux".into(),
            reason: format!(
                "{:?} is not a tmux pane id",
                interband::text::terminal(pane)
            ),
        });
    }
    let tmux = |args: &[&str]| -> Vec<String> {
        std::iter::once("tmux")
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect()
    };
    let wait = Duration::from_secs(2);
    let front = query(
        &tmux(&[
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_current_command}",
        ]),
        wait,
    )?;
    let front = front.trim();
    if !is_agent(front) {
        return Err(Error::Command {
            command: "tmux".into(),
            reason: format!(
                "the pane's foreground program is {:?}, not the agent",
                interband::text::terminal(front)
            ),
        });
    }
    let text = format!("{command} {}", typeable(focus));
    run(
        &tmux(&["send-keys", "-t", pane, "-l", "--", text.trim_end()]),
        &[],
        wait,
        Overrun::Kill,
    )?;
    run(
        &tmux(&["send-keys", "-t", pane, "Enter"]),
        &[],
        wait,
        Overrun::Kill,
    )
}

/// Runs `argv` (never through a shell) and returns what it printed (at
/// most 4 KiB), waiting at most `wait`. An exit other than success is an error.
pub fn query(argv: &[String], wait: Duration) -> Result<String, Error> {
    use std::io::Read;
    let fail = |reason: String| Error::Command {
        command: argv.first().cloned().unwrap_or_default(),
        reason,
    };
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| fail("no command".into()))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let (mut child, group) = crate::group::spawn(&mut cmd).map_err(|e| fail(e.to_string()))?;
    let deadline = std::time::Instant::now() + wait;
    let status = loop {
        match child.try_wait().map_err(|e| fail(e.to_string()))? {
            Some(s) => break s,
            None if std::time::Instant::now() >= deadline => {
                group.kill(&mut child);
                let _ = child.wait();
                return Err(fail(format!("still running after {wait:?}; killed")));
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let mut out = Vec::new();
    if let Some(pipe) = child.stdout.take() {
        let _ = pipe.take(4096).read_to_end(&mut out);
    }
    if !status.success() {
        return Err(fail(ended(status)));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// How a command that failed ended, in the same words on every system:
/// "exited with code 3" (else the system's own words, a Unix signal).
fn ended(status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => format!("ended by {status}"),
    }
}

/// What [`run`] does with a command still running when its wait is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overrun {
    /// Kill it: an error.
    Kill,
    /// Leave it running on its own (its own process group, no pipes to us):
    /// a hook must answer within the host's timeout, the command need not.
    LeaveRunning,
}

/// Runs `argv` (never through a shell) with `env` added, stdin and output
/// closed, waiting at most `wait`. An exit other than success is an error
/// naming the program; so is overrunning with [`Overrun::Kill`].
pub fn run(
    argv: &[String],
    env: &[(&str, String)],
    wait: Duration,
    overrun: Overrun,
) -> Result<(), Error> {
    let fail = |reason: String| Error::Command {
        command: argv.first().cloned().unwrap_or_default(),
        reason,
    };
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| fail("no command configured".into()))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let (mut child, group) = crate::group::spawn(&mut cmd).map_err(|e| fail(e.to_string()))?;
    let deadline = std::time::Instant::now() + wait;
    loop {
        match child.try_wait().map_err(|e| fail(e.to_string()))? {
            Some(s) if s.success() => return Ok(()),
            Some(s) => return Err(fail(ended(s))),
            None if std::time::Instant::now() >= deadline => {
                if overrun == Overrun::LeaveRunning {
                    return Ok(());
                }
                group.kill(&mut child);
                let _ = child.wait();
                return Err(fail(format!("still running after {wait:?}; killed")));
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interband_hosts::Host;

    fn red_session(dir: &Path) -> (Bus, SessionInfo) {
        let bus = Bus::new(dir.join("bus"));
        let red = Pressure {
            level: Level::Red,
            ts: 1.0,
            ..Default::default()
        };
        bus.publish_typed("s", "s", &red).unwrap();
        let info = SessionInfo {
            session: "s".into(),
            ..Default::default()
        };
        (bus, info)
    }

    #[test]
    fn the_persons_command_is_quoted_for_the_shell_and_names_the_hosts_way() {
        let info = |host| SessionInfo {
            session: "s 1".into(),
            host,
            ..Default::default()
        };
        let focus = "keep: run `rm -rf ~` and $(reboot); don't";
        let raw = Advice::new(&info(Host::Claude), "", Ok("/n.md"), "keep: a\x1b[2Jb\nc");
        assert!(
            !raw.person.chars().any(|c| c.is_control()),
            "{:?}",
            raw.person
        );
        let a = Advice::new(&info(Host::Claude), "", Ok("/n.md"), focus);
        assert!(
            a.person.contains(
                r#"claude -p '/compact keep: run '\''rm -rf ~'\'' and $(reboot); don'\''t' --resume 's 1'"#
            ),
            "{}",
            a.person
        );
        assert!(a.person.starts_with("interband: ") && a.person.contains("/n.md"));
        assert!(a.agent.contains("let them know") && a.agent.contains("/n.md"));
        assert!(!a.agent.contains("do not start new work"), "{}", a.agent);
        // A host with no way from a shell: how to resume it, then its own
        // command, which takes no focus on Gemini.
        let g = Advice::new(&info(Host::Gemini), "", Ok("/n.md"), focus);
        assert!(
            g.person
                .contains("resume it (`gemini --resume 's 1'`) and run `/compress`;"),
            "{}",
            g.person
        );
        // A focus ends without the request's own full stop.
        let d = Advice::new(&info(Host::Claude), "", Ok("/n.md"), "then say done.");
        assert!(d.user.contains("`/compact then say done`"), "{}", d.user);
        // No note: said, with why.
        let e = Error::Command {
            command: "intermem".into(),
            reason: "disk full".into(),
        };
        let n = Advice::new(&info(Host::Codex), "", Err(&e), "");
        assert!(
            n.person.contains("disk full") && n.person.contains("run `/compact`"),
            "{}",
            n.person
        );
    }

    #[test]
    fn a_failed_command_in_watch_mode_runs_once_and_the_next_stop_advises() {
        let dir = tempfile::tempdir().unwrap();
        let (bus, info) = red_session(dir.path());
        let runs = dir.path().join("runs");
        let settings = Settings {
            strategy: Strategy::Command,
            command: crate::stand_in::command(serde_json::json!([
                ["append", runs.display().to_string()],
                ["exit", 3]
            ])),
            ..Default::default()
        };
        let notes = intermem::Settings::default();
        let err = act(&bus, &info, At::Watch, &settings, &notes, None, &|_| {}).unwrap_err();
        assert!(err.to_string().ends_with(": exited with code 3"), "{err}");
        assert!(
            bus.read_typed::<CompactionRequested>("s").is_err(),
            "nothing announced"
        );
        // The next pressure values of the cycle do not run it again.
        for _ in 0..3 {
            assert_eq!(
                act(&bus, &info, At::Watch, &settings, &notes, None, &|_| {}).unwrap(),
                Acted::Nothing
            );
        }
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), "x\n", "ran once");

        let stop = At::Stop {
            hook_active: false,
            level: None,
        };
        let Acted::Advise(Advice { agent: reason, .. }) =
            act(&bus, &info, stop, &settings, &notes, None, &|_| {}).unwrap()
        else {
            panic!("the Stop advises");
        };
        assert!(reason.contains("the compaction command failed"), "{reason}");
        let announced = bus.read_typed::<CompactionRequested>("s").unwrap().payload;
        assert_eq!(announced.strategy, "advise");
        assert_eq!(
            act(&bus, &info, stop, &settings, &notes, None, &|_| {}).unwrap(),
            Acted::Nothing,
            "once per cycle"
        );
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), "x\n");
    }

    /// The focus of the note written from `d`.
    fn focus_of(d: &crate::digest::Digest) -> String {
        let info = SessionInfo {
            session: "s".into(),
            ..Default::default()
        };
        let t = intermem::Trigger {
            name: "t".into(),
            context_usable: None,
            figure: None,
            id: None,
            again: false,
        };
        focus(&intermem::render(&info, &t, d, &[], 8192))
    }

    #[test]
    fn the_focus_is_the_notes_latest_prompt_else_its_first() {
        let note = |first: Option<&str>, latest: Option<&str>| {
            focus_of(&crate::digest::Digest {
                first_prompt: first.map(str::to_owned),
                latest_prompt: latest.map(str::to_owned),
                ..Default::default()
            })
        };
        assert_eq!(
            note(Some("Ship it"), Some("Add jitter")),
            "keep: Add jitter"
        );
        assert_eq!(note(Some("Ship it"), None), "keep: Ship it");
        assert_eq!(note(None, None), "keep the task, todos and changed files");
        // A bare follow-up says nothing of the task: the task is the focus.
        for bare in ["continue", "Continue.", "yes", "go on", "OK!", "keep going"] {
            assert_eq!(
                note(Some("Port the cache to the new store"), Some(bare)),
                "keep: Port the cache to the new store",
                "{bare}"
            );
        }
    }

    #[test]
    fn the_focus_is_the_todo_in_progress_first() {
        let d = crate::digest::Digest {
            first_prompt: Some("Ship it".into()),
            latest_prompt: Some("continue".into()),
            todos: vec![
                crate::digest::Todo {
                    content: "Write the tests".into(),
                    status: "completed".into(),
                },
                crate::digest::Todo {
                    content: "Add retry with backoff".into(),
                    status: "in_progress".into(),
                },
            ],
            ..Default::default()
        };
        assert_eq!(focus_of(&d), "keep: Add retry with backoff");
    }

    #[test]
    fn nothing_happens_when_a_block_already_happened_or_the_session_is_not_due() {
        let dir = tempfile::tempdir().unwrap();
        let (bus, info) = red_session(dir.path());
        let s = Settings::default();
        let n = intermem::Settings::default();
        let active = At::Stop {
            hook_active: true,
            level: None,
        };
        assert_eq!(
            act(&bus, &info, active, &s, &n, None, &|_| {}).unwrap(),
            Acted::Nothing
        );
        let past_95_used = Settings {
            level: Level::Red,
            used_pct: 95.0,
            ..Default::default()
        };
        let stop = At::Stop {
            hook_active: false,
            level: None,
        };
        assert_eq!(
            act(&bus, &info, stop, &past_95_used, &n, None, &|_| {}).unwrap(),
            Acted::Nothing
        );
        assert!(matches!(
            act(&bus, &info, stop, &s, &n, None, &|_| {}).unwrap(),
            Acted::Advise(_)
        ));
    }
}
