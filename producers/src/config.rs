//! The producer's settings, and the one threshold table.

pub use interband::context::{Bounds, Thresholds};
use interband::settings::{Env, Files, Layered, load_from};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Directive re-injection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reinject {
    /// Directive files, relative to the project folder; each must resolve
    /// inside it (no absolute path, no `..`, no link leading out).
    pub files: Vec<String>,
    /// Used-% thresholds at which the directives are injected again, each once per context.
    pub thresholds: Vec<f64>,
    /// Without a usage figure: every this many tool calls (0 = never).
    pub every_calls: u64,
    /// At most this many bytes of directives per injection (at most
    /// [`MAX_DIRECTIVE_BYTES`], whatever a file says).
    pub max_bytes: usize,
}

/// The most directive text read and injected at once: 16 KiB.
pub const MAX_DIRECTIVE_BYTES: usize = 16 << 10;

/// The most directive files read.
pub const MAX_DIRECTIVE_FILES: usize = 8;

impl Reinject {
    /// The bytes of directives per injection, within [`MAX_DIRECTIVE_BYTES`].
    pub fn limit(&self) -> usize {
        self.max_bytes.min(MAX_DIRECTIVE_BYTES)
    }
}

impl Default for Reinject {
    fn default() -> Self {
        Reinject {
            files: vec![".interband/directives.md".into()],
            thresholds: vec![30.0, 52.0, 70.0],
            every_calls: 20,
            max_bytes: 4096,
        }
    }
}

/// Each level's warning in the user's own words (`[interpulse.warnings]`):
/// empty for the built-in text. Named fields are filled in: `{level}`
/// (`ORANGE`), `{used}` (`140k`), `{window}` (`200k`), `{left}` (`16%` of
/// the usable room), `{next}` (the built-in suggestion).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Warnings {
    /// At yellow.
    pub yellow: String,
    /// At orange.
    pub orange: String,
    /// At red.
    pub red: String,
}

impl Warnings {
    /// The user's template for `level`, when they gave one.
    pub fn template(&self, level: interband::payloads::Level) -> Option<&str> {
        use interband::payloads::Level;
        let t = match level {
            Level::Green => return None,
            Level::Yellow => &self.yellow,
            Level::Orange => &self.orange,
            Level::Red => &self.red,
        };
        (!t.trim().is_empty()).then_some(t.as_str())
    }
}

/// The producer's settings (`[interpulse]` in the settings files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// When each level starts.
    pub thresholds: Thresholds,
    /// Tool calls between two warnings at the same level.
    pub debounce_calls: u64,
    /// Seconds between two orange checkpoint requests.
    pub checkpoint_throttle_secs: f64,
    /// Also write the legacy `intercheck/pressure` channel for older statuslines.
    pub legacy_dual_write: bool,
    /// The context window in tokens, where the session's own signals (its
    /// statusline, its transcript) do not say it (0: unset; each host's
    /// order is [`interband_hosts::Profile::window_order`]).
    pub window: u64,
    /// Tools that count as heavy (+1.5 pressure); by default every host's
    /// (Claude Code's `Read`, `Grep`..., Codex's `web_search`, Gemini's `read_file`...).
    pub heavy_tools: Vec<String>,
    /// Directive re-injection.
    pub reinject: Reinject,
    /// Each level's warning in the user's own words.
    pub warnings: Warnings,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            thresholds: Thresholds::default(),
            debounce_calls: 5,
            checkpoint_throttle_secs: 900.0,
            legacy_dual_write: true,
            window: 0,
            // Every host's heavy tools: their names never clash.
            // Every host's, each name once, in the hosts' order.
            heavy_tools: interband_hosts::Host::ALL
                .iter()
                .flat_map(|h| h.profile().heavy_tools)
                .fold(Vec::new(), |mut all, t| {
                    if !all.iter().any(|a| a == t) {
                        all.push((*t).to_owned());
                    }
                    all
                }),
            reinject: Reinject::default(),
            warnings: Warnings::default(),
        }
    }
}

/// Extra environment variables, beyond `INTERBAND_INTERPULSE_*`.
pub const ENV_ALIASES: &[(&str, &str)] =
    &[("INTERBAND_REINJECT_THRESHOLDS", "reinject.thresholds")];

impl Config {
    /// Loads the settings for a project folder from the files (the
    /// project's as far as it is trusted) and the environment. The files'
    /// own problems come first.
    pub fn load(project: Option<&Path>, env: &dyn Env) -> Layered<Config> {
        Self::load_with_problems(&Files::read(project, env), env)
    }

    /// [`Config::load_from`], the files' own problems first: what
    /// [`Config::load`] gives, from files already read.
    pub fn load_with_problems(files: &Files, env: &dyn Env) -> Layered<Config> {
        let mut layered = Self::load_from(files, env);
        let mut problems = files.problems.clone();
        problems.extend(files.notices());
        problems.append(&mut layered.problems);
        layered.problems = problems;
        layered
    }

    /// Loads the settings from files already read, and the environment. A
    /// measure's thresholds out of order (a level that would come before
    /// the one below it) or negative are a problem, and that measure keeps
    /// its defaults.
    pub fn load_from(files: &Files, env: &dyn Env) -> Layered<Config> {
        let mut layered: Layered<Config> = load_from(files, "interpulse", env, ENV_ALIASES);
        // The settings replaced below: their origin says so.
        let mut marks: Vec<(String, String)> = Vec::new();
        let t = &mut layered.value.thresholds;
        let d = Thresholds::default();
        for (name, bounds, default, falls) in [
            ("usable", &mut t.usable, d.usable, true),
            ("pressure", &mut t.pressure, d.pressure, false),
            ("tokens", &mut t.tokens, d.tokens, false),
        ] {
            let b = *bounds;
            let sane = [b.yellow, b.orange, b.red]
                .iter()
                .all(|v| v.is_finite() && *v >= 0.0 && (!falls || *v <= 100.0));
            let ordered = if falls {
                b.yellow >= b.orange && b.orange >= b.red
            } else {
                b.yellow <= b.orange && b.orange <= b.red
            };
            if !(sane && ordered) {
                layered.problems.push(format!(
                    "interpulse.thresholds.{name}: yellow {}, orange {}, red {} must be {} and not negative (percentages for usable); the defaults are used",
                    b.yellow,
                    b.orange,
                    b.red,
                    if falls { "falling (yellow ≥ orange ≥ red)" } else { "rising (yellow ≤ orange ≤ red)" },
                ));
                let given = *bounds;
                *bounds = default;
                for (level, v) in [
                    ("yellow", given.yellow),
                    ("orange", given.orange),
                    ("red", given.red),
                ] {
                    marks.push((
                        format!("interpulse.thresholds.{name}.{level}"),
                        v.to_string(),
                    ));
                }
            }
        }
        let r = &mut layered.value.reinject;
        if r.files.len() > MAX_DIRECTIVE_FILES {
            layered.problems.push(format!(
                "interpulse.reinject.files: {} files, at most {MAX_DIRECTIVE_FILES}; the first {MAX_DIRECTIVE_FILES} are read",
                r.files.len()
            ));
            let given = format!("{} files", r.files.len());
            r.files.truncate(MAX_DIRECTIVE_FILES);
            marks.push(("interpulse.reinject.files".into(), given));
        }
        if r.thresholds.iter().any(|t| !(0.0..=100.0).contains(t)) {
            layered.problems.push(format!(
                "interpulse.reinject.thresholds = {:?}: used-% points, from 0 to 100; the defaults are used",
                r.thresholds
            ));
            let given = format!("{:?}", r.thresholds);
            r.thresholds = Config::default().reinject.thresholds;
            marks.push(("interpulse.reinject.thresholds".into(), given));
        }
        for (key, given) in marks {
            layered.mark_bounded(&key, given);
        }
        layered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interband::payloads::Level;

    #[test]
    fn thresholds_out_of_order_or_negative_are_a_problem_and_keep_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        for bad in [
            "[interpulse.thresholds.usable]\nyellow = 5\norange = 20\nred = 30\n",
            "[interpulse.thresholds.usable]\nyellow = -5\n",
            "[interpulse.thresholds.pressure]\nred = 10\n",
        ] {
            std::fs::write(&file, bad).unwrap();
            let files = Files::read_paths(
                &[(file.clone(), interband::settings::Scope::User)],
                &|_: &str| None,
            );
            let c = Config::load_from(&files, &|_: &str| None);
            assert_eq!(c.value.thresholds, Thresholds::default(), "{bad}");
            assert!(
                c.problems
                    .iter()
                    .any(|p| p.contains("interpulse.thresholds.")),
                "{bad}: {:?}",
                c.problems
            );
        }
        std::fs::write(
            &file,
            "[interpulse.thresholds.usable]\nyellow = 40\norange = 20\nred = 20\n",
        )
        .unwrap();
        let files = Files::read_paths(
            &[(file.clone(), interband::settings::Scope::User)],
            &|_: &str| None,
        );
        let c = Config::load_from(&files, &|_: &str| None);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.value.thresholds.usable.yellow, 40.0);
    }

    #[test]
    fn bounds_are_strict() {
        let t = Thresholds::default();
        assert_eq!(t.usable.below(35.0), Level::Green);
        assert_eq!(t.usable.below(34.9), Level::Yellow);
        assert_eq!(t.usable.below(19.9), Level::Orange);
        assert_eq!(t.usable.below(9.9), Level::Red);
        assert_eq!(t.pressure.above(60.0), Level::Green);
        assert_eq!(t.pressure.above(60.5), Level::Yellow);
        assert_eq!(t.pressure.above(121.0), Level::Red);
        assert_eq!(t.tokens.above(180_001.0), Level::Orange);
    }

    #[test]
    fn env_overrides_thresholds_and_reinject_points() {
        let env = |k: &str| match k {
            "INTERBAND_REINJECT_THRESHOLDS" => Some("25,50".to_owned()),
            "INTERBAND_INTERPULSE_THRESHOLDS_USABLE_RED" => Some("5".to_owned()),
            _ => None,
        };
        let c = Config::load(None, &env);
        assert_eq!(c.value.reinject.thresholds, vec![25.0, 50.0]);
        assert_eq!(c.value.thresholds.usable.red, 5.0);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }
}
