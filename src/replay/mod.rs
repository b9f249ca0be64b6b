//! A transcript re-enacted as its host's hook events, through the very code
//! the hooks run ([`crate::dispatch`]), against a private bus and home with a
//! virtual clock (each event's time is its line's).
//!
//! The transcript is read forward once, a line at a time (never whole in
//! memory), by the host's own reader ([`Host::forward`]): what each line
//! says of the context (the usage rule the hook uses from the end) and what
//! it shows happening. Each line is appended to a private copy as it is
//! read, and the host's events are fired where the host fires them, with the
//! copy as their transcript, so every hook reads exactly what it would have
//! read: `SessionStart` at the start; the tool event (`PostToolUse`,
//! `AfterTool`) once a call's result line is written (a call without one,
//! at the end of its turn); the end of a turn (`Stop`, `AfterAgent`) after
//! an answer that asks for no tool, or before the next prompt or the
//! host's own turn-end record (`stop_hook_summary`, `turn_duration`), never
//! for a `<synthetic>` error line; the pre-compaction event before a
//! compaction's line and `SessionStart` (`compact`) after its summary.
//!
//! What the replay reports is what those calls did, read back from their
//! output and the private bus: level changes, warnings, checkpoints, notes,
//! the trigger's firings, notes brought back. The settings are the user's
//! (or the defaults), with two exceptions a replay must make: it never
//! types into a terminal or runs the trigger's command (the trigger
//! `advise`s, and the report names the strategy set), and it writes nothing
//! outside its private folder.

pub mod lines;
pub mod plot;

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use interband::Bus;
use interband::context::WindowSource;
use interband::payloads::{Checkpoint, Level, MemoryNote, Pressure};
use interband::settings::Env;
use interband_hosts::forward::{Happening, Seen};
use interband_hosts::usage::{Reading, UsageKind};
use interband_hosts::{Host, Known};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use lines::{ReadLine, read_line};

/// Bytes read between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 20;
/// Calls waiting for their result, at most; beyond, the oldest is fired without one.
const MAX_PENDING: usize = 4096;
/// The most bytes of lines held back from the copy (see `Stage::held`): a
/// response whose calls never get a result does not grow it further.
const MAX_HELD: usize = 16 << 20;
/// The longest line held in memory; a longer one is passed over, counted.
const MAX_LINE: u64 = 64 << 20;
/// The most points kept for the plot; past it, every other one is dropped.
const MAX_POINTS: usize = 40_000;

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

/// An environment of a fixed set of variables.
struct Vars(HashMap<String, String>);

impl Env for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
    fn may_have_prefix(&self, prefix: &str) -> bool {
        self.0.keys().any(|k| k.starts_with(prefix))
    }
}

/// The session's id, project folder and model, from the first lines.
#[derive(Debug, Default)]
struct Head {
    session: Option<String>,
    cwd: Option<PathBuf>,
    model: Option<String>,
    host: Option<Host>,
}

/// Reads up to 1000 lines (each at most 1 MiB held) for the session's head.
fn head(path: &Path) -> Head {
    use std::io::Read as _;
    let mut h = Head::default();
    let Ok(f) = interband::fsio::open_regular(path, interband::fsio::Links::Follow) else {
        return h;
    };
    let mut reader = std::io::BufReader::new(f.take(64 << 20));
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
        let p = &v["payload"];
        if v["type"] == "session_meta" || v["type"] == "turn_context" {
            h.host.get_or_insert(Host::Codex);
        } else if v.get("projectHash").is_some() || v["type"] == "gemini" {
            h.host.get_or_insert(Host::Gemini);
        }
        let s = |x: &Value| x.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        h.session = h.session.take().or_else(|| {
            s(&v["sessionId"])
                .or_else(|| s(&v["session_id"]))
                .or_else(|| (v["type"] == "session_meta").then(|| s(&p["id"])).flatten())
        });
        h.cwd = h
            .cwd
            .take()
            .or_else(|| s(&v["cwd"]).or_else(|| s(&p["cwd"])).map(PathBuf::from));
        h.model = h.model.take().or_else(|| {
            s(&v["message"]["model"])
                .filter(|m| m != "<synthetic>")
                .or_else(|| {
                    (v["type"] == "turn_context")
                        .then(|| s(&p["model"]))
                        .flatten()
                })
                .or_else(|| (v["type"] == "gemini").then(|| s(&v["model"])).flatten())
        });
        if h.session.is_some() && h.cwd.is_some() && h.model.is_some() {
            break;
        }
    }
    h
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

/// A call waiting for its result.
struct Pending {
    id: Option<String>,
    name: String,
    input: Box<RawValue>,
    subagent: bool,
}

/// The private world and the session being re-enacted.
struct Stage {
    host: Host,
    bus: Bus,
    env: Vars,
    home: PathBuf,
    session: String,
    cwd: PathBuf,
    copy_path: PathBuf,
    copy: std::io::BufWriter<std::fs::File>,
    /// Bytes written to the copy.
    copied: u64,
    /// Lines read but not yet in the copy, in order: a host that writes a
    /// response's calls only after their tool hooks ran
    /// ([`interband_hosts::Profile::writes_calls_after_their_hooks`]) has
    /// them written once those hooks are done.
    held: Vec<u8>,
    /// The copy is given back up to here (see [`Stage::free_behind`]).
    freed_to: u64,
    /// Keep the whole copy (`INTERBAND_REPLAY_KEEP_COPY`, for comparison).
    keep_copy: bool,
    strategy: String,
    problems: RefCell<Vec<String>>,
    /// What the hooks published since the last look (the bus's tap).
    published: std::sync::Arc<std::sync::Mutex<Vec<interband::Message>>>,
}

/// What is being tracked while the transcript is read.
struct Play {
    now: f64,
    first_ts: Option<f64>,
    last_ts: Option<f64>,
    reading: Reading,
    pending: VecDeque<Pending>,
    turn_open: bool,
    answered: bool,
    stop_blocked: bool,
    awaiting_start: bool,
    level: Level,
    pressure: Option<Pressure>,
    checkpoint_seq: u64,
    note_seq: u64,
    out: Replay,
}

/// Replays the transcript at `path` (see the module's documentation).
/// `progress` is called with the bytes read so far, about every MiB.
pub fn replay(path: &Path, opts: &Options, progress: &mut dyn FnMut(u64)) -> Result<Replay> {
    // A regular file only, opened without blocking: a FIFO or a device is refused.
    let (file, _) = interband::fsio::open_regular_meta(path, interband::fsio::Links::Follow)
        .map_err(|e| match e {
            interband::Error::NotAFile { .. } => anyhow::anyhow!(
                "cannot read {}: not a regular file (a folder, a FIFO or a device)",
                path.display()
            ),
            interband::Error::NotFound { .. } => {
                anyhow::anyhow!("cannot read {}: no such file", path.display())
            }
            e => anyhow::anyhow!("cannot read {}: {}", path.display(), e.into_io()),
        })?;
    let mut head = head(path);
    // Only Gemini CLI (before 0.39) wrote a transcript as one `.json` document.
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let host = opts
        .host
        .or_else(|| Host::of_transcript(&path.to_string_lossy()))
        .or(head.host)
        .or(json.then_some(Host::Gemini))
        .unwrap_or(Host::Claude);
    // Stopped by Ctrl-C, a terminal closed or a kill, the replay ends at the
    // next line and its private folder (a copy of the transcript) goes with
    // it: watched for before the folder exists.
    let stop = crate::commands::stop_flag("a replay")?;
    let dir = private_dir()?;
    // A chat recorded as one document is replayed as the lines Gemini
    // writes since, in the private folder.
    let file = match host.layout(path) {
        interband_hosts::tail::Layout::Lines => file,
        interband_hosts::tail::Layout::Document => {
            let lines = dir.path().join("document.jsonl");
            let mut out = std::io::BufWriter::new(private_file(&lines)?);
            interband_hosts::gemini::document_lines(file, &mut out)
                .and_then(|_| std::io::Write::flush(&mut out))
                .with_context(|| format!("cannot read {} as a chat recording", path.display()))?;
            head = self::head(&lines);
            std::fs::File::open(&lines)?
        }
    };
    let stage = Stage::new(dir.path(), host, &head, opts)?;
    let mut play = Play {
        now: 0.0,
        first_ts: None,
        last_ts: None,
        reading: Reading::default(),
        pending: VecDeque::new(),
        turn_open: false,
        answered: false,
        stop_blocked: false,
        awaiting_start: false,
        level: Level::Green,
        pressure: None,
        checkpoint_seq: 0,
        note_seq: 0,
        out: Replay {
            host,
            events: Vec::new(),
            summary: Summary::default(),
            series: Vec::new(),
            thresholds: Default::default(),
        },
    };
    let mut stage = stage;
    stage.event(
        &mut play,
        "SessionStart",
        serde_json::json!({"source": "startup"}),
    )?;
    // The file is read and each line's meaning worked out on a second
    // thread, a few lines ahead of the hooks (bounded: see `Ahead`); the
    // copy and the hook events stay on this one, in order.
    let ahead = Ahead::default();
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<Read>>>(16);
    std::thread::scope(|s| -> Result<()> {
        let ahead = &ahead;
        s.spawn(move || read_ahead(file, host, ahead, &tx));
        // However this side ends, the reader is let go (it may be waiting for room).
        let _close = Close(ahead);
        let mut reported = 0;
        for batch in rx {
            let batch = batch.with_context(|| format!("cannot read {}", path.display()))?;
            let mut held = 0;
            for read in batch {
                anyhow::ensure!(
                    !stop.load(std::sync::atomic::Ordering::Relaxed),
                    "stopped: nothing of the replay is left behind"
                );
                play.out.summary.bytes += read.len;
                play.out.summary.lines += 1;
                match read.line {
                    None => {
                        play.out.summary.skipped_lines += 1;
                        // The copy keeps the line's place; its content is not held.
                        stage.append(b"\n")?;
                    }
                    Some((bytes, seen)) => {
                        held += bytes.len();
                        stage.line(&mut play, &bytes, seen, read.offset)?;
                    }
                }
                if play.out.summary.bytes - reported >= PROGRESS_EVERY {
                    reported = play.out.summary.bytes;
                    progress(reported);
                }
            }
            ahead.done(held);
        }
        Ok(())
    })?;
    progress(play.out.summary.bytes);
    stage.finish(&mut play)?;
    Ok(play.out)
}

/// A line read ahead: its length in the file, and its bytes and meaning
/// (`None` for a line too long to hold).
struct Read {
    len: u64,
    /// Where the line ends in the file.
    offset: u64,
    line: Option<(Vec<u8>, Seen)>,
}

/// The bytes of lines read ahead and not yet replayed: the reader waits
/// while they pass [`AHEAD_BYTES`] (a longer line goes alone), until the
/// replay stops taking lines.
#[derive(Default)]
struct Ahead {
    held: std::sync::Mutex<Held>,
    freed: std::sync::Condvar,
}

#[derive(Default)]
struct Held {
    /// Bytes read ahead and not yet replayed.
    bytes: usize,
    /// The reader is waiting for room (only then is it woken: a wake-up is
    /// a system call).
    waiting: bool,
    /// The replay stopped taking lines.
    closed: bool,
}

impl Held {
    fn room(&self, n: usize) -> bool {
        self.closed || self.bytes == 0 || self.bytes + n <= AHEAD_BYTES
    }
}

/// Closes an [`Ahead`] when dropped.
struct Close<'a>(&'a Ahead);

impl Drop for Close<'_> {
    fn drop(&mut self) {
        let mut held = self.0.held.lock().unwrap_or_else(|e| e.into_inner());
        held.closed = true;
        self.0.freed.notify_all();
    }
}

/// The most bytes of lines read ahead of the replay.
const AHEAD_BYTES: usize = 8 << 20;

/// Lines go to the replay in batches of about this many bytes (or
/// [`BATCH_LINES`] lines): each hand-over between the threads is a system
/// call or two.
const BATCH_BYTES: usize = 1 << 20;
const BATCH_LINES: usize = 256;

impl Ahead {
    /// Whether `n` more bytes may be taken without waiting.
    fn room(&self, n: usize) -> bool {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).room(n)
    }

    /// Waits for room for `n` more bytes, then counts them; false once the
    /// replay stopped taking lines.
    fn take(&self, n: usize) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while !held.room(n) {
            held.waiting = true;
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.waiting = false;
        held.bytes += n;
        !held.closed
    }

    /// `n` bytes replayed.
    fn done(&self, n: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.bytes = held.bytes.saturating_sub(n);
        if held.waiting {
            self.freed.notify_one();
        }
    }
}

/// Reads `file` a line at a time, each through the host's forward reader,
/// and sends them on in batches until the end, an error or the receiver's
/// end.
fn read_ahead(
    file: std::fs::File,
    host: Host,
    ahead: &Ahead,
    tx: &std::sync::mpsc::SyncSender<std::io::Result<Vec<Read>>>,
) {
    let mut reader = std::io::BufReader::with_capacity(256 << 10, file);
    let mut offset = 0u64;
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    // Sends the batch on; false once the replay stopped taking them.
    let send = |batch: &mut Vec<Read>, bytes: &mut usize| {
        *bytes = 0;
        tx.send(Ok(std::mem::take(batch))).is_ok()
    };
    loop {
        let mut buf = ReadLine::Held(Vec::new());
        let len = match read_line(&mut reader, &mut buf, MAX_LINE) {
            Ok(Some(len)) => len,
            Ok(None) => {
                send(&mut batch, &mut batch_bytes);
                return;
            }
            Err(e) => {
                // What was read before the error is replayed first.
                if send(&mut batch, &mut batch_bytes) {
                    let _ = tx.send(Err(e));
                }
                return;
            }
        };
        offset += len;
        let line = match buf {
            ReadLine::TooLong => None,
            ReadLine::Held(bytes) => {
                let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
                let seen = host.forward(body, offset);
                // The batch goes before waiting for room: the room is
                // made by replaying it.
                if !batch.is_empty()
                    && !ahead.room(bytes.len())
                    && !send(&mut batch, &mut batch_bytes)
                {
                    return;
                }
                if !ahead.take(bytes.len()) {
                    return;
                }
                batch_bytes += bytes.len();
                Some((bytes, seen))
            }
        };
        batch.push(Read { len, offset, line });
        if (batch_bytes >= BATCH_BYTES || batch.len() >= BATCH_LINES)
            && !send(&mut batch, &mut batch_bytes)
        {
            return;
        }
    }
}

/// The copy is given back in steps of this many bytes.
const FREE_STEP: u64 = 1 << 20;
/// Kept beyond what the transcript's readers reach, to spare.
const FREE_MARGIN: u64 = 1 << 20;

/// Frees `len` bytes of `file` from `offset` (they read as zeros after),
/// keeping its length; where the file system cannot, nothing happens.
fn punch_hole(file: &std::fs::File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: fallocate on a descriptor this file owns, with plain integers.
        let _ = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// The replay's private folder: in memory (`/dev/shm`) when there is one,
/// and the user's alone (0700: it holds a copy of the transcript).
fn private_dir() -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let shm = Path::new("/dev/shm");
    let b = tempfile::Builder::new()
        .prefix("interband-replay.")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .clone();
    let dir = if shm.is_dir() {
        b.tempdir_in(shm).or_else(|_| b.tempdir())
    } else {
        b.tempdir()
    };
    dir.context("cannot create a private folder for the replay")
}

/// A new file only the user can read (0600): a copy of a transcript.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

impl Stage {
    fn new(dir: &Path, host: Host, head: &Head, opts: &Options) -> Result<Stage> {
        let real = interband::settings::ProcessEnv;
        let root = dir.join("root");
        let home = dir.join("home");
        std::fs::create_dir_all(&home)?;
        let session = head
            .session
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "replay".to_owned());
        let project = match (&head.cwd, opts.defaults) {
            (Some(cwd), false) => cwd.clone(),
            // With the defaults, no project's files: a private, empty project.
            _ => dir.join("project"),
        };
        std::fs::create_dir_all(dir.join("project"))?;
        // The copy is named as the host names its transcripts, where it keeps them.
        let safe = interband::paths::safe_key(&session);
        let profile = host.profile();
        let folder = home.join(profile.settings_file.split('/').next().unwrap_or(""));
        let copy_path = (profile.transcript_at)(&folder, &project, &safe);
        std::fs::create_dir_all(copy_path.parent().expect("has a folder"))?;
        let copy = std::io::BufWriter::with_capacity(
            1 << 20,
            private_file(&copy_path)
                .with_context(|| format!("cannot write {}", copy_path.display()))?,
        );
        let mut vars: HashMap<String, String> = std::env::vars()
            .filter(|(k, _)| !(opts.defaults && k.starts_with("INTERBAND_")))
            .collect();
        for k in [
            "INTERBAND_ROOT",
            "INTERBAND_LOG",
            "TMUX_PANE",
            "TMUX",
            "CLAUDE_PROJECT_DIR",
            "ANTHROPIC_MODEL",
        ] {
            vars.remove(k);
        }
        // How the replayed session was started is not this process's start:
        // no `claude` process is looked for.
        vars.insert("CLAUDE_PID".into(), String::new());
        let set = |vars: &mut HashMap<String, String>, k: &str, v: &Path| {
            vars.insert(k.to_owned(), v.to_string_lossy().into_owned());
        };
        set(&mut vars, "INTERBAND_ROOT", &root);
        set(&mut vars, "HOME", &home);
        // The user's settings and trusted files, where they are for the user.
        let (config, trust) = if opts.defaults {
            (dir.join("none.toml"), dir.join("none.json"))
        } else {
            (
                interband::settings::user_file(&real).unwrap_or_else(|| dir.join("none.toml")),
                interband::trust::store_path(&real).unwrap_or_else(|| dir.join("none.json")),
            )
        };
        set(&mut vars, "INTERBAND_CONFIG", &config);
        set(&mut vars, "INTERBAND_TRUST_FILE", &trust);
        // Hosts' own settings, where the user keeps them.
        if let Some(real_home) = std::env::var_os("HOME").map(PathBuf::from) {
            if !vars.contains_key("CODEX_HOME") {
                set(&mut vars, "CODEX_HOME", &real_home.join(".codex"));
            }
            for f in ["settings.json", "trustedFolders.json"] {
                if let Ok(bytes) =
                    interband::fsio::read_regular(&real_home.join(".gemini").join(f), 1 << 20)
                {
                    std::fs::create_dir_all(home.join(".gemini"))?;
                    std::fs::write(home.join(".gemini").join(f), bytes)?;
                }
            }
        }
        let settings =
            interband_consumers::hooks::AllSettings::load(Some(&project), &Vars(vars.clone()));
        let strategy = format!("{:?}", settings.compact.value.strategy).to_lowercase();
        if strategy != "off" {
            // Never typed into a terminal nor run: the trigger advises.
            vars.insert("INTERBAND_COMPACT_STRATEGY".into(), "advise".into());
        }
        if let Some(w) = opts.window {
            vars.insert("INTERBAND_INTERPULSE_WINDOW".into(), w.to_string());
        }
        // Every message the hooks publish is told to the replay as written.
        let published = std::sync::Arc::<std::sync::Mutex<Vec<interband::Message>>>::default();
        let told = published.clone();
        let bus = Bus::new(&root).with_tap(move |m| {
            told.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(m.clone());
        });
        Ok(Stage {
            host,
            bus,
            env: Vars(vars),
            home,
            session,
            cwd: project,
            copy_path,
            copy,
            copied: 0,
            held: Vec::new(),
            freed_to: 0,
            keep_copy: std::env::var_os("INTERBAND_REPLAY_KEEP_COPY").is_some_and(|v| v == "1"),
            strategy,
            problems: RefCell::new(Vec::new()),
            published,
        })
    }

    /// One transcript line: what happens before it is written, the line, what after.
    fn line(&mut self, p: &mut Play, bytes: &[u8], seen: Seen, offset: u64) -> Result<()> {
        if let Some(ts) = seen.timestamp.as_deref().and_then(parse_time) {
            p.now = ts;
            p.first_ts = Some(p.first_ts.map_or(ts, |f| f.min(ts)));
            p.last_ts = Some(p.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let summary_next = seen
            .happenings
            .iter()
            .any(|h| matches!(h, Happening::CompactionSummary));
        if p.awaiting_start && !summary_next {
            self.start_after_compaction(p)?;
        }
        // Before the line.
        for h in &seen.happenings {
            match h {
                Happening::TurnEnded => self.end_turn(p)?,
                Happening::Compaction { trigger, .. } if p.answered => {
                    self.end_calls(p)?;
                    let event = self.host.profile().pre_compaction;
                    let trigger = trigger.clone().unwrap_or_else(|| "auto".into());
                    self.event(p, event, serde_json::json!({"trigger": trigger}))?;
                }
                _ => {}
            }
        }
        // A response that calls tools, and what follows it, wait for those
        // calls' hooks where the host writes them after.
        let calls = seen
            .happenings
            .iter()
            .any(|h| matches!(h, Happening::ToolCall { .. }));
        if self.host.profile().writes_calls_after_their_hooks
            && (calls || !self.held.is_empty())
            && self.held.len() < MAX_HELD
        {
            self.held.extend_from_slice(bytes);
            if !bytes.ends_with(b"\n") {
                self.held.push(b'\n');
            }
        } else {
            self.write_held()?;
            self.append(bytes)?;
            if !bytes.ends_with(b"\n") {
                self.append(b"\n")?;
            }
        }
        // The line's own figure.
        if let Some(fact) = seen.fact {
            let before = p.reading.clone();
            use interband_hosts::usage::Fact;
            let usage = matches!(fact, Fact::Usage { .. });
            let compaction = matches!(fact, Fact::Compaction { .. });
            let estimate = matches!(fact, Fact::Estimate { .. });
            p.reading.apply(fact, offset);
            if usage {
                p.out.summary.usage_lines += 1;
            }
            if (usage || compaction || estimate) && p.reading != before {
                self.point(p, compaction, &seen.happenings);
            }
        }
        // With the line.
        for h in seen.happenings {
            match h {
                Happening::Activity => {
                    p.turn_open = true;
                    p.answered = true;
                }
                Happening::Prompt => {
                    p.stop_blocked = false;
                    if let Some(event) = self.host.profile().turn_start {
                        self.event(p, event, serde_json::json!({"prompt": ""}))?;
                    }
                }
                Happening::EndsTurn => self.end_turn(p)?,
                Happening::ToolCall {
                    id,
                    name,
                    input,
                    subagent,
                } => {
                    // A host writes a call's record again as it goes on: once per id.
                    if id.is_some() && p.pending.iter().any(|c| c.id == id) {
                        continue;
                    }
                    p.pending.push_back(Pending {
                        id,
                        name,
                        input,
                        subagent,
                    });
                    if p.pending.len() > MAX_PENDING
                        && let Some(c) = p.pending.pop_front()
                    {
                        self.tool_event(p, c, None)?;
                    }
                }
                Happening::ToolResult { id, response, .. } => {
                    if let Some(i) = p.pending.iter().position(|c| c.id.as_deref() == Some(&id)) {
                        let c = p.pending.remove(i).expect("found");
                        self.tool_event(p, c, Some(response))?;
                    }
                }
                Happening::Compaction {
                    trigger,
                    pre_tokens,
                    post_tokens,
                } if p.answered => {
                    p.out.summary.compactions += 1;
                    self.record(
                        p,
                        What::Compaction {
                            trigger,
                            pre_tokens,
                            post_tokens,
                        },
                    );
                    if self.host.profile().start_after_compaction {
                        p.awaiting_start = true;
                    }
                }
                Happening::CompactionSummary if p.awaiting_start => {
                    self.start_after_compaction(p)?;
                }
                _ => {}
            }
        }
        // Every call of the held response had its hook: the host writes it.
        if p.pending.is_empty() {
            self.write_held()?;
        }
        Ok(())
    }

    /// Writes the lines held back (see [`Stage::held`]) to the copy.
    fn write_held(&mut self) -> Result<()> {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.append(&held)?;
            self.held = held;
            self.held.clear();
        }
        Ok(())
    }

    /// Adds `bytes` to the copy of the transcript the hooks read.
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.copy.write_all(bytes)?;
        self.copied += bytes.len() as u64;
        Ok(())
    }

    /// Gives back the part of the copy no hook reads: after the head every
    /// reader may read from the start (a note's head window) and before the
    /// furthest any reader reaches back from the end (the tail scan, a note's
    /// tail window). Its length stays. In `/dev/shm` the copy is memory, so a
    /// replay holds a few megabytes of it whatever the transcript's size.
    fn free_behind(&mut self) {
        let limits = interband_consumers::digest::Limits::default();
        let back = interband_hosts::tail::DEFAULT_SCAN_CAP.max(limits.tail_cap) + FREE_MARGIN;
        let start = self
            .freed_to
            .max((limits.head_cap + FREE_MARGIN).div_ceil(FREE_STEP) * FREE_STEP);
        let end = self.copied.saturating_sub(back) / FREE_STEP * FREE_STEP;
        if self.keep_copy || end <= start {
            return;
        }
        punch_hole(self.copy.get_ref(), start, end - start);
        self.freed_to = end;
    }

    /// The calls still waiting for a result get none (their turn is over).
    fn end_calls(&mut self, p: &mut Play) -> Result<()> {
        while let Some(c) = p.pending.pop_front() {
            self.tool_event(p, c, None)?;
        }
        Ok(())
    }

    /// The end of the main thread's turn, once.
    fn end_turn(&mut self, p: &mut Play) -> Result<()> {
        self.end_calls(p)?;
        if !p.turn_open {
            return Ok(());
        }
        p.turn_open = false;
        p.out.summary.turns += 1;
        let event = self.host.profile().end_of_turn;
        let out = self.event(
            p,
            event,
            serde_json::json!({"stop_hook_active": p.stop_blocked}),
        )?;
        let blocked = out
            .as_deref()
            .and_then(|o| serde_json::from_str::<Value>(o).ok())
            .is_some_and(|v| v["decision"] == "block");
        if blocked {
            p.out.summary.trigger_firings += 1;
            let strategy = self.strategy.clone();
            self.record(p, What::CompactTrigger { strategy });
        }
        p.stop_blocked = blocked;
        Ok(())
    }

    fn start_after_compaction(&mut self, p: &mut Play) -> Result<()> {
        p.awaiting_start = false;
        let event = self.host.profile().context_start;
        self.event(p, event, serde_json::json!({"source": "compact"}))?;
        Ok(())
    }

    /// A call's tool event.
    fn tool_event(
        &mut self,
        p: &mut Play,
        c: Pending,
        response: Option<Box<RawValue>>,
    ) -> Result<()> {
        let response =
            response.unwrap_or_else(|| RawValue::from_string("null".into()).expect("JSON"));
        p.out.summary.calls += 1;
        p.out.summary.subagent_calls += u64::from(c.subagent);
        p.out.summary.tool_output_bytes += match response.get().as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(response.get()).map_or(0, |s| s.len()),
            Some(b'n') => 0,
            _ => response.get().len(),
        } as u64;
        let mut extra = serde_json::json!({"tool_name": c.name, "tool_use_id": c.id});
        if c.subagent {
            extra["agent_id"] = Value::from("replay-subagent");
        }
        let event = self.host.profile().tool_events[0];
        let input = format!(
            r#"{{"tool_input":{},"tool_response":{},{}"#,
            c.input.get(),
            response.get(),
            &self.input(p, event, extra)[1..]
        );
        let main = !c.subagent;
        self.dispatch(p, input.as_bytes())?;
        if main {
            p.out.summary.calls_at_level.add(p.level);
        }
        Ok(())
    }

    /// The JSON of an event's input (without the tool's input and response).
    fn input(&self, p: &Play, event: &str, extra: Value) -> String {
        let mut v = serde_json::json!({
            "session_id": self.session,
            "transcript_path": self.copy_path,
            "cwd": self.cwd,
            "hook_event_name": event,
        });
        if self.host == Host::Gemini {
            v["timestamp"] = format_time(p.now).map_or(Value::Null, Value::from);
        }
        if self.host == Host::Codex {
            v["turn_id"] = Value::from("replay");
        }
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in e {
                o.insert(k.clone(), val.clone());
            }
        }
        v.to_string()
    }

    /// A non-tool event.
    fn event(&mut self, p: &mut Play, event: &str, extra: Value) -> Result<Option<String>> {
        // Any event but a tool's comes once the host has written all it read.
        self.write_held()?;
        let input = self.input(p, event, extra);
        self.dispatch(p, input.as_bytes())
    }

    /// Runs one event through the hooks' code, and records what it did.
    fn dispatch(&mut self, p: &mut Play, input: &[u8]) -> Result<Option<String>> {
        self.copy.flush()?;
        self.free_behind();
        let log = |what: &str| {
            let mut problems = self.problems.borrow_mut();
            if problems.len() < 100 {
                problems.push(what.to_owned());
            }
        };
        let out = crate::dispatch::dispatch(
            &crate::dispatch::Outside {
                bus: &self.bus,
                env: &self.env,
                host: Some(self.host),
                home: Some(self.home.clone()),
                now: p.now,
                log: &log,
                log_once: &log,
            },
            input,
        );
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                log(&format!("{e:#}"));
                None
            }
        };
        self.observe(p, out.as_deref());
        Ok(out)
    }

    /// The latest message of `P`'s channel for the session that the last
    /// event published, if any.
    fn latest<P: interband::payloads::Payload>(
        &self,
        published: &[interband::Message],
    ) -> Option<interband::Envelope<P>> {
        let key = interband::paths::safe_key(&self.session);
        let m = published.iter().rev().find(|m| {
            m.address.as_ref().is_some_and(|a| {
                a.namespace == P::NAMESPACE && a.channel == P::CHANNEL && a.key == key
            })
        })?;
        interband::decode(m.clone()).ok()
    }

    /// What the last event did: its output, and what it published on the
    /// private bus (told by the bus as it was written).
    fn observe(&mut self, p: &mut Play, out: Option<&str>) {
        let published =
            std::mem::take(&mut *self.published.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(e) = self.latest::<Pressure>(&published) {
            let level = e.payload.level;
            p.pressure = Some(e.payload);
            if level != p.level {
                let from = p.level;
                p.level = level;
                self.record(p, What::LevelChange { from, to: level });
            }
        }
        let said = out
            .and_then(|o| serde_json::from_str::<Value>(o).ok())
            .and_then(|v| {
                v["hookSpecificOutput"]["additionalContext"]
                    .as_str()
                    .map(str::to_owned)
            });
        for para in said.as_deref().unwrap_or("").split("\n\n") {
            if let Some(rest) = para.strip_prefix("Context ") {
                let level = ["GREEN", "YELLOW", "ORANGE", "RED"]
                    .iter()
                    .position(|l| rest.starts_with(l))
                    .map_or(Level::Green, |i| {
                        [Level::Green, Level::Yellow, Level::Orange, Level::Red][i]
                    });
                p.out.summary.warnings.add(level);
                self.record(
                    p,
                    What::Warning {
                        level,
                        message: para.to_owned(),
                    },
                );
            } else if para.starts_with("Project directives") {
                self.record(p, What::Directives);
            } else if para.starts_with("interband could not") {
                self.record(
                    p,
                    What::Notice {
                        message: para.to_owned(),
                    },
                );
            }
        }
        let checkpoint = self
            .latest::<Checkpoint>(&published)
            .filter(|e| e.seq > p.checkpoint_seq);
        if let Some(e) = checkpoint {
            p.checkpoint_seq = e.seq;
            p.out.summary.checkpoints += 1;
            let red = e.payload.trigger == "red_pressure";
            self.record(
                p,
                What::Checkpoint {
                    trigger: e.payload.trigger,
                },
            );
            if red {
                p.out.summary.checkpoint_files += 1;
                self.record(p, What::CheckpointFile);
            }
        }
        let note = self
            .latest::<MemoryNote>(&published)
            .filter(|e| e.seq > p.note_seq);
        if let Some(e) = note {
            p.note_seq = e.seq;
            p.out.summary.notes += 1;
            self.record(
                p,
                What::Note {
                    trigger: e.payload.trigger,
                },
            );
        }
        if let Some(text) = said
            .as_deref()
            .or(out)
            .filter(|t| t.contains("<interband-memory-note"))
        {
            p.out.summary.notes_back += 1;
            self.record(p, What::NoteBack { bytes: text.len() });
        }
    }

    fn record(&self, p: &mut Play, what: What) {
        let f = p.pressure.as_ref();
        let used = f.and_then(|f| f.used_tokens);
        let window = f.and_then(|f| f.window);
        p.out.events.push(Event {
            time: format_time(p.now),
            ts: p.now,
            call: p.out.summary.calls,
            used_tokens: used,
            window,
            used_pct: used.zip(window).map(|(u, w)| pct(u, w)),
            usable_pct: f.and_then(|f| f.context_usable),
            level: p.level,
            what,
        });
    }

    /// The window and compaction point for a figure, by the host's rules.
    fn limits(&self, p: &Play, used: u64) -> (u64, u64, Option<WindowSource>) {
        if let Some(pr) = &p.pressure
            && let (Some(w), Some(c)) = (pr.window, pr.compact_at)
            && used <= w
        {
            let source = pr
                .window_source
                .as_ref()
                .and_then(|s| serde_json::from_value(serde_json::Value::String(s.clone())).ok());
            return (w, c, source);
        }
        let cfg = interpulse::config::Config::load(Some(&self.cwd), &self.env).value;
        let l = self.host.limits(
            &Known {
                transcript: p.reading.usage.as_ref().and_then(|u| u.window),
                configured: cfg.window,
                model: p.reading.usage.as_ref().and_then(|u| u.model.as_deref()),
                used,
                project: Some(&self.cwd),
                ..Default::default()
            },
            &self.env,
        );
        (l.window, l.compact_at, Some(l.source))
    }

    /// A point of the curve: the context as the transcript shows it now, at
    /// the calls made so far (this line's own included).
    fn point(&self, p: &mut Play, after_compaction: bool, line: &[Happening]) {
        let started = p.pending.len() as u64
            + line
                .iter()
                .filter(|h| matches!(h, Happening::ToolCall { .. }))
                .count() as u64;
        let used = p.reading.used();
        let (window, autocompact_at, source) = self.limits(p, used.unwrap_or(0));
        let s = &mut p.out.summary;
        if let Some(u) = used
            && p.reading
                .usage
                .as_ref()
                .is_some_and(|x| x.kind == UsageKind::Assistant)
        {
            s.max_used_tokens = Some(s.max_used_tokens.unwrap_or(0).max(u));
            s.max_used_pct = Some(s.max_used_pct.unwrap_or(0.0).max(pct(u, window)));
        }
        if window > s.window {
            s.window = window;
            s.autocompact_at = autocompact_at;
            s.window_source = source;
        }
        if p.out.series.len() >= MAX_POINTS {
            // Flat in memory: every other point goes (the plot thins anyway).
            let mut i = 0;
            p.out.series.retain(|_| {
                i += 1;
                i % 2 == 0
            });
        }
        p.out.series.push(Point {
            call: s.calls + started,
            ts: p.now,
            after_compaction,
            used_tokens: used,
            window,
            autocompact_at,
            level: p.level,
        });
    }

    fn finish(&mut self, p: &mut Play) -> Result<()> {
        if p.awaiting_start {
            self.start_after_compaction(p)?;
        }
        // A turn the file ends in, its last answer not waiting on a tool, ended.
        if p.pending.is_empty() {
            self.end_turn(p)?;
        } else {
            self.end_calls(p)?;
        }
        let (window, autocompact_at, source) = self.limits(p, 0);
        let s = &mut p.out.summary;
        s.final_level = p.level;
        s.first_time = p.first_ts.and_then(format_time);
        s.last_time = p.last_ts.and_then(format_time);
        s.found = s.calls > 0 || s.usage_lines > 0 || s.compactions > 0;
        if s.window == 0 {
            (s.window, s.autocompact_at, s.window_source) = (window, autocompact_at, source);
        }
        s.hook_problems = self.problems.borrow().clone();
        p.out.thresholds = interpulse::config::Config::load(Some(&self.cwd), &self.env)
            .value
            .thresholds;
        Ok(())
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 100.0).clamp(0.0, 100.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_private_folder_and_copies_are_the_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = super::private_dir().unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.path()), 0o700);
        let copy = dir.path().join("copy.jsonl");
        super::private_file(&copy).unwrap();
        assert_eq!(mode(&copy), 0o600);
        assert!(
            super::private_file(&copy).is_err(),
            "never an existing file"
        );
    }

    use super::*;

    #[test]
    fn a_reader_waiting_for_room_is_let_go_when_the_replay_stops() {
        let ahead = Ahead::default();
        assert!(ahead.take(AHEAD_BYTES), "an empty budget takes any line");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| tx.send(ahead.take(1)).unwrap());
            // The replay gives up (an error, say) without taking the line.
            drop(Close(&ahead));
            let let_go = rx.recv_timeout(std::time::Duration::from_secs(20));
            assert_eq!(let_go, Ok(false), "the reader stops instead of waiting");
        });
        // And room made by a replayed line lets the next one in.
        let ahead = Ahead::default();
        assert!(ahead.take(AHEAD_BYTES));
        ahead.done(AHEAD_BYTES);
        assert!(ahead.take(1));
    }

    #[test]
    fn lines_held_in_a_batch_go_before_the_reader_waits_for_room() {
        // Small lines, then one that needs all the room: the batch read so
        // far must reach the replay first, or both sides wait for ever.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!("{{\"n\":{i}}}\n"));
        }
        text.push_str(&format!("{{\"big\":\"{}\"}}\n", "x".repeat(AHEAD_BYTES)));
        text.push_str("{\"n\":10}\n");
        std::fs::write(&path, &text).unwrap();
        let ahead = Ahead::default();
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let mut lines = 0;
        std::thread::scope(|s| {
            let ahead = &ahead;
            let file = std::fs::File::open(&path).unwrap();
            s.spawn(move || read_ahead(file, Host::Claude, ahead, &tx));
            let _close = Close(ahead);
            loop {
                let batch = match rx.recv_timeout(std::time::Duration::from_secs(20)) {
                    Ok(b) => b.unwrap(),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(e) => panic!("the reader is stuck: {e}"),
                };
                let mut held = 0;
                for read in batch {
                    lines += 1;
                    held += read.line.map_or(0, |(b, _)| b.len());
                }
                ahead.done(held);
            }
        });
        assert_eq!(lines, 12);
    }
}
