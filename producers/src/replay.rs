//! Replays a Claude Code transcript offline: what interband would have done
//! during the session, call by call.
//!
//! [`replay`] reads the transcript (JSONL) forward once, one line at a time
//! (lines of any length, never the whole file in memory), and feeds the pure
//! [`engine`] exactly as `interband hook` would have on every
//! `PostToolUse`. It is pure over its reader: no clock (times come from the
//! lines), no bus, no files.
//!
//! # What is read
//!
//! Only lines containing `"assistant"`, `tool_result` or `compact_boundary`
//! are parsed; a line that is not valid JSON (or not shaped as below) is
//! skipped and counted in [`Summary::skipped_lines`].
//!
//! * **Tool calls.** Each `tool_use` block of an `assistant` line is one call,
//!   named by the block's `name`. A line with `isSidechain: true` is a
//!   subagent's ([`Call::subagent`]). The call's time is its line's
//!   `timestamp` (RFC 3339; a line without a valid one keeps the previous
//!   time). Its response size is the length of the matching `tool_result`'s
//!   `content` in a later `user` line (a string's bytes; for a list, each
//!   block's `text`, or its JSON for other blocks), or 0 when the result never
//!   comes. A call is stepped once its result is seen, or when the same thread
//!   moves on to another assistant message, a turn ends, a compaction boundary
//!   comes, or the file ends — always in the order the calls were made.
//! * **Context.** A call sees the usage of the latest main-thread assistant
//!   line (its own line included), the sum of its `input_tokens`,
//!   `cache_creation_input_tokens` and `cache_read_input_tokens`, skipping
//!   model `"<synthetic>"`, as [`transcript`](crate::transcript) reads it. A main-thread
//!   `system`/`compact_boundary` line sets it to `compactMetadata.postTokens`
//!   (none when absent). Before any usage the engine falls back to its
//!   labelled heuristic, as the hook does.
//! * **Window.** The one given, else
//!   [`context::window`]`(None, cfg.window, env, None,
//!   used)` for each figure (200k, or the configured or host's window, raised
//!   to 1M when usage exceeds it); autocompact from
//!   [`context::autocompact_at`].
//!
//! # What is simulated
//!
//! * The engine's actions on each call: level changes, warnings (with the text
//!   of [`messages::warning`]), checkpoint requests,
//!   the red checkpoint file. Directive re-injection is not simulated
//!   (`directives: false`).
//! * intermem's **memory notes**: one per checkpoint request, and one per
//!   compaction (its `PreCompact`).
//! * **Compactions**: each main-thread boundary. As `SessionStart` with
//!   `source: compact` would, it resets the session's state (a fresh context is
//!   green) and starts a new compaction-trigger cycle.
//! * The **compaction trigger** with its default settings (`advise`, level
//!   red): it fires at `Stop`, which is taken to be the end of a turn — a
//!   main-thread assistant message whose `stop_reason` is set and is neither
//!   `tool_use` nor `pause_turn` — when the level from the last call is red,
//!   at most once per cycle. A cycle ends at a compaction boundary, or when
//!   the engine sees the usage shrink to a new context.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::BufRead;

use interband::context::{self, Figures, Source};
use interband::payloads::Level;
use interband::settings::Env;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::config::Config;
use crate::engine::{self, Action, Call, Observation, State};
use crate::messages;

/// Bytes read between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 20;
/// Calls waiting for their result, at most; beyond, the oldest is stepped with no result.
const MAX_PENDING: usize = 4096;
/// A line buffer grown past this is given back after its line.
const KEEP_BUFFER: usize = 8 << 20;

/// The longest line held in memory (a transcript line with a huge tool
/// result can be larger; it is skipped and counted).
const MAX_LINE: u64 = 64 << 20;

/// The whole replay: what happened, in order, the totals, and the context curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    /// Everything interband would have done or seen, in transcript order.
    pub events: Vec<Event>,
    /// Totals.
    pub summary: Summary,
    /// The context after each main-thread call and after each compaction.
    pub series: Vec<Point>,
}

/// One thing that would have happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// When, RFC 3339 UTC to the second; `None` before any line had a valid timestamp.
    pub time: Option<String>,
    /// The same as Unix seconds (0 when unknown).
    pub ts: f64,
    /// Tool calls so far, subagents' included: the number of the call this
    /// event belongs to, or of the last call before it.
    pub call: u64,
    /// Tokens in context, when known.
    pub used_tokens: Option<u64>,
    /// The window assumed, tokens, when a usage figure is known.
    pub window: Option<u64>,
    /// Percent of the window used (raw), when known.
    pub used_pct: Option<f64>,
    /// Percent of the usable budget (up to autocompact) left, when known.
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
    /// The agent would have been warned.
    Warning {
        /// The level warned about.
        level: Level,
        /// The text the agent would have read.
        message: String,
    },
    /// `checkpoint_needed` would have been published.
    Checkpoint {
        /// `orange_pressure` or `red_pressure`.
        trigger: String,
    },
    /// The red checkpoint file would have been written.
    CheckpointFile,
    /// intermem would have written a memory note.
    Note {
        /// The checkpoint's trigger, or `precompact`.
        trigger: String,
    },
    /// The transcript has a compaction boundary here.
    Compaction {
        /// `manual` or `auto`, as the boundary says.
        trigger: Option<String>,
        /// Tokens before, as the boundary says.
        pre_tokens: Option<u64>,
        /// Tokens after, as the boundary says.
        post_tokens: Option<u64>,
    },
    /// The compaction trigger would have fired at this turn's `Stop`.
    CompactTrigger {
        /// The strategy simulated: `advise`.
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

    fn add(&mut self, level: Level) {
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
    /// Lines that looked relevant but did not parse, skipped.
    pub skipped_lines: u64,
    /// Why reading stopped early, if it did (an I/O error).
    pub read_error: Option<String>,
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
    /// Main-thread assistant lines with a usage figure.
    pub usage_lines: u64,
    /// Turns ended (main-thread `Stop`s).
    pub turns: u64,
    /// The most tokens in context at a call.
    pub max_used_tokens: Option<u64>,
    /// The highest raw used % at a call.
    pub max_used_pct: Option<f64>,
    /// The largest window assumed, tokens.
    pub window: u64,
    /// Where autocompact starts in that window, tokens.
    pub autocompact_at: u64,
    /// Main-thread calls by the level they left the session at.
    pub calls_at_level: PerLevel,
    /// Warnings by level.
    pub warnings: PerLevel,
    /// Checkpoint requests.
    pub checkpoints: u64,
    /// Red checkpoint files.
    pub checkpoint_files: u64,
    /// Memory notes intermem would have written.
    pub notes: u64,
    /// Compaction boundaries in the transcript.
    pub compactions: u64,
    /// Times the compaction trigger would have fired.
    pub trigger_firings: u64,
    /// The level at the end.
    pub final_level: Level,
}

/// The context at one point of the session.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    /// Tool calls so far (see [`Event::call`]).
    pub call: u64,
    /// Unix seconds (0 when unknown).
    pub ts: f64,
    /// A compaction boundary's figure, between call `call` and the next.
    pub after_compaction: bool,
    /// Tokens in context, when known.
    pub used_tokens: Option<u64>,
    /// The window assumed, tokens.
    pub window: u64,
    /// Where autocompact starts, tokens.
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

/// Replays the transcript read from `reader`.
///
/// `cfg` is the producer's settings; `env` gives the host's variables
/// (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`,
/// `DISABLE_AUTO_COMPACT`); `window` fixes the window in tokens (else it is
/// chosen per figure, see the module's documentation). `progress` is called
/// with the bytes read so far, about every MiB and once at the end.
///
/// Never fails: unreadable lines are skipped, and an I/O error stops the
/// reading and is kept in [`Summary::read_error`].
pub fn replay(
    mut reader: impl BufRead,
    cfg: &Config,
    env: &dyn Env,
    window: Option<u64>,
    progress: &mut dyn FnMut(u64),
) -> Replay {
    let mut sim = Sim {
        cfg,
        env,
        fixed_window: window.filter(|&w| w > 0),
        state: State::default(),
        used: None,
        now: 0.0,
        last_msg: [None, None],
        last_turn_end: None,
        pending: VecDeque::new(),
        fired: false,
        first_ts: None,
        last_ts: None,
        out: Replay {
            events: Vec::new(),
            summary: Summary::default(),
            series: Vec::new(),
        },
    };
    let mut buf = ReadLine::Held(Vec::new());
    let mut reported = 0;
    loop {
        match read_line(&mut reader, &mut buf, MAX_LINE) {
            Ok(None) => break,
            Ok(Some(n)) => {
                sim.out.summary.bytes += n;
                sim.out.summary.lines += 1;
                match &buf {
                    // A line no transcript line needs to be: passed over, counted.
                    ReadLine::TooLong => sim.out.summary.skipped_lines += 1,
                    ReadLine::Held(bytes) => sim.line(bytes),
                }
            }
            Err(e) => {
                sim.out.summary.read_error = Some(e.to_string());
                break;
            }
        }
        if matches!(&buf, ReadLine::Held(b) if b.capacity() > KEEP_BUFFER) {
            buf = ReadLine::Held(Vec::new());
        }
        if sim.out.summary.bytes - reported >= PROGRESS_EVERY {
            reported = sim.out.summary.bytes;
            progress(reported);
        }
    }
    progress(sim.out.summary.bytes);
    sim.finish()
}

/// One line read by [`read_line`].
#[derive(Debug)]
pub enum ReadLine {
    /// The line's bytes (with its `\n`, when it has one).
    Held(Vec<u8>),
    /// Longer than the cap: read past without being held.
    TooLong,
}

/// Reads the next line into `line`, holding at most `cap` bytes of it: a
/// longer one is read past and left as [`ReadLine::TooLong`]. Returns the bytes
/// consumed, `None` at the end.
pub fn read_line(
    reader: &mut impl BufRead,
    line: &mut ReadLine,
    cap: u64,
) -> std::io::Result<Option<u64>> {
    let mut buf = match std::mem::replace(line, ReadLine::TooLong) {
        ReadLine::Held(mut b) => {
            b.clear();
            b
        }
        ReadLine::TooLong => Vec::new(),
    };
    let n = std::io::Read::take(&mut *reader, cap + 1).read_until(b'\n', &mut buf)? as u64;
    if n == 0 {
        *line = ReadLine::Held(buf);
        return Ok(None);
    }
    if n <= cap || buf.last() == Some(&b'\n') {
        *line = ReadLine::Held(buf);
        return Ok(Some(n));
    }
    let mut skipped = n;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(Some(skipped));
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        reader.consume(used);
        skipped += used as u64;
        if done {
            return Ok(Some(skipped));
        }
    }
}

/// The session's project folder and model, from a transcript's first lines
/// (both are on nearly every line): up to 1000 lines, lines over 1 MiB (a
/// pasted image) passed over without being held.
///
/// ```
/// let t = concat!(
///     r#"{"type":"user","cwd":"/w/app","message":{"content":"hi"}}"#, "\n",
///     r#"{"type":"assistant","message":{"model":"claude-x","content":[]}}"#, "\n",
/// );
/// let (cwd, model) = interpulse::replay::session_head(t.as_bytes());
/// assert_eq!((cwd.unwrap().to_str(), model.as_deref()), (Some("/w/app"), Some("claude-x")));
/// ```
pub fn session_head(mut reader: impl BufRead) -> (Option<std::path::PathBuf>, Option<String>) {
    let (mut cwd, mut model) = (None, None);
    let mut line = ReadLine::Held(Vec::new());
    for _ in 0..1000 {
        match read_line(&mut reader, &mut line, 1 << 20) {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
        let ReadLine::Held(bytes) = &line else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            continue;
        };
        if cwd.is_none() {
            cwd = v["cwd"].as_str().map(std::path::PathBuf::from);
        }
        if model.is_none() && v["type"] == "assistant" {
            model = v["message"]["model"]
                .as_str()
                .filter(|m| *m != "<synthetic>")
                .map(str::to_owned);
        }
        if cwd.is_some() && model.is_some() {
            break;
        }
    }
    (cwd, model)
}

/// A tool call waiting for its result.
struct Pending {
    id: Option<String>,
    tool: String,
    subagent: bool,
    now: f64,
    used: Option<(u64, Source)>,
    bytes: u64,
    done: bool,
}

struct Sim<'a> {
    cfg: &'a Config,
    env: &'a dyn Env,
    fixed_window: Option<u64>,
    state: State,
    /// The context as the transcript shows it now.
    used: Option<(u64, Source)>,
    /// The latest valid timestamp, Unix seconds.
    now: f64,
    /// The last assistant message id, main thread and sidechain.
    last_msg: [Option<String>; 2],
    /// The message id of the last turn end, not to count one turn twice.
    last_turn_end: Option<String>,
    pending: VecDeque<Pending>,
    /// The compaction trigger fired in this cycle.
    fired: bool,
    first_ts: Option<f64>,
    last_ts: Option<f64>,
    out: Replay,
}

/// The few fields of a line that matter; serde skips the rest without building it.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: Option<Value>,
    subtype: Option<Value>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<Value>,
    timestamp: Option<Value>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(rename = "compactMetadata")]
    compact: Option<Value>,
}

#[derive(Deserialize)]
struct Message<'a> {
    id: Option<Value>,
    model: Option<Value>,
    usage: Option<Value>,
    stop_reason: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    name: Option<Value>,
    tool_use_id: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

fn str_of(v: &Option<Value>) -> Option<&str> {
    v.as_ref().and_then(Value::as_str)
}

/// The blocks of a message's content (none when it is not a list).
fn blocks(content: Option<&RawValue>) -> Vec<Block<'_>> {
    content
        .filter(|c| c.get().starts_with('['))
        .and_then(|c| serde_json::from_str(c.get()).ok())
        .unwrap_or_default()
}

/// The size of a tool result's content, bytes.
fn content_len(content: Option<&RawValue>) -> u64 {
    let Some(raw) = content else { return 0 };
    let len = match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::String(s)) => s.len(),
        Ok(Value::Array(items)) => items
            .iter()
            .map(|item| match item.get("text") {
                Some(Value::String(t)) => t.len(),
                _ => item.to_string().len(),
            })
            .sum(),
        Ok(Value::Null) | Err(_) => 0,
        Ok(_) => raw.get().len(),
    };
    len as u64
}

/// Context tokens of an assistant usage object, as the transcript reader counts them.
fn usage_tokens(usage: &serde_json::Map<String, Value>) -> u64 {
    [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .fold(0u64, |sum, key| {
        sum.saturating_add(usage.get(*key).and_then(Value::as_u64).unwrap_or(0))
    })
}

/// Unix seconds of an RFC 3339 timestamp.
fn parse_time(s: &str) -> Option<f64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

/// RFC 3339 UTC to the second, `None` for 0 (unknown).
pub fn format_time(ts: f64) -> Option<String> {
    if ts <= 0.0 {
        return None;
    }
    let t = time::OffsetDateTime::from_unix_timestamp(ts.floor() as i64).ok()?;
    t.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

impl Sim<'_> {
    fn line(&mut self, raw: &[u8]) {
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if !contains(raw, b"\"assistant\"")
            && !contains(raw, b"tool_result")
            && !contains(raw, b"compact_boundary")
        {
            return;
        }
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            self.out.summary.skipped_lines += 1;
            return;
        };
        if let Some(ts) = str_of(&line.timestamp).and_then(parse_time) {
            self.now = ts;
            self.first_ts = Some(self.first_ts.map_or(ts, |f| f.min(ts)));
            self.last_ts = Some(self.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let side = line.sidechain == Some(Value::Bool(true));
        match str_of(&line.kind) {
            Some("assistant") => {
                if let Some(m) = line.message {
                    self.assistant(m, side);
                }
            }
            Some("user") => {
                if let Some(m) = line.message {
                    self.results(m.content);
                }
            }
            Some("system") if str_of(&line.subtype) == Some("compact_boundary") && !side => {
                self.boundary(line.compact.as_ref());
            }
            _ => {}
        }
    }

    fn assistant(&mut self, m: Message<'_>, side: bool) {
        if !side
            && str_of(&m.model) != Some("<synthetic>")
            && let Some(Value::Object(usage)) = &m.usage
        {
            self.used = Some((usage_tokens(usage), Source::Transcript));
            self.out.summary.usage_lines += 1;
        }
        // A new message in a thread: that thread's earlier calls got all the results they will get.
        let id = str_of(&m.id).map(str::to_owned);
        let thread = usize::from(side);
        if id.is_none() || id != self.last_msg[thread] {
            for p in self.pending.iter_mut().filter(|p| p.subagent == side) {
                p.done = true;
            }
            self.last_msg[thread] = id.clone();
        }
        for b in blocks(m.content) {
            if str_of(&b.kind) != Some("tool_use") {
                continue;
            }
            let id = str_of(&b.id).map(str::to_owned);
            self.pending.push_back(Pending {
                done: id.is_none(),
                id,
                tool: str_of(&b.name).unwrap_or("?").to_owned(),
                subagent: side,
                now: self.now,
                used: self.used,
                bytes: 0,
            });
            if self.pending.len() > MAX_PENDING
                && let Some(p) = self.pending.front_mut()
            {
                p.done = true;
            }
        }
        self.flush();
        let stop = str_of(&m.stop_reason);
        let ends_turn = stop.is_some_and(|s| s != "tool_use" && s != "pause_turn");
        if !side && ends_turn && (id.is_none() || id != self.last_turn_end) {
            self.last_turn_end = id;
            self.turn_end();
        }
    }

    fn results(&mut self, content: Option<&RawValue>) {
        for b in blocks(content) {
            if str_of(&b.kind) != Some("tool_result") {
                continue;
            }
            let Some(id) = str_of(&b.tool_use_id) else {
                continue;
            };
            if let Some(p) = self
                .pending
                .iter_mut()
                .find(|p| !p.done && p.id.as_deref() == Some(id))
            {
                p.bytes = content_len(b.content);
                p.done = true;
            }
        }
        self.flush();
    }

    /// Steps the calls at the front that are done.
    fn flush(&mut self) {
        while self.pending.front().is_some_and(|p| p.done) {
            if let Some(p) = self.pending.pop_front() {
                self.step(p);
            }
        }
    }

    fn flush_all(&mut self) {
        for p in &mut self.pending {
            p.done = true;
        }
        self.flush();
    }

    fn figures(&self, used: Option<(u64, Source)>) -> Option<Figures> {
        let (used_tokens, source) = used?;
        let window = self
            .fixed_window
            .unwrap_or_else(|| context::window(None, self.cfg.window, self.env, None, used_tokens));
        Some(Figures {
            used_tokens,
            window,
            autocompact_at: context::autocompact_at(window, self.env),
            source,
        })
    }

    fn event(&mut self, ts: f64, figures: Option<&Figures>, what: What) {
        let s = &mut self.out.summary;
        match &what {
            What::Warning { level, .. } => s.warnings.add(*level),
            What::Checkpoint { .. } => s.checkpoints += 1,
            What::CheckpointFile => s.checkpoint_files += 1,
            What::Note { .. } => s.notes += 1,
            What::Compaction { .. } => s.compactions += 1,
            What::CompactTrigger { .. } => s.trigger_firings += 1,
            What::LevelChange { .. } => {}
        }
        self.out.events.push(Event {
            time: format_time(ts),
            ts,
            call: self.state.calls,
            used_tokens: figures.map(|f| f.used_tokens),
            window: figures.map(|f| f.window),
            used_pct: figures.map(Figures::used_pct),
            usable_pct: figures.map(Figures::usable_remaining),
            level: self.state.level,
            what,
        });
    }

    fn point(&mut self, ts: f64, figures: Option<&Figures>, after_compaction: bool) {
        let (window, autocompact_at) = match figures {
            Some(f) => (f.window, f.autocompact_at),
            None => self.default_window(),
        };
        let s = &mut self.out.summary;
        if window > s.window {
            s.window = window;
            s.autocompact_at = autocompact_at;
        }
        self.out.series.push(Point {
            call: self.state.calls,
            ts,
            after_compaction,
            used_tokens: figures.map(|f| f.used_tokens),
            window,
            autocompact_at,
            level: self.state.level,
        });
    }

    fn default_window(&self) -> (u64, u64) {
        let w = self
            .fixed_window
            .unwrap_or_else(|| context::window(None, self.cfg.window, self.env, None, 0));
        (w, context::autocompact_at(w, self.env))
    }

    /// One call through the engine, as `PostToolUse` would have run it.
    fn step(&mut self, p: Pending) {
        let figures = self.figures(p.used);
        let call = Call {
            now: p.now,
            tool: p.tool,
            response_bytes: p.bytes,
            subagent: p.subagent,
        };
        let obs = Observation {
            compaction: None,
            figures,
            directives: false,
        };
        let before = (self.state.level, self.state.compactions);
        let o = engine::step(&self.state, &call, &obs, self.cfg);
        self.state = o.state;
        self.out.summary.tool_output_bytes += p.bytes;
        if p.subagent {
            return;
        }
        if self.state.compactions > before.1 {
            // The engine saw a new context: a new compaction-trigger cycle.
            self.fired = false;
        }
        let f = figures.as_ref();
        let s = &mut self.out.summary;
        s.calls_at_level.add(o.level);
        if let Some(f) = f {
            s.max_used_tokens = Some(s.max_used_tokens.unwrap_or(0).max(f.used_tokens));
            s.max_used_pct = Some(s.max_used_pct.unwrap_or(0.0).max(f.used_pct()));
        }
        self.point(p.now, f, false);
        if o.level != before.0 {
            self.event(
                p.now,
                f,
                What::LevelChange {
                    from: before.0,
                    to: o.level,
                },
            );
        }
        for a in o.actions {
            match a {
                Action::Warn(level) => {
                    let message = messages::warning(level, f, &self.state);
                    self.event(p.now, f, What::Warning { level, message });
                }
                Action::Checkpoint(trigger) => {
                    self.event(
                        p.now,
                        f,
                        What::Checkpoint {
                            trigger: trigger.to_owned(),
                        },
                    );
                    self.event(
                        p.now,
                        f,
                        What::Note {
                            trigger: trigger.to_owned(),
                        },
                    );
                }
                Action::CheckpointFile => self.event(p.now, f, What::CheckpointFile),
                Action::Reinject(_) => {}
            }
        }
    }

    /// A main-thread `Stop`: the compaction trigger, once per cycle at red.
    fn turn_end(&mut self) {
        self.flush_all();
        self.out.summary.turns += 1;
        if self.state.level >= Level::Red && !self.fired {
            self.fired = true;
            let f = self.figures(self.used);
            self.event(
                self.now,
                f.as_ref(),
                What::CompactTrigger {
                    strategy: "advise".to_owned(),
                },
            );
        }
    }

    /// A compaction boundary: `PreCompact` (a note), the compaction, then
    /// `SessionStart` (`compact`): a fresh state and a new trigger cycle.
    fn boundary(&mut self, meta: Option<&Value>) {
        self.flush_all();
        let get = |k: &str| meta.and_then(|m| m.get(k));
        let before = self.figures(self.used);
        self.event(
            self.now,
            before.as_ref(),
            What::Note {
                trigger: "precompact".to_owned(),
            },
        );
        let post_tokens = get("postTokens").and_then(Value::as_u64);
        self.used = post_tokens.map(|t| (t, Source::Compaction));
        let after = self.figures(self.used);
        let from = self.state.level;
        self.state.new_context();
        self.fired = false;
        self.event(
            self.now,
            after.as_ref(),
            What::Compaction {
                trigger: get("trigger").and_then(Value::as_str).map(str::to_owned),
                pre_tokens: get("preTokens").and_then(Value::as_u64),
                post_tokens,
            },
        );
        if from != self.state.level {
            self.event(
                self.now,
                after.as_ref(),
                What::LevelChange {
                    from,
                    to: self.state.level,
                },
            );
        }
        self.point(self.now, after.as_ref(), true);
    }

    fn finish(mut self) -> Replay {
        self.flush_all();
        let default_window = self.default_window();
        let s = &mut self.out.summary;
        s.calls = self.state.calls;
        s.subagent_calls = self.state.subagent_calls;
        s.final_level = self.state.level;
        s.first_time = self.first_ts.and_then(format_time);
        s.last_time = self.last_ts.and_then(format_time);
        s.found = s.calls > 0 || s.usage_lines > 0 || s.compactions > 0;
        if s.window == 0 {
            (s.window, s.autocompact_at) = default_window;
        }
        self.out
    }
}

/// Escapes text for SVG (XML) content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The raw used % of a window at which the usable share left is `usable` %:
/// `autocompact_at × (1 − usable/100) / window × 100`.
pub fn used_pct_at_usable(usable: f64, window: u64, autocompact_at: u64) -> f64 {
    if window == 0 {
        return 0.0;
    }
    (autocompact_at as f64 * (1.0 - usable / 100.0) / window as f64 * 100.0).clamp(0.0, 100.0)
}

/// A round step near `span / n` (1, 2 or 5 times a power of ten), at least 1.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn tokens_k(t: u64) -> String {
    if t >= 1_000_000 && t.is_multiple_of(1_000_000) {
        format!("{}M", t / 1_000_000)
    } else {
        format!("{}k", (t as f64 / 1000.0).round() as u64)
    }
}

/// Draws the replay as a standalone SVG document.
///
/// The x axis is the tool call number; the y axis is the raw used % of the
/// largest window the replay assumed ([`Summary::window`]). Behind the curve,
/// horizontal bands show where each level starts for that window (the usable
/// thresholds of `cfg` converted with [`used_pct_at_usable`]) and a dashed line
/// where autocompact starts. Vertical markers show warnings (coloured by level),
/// checkpoint requests, compactions and compaction-trigger firings; a legend
/// names them. Long sessions are thinned to at most two points per pixel
/// column (the lowest and highest), and markers to one per kind and column.
pub fn svg(r: &Replay, cfg: &Config) -> String {
    const W: f64 = 960.0;
    const H: f64 = 500.0;
    let (left, right, top, bottom) = (64.0, 200.0, 60.0, 56.0);
    let (pw, ph) = (W - left - right, H - top - bottom);
    let window = r.summary.window.max(1);
    let ac = r.summary.autocompact_at;
    let xmax = r
        .series
        .iter()
        .map(Point::x)
        .chain(r.events.iter().map(event_x))
        .fold(0.5f64, f64::max)
        + 0.5;
    let sx = |x: f64| left + x / xmax * pw;
    let sy = |pct: f64| top + (1.0 - pct.clamp(0.0, 100.0) / 100.0) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        "<title>{}</title>",
        escape("interband replay: context used over the session")
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>"#
    );

    // Threshold bands, in used % of the window.
    let u = cfg.thresholds.usable;
    let at = |usable: f64| used_pct_at_usable(usable, window, ac);
    let bands = [
        ("green", "#dff3df", 0.0, at(u.yellow)),
        ("yellow", "#fff4c4", at(u.yellow), at(u.orange)),
        ("orange", "#ffe1bd", at(u.orange), at(u.red)),
        ("red", "#ffd3d3", at(u.red), 100.0),
    ];
    s.push_str("<g class=\"bands\">\n");
    for (name, color, lo, hi) in bands {
        if hi > lo {
            let _ = writeln!(
                s,
                r#"<rect class="band-{name}" x="{left:.1}" y="{:.1}" width="{pw:.1}" height="{:.1}" fill="{color}"><title>{name}: {lo:.1}–{hi:.1}% used</title></rect>"#,
                sy(hi),
                sy(lo) - sy(hi)
            );
        }
    }
    let acp = at(0.0);
    let _ = writeln!(
        s,
        r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#555" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555" stroke="white" stroke-width="3" paint-order="stroke">autocompact {acp:.1}%</text>"##,
        left + pw,
        left + pw - 4.0,
        sy(acp) - 4.0,
        y = sy(acp)
    );
    s.push_str("</g>\n");

    // Grid and axes.
    s.push_str("<g class=\"axes\" stroke=\"#999\" fill=\"#333\">\n");
    for pct in (0..=100).step_by(20) {
        let y = sy(pct as f64);
        let _ = writeln!(
            s,
            r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ccc" stroke-width="0.5"/><text x="{:.1}" y="{:.1}" text-anchor="end" stroke="none">{pct}%</text>"##,
            left + pw,
            left - 6.0,
            y + 4.0
        );
    }
    let step = nice_step(xmax, 8.0);
    let mut x = 0.0;
    while x <= xmax + 1e-9 {
        let px = sx(x);
        let _ = writeln!(
            s,
            r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" stroke="none">{x}</text>"#,
            top + ph,
            top + ph + 5.0,
            top + ph + 18.0
        );
        x += step;
    }
    let _ = writeln!(
        s,
        r#"<rect x="{left:.1}" y="{top:.1}" width="{pw:.1}" height="{ph:.1}" fill="none"/>"#
    );
    s.push_str("</g>\n");
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        H - 14.0,
        escape("tool call #")
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + ph / 2.0,
        escape(&format!(
            "context used, % of the {} window",
            tokens_k(window)
        ))
    );
    let sm = &r.summary;
    let _ = writeln!(
        s,
        r#"<text x="{left:.1}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        escape("interband replay: context used over the session")
    );
    let _ = writeln!(
        s,
        r##"<text x="{left:.1}" y="44" fill="#444">{}</text>"##,
        escape(&format!(
            "{} tool calls ({} in subagents) · {} warnings · {} checkpoints · {} notes · {} compactions · {} trigger firings",
            sm.calls,
            sm.subagent_calls,
            sm.warnings.total(),
            sm.checkpoints,
            sm.notes,
            sm.compactions,
            sm.trigger_firings
        ))
    );

    // Markers.
    s.push_str("<g class=\"markers\">\n");
    let mut seen = std::collections::HashSet::new();
    for e in &r.events {
        let (kind, color, dash, width) = match &e.what {
            What::Warning { level, .. } => ("warning", level_color(*level), "", 1.0),
            What::Checkpoint { .. } => ("checkpoint", "#6a1b9a", "4 3", 1.5),
            What::Compaction { .. } => ("compaction", "#111111", "", 2.5),
            What::CompactTrigger { .. } => ("trigger", "#d81b60", "2 2", 2.0),
            _ => continue,
        };
        let px = sx(event_x(e));
        if !seen.insert((kind, color, px.round() as i64)) {
            continue;
        }
        let dash = if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        };
        let _ = writeln!(
            s,
            r#"<line class="marker-{kind}" x1="{px:.1}" y1="{top:.1}" x2="{px:.1}" y2="{:.1}" stroke="{color}" stroke-width="{width}" stroke-opacity="0.8"{dash}><title>{}</title></line>"#,
            top + ph,
            escape(&format!("{kind} at call {}", e.call))
        );
    }
    s.push_str("</g>\n");

    // The curve: one polyline per run of points with a usage figure.
    s.push_str("<g class=\"series\" fill=\"none\" stroke=\"#1f4e9c\" stroke-width=\"1.8\" stroke-linejoin=\"round\">\n");
    let mut run: Vec<(f64, f64)> = Vec::new();
    let mut runs = Vec::new();
    for p in &r.series {
        match p.used_tokens {
            Some(t) => {
                let x = sx(p.x());
                // A compaction is a step down at its own x, not a slope from the call before.
                if let (true, Some(&(_, y))) = (p.after_compaction, run.last()) {
                    run.push((x, y));
                }
                run.push((x, sy(t as f64 / window as f64 * 100.0)));
            }
            None if !run.is_empty() => runs.push(std::mem::take(&mut run)),
            None => {}
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    for run in runs {
        let pts = thin(&run);
        if pts.len() == 1 {
            let _ = writeln!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#1f4e9c" stroke="none"/>"##,
                pts[0].0, pts[0].1
            );
        }
        let list: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(s, r#"<polyline class="used" points="{}"/>"#, list.join(" "));
    }
    s.push_str("</g>\n");

    // Legend: (colour, dash, width or 0 for a filled box, label).
    let lx = left + pw + 16.0;
    let mut legend: Vec<(&str, &str, f64, String)> =
        vec![("#1f4e9c", "", 1.8, "context used".to_owned())];
    for (name, color, _, _) in bands {
        legend.push((color, "", 0.0, format!("{name} zone")));
    }
    legend.push(("#555", "6 4", 1.0, "autocompact".to_owned()));
    for level in [Level::Yellow, Level::Orange, Level::Red] {
        legend.push((
            level_color(level),
            "",
            1.0,
            format!("{} warning", level.as_str()),
        ));
    }
    legend.push(("#6a1b9a", "4 3", 1.5, "checkpoint".to_owned()));
    legend.push(("#111111", "", 2.5, "compaction".to_owned()));
    legend.push(("#d81b60", "2 2", 2.0, "compaction trigger".to_owned()));
    s.push_str("<g class=\"legend\">\n");
    for (i, (color, dash, width, label)) in legend.iter().enumerate() {
        let y = top + 4.0 + i as f64 * 20.0;
        if *width == 0.0 {
            let _ = write!(
                s,
                r##"<rect x="{lx:.1}" y="{:.1}" width="22" height="12" fill="{color}" stroke="#999" stroke-width="0.5"/>"##,
                y - 6.0
            );
        } else {
            let dash = if dash.is_empty() {
                String::new()
            } else {
                format!(r#" stroke-dasharray="{dash}""#)
            };
            let _ = write!(
                s,
                r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="{width}"{dash}/>"#,
                lx + 22.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 28.0,
            y + 4.0,
            escape(label)
        );
    }
    s.push_str("</g>\n</svg>\n");
    s
}

fn level_color(level: Level) -> &'static str {
    match level {
        Level::Green => "#2e7d32",
        Level::Yellow => "#b59b00",
        Level::Orange => "#e07b00",
        Level::Red => "#c62828",
    }
}

fn event_x(e: &Event) -> f64 {
    e.call as f64
        + if matches!(e.what, What::Compaction { .. }) {
            0.5
        } else {
            0.0
        }
}

/// At most the first, lowest, highest and last point per pixel column, in order.
fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let col = points[i].0.round();
        let mut j = i;
        while j < points.len() && points[j].0.round() == col {
            j += 1;
        }
        let group = &points[i..j];
        if group.len() <= 4 {
            out.extend_from_slice(group);
        } else {
            let lo = (0..group.len())
                .min_by(|&a, &b| group[a].1.total_cmp(&group[b].1))
                .unwrap_or(0);
            let hi = (0..group.len())
                .max_by(|&a, &b| group[a].1.total_cmp(&group[b].1))
                .unwrap_or(0);
            let mut keep = vec![0, lo, hi, group.len() - 1];
            keep.sort_unstable();
            keep.dedup();
            out.extend(keep.into_iter().map(|k| group[k]));
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl"
    );

    fn none(_: &str) -> Option<String> {
        None
    }

    fn run(text: &str) -> Replay {
        replay(
            text.as_bytes(),
            &Config::default(),
            &none,
            None,
            &mut |_| {},
        )
    }

    fn ts(i: u64) -> String {
        format_time(1_796_000_000.0 + i as f64 * 60.0).unwrap()
    }

    /// A main-thread (or sidechain) assistant line with one tool_use block.
    fn tool_use(i: u64, used: u64, tool: &str, side: bool) -> String {
        json!({
            "type": "assistant", "isSidechain": side, "timestamp": ts(i),
            "message": {"id": format!("msg-{i}-{side}"), "model": "claude-x", "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": format!("tu-{i}-{side}"), "name": tool, "input": {"command": "x"}}],
                "usage": {"input_tokens": used / 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": used - used / 10, "output_tokens": 5}},
        })
        .to_string()
    }

    fn result(i: u64, side: bool, content: Value) -> String {
        json!({
            "type": "user", "isSidechain": side, "timestamp": ts(i),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("tu-{i}-{side}"), "content": content}]},
        })
        .to_string()
    }

    fn end_turn(i: u64, used: u64) -> String {
        json!({
            "type": "assistant", "isSidechain": false, "timestamp": ts(i),
            "message": {"id": format!("end-{i}"), "model": "claude-x", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "done"}],
                "usage": {"input_tokens": used, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}},
        })
        .to_string()
    }

    fn boundary(i: u64, post: u64) -> String {
        json!({"type": "system", "subtype": "compact_boundary", "isSidechain": false, "timestamp": ts(i),
            "compactMetadata": {"trigger": "auto", "preTokens": 170_000, "postTokens": post}})
        .to_string()
    }

    /// Calls at these shares of 200k (percent), one minute apart.
    fn session(pcts: &[u64]) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, pct) in pcts.iter().enumerate() {
            let i = i as u64 + 1;
            lines.push(tool_use(i, pct * 2000, "Bash", false));
            lines.push(result(i, false, json!("ok")));
        }
        lines
    }

    fn text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn kinds(r: &Replay) -> Vec<String> {
        r.events
            .iter()
            .map(|e| match &e.what {
                What::LevelChange { from, to } => format!("{}>{}", from.as_str(), to.as_str()),
                What::Warning { level, .. } => format!("warn:{}", level.as_str()),
                What::Checkpoint { trigger } => format!("cp:{trigger}"),
                What::CheckpointFile => "cpfile".into(),
                What::Note { trigger } => format!("note:{trigger}"),
                What::Compaction { .. } => "compaction".into(),
                What::CompactTrigger { .. } => "trigger".into(),
            })
            .collect()
    }

    #[test]
    fn the_real_fixture_has_one_call_and_one_compaction() {
        let bytes = std::fs::read(FIXTURE).unwrap();
        let mut reports = vec![];
        let r = replay(&bytes[..], &Config::default(), &none, None, &mut |b| {
            reports.push(b)
        });
        let s = &r.summary;
        assert!(s.found);
        assert_eq!((s.calls, s.subagent_calls), (1, 0));
        assert_eq!(s.compactions, 1);
        assert_eq!(s.max_used_tokens, Some(31_700));
        assert_eq!(s.bytes, bytes.len() as u64);
        assert_eq!(reports.last(), Some(&(bytes.len() as u64)));
        assert_eq!(s.tool_output_bytes, 5, "\"hello\"");
        assert_eq!(s.turns, 1);
        assert_eq!(s.notes, 1, "the PreCompact note");
        assert_eq!(s.window, 200_000);
        assert_eq!(s.first_time.as_deref(), Some("2026-11-30T01:28:33Z"));
        let c = r
            .events
            .iter()
            .find(|e| matches!(e.what, What::Compaction { .. }))
            .unwrap();
        assert_eq!(
            c.what,
            What::Compaction {
                trigger: Some("manual".into()),
                pre_tokens: Some(31_725),
                post_tokens: Some(2613)
            }
        );
        assert_eq!(r.series.len(), 2);
        assert!(r.series[1].after_compaction);
    }

    #[test]
    fn rising_usage_walks_every_level_with_checkpoints_and_debounced_warnings() {
        let mut pcts = vec![20, 20, 60, 60, 70, 70];
        pcts.extend([80; 7]);
        let r = run(&text(&session(&pcts)));
        let k = kinds(&r);
        assert_eq!(
            &k[..8],
            [
                "green>yellow",
                "warn:yellow",
                "yellow>orange",
                "warn:orange",
                "cp:orange_pressure",
                "note:orange_pressure",
                "orange>red",
                "warn:red"
            ]
        );
        assert_eq!(
            &k[8..11],
            ["cp:red_pressure", "note:red_pressure", "cpfile"]
        );
        // Red for 7 calls: at once, then after 5 more calls.
        assert_eq!(k[11..], ["warn:red"]);
        let s = &r.summary;
        assert_eq!(
            s.warnings,
            PerLevel {
                green: 0,
                yellow: 1,
                orange: 1,
                red: 2
            }
        );
        assert_eq!(
            s.calls_at_level,
            PerLevel {
                green: 2,
                yellow: 2,
                orange: 2,
                red: 7
            }
        );
        assert_eq!((s.checkpoints, s.checkpoint_files, s.notes), (2, 1, 2));
        assert_eq!(s.max_used_pct, Some(80.0));
        let w = r
            .events
            .iter()
            .find_map(|e| match &e.what {
                What::Warning { level, message } if *level == Level::Orange => Some(message),
                _ => None,
            })
            .unwrap();
        assert!(w.starts_with("Context ORANGE:"), "{w}");
    }

    #[test]
    fn the_trigger_fires_once_per_cycle_at_a_red_stop_and_a_compaction_resets() {
        let mut lines = session(&[80, 80]);
        lines.push(end_turn(3, 160_000));
        lines.push(tool_use(4, 161_000, "Read", false));
        lines.push(result(4, false, json!("x")));
        lines.push(end_turn(5, 162_000));
        lines.push(boundary(6, 10_000));
        lines.push(tool_use(7, 12_000, "Bash", false));
        lines.push(result(7, false, json!("y")));
        let r = run(&text(&lines));
        let k = kinds(&r);
        assert_eq!(k.iter().filter(|k| *k == "trigger").count(), 1);
        let tail: Vec<&str> = k.iter().rev().take(3).rev().map(String::as_str).collect();
        assert_eq!(tail, ["note:precompact", "compaction", "red>green"]);
        let s = &r.summary;
        assert_eq!((s.turns, s.trigger_firings, s.compactions), (2, 1, 1));
        assert_eq!(s.final_level, Level::Green);
        assert_eq!(s.notes, 2, "the red checkpoint's and the PreCompact one");
        // After the compaction, red again fires again.
        lines.extend(session(&[90]).into_iter().map(|l| l.replace("-1-", "-8-")));
        lines.push(end_turn(9, 180_000));
        assert_eq!(run(&text(&lines)).summary.trigger_firings, 2);
    }

    #[test]
    fn subagent_lines_never_change_the_level_or_the_context() {
        let mut lines = session(&[20]);
        for i in 2..6 {
            lines.push(tool_use(i, 195_000, "Read", true));
            lines.push(result(i, true, json!("big")));
        }
        lines.push(tool_use(9, 40_000, "Bash", false));
        lines.push(result(9, false, json!("ok")));
        let r = run(&text(&lines));
        assert_eq!((r.summary.calls, r.summary.subagent_calls), (6, 4));
        assert!(kinds(&r).is_empty(), "{:?}", kinds(&r));
        assert_eq!(r.summary.max_used_tokens, Some(40_000));
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.series[1].call, 6);
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_without_being_held() {
        let lines = [
            tool_use(1, 20_000, "Read", false),
            format!(
                "{{\"type\":\"user\",\"x\":\"{}\"}}",
                "z".repeat(MAX_LINE as usize + 10)
            ),
            tool_use(2, 30_000, "Bash", false),
            result(2, false, json!("ok")),
        ];
        let all = text(&lines);
        let r = run(&all);
        assert_eq!(r.summary.lines, 4);
        assert_eq!(r.summary.bytes, all.len() as u64);
        assert_eq!(r.summary.skipped_lines, 1);
        assert_eq!(
            r.summary.max_used_tokens,
            Some(30_000),
            "the lines after it count"
        );
    }

    #[test]
    fn results_give_sizes_and_garbage_and_huge_lines_are_handled() {
        let huge = "z".repeat(600 * 1024);
        let lines = [
            "not json at all \"assistant\"".to_owned(),
            String::new(),
            tool_use(1, 20_000, "Read", false),
            r#"{"type":"attachment","attachment":{"type":"date"}}"#.to_owned(),
            result(1, false, json!([{"type": "text", "text": huge}])),
            tool_use(2, 20_000, "Bash", false),
            result(2, false, json!("four")),
            "{\"type\":\"assistant\",\"message\":".to_owned(),
        ];
        let r = run(&text(&lines));
        assert_eq!(r.summary.calls, 2);
        assert_eq!(r.summary.tool_output_bytes, 600 * 1024 + 4);
        assert_eq!(r.summary.skipped_lines, 2);
        assert_eq!(r.summary.lines, 8);
    }

    #[test]
    fn calls_without_results_and_parallel_calls_are_stepped_in_order() {
        // Two tool_use lines of one message, results in reverse order; then a call
        // whose result never comes.
        let a = tool_use(1, 20_000, "Read", false);
        let b = a
            .replace("tu-1-false", "tu-1b")
            .replace("\"Read\"", "\"Grep\"");
        let lines = [
            a,
            b,
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu-1b","content":"12"}]}}).to_string(),
            result(1, false, json!("1")),
            tool_use(2, 20_000, "Bash", false),
        ];
        let r = run(&text(&lines));
        assert_eq!(r.summary.calls, 3);
        assert_eq!(r.summary.tool_output_bytes, 3);
        assert_eq!(
            r.series.iter().map(|p| p.call).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }

    #[test]
    fn nothing_found_in_an_empty_or_unrelated_file() {
        for t in [
            "",
            "\n\n",
            "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\n",
        ] {
            let r = run(t);
            assert!(!r.summary.found, "{t:?}");
            assert!(r.events.is_empty());
            assert_eq!(r.summary.window, 200_000);
        }
    }

    #[test]
    fn a_fixed_window_and_the_host_window_variable_are_used() {
        let lines = text(&session(&[60]));
        let r = replay(
            lines.as_bytes(),
            &Config::default(),
            &none,
            Some(1_000_000),
            &mut |_| {},
        );
        assert_eq!(r.summary.window, 1_000_000);
        assert_eq!(r.summary.final_level, Level::Green);
        let env = |k: &str| (k == "CLAUDE_CODE_AUTO_COMPACT_WINDOW").then(|| "150000".to_owned());
        let r = replay(
            lines.as_bytes(),
            &Config::default(),
            &env,
            None,
            &mut |_| {},
        );
        assert_eq!(r.summary.window, 150_000);
        assert_eq!(r.summary.final_level, Level::Red);
    }

    #[test]
    fn bands_convert_usable_thresholds_to_used_percent() {
        assert!((used_pct_at_usable(35.0, 200_000, 167_000) - 54.275).abs() < 1e-9);
        assert!((used_pct_at_usable(20.0, 200_000, 167_000) - 66.8).abs() < 1e-9);
        assert!((used_pct_at_usable(10.0, 200_000, 167_000) - 75.15).abs() < 1e-9);
        assert!((used_pct_at_usable(0.0, 1_000_000, 967_000) - 96.7).abs() < 1e-9);
    }

    /// Checks that every tag is closed, in order.
    fn well_formed(svg: &str) -> Result<(), String> {
        let mut stack: Vec<String> = vec![];
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            let j = rest[i..].find('>').ok_or("unclosed <")? + i;
            let tag = &rest[i + 1..j];
            if tag.contains('<') {
                return Err(format!("< inside a tag: {tag}"));
            }
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().ok_or("close without open")?;
                if open != name {
                    return Err(format!("<{open}> closed by </{name}>"));
                }
            } else if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().unwrap_or("").to_owned());
            }
            rest = &rest[j + 1..];
        }
        if stack.is_empty() {
            Ok(())
        } else {
            Err(format!("unclosed: {stack:?}"))
        }
    }

    #[test]
    fn the_svg_is_standalone_and_well_formed() {
        let mut lines = session(&[20, 60, 70, 80]);
        lines.push(end_turn(5, 170_000));
        lines.push(boundary(6, 10_000));
        lines.extend(session(&[10]).into_iter().map(|l| l.replace("-1-", "-9-")));
        let r = run(&text(&lines));
        let svg = svg(&r, &Config::default());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox="));
        well_formed(&svg).unwrap();
        for needle in [
            "<polyline class=\"used\"",
            "marker-warning",
            "marker-checkpoint",
            "marker-compaction",
            "marker-trigger",
            "band-red",
            "tool call #",
        ] {
            assert!(svg.contains(needle), "{needle}");
        }
        // Empty replays draw too.
        let empty = svg_of_empty();
        well_formed(&empty).unwrap();
        assert_eq!(escape("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&apos;");
    }

    fn svg_of_empty() -> String {
        svg(&run(""), &Config::default())
    }

    #[test]
    fn long_sessions_are_thinned() {
        let pcts: Vec<u64> = (0..5000).map(|i| 10 + (i * 7919) % 60).collect();
        let r = run(&text(&session(&pcts)));
        assert_eq!(r.series.len(), 5000);
        let svg = svg(&r, &Config::default());
        let pts = svg.matches(',').count();
        assert!(pts < 3000, "{pts} points drawn");
        well_formed(&svg).unwrap();
    }
}
