//! Context figures shared by producers and consumers: the window, the
//! autocompact reserve, usable remaining, and the threshold table.
//!
//! Autocompact starts at `window − min(max output, 20000) − 13000` tokens: 167k of
//! a 200k window (a 16.5% reserve), 967k of 1M (3.3%). `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`
//! lowers it to `min(floor(window × P / 100), default)`; `DISABLE_AUTO_COMPACT`
//! turns it off (the whole window is usable).

use crate::payloads::Level;
use crate::settings::Env;
use serde::{Deserialize, Serialize};

/// The window assumed when nothing says otherwise.
pub const DEFAULT_WINDOW: u64 = 200_000;
/// The large window, assumed when usage exceeds a 200k window.
pub const LARGE_WINDOW: u64 = 1_000_000;
/// Output tokens reserved for the summary, at most.
const OUTPUT_RESERVE: u64 = 20_000;
/// The host's fixed buffer.
const BUFFER: u64 = 13_000;

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
}

impl Figures {
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

/// A share as shown anywhere (warning, statusline, note, `pressure`,
/// replay): whole percent, rounded down, as levels are judged on the exact
/// value (19.98% of the usable room left is orange, and shows as 19%).
///
/// ```
/// assert_eq!(interband::context::pct_text(19.98), "19%");
/// assert_eq!(interband::context::pct_text(-3.0), "0%");
/// ```
pub fn pct_text(pct: f64) -> String {
    format!("{}%", pct.clamp(0.0, 100.0).floor() as u64)
}

/// A share of the usable room as carried on the bus (`context_usable`):
/// rounded down to a tenth, so that [`pct_text`] of it shows what it shows
/// of the exact value.
pub fn pct_tenths(pct: f64) -> f64 {
    (pct.clamp(0.0, 100.0) * 10.0).floor() / 10.0
}

/// Tokens as shown anywhere: thousands, rounded (`140k`); below a thousand, exact.
///
/// ```
/// assert_eq!(interband::context::tokens_text(139_600), "140k");
/// assert_eq!(interband::context::tokens_text(850), "850");
/// ```
pub fn tokens_text(tokens: u64) -> String {
    if tokens < 1000 {
        tokens.to_string()
    } else {
        format!("{}k", (tokens as f64 / 1000.0).round() as u64)
    }
}

/// The one sentence for a context figure: tokens used of the window, and
/// the share of the usable room (up to where the host compacts) left.
///
/// ```
/// assert_eq!(
///     interband::context::describe(112_000, 200_000, 32.9),
///     "112k of 200k tokens used, 32% of the usable room left"
/// );
/// ```
pub fn describe(used_tokens: u64, window: u64, usable_left_pct: f64) -> String {
    format!(
        "{} of {} tokens used, {} of the usable room left",
        tokens_text(used_tokens),
        tokens_text(window),
        pct_text(usable_left_pct)
    )
}

impl Figures {
    /// [`describe`] for these figures.
    pub fn describe(&self) -> String {
        describe(self.used_tokens, self.window, self.usable_remaining())
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 100.0;
    }
    (part as f64 / whole as f64 * 100.0).clamp(0.0, 100.0)
}

/// The window to assume: the one observed for this session (hook input or
/// statusline bridge), else the configured one, else the one `learned` for
/// the model from other sessions, else 200k; capped by the host's
/// `CLAUDE_CODE_AUTO_COMPACT_WINDOW` when set (the host compacts as if the
/// window were that size); and raised to 1M when the usage seen is larger.
pub fn window(
    observed: Option<u64>,
    configured: u64,
    env: &dyn Env,
    learned: Option<u64>,
    used: u64,
) -> u64 {
    let from_env = || {
        env.var("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&w| w > 0)
    };
    let known = observed
        .filter(|&w| w > 0)
        .or((configured > 0).then_some(configured))
        .or(learned.filter(|&w| w > 0));
    // The host's setting caps the model's window (it compacts as if the
    // window were that size); alone, it is the window.
    let w = match (known, from_env()) {
        (Some(w), Some(cap)) => w.min(cap),
        (Some(w), None) => w,
        (None, Some(cap)) => cap,
        (None, None) => DEFAULT_WINDOW,
    };
    if used > w { w.max(LARGE_WINDOW) } else { w }
}

/// Where autocompact starts for a window, from the host's rules and settings.
///
/// ```
/// use interband::context::autocompact_at;
/// let none = |_: &str| None;
/// assert_eq!(autocompact_at(200_000, &none), 167_000);
/// assert_eq!(autocompact_at(1_000_000, &none), 967_000);
/// // P% of the effective window (the window less the output reserve): 50% of 180k.
/// let pct = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "50".to_string());
/// assert_eq!(autocompact_at(200_000, &pct), 90_000);
/// assert_eq!(autocompact_at(1_000_000, &pct), 490_000);
/// ```
pub fn autocompact_at(window: u64, env: &dyn Env) -> u64 {
    let on = |k: &str| {
        env.var(k)
            .is_some_and(|v| !matches!(v.trim(), "" | "0" | "false"))
    };
    if on("DISABLE_AUTO_COMPACT") {
        return window;
    }
    let effective = window.saturating_sub(OUTPUT_RESERVE.min(window / 4));
    let default = effective.saturating_sub(BUFFER).max(window / 2);
    match env
        .var("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        Some(p) if p > 0.0 && p <= 100.0 => {
            ((effective as f64 * p / 100.0).floor() as u64).min(default)
        }
        _ => default,
    }
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

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn windows_come_from_the_best_source_and_grow_with_usage() {
        let env = |k: &str| (k == "CLAUDE_CODE_AUTO_COMPACT_WINDOW").then(|| "500000".to_owned());
        assert_eq!(window(None, 0, &none, None, 10), 200_000);
        assert_eq!(
            window(None, 0, &env, None, 10),
            500_000,
            "the host's setting alone"
        );
        assert_eq!(window(None, 300_000, &env, None, 10), 300_000);
        assert_eq!(
            window(Some(1_000_000), 300_000, &env, None, 10),
            500_000,
            "capped"
        );
        assert_eq!(window(Some(1_000_000), 300_000, &none, None, 10), 1_000_000);
        assert_eq!(window(None, 0, &none, None, 250_000), 1_000_000);
        let m = Some(1_000_000);
        assert_eq!(
            window(None, 0, &none, m, 10),
            1_000_000,
            "learned for the model"
        );
        assert_eq!(
            window(None, 0, &env, m, 10),
            500_000,
            "capped by the host's setting"
        );
        assert_eq!(
            window(None, 300_000, &none, m, 10),
            300_000,
            "the user's first"
        );
        assert_eq!(
            window(Some(200_000), 0, &none, m, 10),
            200_000,
            "this session's first"
        );
    }

    #[test]
    fn usable_takes_the_reserve_out() {
        let f = Figures {
            used_tokens: 100_000,
            window: 200_000,
            autocompact_at: 167_000,
            source: Source::Transcript,
        };
        assert_eq!(f.used_pct(), 50.0);
        assert!((f.usable_remaining() - 40.12).abs() < 0.01);
        let big = Figures {
            used_tokens: 600_000,
            window: 1_000_000,
            autocompact_at: 967_000,
            source: Source::Statusline,
        };
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

    #[test]
    fn autocompact_can_be_lowered_or_disabled() {
        let off = |k: &str| (k == "DISABLE_AUTO_COMPACT").then(|| "1".to_owned());
        assert_eq!(autocompact_at(200_000, &off), 200_000);
        let high = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "95".to_owned());
        assert_eq!(
            autocompact_at(200_000, &high),
            167_000,
            "an override only lowers it"
        );
        let junk = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "abc".to_owned());
        assert_eq!(autocompact_at(200_000, &junk), 167_000);
        assert!(
            autocompact_at(10_000, &none) >= 5_000,
            "tiny windows keep a sane budget"
        );
    }
}
