//! Typed payloads for every known contract, with the v1 rules for each.
//!
//! Each type knows its namespace, channel folder and message type, checks a raw
//! JSON payload exactly as protocol v1 does (for the old contracts), and
//! derives its JSON Schema. Readers ignore unknown fields; optional fields are
//! `Option`s so new writers can add fields without breaking old readers.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::envelope::kind;

/// Writes a number as an integer when it is one (`23`, not `23.0`): v1
/// writers wrote integers, and shell arithmetic on a read value needs them.
fn whole<S: serde::Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.0e15 {
        s.serialize_i64(*n as i64)
    } else {
        s.serialize_f64(*n)
    }
}

/// Writes a Unix time as whole seconds, an integer, as v1 writers did
/// (`date +%s`); readers accept any number.
fn seconds<S: serde::Serializer>(t: &f64, s: S) -> Result<S::Ok, S::Error> {
    whole(&t.floor(), s)
}

/// A payload type with a known contract.
pub trait Payload: Serialize + DeserializeOwned + JsonSchema {
    /// The namespace that writes it, e.g. `interpulse`.
    const NAMESPACE: &'static str;
    /// The channel folder it is written to, e.g. `pressure`.
    const CHANNEL: &'static str;
    /// The envelope's `type`, e.g. `context_pressure`.
    const TYPE: &'static str;
    /// One line for docs and `interband schema`.
    const ABOUT: &'static str;
    /// Checks a raw payload object against the contract's rules.
    fn check(payload: &Map<String, Value>) -> Result<(), String>;
}

/// Field checks that produce v1-style messages (`field must be ...`).
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get(&self, f: &str) -> Option<&Value> {
        self.0.get(f)
    }
    fn fail(&self, f: &str, want: &str) -> Result<(), String> {
        // The value itself when it is short enough to read in one line.
        let got = match self.get(f) {
            None => "missing".to_owned(),
            Some(Value::String(s)) if s.trim().is_empty() => "a blank string".to_owned(),
            Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null)) => {
                let shown = v.to_string();
                if shown.chars().count() <= 60 {
                    shown
                } else {
                    format!("{}, {} characters", kind(v), shown.chars().count())
                }
            }
            Some(v) => kind(v).to_owned(),
        };
        Err(format!("{f} must be {want} (got {got})"))
    }
    /// A string with at least one non-blank character.
    fn text(&self, f: &str) -> Result<(), String> {
        match self.get(f) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(()),
            _ => self.fail(f, "a non-empty string"),
        }
    }
    /// Absent, null, or a string.
    fn opt_string(&self, f: &str) -> Result<(), String> {
        match self.get(f) {
            None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
            _ => self.fail(f, "a string"),
        }
    }
    fn number_in(&self, f: &str, lo: Option<f64>, hi: Option<f64>) -> Result<(), String> {
        let n = self.get(f).and_then(Value::as_f64);
        let ok = n.is_some_and(|n| lo.is_none_or(|lo| n >= lo) && hi.is_none_or(|hi| n <= hi));
        match (ok, lo, hi) {
            (true, ..) => Ok(()),
            (false, Some(lo), Some(hi)) => self.fail(f, &format!("a number from {lo} to {hi}")),
            (false, Some(_), None) => self.fail(f, "a number >= 0"),
            (false, ..) => self.fail(f, "a number"),
        }
    }
    fn number(&self, f: &str) -> Result<(), String> {
        self.number_in(f, None, None)
    }
    fn non_negative(&self, f: &str) -> Result<(), String> {
        self.number_in(f, Some(0.0), None)
    }
    fn percent(&self, f: &str) -> Result<(), String> {
        self.number_in(f, Some(0.0), Some(100.0))
    }
    /// A non-negative integer, at least `min`.
    fn count_from(&self, f: &str, min: u64) -> Result<(), String> {
        match self.get(f).and_then(Value::as_u64) {
            Some(n) if n >= min => Ok(()),
            _ if min == 0 => self.fail(f, "an integer >= 0"),
            _ => self.fail(f, &format!("an integer >= {min}")),
        }
    }
    fn count(&self, f: &str) -> Result<(), String> {
        self.count_from(f, 0)
    }
    fn opt<F: Fn(&Self, &str) -> Result<(), String>>(
        &self,
        f: &str,
        check: F,
    ) -> Result<(), String> {
        match self.get(f) {
            None | Some(Value::Null) => Ok(()),
            Some(_) => check(self, f),
        }
    }
    fn one_of(&self, f: &str, allowed: &[&str]) -> Result<(), String> {
        match self.get(f) {
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
            _ => self.fail(f, &format!("one of {}", allowed.join(", "))),
        }
    }
}

macro_rules! contract {
    ($ty:ty, $ns:literal, $ch:literal, $t:literal, $about:literal, |$f:ident| $body:block) => {
        impl Payload for $ty {
            const NAMESPACE: &'static str = $ns;
            const CHANNEL: &'static str = $ch;
            const TYPE: &'static str = $t;
            const ABOUT: &'static str = $about;
            fn check(payload: &Map<String, Value>) -> Result<(), String> {
                let $f = Fields(payload);
                $body
                Ok(())
            }
        }
    };
}

/// The phase a bead (a unit of work) is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum Phase {
    Brainstorm,
    BrainstormReviewed,
    Strategized,
    Planned,
    PlanReviewed,
    Executing,
    Shipping,
    Done,
}
pub(crate) const PHASES: &[&str] = &[
    "brainstorm",
    "brainstorm-reviewed",
    "strategized",
    "planned",
    "plan-reviewed",
    "executing",
    "shipping",
    "done",
];

/// `interphase/bead_phase`: a bead moved to a new phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BeadPhase {
    /// The bead's id.
    #[schemars(extend("pattern" = r"\S"))]
    pub id: String,
    /// Its new phase.
    pub phase: Phase,
    /// Why, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
contract!(
    BeadPhase,
    "interphase",
    "bead",
    "bead_phase",
    "a bead moved to a new phase",
    |f| {
        f.text("id")?;
        f.one_of("phase", PHASES)?;
        f.opt_string("reason")?;
        f.number("ts")?;
    }
);

/// `clavain/dispatch`: progress of a dispatched agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[allow(missing_docs)]
pub struct Dispatch {
    #[schemars(extend("pattern" = r"\S"))]
    pub name: String,
    #[schemars(extend("pattern" = r"\S"))]
    pub workdir: String,
    #[schemars(extend("pattern" = r"\S"))]
    pub activity: String,
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub started: f64,
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub turns: f64,
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub commands: f64,
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub messages: f64,
}
contract!(
    Dispatch,
    "clavain",
    "dispatch",
    "dispatch",
    "progress of a dispatched agent",
    |f| {
        for k in ["name", "workdir", "activity"] {
            f.text(k)?;
        }
        for k in ["started", "turns", "commands", "messages"] {
            f.non_negative(k)?;
        }
    }
);

/// `interlock/coordination_signal`: a signal for the coordination layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[allow(missing_docs)]
pub struct CoordinationSignal {
    #[schemars(extend("pattern" = r"\S"))]
    pub layer: String,
    #[schemars(extend("pattern" = r"\S"))]
    pub icon: String,
    #[schemars(extend("pattern" = r"\S"))]
    pub text: String,
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub priority: f64,
    /// A timestamp string (this contract's `ts` is text, not a number).
    #[schemars(extend("pattern" = r"\S"))]
    pub ts: String,
}
contract!(
    CoordinationSignal,
    "interlock",
    "coordination",
    "coordination_signal",
    "a coordination signal for the statusline",
    |f| {
        for k in ["layer", "icon", "text", "ts"] {
            f.text(k)?;
        }
        f.non_negative("priority")?;
    }
);

/// A context-pressure level, in increasing order of urgency.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Level {
    #[default]
    Green,
    Yellow,
    Orange,
    Red,
}
pub(crate) const LEVELS: &[&str] = &["green", "yellow", "orange", "red"];

impl Level {
    /// The level's name as written on the wire.
    pub fn as_str(self) -> &'static str {
        LEVELS[self as usize]
    }
}

/// `intercheck/context_pressure` (legacy): the old pressure monitor's value,
/// still read by older statuslines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LegacyPressure {
    /// The level.
    pub level: Level,
    /// Heuristic pressure score.
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub pressure: f64,
    /// Estimated tokens.
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub est_tokens: f64,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
fn check_pressure(f: &Fields) -> Result<(), String> {
    f.one_of("level", LEVELS)?;
    f.non_negative("pressure")?;
    f.non_negative("est_tokens")?;
    f.number("ts")
}
contract!(
    LegacyPressure,
    "intercheck",
    "pressure",
    "context_pressure",
    "context pressure (legacy channel, dual-written for older statuslines)",
    |f| {
        check_pressure(&f)?;
    }
);

/// `intercheck/checkpoint_needed` (legacy): the old monitor asked for a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LegacyCheckpoint {
    /// What triggered it, e.g. `orange_pressure`.
    #[schemars(extend("pattern" = r"\S"))]
    pub trigger: String,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
contract!(
    LegacyCheckpoint,
    "intercheck",
    "checkpoint",
    "checkpoint_needed",
    "a checkpoint was requested (legacy channel, read for migration)",
    |f| {
        f.text("trigger")?;
        f.number("ts")?;
    }
);

/// `interstat/budget_alert`: token budget consumption.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetAlert {
    /// Percent of the budget used.
    #[schemars(range(min = 0, max = 100))]
    pub pct_consumed: f64,
    /// Tokens used.
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub total_tokens: f64,
    /// The session the budget belongs to.
    #[schemars(extend("pattern" = r"\S"))]
    pub session_id: String,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
contract!(
    BudgetAlert,
    "interstat",
    "budget",
    "budget_alert",
    "token budget consumption",
    |f| {
        f.percent("pct_consumed")?;
        f.non_negative("total_tokens")?;
        f.text("session_id")?;
        f.number("ts")?;
    }
);

/// `interpulse/context_pressure`: the producer's view of one session, published every tool call.
///
/// The first four fields are the legacy contract; the rest are optional so a
/// reader of the old shape still accepts it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pressure {
    /// The level before debouncing.
    pub level: Level,
    /// Heuristic pressure score.
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub pressure: f64,
    /// Estimated tokens from tool output sizes (the fallback).
    #[schemars(range(min = 0))]
    #[serde(serialize_with = "whole")]
    pub est_tokens: f64,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
    /// Usable context remaining, percent (the autocompact reserve taken out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub context_usable: Option<f64>,
    /// Raw context remaining, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub context_raw: Option<f64>,
    /// Tokens in the context window now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_tokens: Option<u64>,
    /// The context window size, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Where the host compacts this context, tokens (when the figures are known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_at: Option<u64>,
    /// Where the context figure came from (e.g. `transcript`, `statusline`, `heuristic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Where the window came from (e.g. `statusline`, `transcript`, `launch`,
    /// `model`, `guess`: see `interband::context::WindowSource`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_source: Option<String>,
    /// When the window is a guess, the smaller window the session may have
    /// (levels are judged on the larger, `window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_other: Option<u64>,
    /// Where the host would compact that smaller window, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_at_other: Option<u64>,
    /// The level were the window the smaller one, when that is higher than
    /// `level` (the agent is told both; nothing is blocked on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_if_smaller: Option<Level>,
    /// Tool calls the session's own agent made (a subagent's are counted
    /// on its own record, `subagent_context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Of which heavy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heavy_calls: Option<u64>,
    /// The session's transcript, so consumers can find it without hook input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// The session's working folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// When the agent was last warned in this context, Unix seconds (absent:
    /// not yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warned_at: Option<u64>,
    /// The level that warning was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warned_level: Option<Level>,
    /// When the session ended (its host's `SessionEnd`), Unix seconds: the
    /// value is its last, not a live one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// The model the session runs, as its transcript names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent CLI that runs the session (`claude`, `codex`, `gemini`,
    /// `qwen`, `copilot`), as its hook was installed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}
contract!(
    Pressure,
    "interpulse",
    "pressure",
    "context_pressure",
    "context pressure and usage of one session, every tool call",
    |f| {
        check_pressure(&f)?;
        f.opt("context_usable", Fields::percent)?;
        f.opt("context_raw", Fields::percent)?;
        for k in [
            "used_tokens",
            "window",
            "calls",
            "heavy_calls",
            "warned_at",
            "ended_at",
            "window_other",
            "compact_at_other",
        ] {
            f.opt(k, Fields::count)?;
        }
        for k in ["source", "transcript_path", "cwd"] {
            f.opt_string(k)?;
        }
        f.opt("warned_level", |f, k| f.one_of(k, LEVELS))?;
        f.opt("level_if_smaller", |f, k| f.one_of(k, LEVELS))?;
    }
);

/// `interpulse/checkpoint_needed`: the session should externalize what it knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Checkpoint {
    /// What triggered it: `orange_pressure` or `red_pressure`.
    #[schemars(extend("pattern" = r"\S"))]
    pub trigger: String,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
    /// Usable context remaining, percent, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub context_usable: Option<f64>,
    /// The session's transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// The session's working folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}
contract!(
    Checkpoint,
    "interpulse",
    "checkpoint",
    "checkpoint_needed",
    "a session should write a memory note (orange and red)",
    |f| {
        f.text("trigger")?;
        f.number("ts")?;
        f.opt("context_usable", Fields::percent)?;
        f.opt_string("transcript_path")?;
        f.opt_string("cwd")?;
    }
);

/// `interline/context_window`: the context window as the host's statusline reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextWindow {
    /// The window size in tokens (200000 or 1000000 today).
    #[schemars(range(min = 1))]
    pub window: u64,
    /// Tokens in context (input + cache creation + cache read), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_tokens: Option<u64>,
    /// Raw used percent as the host computes it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub used_percentage: Option<f64>,
    /// The model's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session's transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// Size of the transcript in bytes when this was observed: freshness by
    /// position, not by wall clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_bytes: Option<u64>,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
contract!(
    ContextWindow,
    "interline",
    "context",
    "context_window",
    "the context window as the statusline input reports it",
    |f| {
        f.count_from("window", 1)?;
        f.opt("used_tokens", Fields::count)?;
        f.opt("used_percentage", Fields::percent)?;
        f.opt_string("model")?;
        f.opt_string("transcript_path")?;
        f.opt("transcript_bytes", Fields::count)?;
        f.number("ts")?;
    }
);

/// `interpulse/subagent_context`: the context of one of a session's
/// subagents, at its latest tool call (keyed `<session>--<agent>`). It
/// never moves its parent's level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SubagentContext {
    /// The parent session.
    #[schemars(extend("pattern" = r"\S"))]
    pub session: String,
    /// The subagent, as its host names it (Claude Code's `agent_id`).
    #[schemars(extend("pattern" = r"\S"))]
    pub agent: String,
    /// Its kind (`Explore`, `general-purpose`...), when told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// Tokens in its context, when its transcript tells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_tokens: Option<u64>,
    /// Its window, tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The model it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its tool calls so far.
    pub calls: u64,
    /// When it ended (its parent's turn no longer lists it running), Unix
    /// seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
impl SubagentContext {
    /// A subagent with no call for this long is taken for gone (its end
    /// was not seen: a host that lists no running tasks, a session killed).
    pub const STALE_SECS: f64 = 1800.0;

    /// The key of `agent`'s context, under its `session`.
    pub fn key(session: &str, agent: &str) -> String {
        crate::paths::safe_key(&format!("{session}--{agent}"))
    }

    /// The subagents of `session` still running at `now` (not ended, not
    /// stale), oldest first.
    pub fn running(bus: &crate::Bus, session: &str, now: f64) -> Vec<SubagentContext> {
        let prefix = Self::key(session, "");
        let mut list: Vec<SubagentContext> = bus
            .keys(Self::NAMESPACE, Self::CHANNEL)
            .unwrap_or_default()
            .into_iter()
            .filter(|k| k.starts_with(&prefix))
            .filter_map(|k| bus.read_typed::<SubagentContext>(&k).ok())
            .map(|e| e.payload)
            .filter(|a| a.ended_at.is_none() && now - a.ts <= Self::STALE_SECS)
            .collect();
        list.sort_by(|a, b| a.ts.total_cmp(&b.ts));
        list
    }
}
contract!(
    SubagentContext,
    "interpulse",
    "subagent",
    "subagent_context",
    "the context of one of a session's subagents, at its latest tool call",
    |f| {
        f.text("session")?;
        f.text("agent")?;
        f.opt_string("agent_type")?;
        f.opt("used_tokens", Fields::count)?;
        f.opt("window", Fields::count)?;
        f.opt_string("model")?;
        f.opt("calls", Fields::count)?;
        f.opt("ended_at", Fields::count)?;
        f.number("ts")?;
    }
);

/// `intermem/memory_note`: a memory note was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryNote {
    /// The note's file.
    #[schemars(extend("pattern" = r"\S"))]
    pub path: String,
    /// Why it was written (`checkpoint_needed`, `pre_compact`, `session_end`...).
    #[schemars(extend("pattern" = r"\S"))]
    pub trigger: String,
    /// Size of the note, bytes.
    #[serde(default)]
    pub bytes: u64,
    /// Usable context remaining when written, percent, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub context_usable: Option<f64>,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
contract!(
    MemoryNote,
    "intermem",
    "note",
    "memory_note",
    "a memory note was written",
    |f| {
        f.text("path")?;
        f.text("trigger")?;
        f.opt("bytes", Fields::count)?;
        f.opt("context_usable", Fields::percent)?;
        f.number("ts")?;
    }
);

/// `compact/compaction_requested`: the compaction trigger acted for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionRequested {
    /// How: `advise`, `tmux` or `command`.
    #[schemars(extend("pattern" = r"\S"))]
    pub strategy: String,
    /// The memory note made sure of first.
    #[schemars(extend("pattern" = r"\S"))]
    pub note: String,
    /// The focus given to `/compact`.
    #[serde(default)]
    pub focus: String,
    /// Unix time, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}
contract!(
    CompactionRequested,
    "compact",
    "pending",
    "compaction_requested",
    "a compaction was requested for a session (removed when the next context starts)",
    |f| {
        f.text("strategy")?;
        f.text("note")?;
        f.opt_string("focus")?;
        f.number("ts")?;
    }
);

/// A kind of fact of a session's working state.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// The step in progress: the todo being worked on, else the latest request.
    Step,
    /// A request the user made in the context the compaction replaced.
    Request,
    /// An open todo item.
    Todo,
    /// A command that failed, with its error where known.
    FailedCommand,
    /// A file changed.
    File,
}

impl FactKind {
    /// Its name for people, singular.
    pub fn name(self) -> &'static str {
        match self {
            FactKind::Step => "the step in progress",
            FactKind::Request => "a request",
            FactKind::Todo => "an open todo",
            FactKind::FailedCommand => "a failed command",
            FactKind::File => "a changed file",
        }
    }
}

/// What became of a fact at a compaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kept {
    /// Not judged yet (the compaction has not happened, or its summary has
    /// not been read).
    #[default]
    Pending,
    /// The host's summary kept it.
    Summary,
    /// The summary dropped it; the note that came back after it holds it.
    Note,
    /// Neither the summary nor the note that came back holds it.
    Lost,
}

/// One fact of a session's working state at a compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fact {
    /// What kind of fact.
    pub kind: FactKind,
    /// The fact, as the session holds it (a request's words, a file's path).
    #[schemars(extend("pattern" = r"\S"))]
    pub text: String,
    /// What became of it.
    #[serde(default)]
    pub kept: Kept,
}

/// `intermem/compaction`: a compaction's record, one per session, the
/// latest: the session's working state before it, fact by fact, and what
/// the host's summary kept, what the note brought back and what was lost.
/// Written before the compaction (every fact pending), then as each is
/// judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionRecord {
    /// `manual` (the person's `/compact`) or `auto` (the host's).
    #[serde(default)]
    pub trigger: String,
    /// The memory note written before the compaction.
    #[serde(default)]
    pub note: String,
    /// Tokens in the context before the compaction, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    /// Tokens in the context after it: the first figure published after
    /// the note came back, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// A fingerprint of the host's summary before this compaction (the
    /// previous one's), so the summary this one wrote is told from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_before: Option<String>,
    /// Whether the host's summary was read and each fact checked against it:
    /// absent until the compaction happened; `false` when the host gives
    /// no summary a hook can read (every fact then judged by the note alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_read: Option<bool>,
    /// Whether the note came back after the compaction and each fact the
    /// summary dropped was checked against it.
    #[serde(default)]
    pub settled: bool,
    /// The facts of the working state before the compaction.
    #[serde(default)]
    pub facts: Vec<Fact>,
    /// Unix time of the latest change, seconds.
    #[serde(serialize_with = "seconds")]
    pub ts: f64,
}

impl CompactionRecord {
    /// How many facts are `kept` so.
    pub fn count(&self, kept: Kept) -> usize {
        self.facts.iter().filter(|f| f.kept == kept).count()
    }
}
contract!(
    CompactionRecord,
    "intermem",
    "compaction",
    "compaction_record",
    "a session's latest compaction: each fact of its working state, kept by the host's summary, brought back by the note, or lost",
    |f| {
        f.opt_string("trigger")?;
        f.opt_string("note")?;
        f.opt("tokens_before", Fields::count)?;
        f.opt("tokens_after", Fields::count)?;
        f.opt_string("summary_before")?;
        match f.get("summary_read") {
            None | Some(Value::Null) | Some(Value::Bool(_)) => {}
            _ => f.fail("summary_read", "a boolean")?,
        }
        match f.get("facts") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let ok = item.as_object().is_some_and(|o| {
                        o.get("text")
                            .and_then(Value::as_str)
                            .is_some_and(|t| !t.trim().is_empty())
                            && serde_json::from_value::<Fact>(item.clone()).is_ok()
                    });
                    if !ok {
                        return Err(format!(
                            "facts[{i}] must be {{kind, text, kept}} with a known kind, a non-empty text and a known kept"
                        ));
                    }
                }
            }
            Some(_) => f.fail("facts", "an array")?,
        }
        f.number("ts")?;
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check<P: Payload>(v: Value) -> Result<(), String> {
        P::check(v.as_object().unwrap())
    }

    #[test]
    fn times_and_counts_are_written_as_integers_as_v1_wrote_them() {
        let p = LegacyPressure {
            level: Level::Yellow,
            pressure: 23.0,
            est_tokens: 150_000.0,
            ts: 1_796_000_000.75,
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["ts"], json!(1_796_000_000u64), "whole seconds");
        assert!(v["est_tokens"].is_u64() && v["pressure"].is_u64(), "{v}");
        let v = serde_json::to_value(LegacyPressure {
            pressure: 23.5,
            ..p
        })
        .unwrap();
        assert_eq!(v["pressure"], json!(23.5), "a fraction stays");
        let d = Dispatch {
            name: "n".into(),
            workdir: "w".into(),
            activity: "a".into(),
            started: 1.0,
            turns: 2.0,
            commands: 3.0,
            messages: 4.0,
        };
        let v = serde_json::to_value(&d).unwrap();
        assert!(
            ["started", "turns", "commands", "messages"]
                .iter()
                .all(|f| v[f].is_u64()),
            "{v}"
        );
        // Read back as numbers, whatever the writer.
        let back: LegacyPressure =
            serde_json::from_value(json!({"level":"red","pressure":1,"est_tokens":2.5,"ts":3.25}))
                .unwrap();
        assert_eq!((back.est_tokens, back.ts), (2.5, 3.25));
    }

    #[test]
    fn bead_reason_may_be_null_or_absent_but_not_false() {
        let ok = json!({"id":"b1","phase":"done","ts":1});
        check::<BeadPhase>(ok.clone()).unwrap();
        let mut v = ok.clone();
        v["reason"] = Value::Null;
        check::<BeadPhase>(v.clone()).unwrap();
        v["reason"] = json!(false);
        assert!(check::<BeadPhase>(v).unwrap_err().contains("reason"));
    }

    #[test]
    fn whitespace_is_not_text_and_floats_are_numbers() {
        let v = json!({"name":"  ","workdir":"w","activity":"a","started":0,"turns":1.5,"commands":0,"messages":0});
        assert!(check::<Dispatch>(v).unwrap_err().starts_with("name"));
        let v = json!({"name":"n","workdir":"w","activity":"a","started":0,"turns":1.5,"commands":-0.1,"messages":0});
        assert!(check::<Dispatch>(v).unwrap_err().starts_with("commands"));
    }

    #[test]
    fn budget_percent_is_inclusive() {
        for (pct, ok) in [(0.0, true), (100.0, true), (100.5, false), (-1.0, false)] {
            let v = json!({"pct_consumed":pct,"total_tokens":1,"session_id":"s","ts":1});
            assert_eq!(check::<BudgetAlert>(v).is_ok(), ok, "{pct}");
        }
    }

    #[test]
    fn typed_values_pass_their_own_checks() {
        let p = Pressure {
            level: Level::Orange,
            context_usable: Some(15.0),
            ..Default::default()
        };
        check::<Pressure>(serde_json::to_value(&p).unwrap()).unwrap();
        let c = ContextWindow {
            window: 200_000,
            ..Default::default()
        };
        check::<ContextWindow>(serde_json::to_value(&c).unwrap()).unwrap();
        assert!(check::<ContextWindow>(json!({"window":0,"ts":1})).is_err());
    }

    #[test]
    fn a_compaction_record_s_facts_are_checked_one_by_one() {
        let ok = json!({"trigger": "manual", "facts": [
            {"kind": "step", "text": "stream tokens", "kept": "pending"},
            {"kind": "file", "text": "a.rs"}], "ts": 1});
        check::<CompactionRecord>(ok.clone()).unwrap();
        for (facts, at) in [
            (json!([{"kind": "step", "text": "  "}]), "facts[0]"),
            (
                json!([{"kind": "step", "text": "x"}, {"kind": "mood", "text": "x"}]),
                "facts[1]",
            ),
            (
                json!([{"kind": "file", "text": "x", "kept": "maybe"}]),
                "facts[0]",
            ),
            (json!("all of them"), "facts must be an array"),
        ] {
            let mut v = ok.clone();
            v["facts"] = facts;
            let e = check::<CompactionRecord>(v).unwrap_err();
            assert!(e.starts_with(at), "{e}");
        }
        let mut v = ok.clone();
        v["summary_read"] = json!("yes");
        assert!(
            check::<CompactionRecord>(v)
                .unwrap_err()
                .starts_with("summary_read")
        );
    }

    #[test]
    fn levels_order_by_urgency() {
        assert!(Level::Green < Level::Yellow && Level::Orange < Level::Red);
        assert_eq!(Level::Orange.as_str(), "orange");
    }
}
