//! The consumers inside `interband hook`: what each host event does.
//!
//! - `Stop`: notes for pending checkpoints (a drain), then the compaction trigger.
//! - `PreCompact`: a note, always, before the context is summarized (never blocks).
//! - `SessionStart`: records the tmux pane; after `compact`, `resume` or `clear`
//!   starts a new compaction cycle and injects the session's latest note.
//! - `SessionEnd`: a final note and the session summary.

use std::path::{Path, PathBuf};

use interband::Bus;
use interband::consumer::{self, Consumer, HandlerError};
use interband::payloads::{Level, Payload, Pressure};
use interband::settings::{Env, Files, Layered, load_from};
use interband_hosts::{Host, Moment, input, tail};
use serde::{Deserialize, Serialize};

use crate::compact::{self, Acted};
use crate::intermem::{self, Intermem, SessionInfo, Trigger};
use crate::summary::{self, record};
use crate::{Error, interline, notify};

/// Every consumer's settings, with where each value came from.
#[derive(Debug, Clone)]
pub struct AllSettings {
    /// Problems with the settings files themselves, and the notices of
    /// untrusted project files whose settings were ignored.
    pub files: Vec<String>,
    /// `[intermem]`.
    pub intermem: Layered<intermem::Settings>,
    /// `[interline]`.
    pub interline: Layered<interline::Settings>,
    /// `[compact]`.
    pub compact: Layered<compact::Settings>,
    /// `[notify]`.
    pub notify: Layered<notify::Settings>,
}

impl AllSettings {
    /// Loads them for a project folder (its file as far as it is trusted).
    pub fn load(project: Option<&std::path::Path>, env: &dyn Env) -> Self {
        Self::load_from(&Files::read(project, env), env)
    }

    /// Loads them from files already read.
    pub fn load_from(files: &Files, env: &dyn Env) -> Self {
        let mut intermem: Layered<intermem::Settings> = load_from(files, "intermem", env, &[]);
        let mut compact: Layered<compact::Settings> = load_from(files, "compact", env, &[]);
        // Values the type allows but the part does not: said, and bounded.
        let (lo, hi) = (intermem::MIN_NOTE_BYTES, intermem::MAX_NOTE_SIZE);
        let given = intermem.value.max_bytes;
        if !(lo..=hi).contains(&given) {
            intermem.value.max_bytes = given.clamp(lo, hi);
            let problem = format!(
                "intermem.max_bytes = {given}: from {lo} to {hi}; {} is used",
                given.clamp(lo, hi)
            );
            intermem.bounded("intermem.max_bytes", given, problem);
        }
        let given = intermem.value.inject_max_bytes;
        if given > intermem::MAX_INJECT_BYTES {
            let most = intermem::MAX_INJECT_BYTES;
            intermem.value.inject_max_bytes = most;
            let problem =
                format!("intermem.inject_max_bytes = {given}: at most {most}; {most} is used");
            intermem.bounded("intermem.inject_max_bytes", given, problem);
        }
        let given = compact.value.used_pct;
        if !(0.0..=100.0).contains(&given) {
            compact.value.used_pct = 0.0;
            let problem = format!(
                "compact.used_pct = {given}: a percentage (0: use the level); the level is used"
            );
            compact.bounded("compact.used_pct", given, problem);
        }
        let mut interline: Layered<interline::Settings> = load_from(files, "interline", env, &[]);
        let given = interline.value.wrap_timeout_ms;
        if given > interline::MAX_WRAP_TIMEOUT_MS {
            let most = interline::MAX_WRAP_TIMEOUT_MS;
            interline.value.wrap_timeout_ms = most;
            let problem =
                format!("interline.wrap_timeout_ms = {given}: at most {most}; {most} is used");
            interline.bounded("interline.wrap_timeout_ms", given, problem);
        }
        let mut notify: Layered<notify::Settings> = load_from(files, "notify", env, &[]);
        let given = notify.value.timeout_ms;
        if given > notify::MAX_TIMEOUT_MS {
            let most = notify::MAX_TIMEOUT_MS;
            notify.value.timeout_ms = most;
            let problem = format!("notify.timeout_ms = {given}: at most {most}; {most} is used");
            notify.bounded("notify.timeout_ms", given, problem);
        }
        AllSettings {
            notify,
            files: files
                .problems
                .iter()
                .cloned()
                .chain(files.notices())
                .chain(interband::retention::problems(|k| env.var(k)))
                .collect(),
            intermem,
            interline,
            compact,
        }
    }

    /// Every problem found while loading: the files', then each part's.
    pub fn problems(&self) -> Vec<String> {
        [
            &self.files,
            &self.intermem.problems,
            &self.interline.problems,
            &self.compact.problems,
            &self.notify.problems,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
    }
}

/// The hook input, as every part reads it (one type, the host's).
pub use interband_hosts::input::HookInput as Input;

/// What the consumers need from outside.
pub struct Ctx<'a> {
    /// The bus.
    pub bus: &'a Bus,
    /// The environment.
    pub env: &'a dyn Env,
    /// The home folder (for Claude Code memory files).
    pub home: Option<PathBuf>,
    /// Settings.
    pub settings: &'a AllSettings,
    /// Where a problem that does not stop the event goes (the hook's log).
    pub problem: &'a dyn Fn(&str),
    /// Unix time, seconds (the hook's clock; a replay's is virtual).
    pub now: f64,
    /// The level the producer found in this event but could not publish (a
    /// read-only or full root): the compaction trigger acts on it.
    pub unpublished: Option<Level>,
}

impl Ctx<'_> {
    fn info(&self, i: &Input) -> SessionInfo {
        SessionInfo {
            host: i.host(),
            ..SessionInfo::resolve(
                self.bus,
                &i.session_id,
                i.transcript_path.clone(),
                i.cwd.clone(),
            )
        }
    }
    /// intermem for this hook's own session, with the host's paths.
    fn intermem(&self, i: &Input) -> Intermem {
        Intermem {
            settings: self.settings.intermem.value.clone(),
            home: self.home.clone(),
            session: Some(self.info(i)),
        }
    }
}

/// Handles one consumer event; returns the host response to print, if any.
pub fn handle(ctx: &Ctx, input: &Input) -> Result<Option<String>, Error> {
    if input.session_id.trim().is_empty() {
        return Ok(None);
    }
    let profile = input.host().profile();
    let moment = profile.moment(&input.hook_event_name);
    if matches!(moment, Moment::TurnEnd | Moment::SessionEnd) {
        // Crashed writers' temp files in every folder under the root, at most daily.
        interband::retention::sweep_internal(ctx.bus, false);
    }
    match moment {
        // Claude Code's and Codex's Stop, Gemini's AfterAgent: the same
        // answer (`decision: block` with a reason) makes the agent go on.
        Moment::TurnEnd => {
            let late = late_summary(ctx, input);
            let out = stop(ctx, input)?;
            // The record's line, where nothing more urgent is said.
            Ok(match (out, late) {
                (None, Some((line, terminal))) if profile.shows_system_message => {
                    let out = input::system_message(&format!("interband: {line}"));
                    Some(with_terminal(out, terminal))
                }
                (out, _) => out,
            })
        }
        Moment::BeforeCompaction => {
            // Gemini's PreCompress comes before every model turn: a note
            // only when the session is where it will compress.
            // A manual trigger is the user's own `/compress`: it compresses.
            if profile.pre_compaction_means_compaction
                || input.trigger.as_deref() == Some("manual")
                || about_to_compress(ctx, input)
            {
                let Some(note) = pre_compact(ctx, input)? else {
                    return Ok(None);
                };
                let digest = note.digest.unwrap_or_default();
                begin_record(ctx, input, &note.path, &digest);
                // A host that adds this hook's output to its summary's
                // request is told what the summary must keep.
                if let Some(steer) = profile.steer {
                    let keep = summary::instructions(&digest, &note.path, steer.limit);
                    return Ok(Some((steer.output)(&input.hook_event_name, &keep)));
                }
            }
            Ok(None)
        }
        // The host's summary, read where the host hands it to a hook.
        Moment::AfterCompaction => {
            let judged = record::judge_summary(
                ctx.bus,
                &input.session_id,
                input.compact_summary.as_deref(),
                true,
            )?;
            // The record, complete once the note came back too: to the
            // person, where the host shows this event's output.
            Ok(judged
                .filter(|r| r.settled)
                .zip(profile.post_compaction_message)
                .map(|(r, show)| {
                    show(
                        &input.hook_event_name,
                        &format!("interband: {}", record::line(&r)),
                    )
                }))
        }
        Moment::ContextStart => session_start(ctx, input),
        Moment::SessionEnd => session_end(ctx, input).map(|_| None),
        Moment::ToolDone | Moment::TurnStart | Moment::SubagentEnd | Moment::Other => Ok(None),
    }
}

fn stop(ctx: &Ctx, input: &Input) -> Result<Option<String>, Error> {
    // A note that cannot be written must not keep the trigger from acting.
    checkpoint_notes(ctx, input);
    let acted = compact::act(
        ctx.bus,
        &ctx.info(input),
        compact::At::Stop {
            hook_active: input.stop_hook_active,
            level: ctx.unpublished,
        },
        &ctx.settings.compact.value,
        &ctx.settings.intermem.value,
        ctx.home.as_deref(),
        ctx.problem,
    )?;
    let Acted::Advise(advice) = acted else {
        return Ok(None);
    };
    let headless = input
        .host()
        .headless(input.transcript_path.as_deref().map(Path::new), ctx.env);
    match headless {
        Some(why) if !ctx.settings.compact.value.advise_headless => {
            // Nobody can type the command: blocking would cost a model round
            // at a full context for an answer nobody reads.
            (ctx.problem)(&format!(
                "not blocking the stop of a headless run ({why}): {}",
                advice.person
            ));
            Ok(Some(input::system_message(&advice.person)))
        }
        // Where the host shows a hook's message to the person, that is the
        // advice, in interband's own words: no block (Claude Code shows a
        // block as "Stop hook reported a problem" and the model as a
        // "blocking error", and asks the model once more at a full
        // context). Elsewhere the block makes the agent relay it.
        _ => {
            let moment = ctx
                .bus
                .read_typed::<interband::payloads::CompactionRequested>(&input.session_id)
                .map_or(0, |e| e.payload.ts as u64);
            let command = input.host().profile().compact_command;
            let terminal = tell(
                ctx,
                input,
                &format!("red-{moment}"),
                "the context is nearly full",
                &format!(
                    "{}: a memory note is saved; run {command} now, or start afresh with interband handoff --run",
                    project_of(input)
                ),
            );
            let out = if input.host().profile().shows_system_message {
                input::system_message(&advice.user)
            } else {
                input::block(&advice.agent, &advice.user)
            };
            Ok(Some(with_terminal(out, terminal)))
        }
    }
}

/// What [`checkpoint_notes`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Notes {
    /// Notes were written; the latest is this file.
    Written(String),
    /// A running `interband watch` writes them.
    Watched,
    /// Nothing was pending, notes are off, or writing failed (logged, and
    /// said at the next hook call when given up on).
    None,
}

/// Writes the notes the session's pending checkpoints ask for, now, unless
/// a running `interband watch` has claimed that work. A failure is logged;
/// a checkpoint given up on is also queued as a notice, which the session's
/// next hook call tells the agent.
pub fn checkpoint_notes(ctx: &Ctx, input: &Input) -> Notes {
    if !ctx.settings.intermem.value.enabled {
        return Notes::None;
    }
    if consumer::watched(ctx.bus, intermem::NAME) {
        return Notes::Watched;
    }
    let mut intermem = ctx.intermem(input);
    let report = match consumer::drain(ctx.bus, &mut intermem) {
        Ok(report) => report,
        Err(e) => {
            (ctx.problem)(&e.to_string());
            return Notes::None;
        }
    };
    report
        .errors
        .iter()
        .for_each(|e| (ctx.problem)(&e.to_string()));
    for e in &report.given_up {
        (ctx.problem)(&e.to_string());
        let told = interband::notice::add(
            ctx.bus,
            &input.session_id,
            &format!("interband could not save a memory note for this session ({e}); see its log."),
        );
        if let Err(e) = told {
            (ctx.problem)(&e.to_string());
        }
    }
    if report.handled == 0 {
        return Notes::None;
    }
    match intermem::latest_note(ctx.bus, &input.session_id) {
        Some((note, _)) => Notes::Written(note.path),
        None => Notes::None,
    }
}

/// Writes the note before a compaction; returns it, when notes are on.
fn pre_compact(ctx: &Ctx, input: &Input) -> Result<Option<intermem::Written>, Error> {
    if !ctx.settings.intermem.value.enabled {
        return Ok(None);
    }
    let usable = ctx
        .bus
        .read_typed::<Pressure>(&input.session_id)
        .ok()
        .and_then(|p| p.payload.context_usable);
    let trigger = Trigger {
        name: format!(
            "pre_compact_{}",
            input.trigger.as_deref().unwrap_or("manual")
        ),
        context_usable: usable,
        figure: None,
        id: None,
        again: false,
    };
    let note = intermem::write_note(
        ctx.bus,
        &ctx.info(input),
        &trigger,
        &ctx.settings.intermem.value,
        ctx.home.as_deref(),
    )?;
    if let Some(e) = &note.claude_memory_error {
        (ctx.problem)(e);
    }
    Ok(Some(note))
}

/// At a turn's end after a compaction, what its record still lacks: the
/// figure after it (the pressure this turn's end published) and, where the
/// note came back before the summary could be read (Claude Code 2.1.332
/// writes the summary's line after the next context started), the summary,
/// from the transcript, once; where it is not there either, the record says
/// it could not be read. Returns the record's line when the summary was
/// judged now.
fn late_summary(ctx: &Ctx, input: &Input) -> Option<(String, Option<String>)> {
    let session = input.session_id.as_str();
    let waiting = record::read(ctx.bus, session)
        .filter(|r| r.settled && (r.summary_read.is_none() || r.tokens_after.is_none()))?;
    let logged = |e: Error| (ctx.problem)(&format!("{e} (record of {})", waiting.note));
    let after = ctx
        .bus
        .read_typed::<Pressure>(session)
        .ok()
        .filter(|p| p.payload.ts >= waiting.ts)
        .and_then(|p| p.payload.used_tokens);
    if let Some(tokens) = after.filter(|_| waiting.tokens_after.is_none())
        && let Err(e) = record::figure_after(ctx.bus, session, tokens)
    {
        logged(e);
    }
    if waiting.summary_read.is_some() {
        return None;
    }
    match record::judge_summary(ctx.bus, session, transcript_summary(input).as_deref(), true) {
        Ok(Some(r)) if r.summary_read.is_some() => {
            bring_back_lost(ctx, input, &r);
            let line = record::line(&r);
            let terminal = tell(
                ctx,
                input,
                &format!("compacted-{}", r.ts),
                "compacted",
                &line,
            );
            Some((line, terminal))
        }
        Ok(_) => None,
        Err(e) => {
            logged(e);
            None
        }
    }
}

/// Facts neither the summary nor the note that came back holds: told to
/// the agent with the session's next hook call (a notice), so what the
/// compaction lost still comes back. (The record keeps counting them lost:
/// it says what the compaction and the note did.)
fn bring_back_lost(ctx: &Ctx, input: &Input, r: &interband::payloads::CompactionRecord) {
    use interband::payloads::Kept;
    let lost: Vec<&interband::payloads::Fact> =
        r.facts.iter().filter(|f| f.kept == Kept::Lost).collect();
    // (A notice holds at most 500 characters.)
    let list = record::fact_lines(&lost, 380);
    if list.is_empty() {
        return;
    }
    let list = list.trim_end();
    let text = format!(
        "interband: the compaction's summary and the note that came back both left out these facts \
         of the session before it:\n{list}"
    );
    if let Err(e) = interband::notice::add(ctx.bus, &input.session_id, &text) {
        (ctx.problem)(&e.to_string());
    }
}

/// The latest compaction summary the session's transcript holds.
fn transcript_summary(input: &Input) -> Option<String> {
    let t = input.transcript_path.as_deref()?;
    crate::digest::digest_file_as(
        Path::new(t),
        &crate::digest::Limits::default(),
        input.host(),
    )
    .ok()?
    .compaction_summary
}

/// Begins the record of the compaction about to happen: the working state
/// the note was written from, fact by fact. A failure is logged: the record
/// must never keep the note or the compaction from happening.
fn begin_record(ctx: &Ctx, input: &Input, note: &Path, digest: &crate::digest::Digest) {
    // The larger of the published figure and the transcript's: both fall
    // short of the size being compacted (the host may have written a later
    // answer's usage since the last hook published, as Codex 0.145 does
    // after its tool ran; a session resumed to be compacted has published
    // nothing since it started), and nothing shrank it before this moment.
    let published = ctx
        .bus
        .read_typed::<Pressure>(&input.session_id)
        .ok()
        .and_then(|p| p.payload.used_tokens);
    let written = input.transcript_path.as_deref().and_then(|t| {
        tail::read_tail(Path::new(t), tail::DEFAULT_SCAN_CAP, input.host())
            .ok()?
            .usage
            .map(|u| u.used_tokens)
    });
    let tokens = published.max(written);
    let begun = record::begin(
        ctx.bus,
        &input.session_id,
        input.trigger.as_deref().unwrap_or("manual"),
        &note.to_string_lossy(),
        tokens,
        digest.compaction_summary.as_deref(),
        summary::facts(digest),
    );
    if let Err(e) = begun {
        (ctx.problem)(&e.to_string());
    }
}

/// True when the host will compress at this attempt: the transcript's last
/// figure (the last prompt's size, read now) has reached the host's
/// compaction point — exactly the test Gemini makes after its PreCompress.
fn about_to_compress(ctx: &Ctx, input: &Input) -> bool {
    let host = input.host();
    let Some(usage) = input
        .transcript_path
        .as_deref()
        .and_then(|t| tail::read_tail(std::path::Path::new(t), tail::DEFAULT_SCAN_CAP, host).ok())
        .and_then(|t| t.usage)
    else {
        return false;
    };
    let project = host.project_dir(input.cwd.as_deref(), ctx.env);
    let limits = host.limits(
        &interband_hosts::Known {
            transcript: usage.window,
            model: usage.model.as_deref(),
            used: usage.used_tokens,
            project: project.as_deref(),
            ..Default::default()
        },
        ctx.env,
    );
    usage.used_tokens >= limits.compact_at
}

fn session_start(ctx: &Ctx, input: &Input) -> Result<Option<String>, Error> {
    if let Some(pane) = ctx.env.var("TMUX_PANE").filter(|p| compact::is_pane(p)) {
        compact::with_state(ctx.bus, &input.session_id, |s| s.pane = Some(pane))?;
    }
    let how = match input.source.as_deref() {
        Some("compact") => Fresh::Compacted,
        Some("resume") => Fresh::Resumed,
        Some("clear") => Fresh::Cleared,
        _ => {
            return Ok(plugin_statusline_hint(ctx, input).map(|said| input::system_message(&said)));
        }
    };
    let profile = input.host().profile();
    let Some(back) = restore(ctx, input, how, None)? else {
        return Ok(None);
    };
    let out = (profile.context_output)(&input.hook_event_name, &back.text);
    // The record of the compaction, to the person, where the host shows it.
    let out = match back.line {
        Some(line) if profile.shows_system_message => {
            input::with_system_message(&out, &format!("interband: {line}"))
        }
        _ => out,
    };
    Ok(Some(with_terminal(out, back.terminal)))
}

/// What interband has told the user once, on this machine.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct Told {
    /// That a plugin cannot add a statusline, and the command that does.
    plugin_statusline: bool,
}

/// The first interactive session started with the hooks from interband's
/// Claude Code plugin, while the user's settings run no interband
/// statusline, tells the person (once) the one command that adds it: a
/// plugin cannot.
fn plugin_statusline_hint(ctx: &Ctx, input: &Input) -> Option<String> {
    use interband_hosts::claude;
    if input.host() != Host::Claude || !claude::from_plugin(ctx.env) {
        return None;
    }
    let home = ctx.home.as_deref()?;
    if claude::user_statusline(home).is_some_and(|c| c.contains("interband"))
        || input
            .host()
            .headless(input.transcript_path.as_deref().map(Path::new), ctx.env)
            .is_some()
    {
        return None;
    }
    let dir = ctx.bus.dir(&[".state", "interline"], true).ok()?;
    let first = interband::lock::update_json(
        &dir,
        "told.json",
        interband::lock::DEFAULT_WAIT,
        |t: &mut Told| !std::mem::replace(&mut t.plugin_statusline, true),
    );
    match first {
        Ok(true) => Some(
            "interband: a plugin cannot add a statusline to Claude Code. Run `interband install --statusline-only` \
             once to add interband's (ctx 70% used ███████░░░ 27k to compact ORANGE) to your own; `interband uninstall` takes it out."
                .to_owned(),
        ),
        Ok(false) => None,
        Err(e) => {
            (ctx.problem)(&e.to_string());
            None
        }
    }
}

/// How a session's context came to be fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fresh {
    /// The host compacted it (`SessionStart` compact, or a figure that
    /// dropped when the host says nothing: Gemini).
    Compacted,
    /// The session was resumed: its conversation may already hold the note.
    Resumed,
    /// The user cleared it.
    Cleared,
}

/// A new context: a new compaction cycle starts, and the session's latest
/// note comes back, framed as a record (once per note after a resume), with
/// every wind-down journal record since the last time a note came back that
/// the note itself does not hold (the red stretch's earlier calls, claimed
/// by an earlier note, and any since). Returns the additional context to
/// give the agent, if any.
///
/// The note comes back even when no state can be written (a full disk, a
/// read-only root): those failures are logged, never in the way.
pub fn restore_note(ctx: &Ctx, input: &Input, how: Fresh) -> Result<Option<String>, Error> {
    Ok(restore(ctx, input, how, None)?.map(|b| b.text))
}

/// What came back into a fresh context.
#[derive(Debug)]
pub struct Restored {
    /// The note, framed as a record, for the agent.
    pub text: String,
    /// The compaction's record in one line, for the person, when this
    /// context followed a compaction that has one.
    pub line: Option<String>,
    /// The terminal's notification of it, where the host takes one.
    pub terminal: Option<String>,
}

/// On a host with no start event after a compaction (Gemini CLI): brings
/// the note back for the producer's context `cycle` (see interpulse's
/// `Reply::cycle`) unless it already came back for it, as
/// [`restore_note`] does. A re-injection cut short (a killed hook) is
/// made again at the next event, since only one that was made records it.
pub fn restore_note_for_cycle(
    ctx: &Ctx,
    input: &Input,
    cycle: u64,
) -> Result<Option<Restored>, Error> {
    if cycle == 0 {
        return Ok(None);
    }
    let seen = compact::read_state(ctx.bus, &input.session_id);
    // A state from before cycles were kept: the latest note already came
    // back if it is the one last injected (looked up once, only then).
    let latest = std::cell::OnceCell::new();
    let legacy_done = |s: &compact::CycleState| {
        s.restored_cycle.is_none()
            && s.injected.is_some()
            && latest
                .get_or_init(|| {
                    intermem::latest_note(ctx.bus, &input.session_id).map(|(n, _)| n.path)
                })
                .as_ref()
                == s.injected.as_ref()
    };
    let done = |s: &compact::CycleState| legacy_done(s) || restored(s, cycle);
    if restored(&seen, cycle) {
        return Ok(None);
    }
    // Taken under the lock: the hooks of parallel calls leave it to one.
    let now = ctx.now;
    let taken = compact::with_state(ctx.bus, &input.session_id, |s| {
        if done(s) {
            // (A state from before cycles were kept learns this one.)
            s.restored_cycle = Some(s.restored_cycle.unwrap_or(0).max(cycle));
            return false;
        }
        let busy = s
            .restoring
            .is_some_and(|(c, at)| c == cycle && (now - at).abs() < compact::RESTORE_LEASE_SECS);
        if busy {
            return false;
        }
        s.restoring = Some((cycle, now));
        true
    });
    match taken {
        Ok(true) => restore(ctx, input, Fresh::Compacted, Some(cycle)),
        Ok(false) => Ok(None),
        // Where this cannot be recorded, every call would bring it back.
        Err(e) => {
            (ctx.problem)(&e.to_string());
            Ok(None)
        }
    }
}

/// Whether the session's note is known to have come back for `cycle`, by
/// its cycle state alone: what a hook can ask before it loads the settings
/// to bring a note back (see [`restore_note_for_cycle`]).
pub fn restored_for(bus: &Bus, session: &str, cycle: u64) -> bool {
    cycle == 0 || restored(&compact::read_state(bus, session), cycle)
}

fn restored(s: &compact::CycleState, cycle: u64) -> bool {
    s.restored_cycle.is_some_and(|c| cycle <= c)
}

/// Records the producer's context `cycle` as brought back (its start event
/// brought the note back, or there was none), so [`restore_note_for_cycle`] does not
/// bring it back again. A failure is logged.
pub fn mark_restored(ctx: &Ctx, input: &Input, cycle: u64) {
    let recorded = compact::with_state(ctx.bus, &input.session_id, |s| {
        s.restored_cycle = Some(s.restored_cycle.unwrap_or(0).max(cycle));
        s.restoring = None;
    });
    if let Err(e) = recorded {
        (ctx.problem)(&e.to_string());
    }
}

/// [`restore_note`], recording `cycle` as brought back. What came back
/// is recorded only once the text to bring back is made, so a hook killed
/// on the way leaves it to be made again.
fn restore(
    ctx: &Ctx,
    input: &Input,
    how: Fresh,
    cycle: Option<u64>,
) -> Result<Option<Restored>, Error> {
    let session = input.session_id.as_str();
    if let Err(e) = compact::new_cycle(ctx.bus, session) {
        (ctx.problem)(&e.to_string());
    }
    let Some((note, text)) = intermem::latest_note(ctx.bus, session) else {
        // No note to bring back for this cycle: none to look for again.
        if let Some(c) = cycle {
            mark_restored(ctx, input, c);
        }
        return Ok(None);
    };
    // A resume restores the conversation, which may already hold this note:
    // inject it only if it is not the one injected last. A compaction or a
    // clear starts an empty context: always.
    let resumed = how == Fresh::Resumed;
    let now = ctx.now;
    let before = compact::read_state(ctx.bus, session);
    let (last, since) = (before.injected, before.injected_at);
    if resumed && last.as_deref() == Some(note.path.as_str()) {
        return Ok(None);
    }
    let max = ctx
        .settings
        .intermem
        .value
        .inject_max_bytes
        .min(intermem::MAX_INJECT_BYTES);
    // What comes back now is delivered: the records no note has claimed
    // are claimed by this re-injection, so the next note does not bring
    // them back again. (Where nothing can be written, they come back again.)
    let mut journal = None;
    let claimed = interband::journal::Journal::new(ctx.bus, session).with_claimed_for(
        Some(&format!("reinjected-{now}")),
        &|_| false,
        |_| {
            journal = Some(intermem::journal_not_in(
                ctx.bus, session, &note.path, since,
            ));
            Ok(())
        },
    );
    if let Err(e) = claimed {
        (ctx.problem)(&e.to_string());
    }
    let journal =
        journal.unwrap_or_else(|| intermem::journal_not_in(ctx.bus, session, &note.path, since));
    let journal = match journal {
        Ok(lines) if !lines.is_empty() => format!(
            "\n\n## Calls at red this note does not list (since the last compaction)\n\n{}",
            cut(&lines, max / 3)
        ),
        Ok(_) => String::new(),
        Err(e) => {
            (ctx.problem)(&e.to_string());
            String::new()
        }
    };
    // After a compaction, what its summary dropped comes back first.
    let record = (how == Fresh::Compacted)
        .then(|| compaction_record(ctx, input))
        .flatten();
    // (Known only where the summary was read before the note comes back.)
    let lead = record
        .as_ref()
        .filter(|r| r.summary_read == Some(true))
        .map_or(String::new(), |r| {
            record::lead(&record::dropped(r), max / 3)
        });
    let body =
        lead.clone() + &cut(&text, max.saturating_sub(journal.len() + lead.len())) + &journal;
    let settled = record.and_then(|r| match record::settle(ctx.bus, session, r, &body) {
        Ok(r) => Some(r),
        Err(e) => {
            (ctx.problem)(&e.to_string());
            None
        }
    });
    // The line once the summary is judged; else its own event says it.
    let line = settled
        .as_ref()
        .and_then(|r| r.summary_read.map(|_| record::line(r)));
    let terminal = settled
        .as_ref()
        .zip(line.as_deref())
        .and_then(|(r, l)| tell(ctx, input, &format!("compacted-{}", r.ts), "compacted", l));
    let what = if how == Fresh::Compacted {
        "compacted"
    } else {
        "reset"
    };
    let record = crate::framing::record(what, session, &note.path, &body);
    let recorded = compact::with_state(ctx.bus, session, |s| {
        s.injected = Some(note.path.clone());
        s.injected_at = now;
        if let Some(c) = cycle {
            s.restored_cycle = Some(s.restored_cycle.unwrap_or(0).max(c));
            s.restoring = None;
        }
    });
    if let Err(e) = recorded {
        (ctx.problem)(&e.to_string());
    }
    Ok(Some(Restored {
        text: record,
        line,
        terminal,
    }))
}

/// The record of the compaction this context follows, still to be
/// settled, with its facts checked against the host's summary where it is
/// known: the one a post-compaction event handed over, else the one the
/// transcript holds now (a summary older than this compaction's is not
/// taken for it).
fn compaction_record(ctx: &Ctx, input: &Input) -> Option<interband::payloads::CompactionRecord> {
    let session = input.session_id.as_str();
    // (The note that comes back may be newer than the one written for the
    // compaction, a turn's end's in between: it holds as much, later.)
    let pending = record::read(ctx.bus, session).filter(|r| !r.settled)?;
    if pending.summary_read.is_some() {
        return Some(pending);
    }
    // Not there yet: its post-compaction event or the turn's end judges it.
    match record::judge_summary(
        ctx.bus,
        session,
        transcript_summary(input).as_deref(),
        false,
    ) {
        Ok(r) => r,
        Err(e) => {
            (ctx.problem)(&e.to_string());
            None
        }
    }
}

/// `text` cut to at most `max` bytes, with a visible mark when cut.
fn cut(text: &str, max: usize) -> String {
    const MARK: &str = "\n[... note truncated]";
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &text[..end])
}

fn session_end(ctx: &Ctx, input: &Input) -> Result<(), Error> {
    // A headless session that ended at red: its person hears of it (by the
    // desktop or their command: no terminal is the host's to write to).
    let red = ctx
        .bus
        .read_typed::<Pressure>(&input.session_id)
        .is_ok_and(|p| p.payload.level == interband::payloads::Level::Red);
    if red && !interactive(ctx, input) {
        let body = format!(
            "{}: session {} ended with its context nearly full; its memory note is saved (interband handoff --session {} --run starts afresh from it)",
            project_of(input),
            input.session_id,
            input.session_id
        );
        tell(ctx, input, "ended", "a session ended at red", &body);
    }
    // No compaction is pending for a session that is gone.
    if let Err(e) = ctx
        .bus
        .remove(compact::PENDING.0, compact::PENDING.1, &input.session_id)
    {
        (ctx.problem)(&e.to_string());
    }
    if ctx.settings.intermem.value.enabled {
        let note = intermem::finalize(
            ctx.bus,
            &ctx.info(input),
            &ctx.settings.intermem.value,
            ctx.home.as_deref(),
        )?;
        if let Some(e) = note.claude_memory_error {
            (ctx.problem)(&e);
        }
    }
    Ok(())
}

/// The session's project, by its folder's name, for a notification.
fn project_of(input: &Input) -> String {
    input
        .cwd
        .as_deref()
        .and_then(|c| Path::new(c).file_name())
        .map_or_else(
            || "a session".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        )
}

/// Whether someone is at the session's keyboard (not a headless run, as
/// far as the host lets a hook tell).
fn interactive(ctx: &Ctx, input: &Input) -> bool {
    input
        .host()
        .headless(input.transcript_path.as_deref().map(Path::new), ctx.env)
        .is_none()
}

/// Tells the person of a moment of `input`'s session (`red-…`,
/// `compacted-…`, `ended`) as `[notify]` says, once: the desktop and their
/// command now; returns the terminal's notification for the host's answer,
/// where the session is interactive and its host's release takes one.
fn tell(ctx: &Ctx, input: &Input, moment: &str, what: &str, body: &str) -> Option<String> {
    let s = &ctx.settings.notify.value;
    let interactive = interactive(ctx, input);
    let terminal = s.terminal && interactive && takes_terminal_sequence(input);
    if !terminal && !s.desktop && s.command.is_empty() {
        return None;
    }
    if !notify::first_time(ctx.bus, &input.session_id, moment) {
        return None;
    }
    let title = format!("interband: {what}");
    let body = body.strip_prefix("interband: ").unwrap_or(body);
    let notice = notify::Notice {
        session: input.session_id.clone(),
        moment: moment.to_owned(),
        title: title.clone(),
        body: body.to_owned(),
    };
    notify::outside(s, &notice, ctx.problem);
    terminal.then(|| notify::terminal_sequence(ctx.env, &title, body))
}

/// Whether the session's host, in the release that wrote its transcript,
/// takes a `terminalSequence` in a hook's answer.
fn takes_terminal_sequence(input: &Input) -> bool {
    let host = input.host();
    let Some(since) = host.profile().terminal_sequence_since else {
        return false;
    };
    let version = input.transcript_path.as_deref().and_then(|t| {
        tail::read_tail(Path::new(t), tail::DEFAULT_SCAN_CAP, host)
            .ok()?
            .usage?
            .version
    });
    version.is_some_and(|v| at_least(&v, since))
}

/// Whether the dotted release `version` is `since` or later (`2.1.332` ≥
/// `2.1.141`; a part that is no number counts as 0).
fn at_least(version: &str, since: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split(['.', '-', ' '])
            .take(3)
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(version) >= parts(since)
}

/// `out` with the terminal's notification, where there is one.
fn with_terminal(out: String, terminal: Option<String>) -> String {
    match terminal {
        Some(t) => input::with_terminal_sequence(&out, &t),
        None => out,
    }
}

/// In watch mode, the compaction trigger's `command` strategy acts as soon as
/// the pressure reaches the trigger point (`advise` and `tmux` wait for `Stop`,
/// the only moment a `/compact` is safe to type).
#[derive(Debug, Clone)]
pub struct CompactCommand {
    /// Settings.
    pub settings: compact::Settings,
    /// intermem's settings, for the note written first.
    pub notes: intermem::Settings,
    /// The home folder.
    pub home: Option<PathBuf>,
}

impl Consumer for CompactCommand {
    fn name(&self) -> &str {
        "compact-command"
    }
    fn patterns(&self) -> Vec<String> {
        vec![format!("{}/{}/*", Pressure::NAMESPACE, Pressure::CHANNEL)]
    }
    fn handle(&mut self, bus: &Bus, m: &interband::Message, _: bool) -> Result<(), HandlerError> {
        if self.settings.strategy != compact::Strategy::Command {
            return Ok(());
        }
        // The key names the session (as for intermem): a message cannot
        // name another one, and the command sees a plain name.
        let key = m.address.as_ref().map_or("", |a| a.key.as_str());
        // An ended session's last value: nobody is there to compact.
        if key.is_empty() || !m.envelope.payload["ended_at"].is_null() {
            return Ok(());
        }
        let session = if interband::paths::safe_key(&m.envelope.session_id) == key {
            m.envelope.session_id.clone()
        } else {
            key.to_owned()
        };
        let info = SessionInfo::resolve(bus, &session, None, None);
        compact::act(
            bus,
            &info,
            compact::At::Watch,
            &self.settings,
            &self.notes,
            self.home.as_deref(),
            &|_| {},
        )?;
        Ok(())
    }
}

/// The consumers `interband watch` runs, as configured.
pub fn watch_consumers(settings: &AllSettings, home: Option<PathBuf>) -> Vec<Box<dyn Consumer>> {
    let mut v: Vec<Box<dyn Consumer>> = Vec::new();
    if settings.intermem.value.enabled {
        v.push(Box::new(Intermem {
            settings: settings.intermem.value.clone(),
            home: home.clone(),
            session: None,
        }));
    }
    if settings.compact.value.strategy == compact::Strategy::Command {
        v.push(Box::new(CompactCommand {
            settings: settings.compact.value.clone(),
            notes: settings.intermem.value.clone(),
            home,
        }));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::at_least;

    #[test]
    fn a_release_is_compared_part_by_part() {
        assert!(at_least("2.1.332", "2.1.141"));
        assert!(at_least("2.1.141", "2.1.141"));
        assert!(!at_least("2.1.105", "2.1.141"));
        assert!(!at_least("1.0.128", "2.1.141"));
        assert!(at_least("10.0.0", "2.1.141"));
        assert!(
            !at_least("2.1", "2.1.141"),
            "a missing part is no later one"
        );
        assert!(!at_least("", "2.1.141"));
    }
}
