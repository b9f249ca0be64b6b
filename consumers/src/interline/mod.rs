//! # interline — the statusline bridge and renderer (`interband statusline`)
//!
//! Claude Code runs its `statusLine` command about 300 ms after its inputs
//! change, with one JSON object on stdin, and shows the first line of stdout.
//! This module does the two things that command is for:
//!
//! 1. **Bridge**: it publishes the context window it learns to
//!    `interline/context/<session>` ([`ContextWindow`]), so the producer knows
//!    the window and a ground-truth usage figure. It publishes only when the
//!    figures changed, so a statusline redrawn every 300 ms does not rewrite
//!    the file.
//! 2. **Render**: it prints one line from a small registry of [`SEGMENTS`]
//!    (`model`, `context`, `note`, `compact`), in the order the [`Settings`]
//!    say, with the level as a word so it reads without colour.
//!
//! The work is a few small file reads and at most one publish: no watcher,
//! no thread, no subprocess except [`wrap`] (the user's own statusline,
//! when `--wrap` asks for it).
//!
//! ```
//! use interband::Bus;
//! use interband_consumers::interline::{Input, Settings, render};
//! # let dir = tempfile::tempdir().unwrap();
//! let bus = Bus::new(dir.path());
//! let input = Input::parse(br#"{"session_id":"s1","model":{"display_name":"Opus"},
//!     "context_window":{"context_window_size":200000,
//!       "current_usage":{"input_tokens":100000,"cache_read_input_tokens":0}}}"#);
//! let settings = Settings { color: false, ..Settings::default() };
//! let no_env = |_: &str| None;
//! let out = render(&bus, &input, &settings, &no_env, 1.0);
//! assert_eq!(out.line, "Opus │ ctx 50% used █████░░░░░ 67k to compact GREEN");
//! assert!(out.published);
//! // Same figures again: nothing is rewritten.
//! assert!(!render(&bus, &input, &settings, &no_env, 2.0).published);
//! ```

use std::cell::OnceCell;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use interband::context::{self, Figures, Source, Thresholds};
use interband::payloads::{ContextWindow, Level, Pressure};
use interband::settings::Env;
use interband::{Bus, decode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod input;
mod segments;
mod settings;
mod wrap;

pub use input::*;
pub use segments::*;
pub use settings::*;
pub use wrap::*;

/// Where the bridge publishes the context window (`interline/context/<session>`).
pub const CONTEXT_CHANNEL: (&str, &str) = ("interline", "context");
/// A compaction is pending for the session (`compact/pending/<session>`, any valid message).
pub const PENDING_CHANNEL: (&str, &str) = ("compact", "pending");
/// A memory note was saved for the session (`intermem/note/<session>`).
pub const NOTE_CHANNEL: (&str, &str) = ("intermem", "note");
/// The producer's pressure (`interpulse/pressure/<session>`).
pub const PRESSURE_CHANNEL: (&str, &str) = ("interpulse", "pressure");

/// The line printed when nothing else can be said (e.g. unparseable input).
pub const FALLBACK_LINE: &str = "interband";

/// Shown in the `note` segment when a note was saved for the session.
pub(crate) const NOTE_MARKER: &str = "✎ note saved";
/// Shown in the `compact` segment when a compaction is pending, after the
/// host's own command (`/compact advised`, `/compress advised`).
pub(crate) const COMPACT_MARKER: &str = "advised";
/// The widest gauge drawn, whatever the settings say.
pub(crate) const MAX_GAUGE: usize = 100;

/// Renders the statusline for `input`, publishing the context window first
/// when it changed (and `settings.publish`). `now` is unix seconds, the
/// published `ts`. Never fails: what cannot be read is left out, and a line
/// with nothing in it is [`FALLBACK_LINE`].
pub fn render(bus: &Bus, input: &Input, settings: &Settings, env: &dyn Env, now: f64) -> Rendered {
    let mut timings = Vec::with_capacity(settings.segments.len() + 1);
    let mut published = false;
    if settings.publish {
        let start = Instant::now();
        published = input
            .session()
            .is_some_and(|s| publish_context(bus, s, input, now));
        timings.push(("publish", start.elapsed()));
    }
    let ctx = Ctx::new(bus, input, settings, env);
    let mut parts = Vec::with_capacity(settings.segments.len());
    for seg in settings.segments.iter().filter_map(|n| segment(n)) {
        let start = Instant::now();
        let out = (seg.render)(&ctx);
        timings.push((seg.name, start.elapsed()));
        parts.extend(out.filter(|s| !s.is_empty()));
    }
    let line = if parts.is_empty() {
        FALLBACK_LINE.to_owned()
    } else {
        parts.join(&interband::text::terminal(&settings.separator))
    };
    Rendered {
        line,
        published,
        timings,
    }
}

/// Publishes `interline/context/<session>` unless the window is unknown or
/// nothing changed (window, used tokens, model, transcript) since the
/// current value. True when it published.
pub(crate) fn publish_context(bus: &Bus, session: &str, input: &Input, now: f64) -> bool {
    let Some(window) = input.window.filter(|&w| w > 0) else {
        return false;
    };
    // Right after a compaction the host reports zeros: no figure yet.
    let used_tokens = input.used_tokens().filter(|&u| u > 0);
    if let Some(prev) = read_as::<ContextWindow>(bus, CONTEXT_CHANNEL, session)
        && prev.window == window
        && prev.used_tokens == used_tokens
        && prev.model == input.model_id
        && prev.transcript_path == input.transcript_path
    {
        return false;
    }
    let payload = ContextWindow {
        window,
        used_tokens,
        used_percentage: used_tokens
            .and(input.used_percentage)
            .filter(|p| (0.0..=100.0).contains(p)),
        model: input.model_id.clone(),
        transcript_path: input.transcript_path.clone(),
        // Freshness by position: how far the transcript was when this was seen.
        transcript_bytes: input
            .transcript_path
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.len()),
        ts: now,
    };
    bus.publish_typed(session, session, &payload).is_ok()
}

#[cfg(test)]
mod tests;
