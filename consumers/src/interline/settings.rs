//! The `[interline]` settings: the segments, their order, the gauge, the colours.

use super::*;

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
            segments: ["model", "context", "agents", "note", "compact"]
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
