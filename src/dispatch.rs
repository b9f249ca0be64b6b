//! One host event, end to end: the one code path `interband hook` runs, and
//! `interband replay` and `interband demo` run too. It takes the event's JSON
//! and everything from outside (the bus, the environment, the clock, the
//! log) as arguments, and returns the host response to print, if any.

use std::path::PathBuf;

use anyhow::Result;
use interband::Bus;
use interband::settings::Env;
use interband_consumers::hooks::{self, AllSettings, Notes};
use interband_hosts::Moment;
use interband_hosts::input::HookInput;
use interpulse::hook::{Hook as Producer, post_tool_use};

/// What an event needs from outside.
pub struct Outside<'a> {
    /// The bus.
    pub bus: &'a Bus,
    /// The environment.
    pub env: &'a dyn Env,
    /// The host the command line named (`--host`); else the input says.
    pub host: Option<interband_hosts::Host>,
    /// The home folder.
    pub home: Option<PathBuf>,
    /// Unix time, seconds.
    pub now: f64,
    /// Logs a problem that does not stop the event.
    pub log: &'a dyn Fn(&str),
    /// Logs a problem that repeats on every call until the user acts
    /// (a settings problem): once.
    pub log_once: &'a dyn Fn(&str),
}

/// Handles one hook event (`buf`: its JSON). Returns the host response.
pub fn dispatch(o: &Outside, buf: &[u8]) -> Result<Option<String>> {
    let mut input = HookInput::parse_as(buf, o.host)
        .map_err(|e| anyhow::anyhow!("stdin is not a hook input: {e}"))?;
    let event = input.hook_event_name.as_str();
    let host = input.host();
    let profile = host.profile();
    // A subagent's event that carries its own id as the session's (Copilot
    // CLI): its session's, made inside it.
    if profile.subagent_names_its_session_parent
        && input.in_subagent()
        && let Some(parent) = input.parent_agent_id.as_deref().map(str::trim)
        && !parent.is_empty()
    {
        input.session_id = parent.to_owned();
    }
    // A turn's end inside a subagent (Copilot CLI's subagent fires a `Stop`
    // of its own) is the subagent's end, never its session's turn's.
    let moment = match profile.moment(event) {
        Moment::TurnEnd if input.in_subagent() => Moment::SubagentEnd,
        m => m,
    };
    // The project folder by the host's one rule, and the settings files for
    // it, read once for the whole call: the producer's and the consumers'
    // settings both come from them.
    let project = host.project_dir(input.cwd.as_deref(), o.env);
    // An event without its transcript (Copilot CLI's tool calls): the one the
    // host keeps for the session, when it is there.
    if input.transcript_path.is_none()
        && !input.session_id.trim().is_empty()
        && let Some(folder) = profile.host_home(o.env)
    {
        let at = (profile.transcript_at)(
            &folder,
            project.as_deref().unwrap_or(std::path::Path::new("")),
            &interband::paths::safe_key(&input.session_id),
        );
        if at.is_file() {
            input.transcript_path = Some(at.to_string_lossy().into_owned());
        }
    }
    // A call made inside a subagent whose input does not say so (Gemini
    // CLI), or does not say its kind (Qwen Code): the host's records tell.
    if moment == Moment::ToolDone
        && (!input.in_subagent() || input.agent_type.is_none())
        && let Some(of) = profile.subagent_of
        && let Some((agent, kind)) = of(&input)
    {
        input.agent_id = Some(agent);
        input.agent_type = kind;
    }
    let files = interband::settings::Files::read(project.as_deref(), o.env);
    let pulse = interpulse::config::Config::load_with_problems(&files, o.env);
    let theirs = AllSettings::load_from(&files, o.env);
    let producer = Producer {
        bus: o.bus,
        env: o.env,
        now: o.now,
        project: project.as_deref(),
        settings: &pulse,
    };
    let log_problem = |p: &str| (o.log)(&format!("hook {event} {}: {p}", input.session_id));
    // What the producer found and could not publish, for the consumers.
    let unpublished = std::cell::Cell::new(None);
    let consumers =
        |f: &dyn Fn(&hooks::Ctx) -> Result<Option<String>, interband_consumers::Error>| {
            with_consumers(o, &theirs, unpublished.get(), &log_problem, f)
        };
    if moment == Moment::ToolDone {
        let reply = post_tool_use(&producer, &input)?;
        for p in &reply.settings {
            (o.log_once)(&format!("settings: {p}"));
        }
        reply.problems.iter().for_each(|p| log_problem(p));
        let mut said = reply.said;
        let warned = reply.warned.filter(|_| !input.in_subagent());
        if warned.is_some() || reply.checkpoint {
            // The consumers' settings, loaded once for both: whether a
            // compaction follows (only a strategy that runs one makes it
            // true), and the note a checkpoint asks for, in this very call
            // (unless a running watch writes it): what the agent is told is true.
            let ci = if reply.checkpoint { Some(&input) } else { None };
            let (follows, notes) = with_consumers(o, &theirs, None, &log_problem, |ctx| {
                let follows = warned.and_then(|l| ctx.settings.compact.value.compaction_follows(l));
                let notes = ci.map_or(Notes::None, |ci| hooks::checkpoint_notes(ctx, ci));
                Ok((follows, notes))
            })?;
            said.extend(follows);
            match notes {
                Notes::Written(path) => said.push(format!(
                    "interband saved a memory note of this session ({}); it comes back after the compaction.",
                    std::path::Path::new(&path)
                        .file_name()
                        .map_or(path.clone(), |n| n.to_string_lossy().into_owned())
                )),
                Notes::Watched => said.push(
                    "interband watch is saving a memory note of this session; it comes back after the compaction."
                        .to_owned(),
                ),
                Notes::None => {}
            }
        }
        let restores = !profile.start_after_compaction && !input.in_subagent();
        let mut line = None;
        // (Its cycle state tells, before the consumers' settings are loaded.)
        let cycle = reply
            .cycle
            .filter(|&c| restores && !hooks::restored_for(o.bus, &input.session_id, c));
        if let Some(cycle) = cycle {
            // The host compacts without a SessionStart (Gemini): the note of
            // a new context comes back with this tool call's output.
            let ci = &input;
            let back = with_consumers(o, &theirs, unpublished.get(), &log_problem, |ctx| {
                hooks::restore_note_for_cycle(ctx, ci, cycle)
            })?;
            if let Some(back) = back {
                said.push(back.text);
                line = back.line;
            }
        }
        if !input.in_subagent() {
            match interband::notice::take(o.bus, &input.session_id) {
                Ok(notices) => said.extend(notices),
                Err(e) => log_problem(&e.to_string()),
            }
        }
        let out = (!said.is_empty()).then(|| (profile.context_output)(event, &said.join("\n\n")));
        return Ok(out.map(|out| shown(profile, out, line)));
    }
    if moment == Moment::TurnStart {
        // Gemini: a compression at the end of the last turn shows as the
        // transcript's figure dropping; the note comes back before this one.
        let Some(cycle) = interpulse::hook::turn_start(&producer, &input)? else {
            return Ok(None);
        };
        let ci = &input;
        let back = with_consumers(o, &theirs, unpublished.get(), &log_problem, |ctx| {
            hooks::restore_note_for_cycle(ctx, ci, cycle)
        })?;
        return Ok(back.map(|b| shown(profile, (profile.context_output)(event, &b.text), b.line)));
    }
    if moment == Moment::SubagentEnd {
        // Its last figure, and its end: nothing for the consumers, nothing said.
        if let Err(e) = interpulse::hook::subagent_end(&producer, &input) {
            log_problem(&e.to_string());
        }
        return Ok(None);
    }
    if moment == Moment::SessionEnd {
        // The session's last value is marked ended, before the consumers' final note.
        if let Err(e) = interpulse::hook::session_end(&producer, &input) {
            log_problem(&e.to_string());
        }
    }
    if moment == Moment::TurnEnd {
        // The turn's last reply may have been text only: its figure is read
        // and published (a checkpoint too) before the consumers act on it.
        // A failure must not cost the consumers their turn.
        match interpulse::hook::turn_end(&producer, &input) {
            Ok(reply) => {
                unpublished.set(reply.unpublished);
                for p in &reply.settings {
                    (o.log_once)(&format!("settings: {p}"));
                }
                reply.problems.iter().for_each(|p| log_problem(p));
            }
            Err(e) => log_problem(&e.to_string()),
        }
    }
    let ci = &input;
    let mut cycle = None;
    if moment == Moment::ContextStart
        && matches!(ci.source.as_deref(), Some("compact" | "resume" | "clear"))
    {
        // A fresh context: the producer starts over, green. A reset that
        // fails must not cost the note's re-injection below.
        let problems = match interpulse::hook::new_context(&producer, &input) {
            Ok(reply) => {
                cycle = reply.cycle;
                reply.problems
            }
            Err(e) => vec![e.to_string()],
        };
        // (Its settings problems are the consumers' too: logged below.)
        problems.iter().for_each(|p| log_problem(p));
    }
    consumers(&|ctx| {
        let out = hooks::handle(ctx, ci)?;
        // The note of this new context comes back here (or there is none):
        // on a host whose calls bring back each new context's note, not
        // again for it.
        if let Some(c) = cycle.filter(|_| !profile.start_after_compaction) {
            hooks::mark_restored(ctx, ci, c);
        }
        Ok(out)
    })
}

/// Runs `f` with the consumers' context: their settings (problems logged
/// once) and the hook's log.
fn with_consumers<T>(
    o: &Outside,
    settings: &AllSettings,
    unpublished: Option<interband::payloads::Level>,
    problem: &dyn Fn(&str),
    f: impl FnOnce(&hooks::Ctx) -> Result<T, interband_consumers::Error>,
) -> Result<T> {
    for p in settings.problems() {
        (o.log_once)(&format!("settings: {p}"));
    }
    let ctx = hooks::Ctx {
        bus: o.bus,
        env: o.env,
        home: o.home.clone(),
        settings,
        problem,
        now: o.now,
        unpublished,
    };
    Ok(f(&ctx)?)
}

/// `out`, with the compaction's record `line` shown to the person where the
/// host shows a hook's `systemMessage`.
fn shown(profile: &interband_hosts::Profile, out: String, line: Option<String>) -> String {
    match line {
        Some(line) if profile.shows_system_message => {
            interband_hosts::input::with_system_message(&out, &format!("interband: {line}"))
        }
        _ => out,
    }
}
