//! One tool call, end to end: observe the context, step the engine under the
//! session's lock, publish, and answer the host.

use std::path::Path;

use interband::Bus;
use interband::fsio::Dir;
use interband::journal::Journal;
use interband::lock::{DEFAULT_WAIT, update_json};
use interband::paths::safe_key;
use interband::payloads::{Checkpoint, ContextWindow, LegacyPressure, Level, Pressure};
use interband::settings::{Env, Layered};

use crate::config::Config;
use crate::context::{Figures, Source, WindowSource, pct_tenths};
use crate::engine::{self, Action, Call, Observation, Outcome, Quiet, State};
use crate::{Error, messages};
use interband_hosts::history::History;
use interband_hosts::input::HookInput;
use interband_hosts::tail::{self, UsageKind};
use interband_hosts::{Host, Known};

/// How often the legacy channel is rewritten when the level does not change.
pub const LEGACY_REFRESH_SECS: f64 = 300.0;

/// Everything a hook call needs from outside: the bus, the environment and the clock.
pub struct Hook<'a> {
    /// The bus.
    pub bus: &'a Bus,
    /// The environment (a function, so tests pass their own).
    pub env: &'a dyn Env,
    /// Unix time, seconds.
    pub now: f64,
    /// The session's project folder, by its host's rule
    /// ([`interband_hosts::Host::project_dir`]).
    pub project: Option<&'a Path>,
    /// The settings for it, from the files the caller read once for the
    /// whole call ([`Config::load_from`]).
    pub settings: &'a Layered<Config>,
}

/// What to print, and what went wrong on the way without stopping the call.
#[derive(Debug, Default)]
pub struct Reply {
    /// What the agent is told after this call (warnings, directives), each
    /// one paragraph of the host's additional context.
    pub said: Vec<String>,
    /// The session's context cycle (how many compactions it has seen), as
    /// stored; `None` when the state could not be written. A host that
    /// compacts without a `SessionStart` after it (Gemini CLI) has its note
    /// brought back for each cycle not brought back yet: so a re-injection
    /// that was killed is made again by the next event.
    pub cycle: Option<u64>,
    /// The level this event found but could not publish (a read-only or
    /// full root), for the consumers to act on all the same.
    pub unpublished: Option<Level>,
    /// A checkpoint was published: its note is to be written now.
    pub checkpoint: bool,
    /// The level the agent was warned of in this call, if any (the
    /// consumers add whether a compaction follows, where one does).
    pub warned: Option<Level>,
    /// Non-fatal problems of this call (a publish that failed), for the log.
    pub problems: Vec<String>,
    /// Problems with the settings and directive files (the same on every
    /// call until the files change), for the log, once.
    pub settings: Vec<String>,
}

/// The folder of the sessions' state files: `<root>/.state/interpulse/`.
pub fn state_dir(bus: &Bus, create: bool) -> Result<Dir, interband::Error> {
    bus.dir(&[".state", "interpulse"], create)
}

/// A session's state file name in [`state_dir`]: `<session>.json`.
pub fn state_file(session: &str) -> String {
    format!("{}.json", safe_key(session))
}

/// What the hook sees of the context: the best figures available, and a
/// compaction the transcript shows with no response after it yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The figures, when any source knows them.
    pub figures: Option<Figures>,
    /// The model the transcript's latest response names, when read.
    pub model: Option<String>,
    /// The latest compaction's mark, while no response came after it: the
    /// context started over (with `figures` from the compaction, or none).
    pub compaction: Option<String>,
    /// What the session's history shows of its window, taken further by
    /// this look ([`interband_hosts::history`]).
    pub history: Option<History>,
    /// How far the transcript is now known to hold no figure and no
    /// compaction (see [`State::quiet`]).
    pub quiet: Option<Quiet>,
    /// What was stated and not believed (a window smaller than the usage
    /// stated with it, or past any window), for the log.
    pub refused: Vec<String>,
}

impl Observed {
    /// What the engine is told of this look.
    pub fn into_observation(self, directives: bool) -> Observation {
        Observation {
            figures: self.figures,
            compaction: self.compaction,
            directives,
            history: self.history,
            quiet: self.quiet,
            model: self.model,
        }
    }
}

/// The largest window believed when a host states one: past it, a stated
/// window is a mistake, not a window (2^64-1 has been seen).
pub const MAX_WINDOW: u64 = 100_000_000;

/// A window a host states, believed only when it is a plain positive number,
/// not past [`MAX_WINDOW`], and at least the usage stated with it (a window
/// of 33k holding 150k is no window).
///
/// ```
/// use interpulse::hook::believable_window;
/// assert_eq!(believable_window(200_000, 150_000), Some(200_000));
/// assert_eq!(believable_window(33_000, 150_000), None);
/// assert_eq!(believable_window(u64::MAX, 150_000), None);
/// assert_eq!(believable_window(0, 0), None);
/// ```
pub fn believable_window(window: u64, used: u64) -> Option<u64> {
    (window > 0 && window <= MAX_WINDOW && window >= used).then_some(window)
}

/// The best context figures available, best source first: `context_window`
/// in the hook input (no host sends it today), the host's transcript read
/// from its end by the host's own reader, and (Claude Code) the statusline
/// bridge, fresher when it saw the transcript as far; the window and the
/// compaction point by the host's rules, with what the session's history
/// (kept in `prior`, the session's state) shows of it.
pub fn observe(h: &Hook, input: &HookInput, cfg: &Config, host: Host, prior: &State) -> Observed {
    // Only a host that runs our statusline has its figure on the bus.
    let bridge = host
        .profile()
        .statusline
        .then(|| h.bus.read_typed::<ContextWindow>(&input.session_id).ok())
        .flatten()
        .map(|e| e.payload)
        // The same file, compared part by part (`/` or `\` on Windows).
        .filter(|b| match (&b.transcript_path, &input.transcript_path) {
            (None, _) => true,
            (Some(seen), Some(ours)) => Path::new(seen) == Path::new(ours),
            (Some(_), None) => false,
        });
    let mut model = None;
    let mut tail_window = None;
    let mut version = None;
    let mut compaction = None;
    let mut len = None;
    let mut quiet = None;
    let transcript = input.transcript_path.as_deref().map(Path::new);
    let (used, source, window) = if let Some((used, w)) = input
        .context_window
        .as_ref()
        .and_then(|c| Some((c.context_tokens()?, c.window())))
        .filter(|(used, _)| *used > 0)
    {
        (used, Source::HookInput, w)
    } else {
        // What an earlier look found empty is not read again (a transcript
        // with no figure would cost every call the whole cap otherwise).
        let floor = |path: &Path| {
            prior
                .quiet
                .as_ref()
                .filter(|q| !host.states_window() && Path::new(&q.path) == path)
                .map_or(0, |q| q.to)
        };
        let tail = transcript
            .and_then(|p| tail::read_tail_from(p, tail::DEFAULT_SCAN_CAP, host, floor(p)).ok());
        len = tail.as_ref().map(|t| t.len);
        quiet = tail
            .as_ref()
            .filter(|t| t.usage.is_none() && t.latest_boundary.is_none())
            .zip(input.transcript_path.as_ref())
            .map(|(t, path)| Quiet {
                path: path.clone(),
                to: t.lines_to,
            });
        compaction = tail.as_ref().and_then(|t| t.latest_boundary.clone());
        // What the transcript has been read to: a figure's line, else (after
        // a compaction without one) all of it.
        let read_to = tail
            .as_ref()
            .map(|t| t.usage.as_ref().map_or(t.len, |u| u.offset));
        let tail = tail.and_then(|t| t.usage);
        model = tail.as_ref().and_then(|t| t.model.clone());
        tail_window = tail.as_ref().and_then(|t| t.window);
        version = tail.as_ref().and_then(|t| t.version.clone());
        let bridge_used = bridge
            .as_ref()
            .and_then(|b| Some((b.used_tokens?, b.transcript_bytes.unwrap_or(0))));
        // The statusline saw the transcript at least as far: as fresh or fresher.
        let fresher = |seen: u64| compaction.is_none() || read_to.is_some_and(|r| seen >= r);
        match (tail, bridge_used) {
            (Some(t), Some((b, seen))) if seen >= t.offset => (b, Source::Statusline, None),
            (Some(t), _) => {
                let source = match t.kind {
                    UsageKind::Assistant => Source::Transcript,
                    UsageKind::CompactBoundary => Source::Compaction,
                };
                (t.used_tokens, source, None)
            }
            (None, Some((b, seen))) if fresher(seen) => (b, Source::Statusline, None),
            (None, _) => {
                return Observed {
                    figures: None,
                    history: history_of(prior, transcript, host, model.as_deref(), None, len),
                    model,
                    compaction,
                    quiet,
                    refused: Vec::new(),
                };
            }
        }
    };
    // A figure a response stated (not a compaction's own) is evidence too.
    let response = (source != Source::Compaction).then_some(used);
    let history = history_of(prior, transcript, host, model.as_deref(), response, len);
    // The window the host states for this session (the hook input's, the
    // statusline's for the same session id), else what the transcript says;
    // a window a hook input stated before stands (Qwen's Stop states it, its
    // tool calls do not). Each believed only when it can be the window.
    let mut refused = Vec::new();
    let mut refuse = |w: u64, from: &str| {
        let ok = believable_window(w, used);
        if ok.is_none() {
            refused.push(format!(
                "a window of {w} tokens from {from} is ignored: no window holds {used} tokens so"
            ));
        }
        ok
    };
    let stated = window
        .and_then(|w| refuse(w, "the hook's input"))
        .map(|w| (w, WindowSource::HookInput))
        .or(bridge
            .and_then(|b| refuse(b.window, "the statusline"))
            .map(|w| (w, WindowSource::Statusline)))
        .or(prior
            .stated_window
            .and_then(|w| believable_window(w, used))
            .map(|w| (w, WindowSource::HookInput)));
    let limits = host.limits(
        &Known {
            stated,
            transcript: tail_window.and_then(|w| refuse(w, "the transcript")),
            configured: cfg.window,
            model: model.as_deref(),
            used,
            project: h.project,
            history: history.as_ref().and_then(|h| h.of(model.as_deref())),
            version: version.as_deref(),
        },
        h.env,
    );
    Observed {
        figures: Some(limits.figures(used, source)),
        model,
        compaction,
        history,
        quiet,
        refused,
    }
}

/// The session's history of its window, taken on from `prior`'s by what
/// was written to `transcript` since (`len`: its length as the tail read
/// found it, when it did: a transcript searched to there is not opened
/// again), and by a response's figure `used`. `None` where the host's
/// transcript states its window (nothing to learn).
fn history_of(
    prior: &State,
    transcript: Option<&Path>,
    host: Host,
    model: Option<&str>,
    used: Option<u64>,
    len: Option<u64>,
) -> Option<History> {
    if host.profile().compaction_marks.is_empty() {
        return None;
    }
    let mut history = prior.history.clone();
    let searched =
        |path: &Path| history.path.as_deref() == path.to_str() && len == Some(history.scanned_to);
    if let Some(path) = transcript.filter(|p| !searched(p)) {
        // A transcript that cannot be read adds nothing; what was known stands.
        let _ = history.scan(path, host);
    }
    if let Some(used) = used {
        history.saw_usage(model, used);
    }
    Some(history)
}

/// The project's directive files, each resolved inside the project (no
/// absolute path, no `..`, no link leading out), a regular file, read bounded.
/// A file that breaks those rules is a problem, never read.
fn directive_text(
    project: Option<&Path>,
    cfg: &Config,
    problems: &mut Vec<String>,
) -> Option<String> {
    let project = project?;
    let limit = cfg.reinject.limit();
    let mut text = String::new();
    let mut files: Vec<&String> = cfg.reinject.files.iter().collect();
    files.dedup();
    // Bounded whatever the settings say: a few files, and no more text than is injected.
    for f in files.into_iter().take(crate::config::MAX_DIRECTIVE_FILES) {
        if text.len() >= limit {
            break;
        }
        match interband::fsio::read_inside(project, f, limit as u64) {
            Ok(bytes) => {
                text.push_str(String::from_utf8_lossy(&bytes).trim());
                text.push('\n');
            }
            Err(interband::Error::NotFound { .. }) => {}
            Err(e) => problems.push(format!("directive file: {e}")),
        }
    }
    (!text.trim().is_empty()).then_some(text)
}

/// What every event of the producer starts from.
struct Begun<'i, 'h> {
    /// The session.
    session: &'i str,
    /// The project folder.
    project: Option<&'h Path>,
    /// The settings for it.
    settings: &'h Layered<Config>,
    /// A reply carrying their problems.
    reply: Reply,
}

/// Starts an event: the session must be named.
fn begin<'i, 'h>(h: &Hook<'h>, input: &'i HookInput) -> Result<Begun<'i, 'h>, Error> {
    let session = input.session_id.trim();
    if session.is_empty() {
        return Err(Error::Input("session_id is missing".into()));
    }
    let (project, settings) = (h.project, h.settings);
    let reply = Reply {
        settings: settings.problems.clone(),
        ..Default::default()
    };
    Ok(Begun {
        session,
        project,
        settings,
        reply,
    })
}

/// Handles `PostToolUse` (Claude Code, Codex CLI) and `AfterTool` (Gemini CLI).
pub fn post_tool_use(h: &Hook, input: &HookInput) -> Result<Reply, Error> {
    let Begun {
        session,
        project,
        settings,
        mut reply,
    } = begin(h, input)?;
    let cfg = &settings.value;

    let subagent = input.in_subagent();
    let directives = if subagent {
        None
    } else {
        directive_text(project, cfg, &mut reply.settings)
    };
    let call = Call {
        now: h.now,
        tool: input.tool_name.clone(),
        response_bytes: input.response_bytes(),
        subagent,
    };
    // The look is taken under the session's lock, from its state: what the
    // history of the transcript showed so far is taken on, never read twice.
    let refused = std::cell::RefCell::new(Vec::new());
    // A subagent's call reads nothing, but for a session with no figure yet
    // (the only one the engine takes there), from the session's transcript
    // where the call names it (never a subagent's own: Codex's rollout).
    let names_its_own = input.host().profile().subagent_calls_name_own_transcript;
    let c = commit(h, input, cfg, |s| {
        let seen = if subagent && (names_its_own || s.figures.is_some()) {
            Observed::default()
        } else {
            observe(h, input, cfg, input.host(), s)
        };
        refused.replace(seen.refused.clone());
        engine::step(s, &call, &seen.into_observation(directives.is_some()), cfg)
    });
    let out = c.outcome;
    reply.problems.extend(c.problems);
    reply.problems.extend(refused.take());
    reply.checkpoint = c.checkpoint;
    if subagent && let Err(e) = crate::subagent::seen(h, input) {
        reply.problems.push(e.to_string());
    }

    // The figures the level came from: this call's, else the context's last.
    let known = out.state.figures.filter(|_| out.state.last_used.is_some());
    if out.level == Level::Red && !subagent {
        // The wind-down journal: every call at red, durably, for the next memory note.
        let record = serde_json::json!({
            "ts": h.now,
            "tool": input.tool_name,
            "summary": input.argument_summary(80),
            "error": input.looks_failed(),
            "context_usable": known.map(|f| pct_tenths(f.usable_remaining())),
            "context": known.map(|f| interband::context::brief(f.used_tokens, f.window, f.autocompact_at)),
        });
        if let Err(e) = Journal::new(h.bus, session).append_at(&record, h.now) {
            reply.problems.push(e.to_string());
        }
    }

    let mut said = Vec::new();
    for action in &out.actions {
        match action {
            Action::Warn(level) => {
                reply.warned = Some(*level);
                said.push(messages::warning(
                    *level,
                    known.as_ref(),
                    &out.state,
                    &cfg.warnings,
                ));
            }
            Action::Unsure(level) => {
                if let Some(f) = &known {
                    said.push(messages::unsure(*level, f));
                }
            }
            Action::Reinject(at) => {
                if let Some(text) = &directives {
                    said.push(messages::directives(text, cfg.reinject.limit(), *at));
                }
            }
            Action::Checkpoint(_) | Action::CheckpointFile => {}
        }
    }
    reply.said = said;
    reply.cycle = c.cycle;
    Ok(reply)
}

/// What [`commit`] did.
struct Committed {
    /// The engine's outcome.
    outcome: Outcome,
    /// The session's context cycle as stored, when the state was written.
    cycle: Option<u64>,
    /// The pressure was published.
    published: bool,
    /// A checkpoint was published.
    checkpoint: bool,
    /// What failed on the way.
    problems: Vec<String>,
}

/// Steps the session's state with `engine` under the session's lock, and
/// publishes what the outcome says before the state is written: the pressure
/// (so concurrent calls publish in the order they counted, and the channel
/// never goes back), then any checkpoint. So a checkpoint the state records
/// as asked for was published: a hook killed before the state is written
/// asks again at the next call, and a checkpoint that could not be published
/// is forgotten by the state, to be asked for again.
///
/// When the state cannot be locked or written (a read-only or full root),
/// the outcome is computed from the state as read, and published as far as
/// that goes: the agent is still warned (every call, with no state to
/// debounce), and the problem is reported. A new context is then not acted
/// on, lest every call bring the note back.
fn commit(
    h: &Hook,
    input: &HookInput,
    cfg: &Config,
    engine: impl Fn(&State) -> Outcome,
) -> Committed {
    let session = state_file(input.session_id.trim());
    let mut problems = Vec::new();
    let mut checkpoint = false;
    let mut published = true;
    // The outcome of a step under the lock, kept even when the state's write
    // then fails: what it published stands, and must not be published twice.
    let mut under_lock = None;
    let locked = state_dir(h.bus, true).and_then(|dir| {
        update_json(&dir, &session, DEFAULT_WAIT, |s: &mut State| {
            let prev = s.clone();
            let o = engine(s);
            *s = o.state.clone();
            if let Err(e) = publish_pressure(h, input, &o, cfg, s) {
                problems.push(e.to_string());
                published = false;
            }
            for action in &o.actions {
                match checkpoint_action(h, input, &o, action) {
                    Ok(()) => checkpoint |= matches!(action, Action::Checkpoint(_)),
                    Err(e) => {
                        problems.push(e.to_string());
                        if matches!(action, Action::Checkpoint(_)) {
                            s.last_checkpoint = prev.last_checkpoint;
                            s.last_checkpoint_trigger = prev.last_checkpoint_trigger.clone();
                        }
                    }
                }
            }
            under_lock = Some(o);
        })
    });
    let stored = locked.is_ok();
    if let Err(e) = locked {
        problems.push(format!("the session's state: {e}"));
    }
    let mut outcome = match under_lock {
        Some(o) => o,
        None => {
            // Not even locked: judge from the state as read, and ask for no
            // checkpoint, which only a state that remembers it can throttle.
            let mut s = state_dir(h.bus, false)
                .map(|dir| interband::lock::read_json_or_default::<State>(&dir, &session))
                .unwrap_or_default();
            let mut o = engine(&s);
            o.actions
                .retain(|a| !matches!(a, Action::Checkpoint(_) | Action::CheckpointFile));
            s = o.state.clone();
            if let Err(e) = publish_pressure(h, input, &o, cfg, &mut s) {
                problems.push(e.to_string());
                published = false;
            }
            o
        }
    };
    // A state that cannot be written cannot debounce: every call warns.
    let warns = outcome.actions.iter().any(|a| matches!(a, Action::Warn(_)));
    if !stored && outcome.level > Level::Green && !warns {
        outcome.actions.insert(0, Action::Warn(outcome.level));
    }
    let cycle = stored.then_some(outcome.state.compactions);
    Committed {
        outcome,
        cycle,
        published,
        checkpoint,
        problems,
    }
}

/// Carries out a checkpoint action of the outcome: publishes the checkpoint,
/// or writes the red checkpoint file. Any other action is not this one's.
fn checkpoint_action(
    h: &Hook,
    input: &HookInput,
    out: &Outcome,
    action: &Action,
) -> Result<(), interband::Error> {
    let session = input.session_id.trim();
    let known = out.state.figures.filter(|_| out.state.last_used.is_some());
    match action {
        Action::Checkpoint(trigger) => {
            let cp = Checkpoint {
                trigger: (*trigger).to_owned(),
                ts: h.now,
                context_usable: known.map(|f| pct_tenths(f.usable_remaining())),
                transcript_path: input.transcript_path.clone(),
                cwd: input.cwd.clone(),
            };
            h.bus.publish_typed(session, session, &cp).map(drop)
        }
        Action::CheckpointFile => write_checkpoint_file(h, input, out),
        Action::Warn(_) | Action::Unsure(_) | Action::Reinject(_) => Ok(()),
    }
}

/// Handles the end of a turn (Claude Code's and Codex's `Stop`, Gemini's
/// `AfterAgent`), before the consumers: the last reply may have been text
/// only, with no tool call after it to read its figure. When the transcript
/// shows a figure of the same context that the session's state has not
/// seen, the state takes it as [`engine::settle`] says, the pressure is
/// published, and a checkpoint is asked for as a call would; `checkpoint`
/// then says its note is to be written now. Nothing is said to the agent.
/// When nothing is new, or the context is a new one (a compaction: the
/// events that bring the note back take it), nothing is written.
pub fn turn_end(h: &Hook, input: &HookInput) -> Result<Reply, Error> {
    let mut reply = settle_turn_end(h, input)?;
    // Its subagents after the session's own figure: one on the session's
    // model runs in the window the session now has.
    if let Err(e) = crate::subagent::ended(h, input, false) {
        reply.problems.push(e.to_string());
    }
    Ok(reply)
}

/// The session's own figure at its turn's end ([`turn_end`]).
fn settle_turn_end(h: &Hook, input: &HookInput) -> Result<Reply, Error> {
    let Begun {
        session,
        settings,
        mut reply,
        ..
    } = begin(h, input)?;
    let cfg = &settings.value;
    let known = state_dir(h.bus, false)
        .map(|dir| interband::lock::read_json_or_default::<State>(&dir, &state_file(session)))
        .unwrap_or_default();
    let seen = observe(h, input, cfg, input.host(), &known);
    reply.problems.extend(seen.refused.iter().cloned());
    let new_figure = seen.figures.is_some_and(|f| known.figures != Some(f));
    let obs = seen.into_observation(false);
    // A new context is not this event's to take: the host's start event, or
    // (Gemini) the next call or turn, takes it and brings the note back.
    if !new_figure || engine::is_new_context(&known, &obs) {
        return Ok(reply);
    }
    let c = commit(h, input, cfg, |s| engine::settle(s, h.now, &obs, cfg));
    reply.problems.extend(c.problems);
    reply.checkpoint = c.checkpoint;
    reply.unpublished = (!c.published).then_some(c.outcome.level);
    Ok(reply)
}

/// When a subagent has finished (Claude Code's `SubagentStop`): its
/// figure read once more, its transcript whole by then, and it is ended.
pub fn subagent_end(h: &Hook, input: &HookInput) -> Result<(), Error> {
    crate::subagent::finished(h, input)
}

/// At the session's end (its host's `SessionEnd`): its last pressure is
/// published again, marked ended, so the views stop showing a live session
/// (at red, with a compaction pending) that is gone. Nothing when the
/// session never published one.
pub fn session_end(h: &Hook, input: &HookInput) -> Result<(), Error> {
    let session = input.session_id.trim();
    if session.is_empty() {
        return Ok(());
    }
    crate::subagent::ended(h, input, true)?;
    let Ok(last) = h.bus.read_typed::<Pressure>(session) else {
        return Ok(());
    };
    let p = Pressure {
        ended_at: Some(h.now.max(0.0).floor() as u64),
        ..last.payload
    };
    h.bus.publish_typed(session, session, &p)?;
    Ok(())
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Publishes the outcome's pressure, and the legacy level when it changed
/// or is due a refresh (what was last written is kept in `state`).
fn publish_pressure(
    h: &Hook,
    input: &HookInput,
    o: &Outcome,
    cfg: &Config,
    state: &mut State,
) -> Result<(), interband::Error> {
    let s = &o.state;
    let session = input.session_id.trim();
    let f = s.figures.filter(|_| s.last_used.is_some());
    let p = Pressure {
        level: o.level,
        pressure: round1(s.pressure),
        est_tokens: s.est_tokens.round(),
        ts: h.now,
        context_usable: f.map(|f| pct_tenths(f.usable_remaining())),
        context_raw: f.map(|f| pct_tenths(f.raw_remaining())),
        used_tokens: f.map(|f| f.used_tokens),
        window: f.map(|f| f.window),
        compact_at: f.map(|f| f.autocompact_at),
        source: Some(
            f.map_or(Source::Heuristic, |f| f.source)
                .as_str()
                .to_owned(),
        ),
        window_source: f
            .and_then(|f| f.window_source)
            .map(|w| w.as_str().to_owned()),
        window_other: f.and_then(|f| f.window_other),
        compact_at_other: f.and_then(|f| f.compact_at_other),
        level_if_smaller: o.level_if_smaller,
        calls: Some(s.calls.saturating_sub(s.subagent_calls)),
        heavy_calls: Some(s.heavy_calls),
        transcript_path: input.transcript_path.clone(),
        cwd: input.cwd.clone(),
        warned_at: (s.last_warning > 0.0).then(|| s.last_warning.floor() as u64),
        warned_level: (s.last_warning > 0.0).then_some(s.warned_level),
        ended_at: None,
        model: state.model.clone(),
        agent: Some(input.host().as_str().to_owned()),
    };
    h.bus.publish_typed(session, session, &p)?;
    // Older statuslines read only the legacy level: rewrite it when the level
    // changes, and every few minutes so retention never takes it away.
    let stale = state.legacy_level != Some(o.level)
        || (h.now - state.legacy_ts).abs() >= LEGACY_REFRESH_SECS;
    if cfg.legacy_dual_write && stale {
        let legacy = LegacyPressure {
            level: o.level,
            pressure: p.pressure,
            est_tokens: p.est_tokens,
            ts: h.now,
        };
        h.bus.publish_typed(session, session, &legacy)?;
        state.legacy_level = Some(o.level);
        state.legacy_ts = h.now;
    }
    Ok(())
}

/// At red: a durable snapshot of the session under the root, for whoever picks up after the compaction.
fn write_checkpoint_file(h: &Hook, input: &HookInput, o: &Outcome) -> Result<(), interband::Error> {
    let dir = h.bus.dir(&[".state", "interpulse", "checkpoints"], true)?;
    let body = serde_json::json!({
        "session_id": input.session_id,
        "ts": h.now,
        "level": o.level,
        "trigger": o.state.last_checkpoint_trigger,
        "figures": o.state.figures,
        "calls": o.state.calls,
        "transcript_path": input.transcript_path,
        "cwd": input.cwd,
    });
    dir.write(
        &state_file(&input.session_id),
        body.to_string().as_bytes(),
        true,
    )
}

/// At a turn's start (Gemini's `BeforeAgent`: Gemini has no `SessionStart`
/// after a compression): a compression at the end of the last turn shows as
/// the transcript's figure below half the last one, and then the context
/// starts over, as [`new_context`] does. Returns the session's context cycle
/// as stored (see [`Reply::cycle`]), `None` when none is.
pub fn turn_start(h: &Hook, input: &HookInput) -> Result<Option<u64>, Error> {
    let session = input.session_id.trim();
    if session.is_empty() {
        return Ok(None);
    }
    let dir = state_dir(h.bus, true)?;
    let state = interband::lock::read_json_or_default::<State>(&dir, &state_file(session));
    if let Some(last) = state.last_used {
        let now = observe(h, input, &h.settings.value, input.host(), &state)
            .figures
            .map(|f| f.used_tokens);
        if now.is_some_and(|used| engine::shrunk(used, last)) {
            return Ok(new_context(h, input)?.cycle);
        }
    }
    Ok(Some(state.compactions))
}

/// A new context (after a compaction, a resume or a clear): the session's
/// pressure state starts over, green, and the pressure channel says so at
/// once, so nobody acts on the old context's level before the next tool call.
pub fn new_context(h: &Hook, input: &HookInput) -> Result<Reply, Error> {
    let Begun {
        session,
        settings,
        mut reply,
        ..
    } = begin(h, input)?;
    // The compaction this new context follows, as the transcript shows it:
    // the next tool call must not start yet another one for it.
    let mark = input.transcript_path.as_deref().and_then(|p| {
        tail::read_tail(Path::new(p), tail::DEFAULT_SCAN_CAP, input.host())
            .ok()?
            .latest_boundary
    });
    let mut cycle = None;
    let published = update_json(
        &state_dir(h.bus, true)?,
        &state_file(session),
        DEFAULT_WAIT,
        |s: &mut State| {
            s.new_context();
            if mark.is_some() {
                s.compaction_seen.clone_from(&mark);
            }
            cycle = Some(s.compactions);
            let fresh = Outcome {
                state: s.clone(),
                level: Level::Green,
                heuristic_level: Level::Green,
                level_if_smaller: None,
                actions: vec![],
            };
            publish_pressure(h, input, &fresh, &settings.value, s)
        },
    )?;
    if let Err(e) = published {
        reply.problems.push(e.to_string());
    }
    reply.cycle = cycle;
    Ok(reply)
}
