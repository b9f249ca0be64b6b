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
const NOTE_MARKER: &str = "✎note";
/// Shown in the `compact` segment when a compaction is pending.
const COMPACT_MARKER: &str = "⟳compact";
/// The widest gauge drawn, whatever the settings say.
const MAX_GAUGE: usize = 100;

/// The `[interline]` settings.
///
/// ```
/// use interband_consumers::interline::Settings;
/// let s: Settings = serde_json::from_str(r#"{"segments":["context"]}"#).unwrap();
/// assert_eq!(s.segments, ["context"]);
/// assert_eq!(s.gauge_width, 10, "the rest keep their defaults");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The segments to show, in order, by name (see [`SEGMENTS`]); unknown names are ignored.
    pub segments: Vec<String>,
    /// What goes between segments (and between a wrapped line and ours).
    pub separator: String,
    /// The gauge's width in cells (0: no gauge; at most 100).
    pub gauge_width: usize,
    /// Colour the level with ANSI codes (never when `NO_COLOR` is set).
    pub color: bool,
    /// How long `--wrap` waits for the wrapped command, milliseconds (at
    /// most [`MAX_WRAP_TIMEOUT_MS`]: the host waits for the statusline).
    pub wrap_timeout_ms: u64,
    /// Publish the context window to `interline/context` (the bridge).
    pub publish: bool,
    /// Each level's colour, as ANSI SGR codes (`"32"`, `"38;5;208"`, `"1;31"`...).
    pub colors: Colors,
    /// How the context reads: `used` (the host's own used percentage, a bar
    /// that fills as the context fills, and the room left before the host
    /// compacts, in tokens) or `usable` (the share of that room left, a bar
    /// that empties: the view before 0.2).
    pub context_style: ContextStyle,
}

/// How the `context` segment reads (see [`Settings::context_style`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextStyle {
    /// `ctx 88% used ████████▉░ 21k to compact ORANGE`.
    #[default]
    Used,
    /// `ctx 10% usable █░░░░░░░░░ ORANGE`.
    Usable,
}

/// The colour of each level, as ANSI SGR parameters (digits and `;` only: the code stops at anything else).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Colors {
    /// Green.
    pub green: String,
    /// Yellow.
    pub yellow: String,
    /// Orange.
    pub orange: String,
    /// Red.
    pub red: String,
}

impl Default for Colors {
    fn default() -> Self {
        Colors {
            green: "32".into(),
            yellow: "33".into(),
            orange: "38;5;208".into(),
            red: "1;31".into(),
        }
    }
}

impl Colors {
    /// The SGR parameters for a level: the configured ones when they are
    /// SGR numbers and nothing else (see [`interband::text::sgr`]), else the default.
    pub fn code(&self, level: Level) -> String {
        let pick = |c: &Colors| match level {
            Level::Green => c.green.clone(),
            Level::Yellow => c.yellow.clone(),
            Level::Orange => c.orange.clone(),
            Level::Red => c.red.clone(),
        };
        let raw = pick(self);
        match interband::text::sgr(raw.trim()) {
            Some(code) => code.to_owned(),
            None => pick(&Colors::default()),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            segments: ["model", "context", "note", "compact"]
                .map(String::from)
                .to_vec(),
            separator: " │ ".to_owned(),
            gauge_width: 10,
            color: true,
            wrap_timeout_ms: 2000,
            publish: true,
            colors: Colors::default(),
            context_style: ContextStyle::default(),
        }
    }
}

/// The token counts of the last response (`context_window.current_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Tokens in context: input + cache creation + cache read.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

/// The statusline input, read tolerantly: every field optional, nulls and
/// unknown fields fine, and a field of the wrong type only loses that field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    /// `session_id`.
    pub session_id: Option<String>,
    /// `transcript_path`.
    pub transcript_path: Option<String>,
    /// `cwd`.
    pub cwd: Option<String>,
    /// `model.id`, e.g. `claude-opus-5-5`.
    pub model_id: Option<String>,
    /// `model.display_name`, e.g. `Opus 5.5`.
    pub model_name: Option<String>,
    /// `workspace.current_dir`.
    pub current_dir: Option<String>,
    /// `workspace.project_dir`.
    pub project_dir: Option<String>,
    /// `context_window.context_window_size`, tokens.
    pub window: Option<u64>,
    /// `context_window.current_usage`; `None` before the first response.
    pub usage: Option<Usage>,
    /// `context_window.used_percentage` (raw, of the whole window).
    pub used_percentage: Option<f64>,
    /// `context_window.remaining_percentage` (raw).
    pub remaining_percentage: Option<f64>,
    /// The host whose statusline input it is (its window and compaction
    /// rules; Claude Code's unless the command named another).
    pub host: interband_hosts::Host,
}

impl Input {
    /// Parses `host`'s statusline input: as Claude Code's, the context as
    /// the host's profile reads it where it differs
    /// ([`interband_hosts::Profile::statusline_context`]). Never fails.
    pub fn parse_as(bytes: &[u8], host: interband_hosts::Host) -> Input {
        let mut input = Input::parse(bytes);
        input.host = host;
        if let Some(read) = host.profile().statusline_context {
            let stated = serde_json::from_slice::<Value>(bytes)
                .map(|v| read(&v))
                .unwrap_or_default();
            input.usage = stated.used.map(|used| Usage {
                input_tokens: used,
                ..Usage::default()
            });
            input.window = stated.window.filter(|&w| w > 0);
            input.transcript_path = stated.transcript;
            // Claude's percentages are of the window; another host's may not be.
            input.used_percentage = None;
            input.remaining_percentage = None;
        }
        input
    }

    /// Parses Claude Code's statusline stdin. Never fails: garbage gives `Input::default()`.
    pub fn parse(bytes: &[u8]) -> Input {
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return Input::default();
        };
        let cw = &v["context_window"];
        let cu = &cw["current_usage"];
        // A usage whose numbers cannot all be read is no figure (never a
        // low one); one that states none of the context's is not yet one.
        let usage = cu.as_object().and_then(|u| {
            let n = |k: &str| interband_hosts::usage::field(u, k);
            let context_fields = [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ];
            if context_fields
                .iter()
                .all(|k| u.get(*k).is_none_or(Value::is_null))
            {
                return None;
            }
            Some(Usage {
                input_tokens: n("input_tokens")?,
                output_tokens: n("output_tokens")?,
                cache_creation_input_tokens: n("cache_creation_input_tokens")?,
                cache_read_input_tokens: n("cache_read_input_tokens")?,
            })
        });
        Input {
            session_id: text(&v["session_id"]),
            transcript_path: text(&v["transcript_path"]),
            cwd: text(&v["cwd"]),
            model_id: text(&v["model"]["id"]),
            model_name: text(&v["model"]["display_name"]),
            current_dir: text(&v["workspace"]["current_dir"]),
            project_dir: text(&v["workspace"]["project_dir"]),
            window: interband_hosts::usage::count(&cw["context_window_size"]).filter(|&w| w > 0),
            usage,
            used_percentage: number(&cw["used_percentage"]),
            remaining_percentage: number(&cw["remaining_percentage"]),
            host: interband_hosts::Host::Claude,
        }
    }

    /// The session id, trimmed, when there is one.
    pub fn session(&self) -> Option<&str> {
        self.session_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// Tokens in context (input + cache creation + cache read), once known.
    pub fn used_tokens(&self) -> Option<u64> {
        self.usage.map(|u| u.context_tokens())
    }

    /// The context figures the input itself gives, once usage is known. The
    /// window is the input's (else its model's, by its host's rules).
    pub fn figures(&self, env: &dyn Env) -> Option<Figures> {
        let used = self.used_tokens()?;
        let limits = self.host.limits(
            &interband_hosts::Known {
                stated: self.window.map(|w| (w, context::WindowSource::Statusline)),
                transcript: self
                    .model_id
                    .as_deref()
                    .zip(self.host.profile().model_window)
                    .map(|(model, window)| window(model)),
                model: self.model_id.as_deref(),
                used,
                ..Default::default()
            },
            env,
        );
        Some(Figures {
            used_tokens: used,
            window: limits.window,
            autocompact_at: limits.compact_at,
            source: Source::Statusline,
            window_source: Some(limits.source),
            window_other: limits.other,
        })
    }
}

/// A non-blank string.
fn text(v: &Value) -> Option<String> {
    v.as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// A finite number, or a string of one.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => s.trim().parse::<f64>().ok(),
        v => v.as_f64(),
    }
    .filter(|n| n.is_finite())
}

/// What one render produced.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The statusline (one line, no newline).
    pub line: String,
    /// Whether the context window was published this time.
    pub published: bool,
    /// Time taken, in order: `publish` (the bridge: compare and publish,
    /// when publishing is on), then each segment rendered, by name.
    pub timings: Vec<(&'static str, Duration)>,
}

/// Where the level shown came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The producer's `interpulse/pressure`, from the same figures or better ones.
    Pressure,
    /// The statusline input itself.
    Input,
}

/// The context as shown: how full, the room left, the level, and where the level came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    /// Used, percent of the whole window: the host's own figure when it
    /// gives one (Claude Code's `context_window.used_percentage`).
    pub used_pct: f64,
    /// Tokens left before the host compacts (0 once past it).
    pub to_compact: u64,
    /// Usable context remaining (up to autocompact), percent.
    pub usable: f64,
    /// The level.
    pub level: Level,
    /// Where the level came from.
    pub basis: Basis,
}

/// What segments render from: the input, the settings, and the bus values
/// for the session, read lazily (once, by the first segment that needs them).
pub struct Ctx<'a> {
    bus: &'a Bus,
    input: &'a Input,
    settings: &'a Settings,
    env: &'a dyn Env,
    color: bool,
    view: OnceCell<Option<View>>,
}

impl<'a> Ctx<'a> {
    /// A context for rendering `input` against `bus`.
    pub fn new(bus: &'a Bus, input: &'a Input, settings: &'a Settings, env: &'a dyn Env) -> Self {
        Ctx {
            bus,
            input,
            settings,
            env,
            color: settings.color && env.var("NO_COLOR").is_none(),
            view: OnceCell::new(),
        }
    }

    /// The statusline input.
    pub fn input(&self) -> &Input {
        self.input
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        self.settings
    }

    /// The bus.
    pub fn bus(&self) -> &Bus {
        self.bus
    }

    /// The session, when the input names one.
    pub fn session(&self) -> Option<&str> {
        self.input.session()
    }

    /// Whether to colour (the settings allow it and `NO_COLOR` is not set).
    pub fn color(&self) -> bool {
        self.color
    }

    /// The context to show; `None` before the first response (no usage yet).
    ///
    /// The input's usage is the truth, so it decides unless the producer
    /// (`interpulse/pressure`) saw the same figures (then its level counts:
    /// its thresholds may be configured) or better ones: right after a
    /// compaction the host reports zeros while the producer read the
    /// compaction's own figure from the transcript. A level from the
    /// heuristic alone (a pressure value without figures, the legacy
    /// `intercheck/pressure`) never overrides the truth.
    pub fn view(&self) -> Option<View> {
        *self.view.get_or_init(|| self.compute_view())
    }

    /// The level shown, if any.
    pub fn level(&self) -> Option<Level> {
        self.view().map(|v| v.level)
    }

    fn compute_view(&self) -> Option<View> {
        let own = self.input.figures(self.env)?;
        let usable = own.usable_remaining();
        let pct_of = |used: u64, window: u64| used as f64 * 100.0 / window.max(1) as f64;
        let mine = View {
            used_pct: self
                .input
                .used_percentage
                .filter(|p| p.is_finite() && *p >= 0.0)
                .unwrap_or_else(|| pct_of(own.used_tokens, own.window)),
            to_compact: own.autocompact_at.saturating_sub(own.used_tokens),
            usable,
            level: Thresholds::default().usable.below(usable),
            basis: Basis::Input,
        };
        let Some(p) = self
            .session()
            .and_then(|s| read_as::<Pressure>(self.bus, PRESSURE_CHANNEL, s))
        else {
            return Some(mine);
        };
        let same =
            p.used_tokens == Some(own.used_tokens) && p.window.is_none_or(|w| w == own.window);
        // Zeros are the host's placeholder after a compaction; the producer's
        // figure is better only if it is the compaction's own.
        let better = own.used_tokens == 0
            && p.used_tokens.is_some()
            && p.source.as_deref() == Some(Source::Compaction.as_str());
        Some(if same {
            View {
                usable: p.context_usable.unwrap_or(usable),
                level: p.level,
                basis: Basis::Pressure,
                ..mine
            }
        } else if better {
            // The compaction's own figure: the host's placeholder zeros say nothing.
            let used = p.used_tokens.unwrap_or(0);
            let window = p.window.unwrap_or(own.window);
            View {
                used_pct: pct_of(used, window),
                to_compact: p
                    .compact_at
                    .unwrap_or(own.autocompact_at)
                    .saturating_sub(used),
                usable: p.context_usable.unwrap_or(usable),
                level: p.level,
                basis: Basis::Pressure,
            }
        } else {
            mine
        })
    }

    /// Whether a valid message exists at `channel/<session>`.
    fn exists(&self, (namespace, channel): (&str, &str)) -> bool {
        self.session()
            .is_some_and(|s| self.bus.read(namespace, channel, s).is_ok())
    }

    /// `text` in the level's colour, when colouring.
    fn paint(&self, level: Level, text: &str) -> String {
        if !self.color {
            return text.to_owned();
        }
        let code = self.settings.colors.code(level);
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// Reads and decodes the message at `channel/<key>`, `None` when missing or invalid.
fn read_as<P: DeserializeOwned>(bus: &Bus, (ns, ch): (&str, &str), key: &str) -> Option<P> {
    let msg = bus.read(ns, ch, key).ok()?;
    decode::<P>(msg).ok().map(|e| e.payload)
}

/// One named segment of the line.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// The name used in [`Settings::segments`].
    pub name: &'static str,
    /// Renders it; `None` (or an empty string) leaves it out.
    pub render: fn(&Ctx) -> Option<String>,
}

/// Every segment, by name.
pub const SEGMENTS: &[Segment] = &[
    Segment {
        name: "model",
        render: model_segment,
    },
    Segment {
        name: "context",
        render: context_segment,
    },
    Segment {
        name: "note",
        render: note_segment,
    },
    Segment {
        name: "compact",
        render: compact_segment,
    },
];

/// The segment called `name`, if there is one.
pub fn segment(name: &str) -> Option<&'static Segment> {
    SEGMENTS.iter().find(|s| s.name == name.trim())
}

/// `model`: the model's display name (else its id).
fn model_segment(ctx: &Ctx) -> Option<String> {
    let input = ctx.input();
    let name = input.model_name.as_deref().or(input.model_id.as_deref())?;
    // The host's text must not break the line nor drive the terminal.
    Some(
        name.chars()
            .map(|c| {
                if interband::text::is_unsafe(c) {
                    ' '
                } else {
                    c
                }
            })
            .collect::<String>()
            .trim()
            .to_owned(),
    )
}

/// `context`: `ctx 88% used ████████▉░ 21k to compact ORANGE` (the host's
/// used percentage, a bar that fills with it, the tokens left before the
/// host compacts), or with `context_style = "usable"` `ctx 10% usable
/// █░░░░░░░░░ ORANGE`; `ctx –` before the first response.
fn context_segment(ctx: &Ctx) -> Option<String> {
    let Some(view) = ctx.view() else {
        return ctx.input().window.map(|_| "ctx –".to_owned());
    };
    let width = ctx.settings().gauge_width.min(MAX_GAUGE);
    let word = view.level.as_str().to_ascii_uppercase();
    let (text, fill) = match ctx.settings().context_style {
        ContextStyle::Used => {
            let used = view.used_pct.clamp(0.0, 100.0);
            // As the host rounds its own percentage.
            (format!("{:.0}% used", used), used)
        }
        ContextStyle::Usable => {
            let usable = view.usable.clamp(0.0, 100.0);
            // Floored: never claim more room than there is (9.5% reads 9%, red below 10).
            (
                format!("{} usable", interband::context::pct_text(usable)),
                usable,
            )
        }
    };
    let mut body = format!("{text} ");
    if width > 0 {
        let filled = ((fill / 100.0 * width as f64).round() as usize).min(width);
        body.extend(std::iter::repeat_n('█', filled));
        body.extend(std::iter::repeat_n('░', width - filled));
        body.push(' ');
    }
    if ctx.settings().context_style == ContextStyle::Used {
        body.push_str(&format!(
            "{} to compact ",
            interband::context::tokens_text(view.to_compact)
        ));
    }
    body.push_str(&word);
    Some(format!("ctx {}", ctx.paint(view.level, &body)))
}

/// `note`: a memory note was saved for this session.
fn note_segment(ctx: &Ctx) -> Option<String> {
    ctx.exists(NOTE_CHANNEL).then(|| NOTE_MARKER.to_owned())
}

/// `compact`: a compaction is pending (red level, or a `compact/pending` message).
fn compact_segment(ctx: &Ctx) -> Option<String> {
    let pending = ctx.level() == Some(Level::Red) || ctx.exists(PENDING_CHANNEL);
    pending.then(|| COMPACT_MARKER.to_owned())
}

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
fn publish_context(bus: &Bus, session: &str, input: &Input, now: f64) -> bool {
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

/// The wrapped output with ours joined to its first line by `separator`
/// (its other lines follow, unchanged: the user's own command may colour
/// them); ours alone when the wrapped command said nothing. The separator is
/// a setting: its control characters are neutralized.
///
/// ```
/// use interband_consumers::interline::compose;
/// assert_eq!(compose(Some("left"), "ctx 90%", " │ "), "left │ ctx 90%");
/// assert_eq!(compose(Some("a\nb"), "ctx 90%", " │ "), "a │ ctx 90%\nb");
/// assert_eq!(compose(None, "ctx 90%", " │ "), "ctx 90%");
/// ```
pub fn compose(wrapped: Option<&str>, line: &str, separator: &str) -> String {
    let separator = interband::text::terminal(separator);
    match wrapped.filter(|w| !w.is_empty()) {
        Some(w) if !line.is_empty() => match w.split_once('\n') {
            Some((first, rest)) => format!("{first}{separator}{line}\n{rest}"),
            None => format!("{w}{separator}{line}"),
        },
        Some(w) => w.to_owned(),
        None => line.to_owned(),
    }
}

/// The `--timings` report: one line per entry, `name  12.3µs`.
///
/// ```
/// use std::time::Duration;
/// let t = [("model", Duration::from_nanos(12_340))];
/// assert_eq!(interband_consumers::interline::timings_report(&t), "model  12.3µs\n");
/// ```
pub fn timings_report(timings: &[(&str, Duration)]) -> String {
    timings
        .iter()
        .map(|(name, d)| format!("{name}  {:.1}µs\n", d.as_secs_f64() * 1e6))
        .collect()
}

/// Stdin up to this size goes through a pipe: a fresh pipe holds at least
/// one page, so writing it can never block.
const PIPE_SAFE: usize = 4096;
/// How often [`wrap`] checks whether the command is done.
const POLL: Duration = Duration::from_millis(2);
/// The most of the wrapped command's output read.
const MAX_OUTPUT: u64 = 64 * 1024;

/// The longest `--wrap` waits for the wrapped command, whatever a setting says: 5 s.
pub const MAX_WRAP_TIMEOUT_MS: u64 = 5000;

/// How long `--wrap` waits: the setting, within [`MAX_WRAP_TIMEOUT_MS`].
pub fn wrap_timeout(s: &Settings) -> Duration {
    Duration::from_millis(s.wrap_timeout_ms.min(MAX_WRAP_TIMEOUT_MS))
}

/// Runs the user's statusline command `argv` (no shell) with `stdin`, waits
/// at most `timeout`, and returns its stdout (every line, at most 64 KiB,
/// without the final line ending; empty when it printed nothing), or why
/// there is none: it could not run, it was late (it is killed with its
/// whole process group), or it failed and printed nothing.
///
/// No thread: the command's stdout goes to an unlinked scratch file (so a
/// background child of it holding stdout open cannot stall us), and stdin
/// larger than a pipe surely holds goes through one too, so nothing blocks
/// past the timeout. When no scratch file can be made, pipes are used.
pub fn wrap(argv: &[String], stdin: &[u8], timeout: Duration) -> Result<String, String> {
    run_wrapped(argv, stdin, timeout, true)
}

/// [`wrap`], with scratch files allowed or not (the pipes-only path is tested too).
fn run_wrapped(
    argv: &[String],
    stdin: &[u8],
    timeout: Duration,
    files: bool,
) -> Result<String, String> {
    let make_scratch = || if files { scratch() } else { None };
    let deadline = Instant::now() + timeout;
    let Some((program, args)) = argv.split_first() else {
        return Err("no command to wrap".into());
    };
    let name = interband::text::terminal(program);
    let mut cmd = Command::new(program);
    // Its own process group, so a timeout takes its pipelines down with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.args(args).stderr(Stdio::null());

    let mut stdin_pending = None;
    if stdin.len() <= PIPE_SAFE {
        cmd.stdin(Stdio::piped());
        stdin_pending = Some(stdin);
    } else if let Some(f) = make_scratch().and_then(|mut f| {
        f.write_all(stdin).ok()?;
        f.seek(SeekFrom::Start(0)).ok()?;
        Some(f)
    }) {
        cmd.stdin(Stdio::from(f));
    } else {
        cmd.stdin(Stdio::piped());
        stdin_pending = Some(stdin);
    }
    let out_file = make_scratch().and_then(|f| Some((f.try_clone().ok()?, f)));
    let mut out_file = match out_file {
        Some((theirs, ours)) => {
            cmd.stdout(Stdio::from(theirs));
            Some(ours)
        }
        None => {
            cmd.stdout(Stdio::piped());
            None
        }
    };

    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{name} could not run: {e}"))?;
    drop(cmd); // closes our copies of the child's ends
    if let (Some(bytes), Some(mut pipe)) = (stdin_pending, child.stdin.take()) {
        // A command that does not read its stdin may close it: not an error.
        let _ = pipe.write_all(bytes);
    }

    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        let now = Instant::now();
        if now >= deadline {
            break None;
        }
        std::thread::sleep((deadline - now).min(POLL));
    };
    let Some(status) = status else {
        // SAFETY: kill(2) on the child's own process group (its id, made
        // above); no memory is involved.
        unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
        let _ = child.wait();
        return Err(format!(
            "{name} did not finish within {} ms",
            timeout.as_millis()
        ));
    };

    let mut out = Vec::new();
    let unread = |e: std::io::Error| format!("{name}'s output could not be read: {e}");
    match (&mut out_file, child.stdout.take()) {
        (Some(f), _) => {
            f.seek(SeekFrom::Start(0)).map_err(unread)?;
            f.take(MAX_OUTPUT).read_to_end(&mut out).map_err(unread)?;
        }
        (None, Some(pipe)) => {
            // A pipe is read to its end, which waits for every holder of it:
            // what the command left running in its group must not keep us.
            // SAFETY: kill(2) on the command's own process group.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            pipe.take(MAX_OUTPUT)
                .read_to_end(&mut out)
                .map_err(unread)?;
        }
        (None, None) => return Err(format!("{name}'s output could not be read")),
    }
    let text = String::from_utf8_lossy(&out);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.is_empty() && !status.success() {
        return Err(format!("{name} failed ({status}) and printed nothing"));
    }
    // Their colours, and nothing else that could drive the terminal.
    Ok(interband::text::keep_sgr(&text.replace("\r\n", "\n")))
}

/// A private scratch file in the temp folder, with no name (0600, gone
/// however the process ends).
fn scratch() -> Option<File> {
    tempfile::tempfile().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use interband::payloads::MemoryNote;
    use serde_json::json;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/claude-code-2.1.332"
    );
    const SESSION: &str = "3e48b9d6-e2b9-4536-a4a6-77ef838d7343";
    const LEVEL_WORDS: [&str; 4] = ["GREEN", "YELLOW", "ORANGE", "RED"];

    fn none(_: &str) -> Option<String> {
        None
    }

    fn fixture(name: &str) -> Input {
        let bytes = std::fs::read(format!("{FIXTURES}/{name}")).unwrap();
        Input::parse(&bytes)
    }

    fn plain() -> Settings {
        Settings {
            color: false,
            ..Settings::default()
        }
    }

    /// The view before 0.2 (the share of the usable room left), which most
    /// of these tests were written in: it stays a setting.
    fn usable() -> Settings {
        Settings {
            context_style: ContextStyle::Usable,
            ..plain()
        }
    }

    fn temp_bus() -> (tempfile::TempDir, Bus) {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("bus"));
        (dir, bus)
    }

    /// An input with a 200k window and `used` tokens in context.
    fn used(used: u64) -> Input {
        Input {
            session_id: Some("s".into()),
            model_name: Some("Sonnet".into()),
            window: Some(200_000),
            usage: Some(Usage {
                input_tokens: used,
                ..Usage::default()
            }),
            ..Input::default()
        }
    }

    fn basis(bus: &Bus, input: &Input) -> Basis {
        let settings = plain();
        Ctx::new(bus, input, &settings, &none).view().unwrap().basis
    }

    fn context_seq(bus: &Bus, session: &str) -> u64 {
        bus.read(CONTEXT_CHANNEL.0, CONTEXT_CHANNEL.1, session)
            .unwrap()
            .envelope
            .seq
    }

    #[test]
    fn channel_constants_match_the_payload_contracts() {
        use interband::payloads::Payload;
        assert_eq!(
            (ContextWindow::NAMESPACE, ContextWindow::CHANNEL),
            CONTEXT_CHANNEL
        );
        assert_eq!((Pressure::NAMESPACE, Pressure::CHANNEL), PRESSURE_CHANNEL);
        assert_eq!((MemoryNote::NAMESPACE, MemoryNote::CHANNEL), NOTE_CHANNEL);
    }

    #[test]
    fn parses_the_real_input() {
        let i = fixture("statusLine.input.json");
        assert_eq!(i.session(), Some(SESSION));
        assert_eq!(i.window, Some(1_000_000));
        assert_eq!(i.used_tokens(), Some(31_700));
        assert_eq!(i.usage.unwrap().output_tokens, 25);
        assert_eq!(i.model_id.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(i.model_name.as_deref(), Some("Opus 5.5"));
        assert_eq!(i.project_dir.as_deref(), Some("/home/dev/work"));
        assert_eq!(i.used_percentage, Some(3.0));
        assert_eq!(i.remaining_percentage, Some(97.0));
        assert!(i.transcript_path.unwrap().ends_with(".jsonl"));
    }

    #[test]
    fn parsing_is_tolerant() {
        assert_eq!(Input::parse(b"not json"), Input::default());
        assert_eq!(Input::parse(b""), Input::default());
        assert_eq!(Input::parse(b"[1,2]"), Input::default());
        let i = Input::parse(
            br#"{"session_id":" ","model":"opus","workspace":null,"extra":{"x":1},
                 "context_window":{"context_window_size":"big","used_percentage":"3",
                   "current_usage":{"input_tokens":1200.0,"cache_read_input_tokens":-5}}}"#,
        );
        assert_eq!(i.session(), None);
        assert_eq!(i.model_name, None);
        assert_eq!(i.window, None);
        assert_eq!(
            i.used_percentage,
            Some(3.0),
            "a numeric string is its number"
        );
        assert_eq!(
            i.used_tokens(),
            None,
            "a count that cannot be read is no figure, never a low one"
        );
        let i = Input::parse(
            br#"{"context_window":{"context_window_size":"1e6","used_percentage":"x",
                   "current_usage":{"input_tokens":1.8e5,"cache_read_input_tokens":"20000","output_tokens":null}}}"#,
        );
        assert_eq!(
            (i.window, i.used_tokens()),
            (Some(1_000_000), Some(200_000))
        );
        assert_eq!(i.used_percentage, None);
        let empty_usage = Input::parse(br#"{"context_window":{"current_usage":{}}}"#);
        assert_eq!(empty_usage.usage, None);
    }

    #[test]
    fn the_real_input_is_published_once_per_change() {
        let (_d, bus) = temp_bus();
        let mut input = fixture("statusLine.input.json");
        let out = render(&bus, &input, &usable(), &none, 100.0);
        assert!(out.published);
        let cw = bus.read_typed::<ContextWindow>(SESSION).unwrap();
        assert_eq!(cw.msg_type, "context_window");
        assert_eq!(cw.session_id, SESSION);
        assert_eq!(cw.seq, 1);
        let p = cw.payload;
        assert_eq!(p.window, 1_000_000);
        assert_eq!(p.used_tokens, Some(31_700));
        assert_eq!(p.used_percentage, Some(3.0));
        assert_eq!(p.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(p.transcript_path, input.transcript_path);
        assert_eq!(
            p.transcript_bytes, None,
            "the fixture's transcript is not here"
        );
        assert_eq!(p.ts, 100.0);
        assert!(
            out.line.starts_with("Opus 5.5 │ ctx 96% usable"),
            "{}",
            out.line
        );
        assert!(out.line.contains("GREEN"), "{}", out.line);

        let again = render(&bus, &input, &usable(), &none, 100.3);
        assert!(
            !again.published,
            "a redraw with the same figures rewrites nothing"
        );
        assert_eq!(context_seq(&bus, SESSION), 1);
        assert_eq!(again.line, out.line);

        input.usage.as_mut().unwrap().cache_read_input_tokens += 5_000;
        assert!(render(&bus, &input, &usable(), &none, 101.0).published);
        assert_eq!(context_seq(&bus, SESSION), 2);
        let p = bus.read_typed::<ContextWindow>(SESSION).unwrap().payload;
        assert_eq!((p.used_tokens, p.ts), (Some(36_700), 101.0));

        input.model_id = Some("claude-sonnet-5".into());
        assert!(render(&bus, &input, &usable(), &none, 102.0).published);
        assert_eq!(context_seq(&bus, SESSION), 3, "a model change publishes");
    }

    #[test]
    fn transcript_bytes_give_the_position() {
        let (dir, bus) = temp_bus();
        let transcript = dir.path().join("t.jsonl");
        std::fs::write(&transcript, "x".repeat(1234)).unwrap();
        let mut input = used(10_000);
        input.transcript_path = Some(transcript.to_string_lossy().into_owned());
        assert!(render(&bus, &input, &usable(), &none, 1.0).published);
        let p = bus.read_typed::<ContextWindow>("s").unwrap().payload;
        assert_eq!(p.transcript_bytes, Some(1234));
        assert_eq!(p.used_percentage, None);
    }

    #[test]
    fn nothing_is_published_without_a_window_a_session_or_permission() {
        let (_d, bus) = temp_bus();
        let mut input = used(10_000);
        input.window = None;
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(!out.published);
        assert!(
            out.line.contains("ctx 94% usable"),
            "200k assumed: {}",
            out.line
        );
        input.window = Some(0);
        assert!(!render(&bus, &input, &usable(), &none, 1.0).published);
        let mut input = used(10_000);
        input.session_id = None;
        assert!(!render(&bus, &input, &usable(), &none, 1.0).published);
        let off = Settings {
            publish: false,
            ..plain()
        };
        let out = render(&bus, &used(10_000), &off, &none, 1.0);
        assert!(!out.published);
        assert!(!out.timings.iter().any(|(n, _)| *n == "publish"));
        assert!(bus.read_typed::<ContextWindow>("s").is_err());
    }

    #[test]
    fn before_the_first_response_shows_the_model_and_no_level() {
        let (_d, bus) = temp_bus();
        let input = fixture("statusLine.input.before_first_response.json");
        assert_eq!(input.usage, None);
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert_eq!(out.line, "Opus 5.5 │ ctx –");
        for w in LEVEL_WORDS {
            assert!(!out.line.contains(w), "{}", out.line);
        }
        // The window is known: it is published, without a usage figure.
        assert!(out.published);
        let p = bus.read_typed::<ContextWindow>(SESSION).unwrap().payload;
        assert_eq!((p.window, p.used_tokens), (1_000_000, None));
    }

    #[test]
    fn after_a_compaction_the_context_is_green_and_roomy() {
        let (_d, bus) = temp_bus();
        let input = fixture("statusLine.input.after_compact.json");
        assert_eq!(input.used_tokens(), Some(0));
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert_eq!(out.line, "Opus 5.5 │ ctx 100% usable ██████████ GREEN");
        // The zeros are the host's placeholder, not a figure: the bridge
        // publishes the window alone, so the producer keeps the compaction's.
        let p = bus.read_typed::<ContextWindow>(SESSION).unwrap().payload;
        assert_eq!(
            (p.window, p.used_tokens, p.used_percentage),
            (1_000_000, None, None)
        );
    }

    #[test]
    fn after_a_compaction_the_producers_figure_beats_the_hosts_zeros() {
        let (_d, bus) = temp_bus();
        let input = fixture("statusLine.input.after_compact.json");
        let compaction = Pressure {
            level: Level::Green,
            context_usable: Some(86.0),
            used_tokens: Some(120_000),
            window: Some(1_000_000),
            source: Some("compaction".into()),
            ts: 1.0,
            ..Pressure::default()
        };
        bus.publish_typed(SESSION, SESSION, &compaction).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.contains("ctx 86% usable"), "{}", out.line);
        assert_eq!(basis(&bus, &input), Basis::Pressure);

        // The old context's value (drawn before SessionStart reset it): not better.
        let old = Pressure {
            level: Level::Red,
            context_usable: Some(3.0),
            used_tokens: Some(160_000),
            source: Some("transcript".into()),
            ..compaction
        };
        bus.publish_typed(SESSION, SESSION, &old).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert_eq!(out.line, "Opus 5.5 │ ctx 100% usable ██████████ GREEN");
    }

    #[test]
    fn the_level_comes_from_interpulse_when_it_is_current() {
        let (_d, bus) = temp_bus();
        let input = fixture("statusLine.input.json");
        let pressure = Pressure {
            level: Level::Orange,
            context_usable: Some(18.0),
            used_tokens: Some(31_700),
            window: Some(1_000_000),
            ts: 1.0,
            ..Pressure::default()
        };
        bus.publish_typed(SESSION, SESSION, &pressure).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(
            out.line.contains("ctx 18% usable ██░░░░░░░░ ORANGE"),
            "{}",
            out.line
        );
        assert_eq!(basis(&bus, &input), Basis::Pressure);

        // No usable figure in the pressure value: the input's.
        let bare = Pressure {
            context_usable: None,
            ..pressure.clone()
        };
        bus.publish_typed(SESSION, SESSION, &bare).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.contains("ctx 96% usable"), "{}", out.line);
        assert!(out.line.ends_with("ORANGE"), "{}", out.line);
    }

    #[test]
    fn a_newer_input_beats_the_pressure_value() {
        let (_d, bus) = temp_bus();
        let input = fixture("statusLine.input.json");
        let stale = Pressure {
            level: Level::Orange,
            context_usable: Some(18.0),
            used_tokens: Some(800_000),
            ts: 1.0,
            ..Pressure::default()
        };
        bus.publish_typed(SESSION, SESSION, &stale).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.contains("ctx 96% usable"), "{}", out.line);
        assert!(out.line.contains("GREEN"), "{}", out.line);
        assert_eq!(basis(&bus, &input), Basis::Input);

        // Same tokens but the producer assumed another window: also stale.
        let wrong_window = Pressure {
            used_tokens: Some(31_700),
            window: Some(200_000),
            ..stale
        };
        bus.publish_typed(SESSION, SESSION, &wrong_window).unwrap();
        assert_eq!(basis(&bus, &input), Basis::Input);
    }

    #[test]
    fn a_level_from_the_heuristic_alone_never_overrides_the_input() {
        let (_d, bus) = temp_bus();
        let input = fixture("statusLine.input.json");
        // A peer monitor's legacy value, and a pressure value without figures,
        // both red on call counts alone: the input says 96% usable, green.
        let legacy = interband::payloads::LegacyPressure {
            level: Level::Red,
            pressure: 130.0,
            est_tokens: 210_000.0,
            ts: 1.0,
        };
        bus.publish_typed(SESSION, SESSION, &legacy).unwrap();
        let heuristic = Pressure {
            level: Level::Red,
            pressure: 130.0,
            ts: 1.0,
            ..Pressure::default()
        };
        bus.publish_typed(SESSION, SESSION, &heuristic).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.contains("ctx 96% usable"), "{}", out.line);
        assert!(out.line.ends_with("GREEN"), "{}", out.line);
        assert_eq!(basis(&bus, &input), Basis::Input);
    }

    #[test]
    fn the_level_is_computed_from_the_input_alone() {
        let (_d, bus) = temp_bus();
        // 200k window: autocompact at 167k. 150k used leaves 10.2% usable
        // (orange, red is below 10); 155k leaves 7.2% (red).
        let out = render(&bus, &used(150_000), &usable(), &none, 1.0);
        assert_eq!(out.line, "Sonnet │ ctx 10% usable █░░░░░░░░░ ORANGE");
        let out = render(&bus, &used(155_000), &usable(), &none, 1.0);
        assert_eq!(out.line, "Sonnet │ ctx 7% usable █░░░░░░░░░ RED │ ⟳compact");
        let out = render(&bus, &used(190_000), &usable(), &none, 1.0);
        assert!(
            out.line.contains("ctx 0% usable ░░░░░░░░░░ RED"),
            "{}",
            out.line
        );
        // The host's settings move autocompact.
        let off = |k: &str| (k == "DISABLE_AUTO_COMPACT").then(|| "1".to_owned());
        let out = render(&bus, &used(150_000), &usable(), &off, 1.0);
        assert!(out.line.contains("ctx 25% usable"), "{}", out.line);
        assert!(out.line.contains("YELLOW"), "{}", out.line);
    }

    #[test]
    fn colours_are_configurable_and_cleaned() {
        let (_d, bus) = temp_bus();
        let input = used(150_000);
        let mut s = Settings::default();
        s.colors.orange = "35\x1b[2J".into();
        let out = render(&bus, &input, &s, &|_: &str| None, 1.0);
        assert!(
            out.line.contains("\x1b[38;5;208m"),
            "an invalid code gives the default: {:?}",
            out.line
        );
        s.colors.orange = "35".into();
        let out = render(&bus, &input, &s, &|_: &str| None, 1.0);
        assert!(out.line.contains("\x1b[35m"), "{:?}", out.line);
        assert!(
            !out.line.contains("[2J"),
            "only SGR parameters get through: {:?}",
            out.line
        );
    }

    #[test]
    fn colour_follows_the_settings_and_no_color() {
        let (_d, bus) = temp_bus();
        let input = used(150_000);
        let colour = Settings::default();
        let out = render(&bus, &input, &colour, &none, 1.0);
        assert!(out.line.contains("\x1b[38;5;208m"), "{:?}", out.line);
        assert!(out.line.contains("ORANGE\x1b[0m"), "{:?}", out.line);
        let no_color = |k: &str| (k == "NO_COLOR").then(String::new);
        let out = render(&bus, &input, &colour, &no_color, 1.0);
        assert!(!out.line.contains('\x1b'), "{:?}", out.line);
        assert!(out.line.contains("ORANGE"));
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(!out.line.contains('\x1b'), "{:?}", out.line);
        let red = render(&bus, &used(160_000), &colour, &none, 1.0);
        assert!(red.line.contains("\x1b[1;31m"), "{:?}", red.line);
        let green = render(&bus, &used(1_000), &colour, &none, 1.0);
        assert!(green.line.contains("\x1b[32m"), "{:?}", green.line);
    }

    #[test]
    fn markers_show_a_saved_note_and_a_pending_compaction() {
        let (_d, bus) = temp_bus();
        let input = used(10_000);
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(!out.line.contains(NOTE_MARKER) && !out.line.contains(COMPACT_MARKER));

        let note = MemoryNote {
            path: "/tmp/note.md".into(),
            trigger: "checkpoint_needed".into(),
            bytes: 10,
            context_usable: Some(18.0),
            ts: 1.0,
        };
        bus.publish_typed("s", "s", &note).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.ends_with(" │ ✎note"), "{}", out.line);
        assert!(!out.line.contains(COMPACT_MARKER));
        // Another session's note is not ours.
        let mut other = used(10_000);
        other.session_id = Some("other".into());
        let out = render(&bus, &other, &usable(), &none, 1.0);
        assert!(!out.line.contains(NOTE_MARKER), "{}", out.line);

        bus.publish(
            PENDING_CHANNEL.0,
            PENDING_CHANNEL.1,
            "s",
            "compact_pending",
            "s",
            json!({"ts": 1.0}),
        )
        .unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.ends_with(" │ ✎note │ ⟳compact"), "{}", out.line);
        assert!(out.line.contains("GREEN"), "pending alone, not the level");

        // Red from the producer alone also means a compaction is coming.
        let (_d2, bus2) = temp_bus();
        let red = Pressure {
            level: Level::Red,
            used_tokens: Some(10_000),
            ..Pressure::default()
        };
        bus2.publish_typed("s", "s", &red).unwrap();
        let out = render(&bus2, &input, &usable(), &none, 1.0);
        assert!(out.line.ends_with("RED │ ⟳compact"), "{}", out.line);
    }

    #[test]
    fn segments_follow_the_configured_order_and_unknown_names_are_ignored() {
        let (_d, bus) = temp_bus();
        let settings = Settings {
            segments: ["context", "bogus", "model"].map(String::from).to_vec(),
            separator: " | ".into(),
            gauge_width: 4,
            ..plain()
        };
        let out = render(&bus, &used(50_000), &settings, &none, 1.0);
        // 50k of 200k: 25% used (the bar fills with it), 117k to Claude
        // Code's compaction point at 167k.
        assert_eq!(out.line, "ctx 25% used █░░░ 117k to compact GREEN | Sonnet");
        let names: Vec<_> = out.timings.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["publish", "context", "model"]);
        let report = timings_report(&out.timings);
        assert_eq!(report.lines().count(), 3);
        assert!(report.lines().nth(1).unwrap().starts_with("context  "));
        assert!(report.trim_end().ends_with("µs"), "{report}");

        let no_gauge = Settings {
            segments: vec!["context".into()],
            gauge_width: 0,
            ..plain()
        };
        let out = render(&bus, &used(50_000), &no_gauge, &none, 1.0);
        assert_eq!(out.line, "ctx 25% used 117k to compact GREEN");
        let old_view = Settings {
            context_style: ContextStyle::Usable,
            ..no_gauge.clone()
        };
        let out = render(&bus, &used(50_000), &old_view, &none, 1.0);
        assert_eq!(out.line, "ctx 70% usable GREEN");
        let huge = Settings {
            gauge_width: 10_000,
            ..no_gauge
        };
        let out = render(&bus, &used(50_000), &huge, &none, 1.0);
        assert_eq!(
            out.line.chars().filter(|c| *c == '█' || *c == '░').count(),
            100
        );
    }

    #[test]
    fn the_percentage_is_the_hosts_own_and_the_bar_fills_as_the_context_fills() {
        let (_d, bus) = temp_bus();
        let mut fuller = Vec::new();
        for (tokens, host_says) in [
            (20_000, 10.0),
            (100_000, 50.0),
            (150_000, 75.0),
            (190_000, 95.0),
        ] {
            let input = Input {
                used_percentage: Some(host_says),
                ..used(tokens)
            };
            let out = render(&bus, &input, &plain(), &none, 1.0);
            assert!(
                out.line.contains(&format!("ctx {host_says:.0}% used")),
                "the host's own figure: {}",
                out.line
            );
            fuller.push(out.line.chars().filter(|c| *c == '█').count());
        }
        assert!(fuller.windows(2).all(|p| p[0] < p[1]), "fills: {fuller:?}");
        let out = render(&bus, &used(150_000), &plain(), &none, 1.0);
        assert!(out.line.contains("17k to compact"), "{}", out.line);
        let out = render(&bus, &used(180_000), &plain(), &none, 1.0);
        assert!(
            out.line.contains(" 0 to compact RED"),
            "past the point: {}",
            out.line
        );
    }

    #[test]
    fn unparseable_input_still_prints_a_line() {
        let (_d, bus) = temp_bus();
        let out = render(
            &bus,
            &Input::parse(b"{oops"),
            &Settings::default(),
            &none,
            1.0,
        );
        assert_eq!(out.line, FALLBACK_LINE);
        assert!(!out.published);
        let none_known = Settings {
            segments: vec!["nothing".into()],
            ..plain()
        };
        let input = fixture("statusLine.input.json");
        assert_eq!(
            render(&bus, &input, &none_known, &none, 1.0).line,
            FALLBACK_LINE
        );
    }

    #[test]
    fn the_model_name_cannot_break_the_line() {
        let (_d, bus) = temp_bus();
        let mut input = used(10_000);
        input.model_name = Some("Evil\nname\r".into());
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.starts_with("Evil name │"), "{:?}", out.line);
        input.model_name = None;
        input.model_id = Some("claude-x".into());
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert!(out.line.starts_with("claude-x │"), "{:?}", out.line);
    }

    #[test]
    fn settings_load_from_the_interline_table() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "[interline]\nsegments = [\"context\", \"model\"]\ncolor = false\n",
        )
        .unwrap();
        let env = |k: &str| (k == "INTERBAND_INTERLINE_GAUGE_WIDTH").then(|| "6".to_owned());
        let s = interband::settings::load::<Settings>("interline", &[file], &env, &[]);
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(s.value.segments, ["context", "model"]);
        assert!(!s.value.color);
        assert_eq!(s.value.gauge_width, 6);
        assert_eq!(s.value.separator, " │ ");
        assert_eq!((s.value.wrap_timeout_ms, s.value.publish), (2000, true));
    }

    #[test]
    fn compose_joins_the_wrapped_line() {
        assert_eq!(compose(Some("a"), "b", " │ "), "a │ b");
        assert_eq!(compose(Some(""), "b", " │ "), "b");
        assert_eq!(compose(Some("a"), "", " │ "), "a");
        assert_eq!(compose(None, "b", " │ "), "b");
    }

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_late_wrapped_command_is_killed_with_its_pipeline() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > '{}'; wait", pidfile.display());
        assert_eq!(
            wrap(
                &argv(&["sh", "-c", &script]),
                b"",
                Duration::from_millis(300)
            )
            .map_err(|e| e.contains("did not finish")),
            Err(true)
        );
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Running, not a zombie waiting for whoever inherited it.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                st.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(), "the pipeline's sleep {pid} outlived the timeout");
    }

    #[test]
    fn wrap_returns_every_line() {
        let t = Duration::from_secs(5);
        let out = wrap(&argv(&["sh", "-c", "cat >/dev/null; echo left"]), b"{}", t);
        assert_eq!(out.as_deref(), Ok("left"));
        let out = wrap(&argv(&["sh", "-c", "printf 'one\\r\\ntwo\\n'"]), b"", t);
        assert_eq!(out.as_deref(), Ok("one\ntwo"));
        let out = wrap(&argv(&["sh", "-c", "printf 'no newline'"]), b"", t);
        assert_eq!(out.as_deref(), Ok("no newline"));
        assert_eq!(
            wrap(&argv(&["sh", "-c", "exit 0"]), b"", t).as_deref(),
            Ok("")
        );
        assert!(wrap(&[], b"", t).is_err());
        // Why there is no line, said: missing, or failing with nothing printed.
        let missing = wrap(&argv(&["/no/such/statusline"]), b"", t).unwrap_err();
        assert!(missing.contains("could not run"), "{missing}");
        let failing = wrap(&argv(&["sh", "-c", "exit 3"]), b"", t).unwrap_err();
        assert!(
            failing.contains("failed") && failing.contains('3'),
            "{failing}"
        );
    }

    #[test]
    fn wrap_passes_stdin_through_small_and_large() {
        let t = Duration::from_secs(5);
        let small = std::fs::read(format!("{FIXTURES}/statusLine.input.json")).unwrap();
        let out = wrap(&argv(&["wc", "-c"]), &small, t).unwrap();
        assert_eq!(out.trim().parse::<usize>().unwrap(), small.len());
        let large = vec![b'x'; 300_000];
        let out = wrap(&argv(&["wc", "-c"]), &large, t).unwrap();
        assert_eq!(out.trim(), "300000");
    }

    #[test]
    fn wrap_kills_a_late_command() {
        let start = Instant::now();
        let out = wrap(
            &argv(&["sh", "-c", "sleep 5; echo late"]),
            b"{}",
            Duration::from_millis(200),
        );
        assert!(out.is_err());
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        // A command that never reads a stdin larger than a pipe holds: still bounded.
        let start = Instant::now();
        let big = vec![b'x'; 1 << 20];
        let out = wrap(&argv(&["sleep", "5"]), &big, Duration::from_millis(200));
        assert!(out.is_err());
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn wrap_is_not_stalled_by_a_background_child_holding_stdout() {
        let start = Instant::now();
        let out = wrap(
            &argv(&["sh", "-c", "sleep 3 & printf partial"]),
            b"",
            Duration::from_secs(1),
        );
        assert_eq!(out.as_deref(), Ok("partial"));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn wrap_works_with_pipes_alone() {
        let t = Duration::from_secs(5);
        let out = run_wrapped(
            &argv(&["sh", "-c", "cat >/dev/null; echo left"]),
            b"{}",
            t,
            false,
        );
        assert_eq!(out.as_deref(), Ok("left"));
        let out = run_wrapped(&argv(&["wc", "-c"]), &[b'x'; 10_000], t, false);
        assert_eq!(out.as_deref().map(str::trim), Ok("10000"));
        // A background child holding the pipe does not keep us past the command.
        let start = Instant::now();
        let out = run_wrapped(&argv(&["sh", "-c", "echo hi; (sleep 30 &)"]), b"", t, false);
        assert_eq!(out.as_deref(), Ok("hi"));
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
        let start = Instant::now();
        let out = run_wrapped(
            &argv(&["sh", "-c", "sleep 5; echo late"]),
            b"{}",
            Duration::from_millis(200),
            false,
        );
        assert!(out.is_err(), "{out:?}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn wrap_of_a_missing_program_says_so() {
        let out = wrap(
            &argv(&["/nonexistent/interline-no-such-program"]),
            b"{}",
            Duration::from_secs(1),
        );
        assert!(out.is_err(), "{out:?}");
    }
}
