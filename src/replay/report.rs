//! What a replay found: its events, per-level counts, summary and series, as the report and `--json` give them.

use super::*;

/// The whole replay: what happened, in order, the totals, and the context curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    /// The host whose transcript it is.
    pub host: Host,
    /// Everything interband did or saw, in transcript order.
    pub events: Vec<Event>,
    /// Totals.
    pub summary: Summary,
    /// The context at every usage figure and compaction.
    pub series: Vec<Point>,
    /// The levels' thresholds the hooks used (for the plot).
    #[serde(skip)]
    pub thresholds: interband::context::Thresholds,
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// When, RFC 3339 UTC to the second; `None` before any line had a valid timestamp.
    pub time: Option<String>,
    /// The same as Unix seconds (0 when unknown).
    pub ts: f64,
    /// Tool calls so far, subagents' included: the number of the call this
    /// event belongs to, or of the last call before it.
    pub call: u64,
    /// Tokens in context, as the hook published them, when known.
    pub used_tokens: Option<u64>,
    /// The window, tokens, when known.
    pub window: Option<u64>,
    /// Percent of the window used (raw), when known.
    pub used_pct: Option<f64>,
    /// Percent of the usable room (up to the compaction point) left, when known.
    pub usable_pct: Option<f64>,
    /// The session's level after the event.
    pub level: Level,
    /// What happened.
    #[serde(flatten)]
    pub what: What,
}

/// What an [`Event`] is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum What {
    /// The level changed.
    LevelChange {
        /// The level before.
        from: Level,
        /// The level after.
        to: Level,
    },
    /// The agent was warned.
    Warning {
        /// The level warned about.
        level: Level,
        /// The text the agent read.
        message: String,
    },
    /// The project's directives were given to the agent again.
    Directives,
    /// `checkpoint_needed` was published.
    Checkpoint {
        /// `orange_pressure` or `red_pressure`.
        trigger: String,
    },
    /// The red checkpoint file was written.
    CheckpointFile,
    /// intermem wrote a memory note.
    Note {
        /// Why: the checkpoint's trigger, `pre_compact_auto`...
        trigger: String,
    },
    /// The agent was told something went wrong (a note given up on).
    Notice {
        /// The text.
        message: String,
    },
    /// The transcript has a compaction here.
    Compaction {
        /// `manual` or `auto`, as the transcript says.
        trigger: Option<String>,
        /// Tokens before, as the transcript says.
        pre_tokens: Option<u64>,
        /// Tokens after, as the transcript says.
        post_tokens: Option<u64>,
    },
    /// interband's record of a compaction, once the note came back: what
    /// the host's summary kept, what the note brought back, what was lost.
    Record {
        /// The line the person is shown.
        line: String,
        /// Facts of the working state before the compaction.
        facts: usize,
        /// Of which the host's summary kept.
        summary: usize,
        /// Of which the note brought back.
        note: usize,
        /// Of which neither.
        lost: usize,
        /// Whether the host's summary was read (`None`: not yet).
        summary_read: Option<bool>,
    },
    /// The latest note came back into the new context.
    NoteBack {
        /// Bytes given back.
        bytes: usize,
    },
    /// The compaction trigger fired at the end of a turn.
    CompactTrigger {
        /// The strategy set (the replay itself only ever advises).
        strategy: String,
    },
}

/// A count per level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerLevel {
    /// Green.
    pub green: u64,
    /// Yellow.
    pub yellow: u64,
    /// Orange.
    pub orange: u64,
    /// Red.
    pub red: u64,
}

impl PerLevel {
    /// The count for `level`.
    pub fn get(&self, level: Level) -> u64 {
        match level {
            Level::Green => self.green,
            Level::Yellow => self.yellow,
            Level::Orange => self.orange,
            Level::Red => self.red,
        }
    }

    pub(super) fn add(&mut self, level: Level) {
        *match level {
            Level::Green => &mut self.green,
            Level::Yellow => &mut self.yellow,
            Level::Orange => &mut self.orange,
            Level::Red => &mut self.red,
        } += 1;
    }

    /// The sum over levels.
    pub fn total(&self) -> u64 {
        self.green + self.yellow + self.orange + self.red
    }
}

/// Totals of a replay.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// False when the transcript had no tool call, usage figure or compaction.
    pub found: bool,
    /// Bytes read.
    pub bytes: u64,
    /// Lines read (empty ones included).
    pub lines: u64,
    /// Lines longer than the most held, passed over.
    pub skipped_lines: u64,
    /// The earliest timestamp seen, RFC 3339.
    pub first_time: Option<String>,
    /// The latest timestamp seen, RFC 3339.
    pub last_time: Option<String>,
    /// Tool calls, subagents' included.
    pub calls: u64,
    /// Of which inside subagents.
    pub subagent_calls: u64,
    /// Bytes of tool results, all calls.
    pub tool_output_bytes: u64,
    /// Usage figures in the transcript (main thread).
    pub usage_lines: u64,
    /// Turns ended (the host's end-of-turn events fired).
    pub turns: u64,
    /// The most tokens in context at any usage figure.
    pub max_used_tokens: Option<u64>,
    /// The highest raw used % at any usage figure.
    pub max_used_pct: Option<f64>,
    /// The largest window, tokens.
    pub window: u64,
    /// Where that window came from (see the host's window order).
    pub window_source: Option<WindowSource>,
    /// Where the host compacts in that window, tokens.
    pub autocompact_at: u64,
    /// Main-thread calls by the level they left the session at.
    pub calls_at_level: PerLevel,
    /// Warnings by level.
    pub warnings: PerLevel,
    /// Checkpoint requests.
    pub checkpoints: u64,
    /// Red checkpoint files.
    pub checkpoint_files: u64,
    /// Memory notes written.
    pub notes: u64,
    /// Compactions in the transcript.
    pub compactions: u64,
    /// Notes brought back after a compaction.
    pub notes_back: u64,
    /// Compactions interband recorded (see [`What::Record`]).
    pub records: u64,
    /// Facts those records counted lost: kept by neither the summary nor the note.
    pub lost_facts: u64,
    /// Times the compaction trigger fired.
    pub trigger_firings: u64,
    /// The level at the end.
    pub final_level: Level,
    /// Problems the hooks logged (each would have gone to `$INTERBAND_LOG`).
    pub hook_problems: Vec<String>,
}

/// The context at one point of the session.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    /// Tool calls so far (see [`Event::call`]).
    pub call: u64,
    /// Unix seconds (0 when unknown).
    pub ts: f64,
    /// A compaction's figure (or its unknown one), between call `call` and the next.
    pub after_compaction: bool,
    /// Tokens in context, when known.
    pub used_tokens: Option<u64>,
    /// The window, tokens.
    pub window: u64,
    /// Where the host compacts, tokens.
    pub autocompact_at: u64,
    /// The level.
    pub level: Level,
}

impl Point {
    /// Where the point lies on the x axis: its call, half a call later after a compaction.
    pub fn x(&self) -> f64 {
        self.call as f64 + if self.after_compaction { 0.5 } else { 0.0 }
    }
}

/// How to replay.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The default settings, not the user's files and `INTERBAND_*` variables.
    pub defaults: bool,
    /// The window, tokens (as the `interpulse.window` setting).
    pub window: Option<u64>,
    /// The host, when the transcript's name and lines do not tell.
    pub host: Option<Host>,
}
