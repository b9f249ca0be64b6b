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

mod ahead;
mod head;
pub mod lines;
pub mod plot;
mod report;
mod stage;

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

use ahead::*;
use head::*;
pub use report::*;
use stage::*;

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
    /// The last compaction record reported: its sequence, line, note (one
    /// per compaction) and lost facts.
    record_seq: u64,
    record_line: String,
    record_note: String,
    record_lost: u64,
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
        record_seq: 0,
        record_line: String::new(),
        record_note: String::new(),
        record_lost: 0,
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
        host.profile().context_start,
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

#[cfg(test)]
mod tests;
