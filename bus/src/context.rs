//! Context figures shared by producers and consumers, whatever the host:
//! tokens used, the window and where it came from, the point where the
//! host compacts, the usable room left, and the threshold table. Each
//! host's rules for the window and the compaction point are its profile's
//! (`interband-hosts`).

use crate::payloads::Level;
use serde::{Deserialize, Serialize};

/// Where a context figure came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `context_window` in the hook input.
    HookInput,
    /// The statusline bridge (`interline/context`), fresh by transcript position.
    Statusline,
    /// The transcript's last main-thread assistant usage.
    Transcript,
    /// The transcript's last compaction boundary.
    Compaction,
    /// No usage figure: the pressure heuristic alone.
    Heuristic,
}

impl Source {
    /// The name used on the bus and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::HookInput => "hook_input",
            Source::Statusline => "statusline",
            Source::Transcript => "transcript",
            Source::Compaction => "compaction",
            Source::Heuristic => "heuristic",
        }
    }
}

/// Where a session's window came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `context_window` in the hook input.
    HookInput,
    /// The host's statusline for this session.
    Statusline,
    /// The session's transcript: the window it states, or the one the
    /// model it asked for has.
    Transcript,
    /// How the session was started: its command line, environment or the
    /// host's settings name the model.
    Launch,
    /// The user's `[interpulse] window`.
    Configured,
    /// The host's own setting of the window.
    HostSettings,
    /// Usage larger than any other window said: the large one.
    Usage,
    /// The session's own automatic compaction, below where the larger
    /// window compacts: the smaller one.
    Compaction,
    /// The window of the model in use, by the host's table.
    Model,
    /// Nothing said which of two windows the model runs with: the larger
    /// is assumed, so that nothing is said or done before it is certain
    /// ([`Figures::window_other`] is the smaller).
    Guess,
    /// Nothing said: the host's default.
    Default,
}

impl WindowSource {
    /// The name used on the bus and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::HookInput => "hook_input",
            WindowSource::Statusline => "statusline",
            WindowSource::Transcript => "transcript",
            WindowSource::Launch => "launch",
            WindowSource::Configured => "configured",
            WindowSource::HostSettings => "host_settings",
            WindowSource::Usage => "usage",
            WindowSource::Compaction => "compaction",
            WindowSource::Model => "model",
            WindowSource::Guess => "guess",
            WindowSource::Default => "default",
        }
    }

    /// What it means, for people.
    pub fn describe(self) -> &'static str {
        match self {
            WindowSource::HookInput => "from the hook's input",
            WindowSource::Statusline => "from the host's statusline for this session",
            WindowSource::Transcript => "from the session's transcript",
            WindowSource::Launch => "from how the session was started",
            WindowSource::Configured => "from [interpulse] window",
            WindowSource::HostSettings => "from the host's settings",
            WindowSource::Usage => "from usage past the smaller window",
            WindowSource::Compaction => {
                "from this session's own automatic compaction, below where the larger window compacts"
            }
            WindowSource::Model => "the model's own",
            WindowSource::Guess => "a guess: nothing says which window the model runs with",
            WindowSource::Default => "the host's default",
        }
    }
}

/// The context of a session at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Tokens in context.
    pub used_tokens: u64,
    /// The window, tokens.
    pub window: u64,
    /// Where autocompact starts, tokens.
    pub autocompact_at: u64,
    /// Where `used_tokens` came from.
    pub source: Source,
    /// Where `window` came from (absent in figures stored before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_source: Option<WindowSource>,
    /// When the window is a guess, the smaller window the session may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_other: Option<u64>,
    /// Where the host would compact that smaller window, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_at_other: Option<u64>,
}

impl Figures {
    /// Figures whose window's provenance is not told.
    pub fn new(used_tokens: u64, window: u64, autocompact_at: u64, source: Source) -> Self {
        Figures {
            used_tokens,
            window,
            autocompact_at,
            source,
            window_source: None,
            window_other: None,
            compact_at_other: None,
        }
    }

    /// The window as shown: `200k`, or when it is a guess `1M (or 200k)`.
    ///
    /// ```
    /// use interband::context::{Figures, Source, WindowSource};
    /// let mut f = Figures::new(160_000, 1_000_000, 967_000, Source::Transcript);
    /// assert_eq!(f.window_text(), "1M");
    /// f.window_source = Some(WindowSource::Guess);
    /// f.window_other = Some(200_000);
    /// assert_eq!(f.window_text(), "1M (or 200k)");
    /// ```
    pub fn window_text(&self) -> String {
        window_text(self.window, self.window_other)
    }

    /// Percent of the window used (raw, as the host's statusline shows it).
    pub fn used_pct(&self) -> f64 {
        pct(self.used_tokens, self.window)
    }
    /// Percent of the window remaining, raw.
    pub fn raw_remaining(&self) -> f64 {
        100.0 - self.used_pct()
    }
    /// Percent of the usable budget (up to autocompact) remaining.
    pub fn usable_remaining(&self) -> f64 {
        100.0 - pct(self.used_tokens, self.autocompact_at)
    }
}

/// The one rounding rule for every share people read (the statusline, a
/// warning, a note, `pressure`, `top`, replay): a whole percent, half up, as
/// the hosts round their own indicator (Claude Code's 82.5% is 83%), so one
/// figure reads the same wherever it is shown. Levels are judged on the
/// exact value, never on this.
///
/// ```
/// use interband::context::percent;
/// assert_eq!(percent(82.5), 83);
/// assert_eq!(percent(82.49), 82);
/// assert_eq!(percent(19.98), 20);
/// assert_eq!(percent(-3.0), 0);
/// assert_eq!(percent(f64::NAN), 0);
/// assert_eq!(percent(250.0), 100);
/// ```
pub fn percent(share: f64) -> u64 {
    if share.is_nan() {
        return 0;
    }
    (share.clamp(0.0, 100.0) + 0.5).floor() as u64
}

/// A share as shown anywhere: [`percent`] with its sign.
///
/// ```
/// assert_eq!(interband::context::pct_text(82.5), "83%");
/// assert_eq!(interband::context::pct_text(-3.0), "0%");
/// ```
pub fn pct_text(pct: f64) -> String {
    format!("{}%", percent(pct))
}

/// A share of the usable room as carried on the bus (`context_usable`):
/// rounded down to a tenth, so that [`pct_text`] of it shows what it shows
/// of the exact value.
pub fn pct_tenths(pct: f64) -> f64 {
    (pct.clamp(0.0, 100.0) * 10.0).floor() / 10.0
}

/// Tokens as shown anywhere: thousands, rounded (`140k`); from a million,
/// millions to a tenth (`1M`, `1.5M`); below a thousand, exact.
///
/// ```
/// use interband::context::tokens_text;
/// assert_eq!(tokens_text(139_600), "140k");
/// assert_eq!(tokens_text(850), "850");
/// assert_eq!(tokens_text(1_000_000), "1M");
/// assert_eq!(tokens_text(1_048_576), "1M", "Gemini's window");
/// assert_eq!(tokens_text(1_500_000), "1.5M");
/// assert_eq!(tokens_text(999_000), "999k");
/// ```
pub fn tokens_text(tokens: u64) -> String {
    if tokens < 1000 {
        tokens.to_string()
    } else if tokens < 999_500 {
        format!("{}k", (tokens as f64 / 1000.0).round() as u64)
    } else {
        // As people say windows: 1M, 1.5M (Gemini's 1,048,576 is "1M").
        let tenths = (tokens as f64 / 100_000.0).round() as u64;
        if tenths.is_multiple_of(10) {
            format!("{}M", tenths / 10)
        } else {
            format!("{}.{}M", tenths / 10, tenths % 10)
        }
    }
}

/// The one sentence for a context figure, in the statusline's words (a
/// warning, a note, replay): the share of the window used, rounded as the
/// hosts round their own; the tokens used of the window; and the tokens
/// left before the host compacts.
///
/// ```
/// use interband::context::describe;
/// assert_eq!(
///     describe(140_000, 200_000, 167_000),
///     "70% used (140k of 200k tokens), 27k to compact"
/// );
/// assert_eq!(describe(175_000, 200_000, 167_000), "88% used (175k of 200k tokens), 0 to compact");
/// ```
pub fn describe(used_tokens: u64, window: u64, compact_at: u64) -> String {
    format!(
        "{} ({} of {} tokens), {}",
        used_text(used_tokens, window),
        tokens_text(used_tokens),
        tokens_text(window),
        to_compact_text(used_tokens, compact_at)
    )
}

/// [`describe`] without the tokens, where a line has little room (a journal
/// entry, a table): `78% used, 12k to compact`.
///
/// ```
/// assert_eq!(interband::context::brief(155_377, 200_000, 167_000), "78% used, 12k to compact");
/// ```
pub fn brief(used_tokens: u64, window: u64, compact_at: u64) -> String {
    format!(
        "{}, {}",
        used_text(used_tokens, window),
        to_compact_text(used_tokens, compact_at)
    )
}

/// The share of the window used, by the one rule ([`percent`]): `78% used`.
///
/// ```
/// assert_eq!(interband::context::used_text(155_377, 200_000), "78% used");
/// assert_eq!(interband::context::used_text(165_000, 200_000), "83% used");
/// assert_eq!(interband::context::used_text(1, 0), "100% used", "no window: nothing left");
/// ```
pub fn used_text(used_tokens: u64, window: u64) -> String {
    format!("{} used", pct_text(used_share(used_tokens, window)))
}

/// The share of the window used, percent (0–100).
pub fn used_share(used_tokens: u64, window: u64) -> f64 {
    pct(used_tokens, window)
}

/// The tokens left before the host compacts: `12k to compact` (`0 to
/// compact` past it).
///
/// ```
/// assert_eq!(interband::context::to_compact_text(170_000, 167_000), "0 to compact");
/// ```
pub fn to_compact_text(used_tokens: u64, compact_at: u64) -> String {
    format!(
        "{} to compact",
        tokens_text(compact_at.saturating_sub(used_tokens))
    )
}

/// The one sentence for a figure whose window is one of two (a guess): the
/// tokens used, then each window with what it would mean, the smaller
/// first.
///
/// ```
/// use interband::context::describe_either;
/// assert_eq!(
///     describe_either(160_000, (200_000, 167_000), (1_000_000, 967_000)),
///     "160k tokens used, window not known: if it is 200k, 80% used, 7k to compact; if it is 1M, 16% used, 807k to compact"
/// );
/// ```
pub fn describe_either(used_tokens: u64, smaller: (u64, u64), larger: (u64, u64)) -> String {
    let each = |(window, at): (u64, u64)| {
        format!(
            "if it is {}, {}, {}",
            tokens_text(window),
            used_text(used_tokens, window),
            to_compact_text(used_tokens, at)
        )
    };
    format!(
        "{} tokens used, window not known: {}; {}",
        tokens_text(used_tokens),
        each(smaller),
        each(larger)
    )
}

impl Figures {
    /// [`describe`] for these figures; [`describe_either`] when the window
    /// is a guess between two.
    pub fn describe(&self) -> String {
        match self.either() {
            Some(smaller) => describe_either(
                self.used_tokens,
                smaller,
                (self.window, self.autocompact_at),
            ),
            None => describe(self.used_tokens, self.window, self.autocompact_at),
        }
    }

    /// The smaller window and its compaction point, when the window is a
    /// guess between two.
    pub fn either(&self) -> Option<(u64, u64)> {
        if self.window_source != Some(WindowSource::Guess) {
            return None;
        }
        Some((self.window_other?, self.compact_at_other?)).filter(|(w, _)| *w != self.window)
    }
}

/// A window as shown, with the other one it may be when it is a guess.
pub fn window_text(window: u64, other: Option<u64>) -> String {
    match other {
        Some(o) if o != window => format!("{} (or {})", tokens_text(window), tokens_text(o)),
        _ => tokens_text(window),
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 100.0;
    }
    (part as f64 / whole as f64 * 100.0).clamp(0.0, 100.0)
}

/// Yellow, orange and red bounds for one measure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// Yellow from here.
    pub yellow: f64,
    /// Orange from here.
    pub orange: f64,
    /// Red from here.
    pub red: f64,
}

impl Bounds {
    /// The level of a value that gets worse as it rises (`value > bound`).
    pub fn above(&self, v: f64) -> Level {
        match v {
            v if v > self.red => Level::Red,
            v if v > self.orange => Level::Orange,
            v if v > self.yellow => Level::Yellow,
            _ => Level::Green,
        }
    }
    /// The level of a value that gets worse as it falls (`value < bound`).
    pub fn below(&self, v: f64) -> Level {
        match v {
            v if v < self.red => Level::Red,
            v if v < self.orange => Level::Orange,
            v if v < self.yellow => Level::Yellow,
            _ => Level::Green,
        }
    }
}

/// When each level starts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    /// Usable context remaining, percent (below).
    pub usable: Bounds,
    /// The heuristic pressure score (above).
    pub pressure: Bounds,
    /// Estimated tokens from tool output sizes (above), the fallback.
    pub tokens: Bounds,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            usable: Bounds {
                yellow: 35.0,
                orange: 20.0,
                red: 10.0,
            },
            pressure: Bounds {
                yellow: 60.0,
                orange: 90.0,
                red: 120.0,
            },
            tokens: Bounds {
                yellow: 150_000.0,
                orange: 180_000.0,
                red: 200_000.0,
            },
        }
    }
}

impl Thresholds {
    /// The table as markdown; docs/hooks.md carries exactly this.
    ///
    /// ```
    /// let md = interband::context::Thresholds::default().markdown();
    /// assert!(md.contains("| usable context remaining, % | < 35 | < 20 | < 10 |"));
    /// ```
    pub fn markdown(&self) -> String {
        let n = |v: f64| {
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{v}")
            }
        };
        let row = |name: &str, b: &Bounds, op: &str| {
            format!(
                "| {name} | {op} {} | {op} {} | {op} {} |\n",
                n(b.yellow),
                n(b.orange),
                n(b.red)
            )
        };
        let mut s = String::from("| measure | yellow | orange | red |\n|---|---|---|---|\n");
        s += &row("usable context remaining, %", &self.usable, "<");
        s += &row("pressure score (fallback)", &self.pressure, ">");
        s += &row("estimated tokens (fallback)", &self.tokens, ">");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usable_takes_the_reserve_out() {
        let f = Figures::new(100_000, 200_000, 167_000, Source::Transcript);
        assert_eq!(f.used_pct(), 50.0);
        assert!((f.usable_remaining() - 40.12).abs() < 0.01);
        let big = Figures::new(600_000, 1_000_000, 967_000, Source::Statusline);
        assert!(
            (big.usable_remaining() - 37.95).abs() < 0.01,
            "1M at 60% used is still green"
        );
        let full = Figures {
            used_tokens: 190_000,
            ..f
        };
        assert_eq!(full.usable_remaining(), 0.0);
    }
}
