//! The engine: a pure function from (session state, tool call, context
//! observation, settings) to (new state, level, actions). No I/O, no clock.

use interband::payloads::Level;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::context::Figures;
use interband_hosts::history::History;

/// Pressure lost per second of idleness: 0.5 per 10 minutes.
pub const DECAY_PER_SEC: f64 = 0.5 / 600.0;

/// A new usage figure below this share of the last one means the context was
/// compacted or cleared: a new context cycle.
pub const SHRINK_IS_NEW_CONTEXT: f64 = 0.5;

/// What the producer remembers about one session. Constant size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Tool calls seen, subagents' included.
    pub calls: u64,
    /// Of which heavy (main thread).
    pub heavy_calls: u64,
    /// Of which inside subagents.
    pub subagent_calls: u64,
    /// The heuristic pressure score.
    pub pressure: f64,
    /// Estimated tokens from tool output sizes.
    pub est_tokens: f64,
    /// Unix time of the last main-thread call.
    pub last_call: f64,
    /// The level last computed (before debouncing).
    pub level: Level,
    /// The level last warned about in this context.
    pub warned_level: Level,
    /// Main-thread calls since the last warning.
    pub calls_since_warning: u64,
    /// Unix time of the last warning in this context (0: none yet).
    pub last_warning: f64,
    /// Context cycles ended by a compaction or clear.
    pub compactions: u64,
    /// The last usage figure seen, tokens.
    pub last_used: Option<u64>,
    /// Directive re-injection thresholds already fired in this context.
    pub reinjected: Vec<f64>,
    /// Main-thread calls since the directives were last injected.
    pub calls_since_reinject: u64,
    /// Unix time of the last checkpoint request (0: none in this context).
    pub last_checkpoint: f64,
    /// Its trigger.
    pub last_checkpoint_trigger: Option<String>,
    /// The last figures, for the dashboard.
    pub figures: Option<Figures>,
    /// The latest compaction seen in the transcript (its mark), so each
    /// starts one new context, once. Kept across contexts.
    pub compaction_seen: Option<String>,
    /// The level last written on the legacy channel, and when (kept across
    /// contexts): it is written again when the level changes or it is due.
    pub legacy_level: Option<Level>,
    /// When it was written, Unix seconds.
    pub legacy_ts: f64,
    /// The model the session last ran (from its transcript), for the views.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The window the host last stated in a hook input (Qwen Code's `Stop`),
    /// kept across contexts: it stands for the session's other events,
    /// which state none, until the host states another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stated_window: Option<u64>,
    /// What the session's own history shows of its window (kept across
    /// contexts: a compaction is itself evidence).
    pub history: History,
    /// How far the transcript is known to hold no figure and no compaction,
    /// so the next look starts there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet: Option<Quiet>,
}

/// A transcript known to hold no context figure and no compaction before
/// `to` (a line's start).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quiet {
    /// The transcript.
    pub path: String,
    /// Nothing before here.
    pub to: u64,
}

impl State {
    /// Starts a new context cycle: a fresh context is green, with no debounce,
    /// re-injection or checkpoint history.
    pub fn new_context(&mut self) {
        self.compactions += 1;
        self.pressure = 0.0;
        self.est_tokens = 0.0;
        self.level = Level::Green;
        self.warned_level = Level::Green;
        self.calls_since_warning = 0;
        self.last_warning = 0.0;
        self.reinjected.clear();
        self.calls_since_reinject = 0;
        self.last_checkpoint = 0.0;
        self.last_checkpoint_trigger = None;
        self.last_used = None;
        self.figures = None;
    }
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Unix time, seconds.
    pub now: f64,
    /// The tool's name.
    pub tool: String,
    /// Size of the tool's response, bytes.
    pub response_bytes: u64,
    /// Made inside a subagent (the input has an `agent_id`).
    pub subagent: bool,
}

/// What the engine is told about the context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// The real usage, when any source knows it.
    pub figures: Option<Figures>,
    /// A compaction the transcript shows with no response after it (its
    /// mark): the context started over, at `figures` or at an unknown figure.
    pub compaction: Option<String>,
    /// Directive files exist to re-inject.
    pub directives: bool,
    /// The session's history of its window, as this look took it on.
    pub history: Option<History>,
    /// How far the transcript holds nothing, as this look found.
    pub quiet: Option<Quiet>,
    /// The model the transcript's latest response names, when read.
    pub model: Option<String>,
}

/// Something the caller must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Tell the agent (the level, after debouncing).
    Warn(Level),
    /// Tell the agent what is known when the window is not: the level the
    /// context would be at were the window the smaller one it may be
    /// ([`Figures::window_other`]); never an order, after debouncing.
    Unsure(Level),
    /// Publish `checkpoint_needed` with this trigger.
    Checkpoint(&'static str),
    /// Write the red checkpoint file.
    CheckpointFile,
    /// Inject the directives again; `Some(t)` at a used-% threshold, `None` by call count.
    Reinject(Option<f64>),
}

/// The engine's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The state to store.
    pub state: State,
    /// The level (before debouncing): from usage when known, else the heuristic.
    pub level: Level,
    /// The heuristic's level, reported as a labelled fallback.
    pub heuristic_level: Level,
    /// The level were the window the smaller one it may be, when it is a
    /// guess and that level is higher ([`level_if_smaller`]).
    pub level_if_smaller: Option<Level>,
    /// What to do, in order.
    pub actions: Vec<Action>,
}

/// The heuristic's level: pressure or estimated tokens, whichever is worse.
pub fn heuristic_level(s: &State, cfg: &Config) -> Level {
    cfg.thresholds
        .pressure
        .above(s.pressure)
        .max(cfg.thresholds.tokens.above(s.est_tokens))
}

/// Advances a session by one tool call.
pub fn step(prev: &State, call: &Call, obs: &Observation, cfg: &Config) -> Outcome {
    let mut s = prev.clone();
    s.calls += 1;
    if call.subagent {
        // Subagents share the session id but not the context: count, nothing
        // else; but a session with no figure yet takes its own from the
        // observation (of its own transcript), so that its row has one while
        // a subagent it started first runs (Gemini: its own call's hook
        // comes once the subagent has finished). Nothing is acted on here.
        s.subagent_calls += 1;
        if s.figures.is_none() && obs.figures.is_some() && !is_new_context(&s, obs) {
            take_figures(&mut s, obs, cfg);
        }
        return Outcome {
            heuristic_level: heuristic_level(&s, cfg),
            level: s.level,
            level_if_smaller: None,
            state: s,
            actions: vec![],
        };
    }

    start_over_if_new(&mut s, obs);

    if s.last_call > 0.0 {
        let idle = (call.now - s.last_call).max(0.0);
        s.pressure = (s.pressure - idle * DECAY_PER_SEC).max(0.0);
    }
    s.last_call = call.now.max(s.last_call);
    let heavy = cfg.heavy_tools.iter().any(|t| t == &call.tool);
    s.pressure += if heavy { 1.5 } else { 1.0 };
    s.heavy_calls += u64::from(heavy);
    s.est_tokens += call.response_bytes as f64 / 4.0;

    let (level, heuristic, known, unsure) = take_figures(&mut s, obs, cfg);

    let mut actions = Vec::new();
    // Debounce: escalation past the last warning speaks at once, anything
    // else waits its turn (so a level flapping across a bound does not nag).
    // A window that is a guess is told as what it is: the level the smaller
    // window would mean, with both windows, never as an order.
    s.calls_since_warning += 1;
    let told = unsure.unwrap_or(level);
    if told > Level::Green && (told > s.warned_level || s.calls_since_warning >= cfg.debounce_calls)
    {
        actions.push(match unsure {
            Some(l) => Action::Unsure(l),
            None => Action::Warn(level),
        });
        s.warned_level = told;
        s.calls_since_warning = 0;
        s.last_warning = call.now;
    }

    checkpoints(&mut s, level, unsure, call.now, cfg, &mut actions);

    // Directive re-injection: at used-% thresholds, or every N calls while
    // no usage is known (only those calls count).
    if known.is_none() {
        s.calls_since_reinject += 1;
    }
    if obs.directives {
        match known {
            Some(f) => {
                let used = f.used_pct();
                let crossed: Vec<f64> = cfg
                    .reinject
                    .thresholds
                    .iter()
                    .copied()
                    .filter(|t| used >= *t && !s.reinjected.contains(t))
                    .collect();
                if let Some(top) = crossed.iter().copied().reduce(f64::max) {
                    s.reinjected.extend(crossed);
                    s.calls_since_reinject = 0;
                    actions.push(Action::Reinject(Some(top)));
                }
            }
            None if cfg.reinject.every_calls > 0
                && s.calls_since_reinject >= cfg.reinject.every_calls =>
            {
                s.calls_since_reinject = 0;
                actions.push(Action::Reinject(None));
            }
            None => {}
        }
    }

    Outcome {
        state: s,
        level,
        heuristic_level: heuristic,
        level_if_smaller: unsure,
        actions,
    }
}

/// The level the context would be at were its window the smaller one it
/// may be, when the window is a guess ([`Figures::window_other`], with that
/// window's compaction point).
///
/// ```
/// use interpulse::config::Config;
/// use interpulse::context::{Figures, Source, WindowSource};
/// use interpulse::engine::level_if_smaller;
/// use interband::payloads::Level;
/// let mut f = Figures::new(160_000, 1_000_000, 967_000, Source::Transcript);
/// assert_eq!(level_if_smaller(&f, &Config::default()), None, "not a guess");
/// f.window_source = Some(WindowSource::Guess);
/// f.window_other = Some(200_000);
/// f.compact_at_other = Some(167_000);
/// assert_eq!(level_if_smaller(&f, &Config::default()), Some(Level::Red));
/// ```
pub fn level_if_smaller(f: &Figures, cfg: &Config) -> Option<Level> {
    if f.window_source != Some(interband::context::WindowSource::Guess) {
        return None;
    }
    let (window, compact_at) = (f.window_other?, f.compact_at_other?);
    let smaller = Figures {
        window,
        autocompact_at: compact_at,
        ..*f
    };
    Some(cfg.thresholds.usable.below(smaller.usable_remaining()))
}

/// The level from the observation: real usage decides once it is known in
/// this context (a call that could not read it, a transcript mid-write,
/// keeps the last figure, not the heuristic), else the heuristic. Returns
/// the level, the heuristic's, the figures it came from, and the level the
/// smaller window would mean when the window is a guess and that is higher.
fn take_figures(
    s: &mut State,
    obs: &Observation,
    cfg: &Config,
) -> (Level, Level, Option<Figures>, Option<Level>) {
    let heuristic = heuristic_level(s, cfg);
    let known = obs.figures.or(s.figures);
    let level = match known {
        Some(f) => cfg.thresholds.usable.below(f.usable_remaining()),
        None => heuristic,
    };
    if let Some(f) = obs.figures {
        s.last_used = Some(f.used_tokens);
        s.figures = Some(f);
        if f.window_source == Some(interband::context::WindowSource::HookInput) {
            s.stated_window = Some(f.window);
        }
    }
    if let Some(h) = &obs.history {
        s.history.merge(h);
    }
    if obs.model.is_some() {
        s.model.clone_from(&obs.model);
    }
    s.quiet.clone_from(&obs.quiet);
    s.level = level;
    let unsure = known
        .and_then(|f| level_if_smaller(&f, cfg))
        .filter(|l| *l > level);
    (level, heuristic, known, unsure)
}

/// Whether a figure of `used` tokens, after one of `last`, is a new
/// context's (below [`SHRINK_IS_NEW_CONTEXT`] of it).
pub fn shrunk(used: u64, last: u64) -> bool {
    (used as f64) < last as f64 * SHRINK_IS_NEW_CONTEXT
}

/// Whether `obs` shows a session in `prev` a new context: a compaction the
/// transcript shows that the state has not seen yet, or a figure below half
/// the last one.
pub fn is_new_context(prev: &State, obs: &Observation) -> bool {
    let unseen = obs
        .compaction
        .as_ref()
        .is_some_and(|m| prev.compaction_seen.as_ref() != Some(m));
    unseen
        || obs
            .figures
            .zip(prev.last_used)
            .is_some_and(|(f, last)| shrunk(f.used_tokens, last))
}

/// Starts a new context cycle when `obs` shows one (see [`is_new_context`]).
fn start_over_if_new(s: &mut State, obs: &Observation) {
    if is_new_context(s, obs) {
        if let Some(mark) = &obs.compaction {
            // The figure before this compaction is gone; it starts one context, once.
            s.compaction_seen = Some(mark.clone());
        }
        s.new_context();
    }
}

/// Checkpoints: orange throttled; red once more if the last was orange. A
/// note is cheap and harmless: written at the smaller window's orange too
/// when the window is a guess (`unsure`), but nothing of red's (its file,
/// its wind-down) on a guess.
fn checkpoints(
    s: &mut State,
    level: Level,
    unsure: Option<Level>,
    now: f64,
    cfg: &Config,
    actions: &mut Vec<Action>,
) {
    let level = level.max(unsure.map_or(Level::Green, |l| l.min(Level::Orange)));
    if level < Level::Orange {
        return;
    }
    let trigger = if level == Level::Red {
        "red_pressure"
    } else {
        "orange_pressure"
    };
    let escalated =
        level == Level::Red && s.last_checkpoint_trigger.as_deref() == Some("orange_pressure");
    // Never asked before: no trigger recorded (a time of 0 is a time too).
    let never = s.last_checkpoint == 0.0 && s.last_checkpoint_trigger.is_none();
    let due = never || now - s.last_checkpoint >= cfg.checkpoint_throttle_secs;
    if escalated || due {
        actions.push(Action::Checkpoint(trigger));
        if level == Level::Red {
            actions.push(Action::CheckpointFile);
        }
        s.last_checkpoint = now;
        s.last_checkpoint_trigger = Some(trigger.to_owned());
    }
}

/// Takes a fresh look at the context between tool calls (at the end of a
/// turn, when the last reply may have been text only): the figure and the
/// level follow the observation, and a checkpoint is asked for as a call
/// would. No call is counted, the heuristic does not move, and nothing is
/// said (the turn is over; the next call warns as it would anyway).
///
/// ```
/// use interpulse::config::Config;
/// use interpulse::context::{Figures, Source};
/// use interpulse::engine::{settle, Action, Observation, State};
/// use interband::payloads::Level;
/// let red = Observation {
///     figures: Some(Figures::new(165_000, 200_000, 167_000, Source::Transcript)),
///     ..Observation::default()
/// };
/// let o = settle(&State::default(), 10.0, &red, &Config::default());
/// assert_eq!(o.level, Level::Red);
/// assert_eq!(o.state.calls, 0);
/// assert!(o.actions.contains(&Action::Checkpoint("red_pressure")));
/// ```
pub fn settle(prev: &State, now: f64, obs: &Observation, cfg: &Config) -> Outcome {
    let mut s = prev.clone();
    start_over_if_new(&mut s, obs);
    let (level, heuristic, _, unsure) = take_figures(&mut s, obs, cfg);
    let mut actions = Vec::new();
    checkpoints(&mut s, level, unsure, now, cfg, &mut actions);
    Outcome {
        state: s,
        level,
        heuristic_level: heuristic,
        level_if_smaller: unsure,
        actions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Source;
    use proptest::prelude::*;

    fn cfg() -> Config {
        Config::default()
    }

    fn call(now: f64, tool: &str) -> Call {
        Call {
            now,
            tool: tool.into(),
            response_bytes: 0,
            subagent: false,
        }
    }

    /// Figures at `used_pct` of a 200k window.
    fn at(used_pct: f64) -> Observation {
        Observation {
            compaction: None,
            figures: Some(Figures::new(
                (used_pct * 2000.0) as u64,
                200_000,
                167_000,
                Source::Transcript,
            )),
            directives: false,
            ..Default::default()
        }
    }

    fn warns(o: &Outcome) -> Vec<Level> {
        o.actions
            .iter()
            .filter_map(|a| {
                if let Action::Warn(l) = a {
                    Some(*l)
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn a_compaction_without_a_figure_starts_one_new_context_once() {
        let c = cfg();
        let red = step(&State::default(), &call(1.0, "Bash"), &at(90.0), &c);
        assert_eq!(red.level, Level::Red);
        let after = Observation {
            compaction: Some("b-1".into()),
            figures: None,
            directives: false,
            ..Default::default()
        };
        let o = step(&red.state, &call(2.0, "Bash"), &after, &c);
        assert_eq!(o.level, Level::Green, "the old figure is gone");
        assert_eq!((o.state.compactions, o.state.figures), (1, None));
        // The same boundary again (no response yet): no second new context.
        let o = step(&o.state, &call(3.0, "Bash"), &after, &c);
        assert_eq!(o.state.compactions, 1);
        assert_eq!(o.state.calls_since_warning, 2, "the context goes on");
        // A response's figure afterwards is the new context's.
        let o = step(&o.state, &call(4.0, "Bash"), &at(10.0), &c);
        assert_eq!((o.level, o.state.compactions), (Level::Green, 1));
    }

    #[test]
    fn pressure_counts_heavy_tools_and_decays_continuously() {
        let c = cfg();
        let mut s = State::default();
        s = step(&s, &call(1000.0, "Bash"), &Observation::default(), &c).state;
        assert_eq!(s.pressure, 1.0);
        for heavy in [
            "Read",
            "Grep",
            "Glob",
            "Task",
            "Agent",
            "WebFetch",
            "WebSearch",
        ] {
            let before = s.pressure;
            s = step(&s, &call(1000.0, heavy), &Observation::default(), &c).state;
            assert_eq!(s.pressure - before, 1.5, "{heavy}");
        }
        assert_eq!(s.heavy_calls, 7);
        // 20 idle minutes: −1.0, then +1.0 for the call.
        let p = s.pressure;
        s = step(
            &s,
            &call(1000.0 + 1200.0, "Edit"),
            &Observation::default(),
            &c,
        )
        .state;
        assert!((s.pressure - p).abs() < 1e-9);
        // 5 minutes: −0.25.
        let p = s.pressure;
        s = step(
            &s,
            &call(2200.0 + 300.0, "Edit"),
            &Observation::default(),
            &c,
        )
        .state;
        assert!((s.pressure - (p - 0.25 + 1.0)).abs() < 1e-9);
        // Never below zero.
        s = step(&s, &call(1e9, "Edit"), &Observation::default(), &c).state;
        assert_eq!(s.pressure, 1.0);
        // A clock going backwards does not add pressure.
        let p = s.pressure;
        s = step(&s, &call(5.0, "Edit"), &Observation::default(), &c).state;
        assert_eq!(s.pressure, p + 1.0);
    }

    #[test]
    fn token_estimate_comes_from_the_response_size() {
        let mut c1 = call(1.0, "Bash");
        c1.response_bytes = 4000;
        let o = step(&State::default(), &c1, &Observation::default(), &cfg());
        assert_eq!(o.state.est_tokens, 1000.0);
        let mut s = State {
            est_tokens: 180_500.0,
            ..Default::default()
        };
        s = step(&s, &call(1.0, "Bash"), &Observation::default(), &cfg()).state;
        assert_eq!(s.level, Level::Orange);
    }

    #[test]
    fn heuristic_levels_follow_the_table() {
        let c = cfg();
        for (pressure, level) in [
            (0.0, Level::Green),
            (59.5, Level::Yellow),
            (89.5, Level::Orange),
            (119.5, Level::Red),
        ] {
            let s = State {
                pressure,
                ..Default::default()
            };
            assert_eq!(
                step(&s, &call(0.0, "Bash"), &Observation::default(), &c).level,
                level,
                "{pressure}"
            );
        }
    }

    #[test]
    fn real_usage_decides_and_the_heuristic_is_only_reported() {
        let c = cfg();
        let s = State {
            pressure: 500.0,
            ..Default::default()
        };
        let o = step(&s, &call(0.0, "Bash"), &at(20.0), &c);
        assert_eq!(o.level, Level::Green);
        assert_eq!(o.heuristic_level, Level::Red);
        assert!(o.actions.is_empty());
        // 200k window: 20% → green, 60% → yellow, 70% → orange, 80% → red.
        for (used, level) in [
            (20.0, Level::Green),
            (60.0, Level::Yellow),
            (70.0, Level::Orange),
            (80.0, Level::Red),
        ] {
            assert_eq!(
                step(&State::default(), &call(0.0, "Bash"), &at(used), &c).level,
                level,
                "{used}%"
            );
        }
    }

    #[test]
    fn debounce_repeats_every_five_calls_and_escalation_bypasses() {
        let c = cfg();
        let mut s = State::default();
        let mut seen = vec![];
        for i in 0..12 {
            let o = step(&s, &call(i as f64, "Bash"), &at(60.0), &c);
            seen.push(warns(&o).len());
            s = o.state;
        }
        assert_eq!(seen, [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]);
        assert_eq!(
            s.last_warning, 10.0,
            "the time of the last warning, not of the last call"
        );
        let o = step(&s, &call(20.0, "Bash"), &at(70.0), &c);
        assert_eq!(warns(&o), [Level::Orange], "escalation speaks at once");
        let o = step(&o.state, &call(21.0, "Bash"), &at(80.0), &c);
        assert_eq!(warns(&o), [Level::Red]);
        // Flapping across the red bound does not nag: red waits its turn.
        let mut s = o.state;
        let mut seen = vec![];
        for (i, used) in [70.0, 80.0, 70.0, 80.0, 80.0, 80.0].into_iter().enumerate() {
            let o = step(&s, &call(22.0 + i as f64, "Bash"), &at(used), &c);
            seen.push(warns(&o));
            s = o.state;
        }
        assert_eq!(
            seen,
            [vec![], vec![], vec![], vec![], vec![Level::Red], vec![]]
        );
        // Settled at orange: after its turn it says orange, and red is an escalation again.
        for i in 0..5 {
            s = step(&s, &call(30.0 + i as f64, "Bash"), &at(70.0), &c).state;
        }
        assert_eq!(s.warned_level, Level::Orange);
        let o = step(&s, &call(40.0, "Bash"), &at(80.0), &c);
        assert_eq!(warns(&o), [Level::Red], "escalation speaks at once");
    }

    #[test]
    fn a_call_that_cannot_read_usage_keeps_the_last_figure_not_the_heuristic() {
        let c = cfg();
        let mut s = step(&State::default(), &call(0.0, "Bash"), &at(20.0), &c).state;
        s.pressure = 130.0; // the heuristic alone would say red
        let o = step(&s, &call(1.0, "Bash"), &Observation::default(), &c);
        assert_eq!((o.level, o.heuristic_level), (Level::Green, Level::Red));
        assert!(o.actions.is_empty(), "{:?}", o.actions);
    }

    #[test]
    fn a_compaction_resets_everything_and_a_fresh_context_is_green() {
        let c = cfg();
        let mut s = State::default();
        for i in 0..3 {
            s = step(&s, &call(i as f64, "Read"), &at(85.0), &c).state;
        }
        assert_eq!(s.level, Level::Red);
        assert!(s.last_checkpoint_trigger.is_some());
        let o = step(&s, &call(10.0, "Bash"), &at(15.0), &c);
        assert_eq!(o.level, Level::Green);
        assert!(o.actions.is_empty(), "no nagging aftermath");
        assert_eq!(o.state.compactions, 1);
        assert_eq!(o.state.pressure, 1.0);
        assert_eq!(o.state.last_checkpoint_trigger, None);
        assert_eq!(o.state.last_warning, 0.0, "no warning yet in this context");
        // Rising again warns again at once, with no leftover debounce.
        let o = step(&o.state, &call(11.0, "Bash"), &at(60.0), &c);
        assert_eq!(warns(&o), [Level::Yellow]);
    }

    #[test]
    fn checkpoints_at_orange_are_throttled_and_red_follows_an_orange_one() {
        let c = cfg();
        let o = step(&State::default(), &call(1000.0, "Bash"), &at(70.0), &c);
        assert!(o.actions.contains(&Action::Checkpoint("orange_pressure")));
        let o2 = step(&o.state, &call(1100.0, "Bash"), &at(71.0), &c);
        assert!(
            !o2.actions
                .iter()
                .any(|a| matches!(a, Action::Checkpoint(_))),
            "throttled"
        );
        let o3 = step(&o2.state, &call(1000.0 + 901.0, "Bash"), &at(72.0), &c);
        assert!(
            o3.actions.contains(&Action::Checkpoint("orange_pressure")),
            "after 15 minutes"
        );
        let o4 = step(&o3.state, &call(1902.0, "Bash"), &at(85.0), &c);
        assert!(o4.actions.contains(&Action::Checkpoint("red_pressure")));
        assert!(o4.actions.contains(&Action::CheckpointFile));
        let o5 = step(&o4.state, &call(1903.0, "Bash"), &at(86.0), &c);
        assert!(
            !o5.actions
                .iter()
                .any(|a| matches!(a, Action::Checkpoint(_) | Action::CheckpointFile))
        );
        // Straight to red: one red checkpoint and the file.
        let o = step(&State::default(), &call(5.0, "Bash"), &at(90.0), &c);
        assert_eq!(
            o.actions,
            [
                Action::Warn(Level::Red),
                Action::Checkpoint("red_pressure"),
                Action::CheckpointFile
            ]
        );
    }

    #[test]
    fn subagent_calls_are_counted_but_change_nothing_else() {
        let c = cfg();
        let s = step(&State::default(), &call(1.0, "Bash"), &at(60.0), &c).state;
        let mut sub = call(2.0, "Read");
        sub.subagent = true;
        sub.response_bytes = 1 << 30;
        let o = step(&s, &sub, &at(95.0), &c);
        assert!(o.actions.is_empty());
        assert_eq!(o.level, s.level);
        assert_eq!(o.state.calls, s.calls + 1);
        assert_eq!(o.state.subagent_calls, 1);
        assert_eq!(
            State {
                calls: s.calls,
                subagent_calls: 0,
                ..o.state.clone()
            },
            s
        );
    }

    #[test]
    fn a_session_with_no_figure_yet_takes_its_own_at_a_subagent_s_call() {
        let c = cfg();
        let mut sub = call(2.0, "Read");
        sub.subagent = true;
        let o = step(&State::default(), &sub, &at(95.0), &c);
        assert!(
            o.actions.is_empty(),
            "nothing acted on at a subagent's call"
        );
        assert_eq!(o.state.figures, at(95.0).figures);
        assert_eq!(o.level, Level::Red);
        assert_eq!(o.state.subagent_calls, 1);
        // The parent's own next call warns.
        let o = step(&o.state, &call(3.0, "Bash"), &at(95.0), &c);
        assert!(
            o.actions.contains(&Action::Warn(Level::Red)),
            "{:?}",
            o.actions
        );
    }

    #[test]
    fn directives_come_back_once_per_threshold_per_context() {
        let c = cfg();
        let obs = |pct: f64| Observation {
            directives: true,
            ..at(pct)
        };
        let o = step(&State::default(), &call(1.0, "Bash"), &obs(25.0), &c);
        assert!(
            !o.actions.iter().any(|a| matches!(a, Action::Reinject(_))),
            "25% does not fire"
        );
        let o = step(&o.state, &call(2.0, "Bash"), &obs(31.0), &c);
        assert!(
            o.actions.contains(&Action::Reinject(Some(30.0))),
            "31% fires"
        );
        let o = step(&o.state, &call(3.0, "Bash"), &obs(31.0), &c);
        assert!(
            !o.actions.iter().any(|a| matches!(a, Action::Reinject(_))),
            "31% twice fires once"
        );
        // Jumping past two thresholds injects once and marks both.
        let o = step(&o.state, &call(4.0, "Bash"), &obs(75.0), &c);
        assert!(o.actions.contains(&Action::Reinject(Some(70.0))));
        assert_eq!(o.state.reinjected, [30.0, 52.0, 70.0]);
        // After a compaction, they fire again.
        let o = step(&o.state, &call(5.0, "Bash"), &obs(10.0), &c);
        let o = step(&o.state, &call(6.0, "Bash"), &obs(31.0), &c);
        assert!(o.actions.contains(&Action::Reinject(Some(30.0))));
        // No figures: every 20 calls. No directive files: never.
        let mut s = State::default();
        let mut fired = vec![];
        for i in 0..45 {
            let o = step(
                &s,
                &call(i as f64, "Bash"),
                &Observation {
                    compaction: None,
                    figures: None,
                    directives: true,
                    ..Default::default()
                },
                &c,
            );
            if o.actions.contains(&Action::Reinject(None)) {
                fired.push(i);
            }
            s = o.state;
        }
        assert_eq!(fired, [19, 39]);
        let o = step(&State::default(), &call(1.0, "Bash"), &at(80.0), &c);
        assert!(!o.actions.iter().any(|a| matches!(a, Action::Reinject(_))));
        // Calls with a usage figure do not count towards the every-N rule, and
        // once usage is known in a context, a call without it does not start it.
        let with = Observation {
            directives: true,
            ..at(20.0)
        };
        let mut s = State::default();
        for i in 0..25 {
            s = step(&s, &call(i as f64, "Bash"), &with, &c).state;
        }
        let without = Observation {
            compaction: None,
            figures: None,
            directives: true,
            ..Default::default()
        };
        let o = step(&s, &call(30.0, "Bash"), &without, &c);
        assert!(
            !o.actions.iter().any(|a| matches!(a, Action::Reinject(_))),
            "{:?}",
            o.actions
        );
    }

    proptest! {
        #[test]
        fn invariants_hold_for_any_sequence(
            steps in proptest::collection::vec((0u32..4000, 0usize..4, 0u64..1_000_000, prop::option::of(0u64..220_000), any::<bool>()), 1..60)
        ) {
            let c = cfg();
            let tools = ["Bash", "Read", "Agent", "Edit"];
            let mut s = State::default();
            let mut now = 0.0;
            for (gap, tool, bytes, used, sub) in steps {
                now += gap as f64;
                let obs = Observation {
                    compaction: None,
                    figures: used.map(|u| Figures::new(u, 200_000, 167_000, Source::Transcript)),
                    directives: true,
            ..Default::default()
        };
                let o = step(&s, &Call { now, tool: tools[tool].into(), response_bytes: bytes, subagent: sub }, &obs, &c);
                prop_assert!(o.state.pressure >= 0.0);
                prop_assert_eq!(o.state.calls, s.calls + 1);
                prop_assert!(o.state.reinjected.len() <= c.reinject.thresholds.len(), "constant size");
                let warned = o.actions.iter().filter(|a| matches!(a, Action::Warn(_))).count();
                prop_assert!(warned <= 1);
                if sub { prop_assert!(o.actions.is_empty()); }
                if let Some(Action::Warn(l)) = o.actions.first() { prop_assert_eq!(*l, o.level); }
                if o.level == Level::Green { prop_assert!(warned == 0); }
                if !sub {
                    // A turn's end seeing the same context judges it as the
                    // call did, counts nothing, says nothing, and asks for no
                    // checkpoint the call did not already ask for.
                    let t = settle(&s, now, &obs, &c);
                    if obs.figures.is_some() {
                        prop_assert_eq!(t.level, o.level);
                    }
                    prop_assert_eq!(t.state.calls, s.calls);
                    prop_assert!(t.state.pressure <= s.pressure, "only a new context moves it, down");
                    prop_assert!(t.actions.iter().all(|a| matches!(a, Action::Checkpoint(_) | Action::CheckpointFile)));
                    let after = settle(&o.state, now, &obs, &c);
                    prop_assert!(after.actions.is_empty(), "{:?}", after.actions);
                }
                s = o.state;
            }
        }
    }
}
