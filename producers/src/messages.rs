//! What the agent is told: the level, the usable share left, where the number
//! came from, and a suggestion. It informs: where the session stands and what
//! is at stake. It never orders (no "commit": many users keep their agents
//! from committing), and it does not promise a compaction (whether one follows
//! is the compaction trigger's to say, where its strategy runs one).

use interband::payloads::Level;

use crate::config::Warnings;
use crate::context::Figures;
use crate::engine::State;

/// The built-in suggestion for a level.
pub fn next_step(level: Level) -> &'static str {
    match level {
        Level::Green => "No action needed.",
        Level::Yellow => {
            "There is room to finish the current task; a large new one may not fit before the host compacts."
        }
        Level::Orange => {
            "A compaction is near, and what only this context holds may not survive it: work saved the way this project does, at a stable point, will."
        }
        Level::Red => {
            "The context is nearly full and the host compacts soon: new work started now would run into it; work saved the way this project does, at a stable point, survives it."
        }
    }
}

/// The warning for `level`, with real figures when known, else the labelled
/// heuristic; in the user's words when `warnings` has a template for it.
///
/// ```
/// use interband::payloads::Level;
/// use interpulse::context::{Figures, Source};
/// let f = Figures::new(140_000, 200_000, 167_000, Source::Transcript);
/// let none = Default::default();
/// let text = interpulse::messages::warning(Level::Orange, Some(&f), &Default::default(), &none);
/// assert!(text.starts_with("Context ORANGE: 70% used (140k of 200k tokens), 27k to compact (from the transcript)."), "{text}");
/// assert!(!text.contains("commit"));
/// let mine = interpulse::config::Warnings { orange: "{level}: {used}/{window}, {left} left. {next}".into(), ..Default::default() };
/// let text = interpulse::messages::warning(Level::Orange, Some(&f), &Default::default(), &mine);
/// assert!(text.starts_with("ORANGE: 140k/200k, 16% left. A compaction is near"), "{text}");
/// // As everywhere, a share shows by the one rule, half up: 19.94% left shows 20%.
/// let f = Figures::new(133_700, 200_000, 167_000, Source::Transcript);
/// let text = interpulse::messages::warning(Level::Orange, Some(&f), &Default::default(), &mine);
/// assert!(text.starts_with("ORANGE: 134k/200k, 20% left."), "{text}");
/// ```
pub fn warning(level: Level, figures: Option<&Figures>, s: &State, warnings: &Warnings) -> String {
    let name = level.as_str().to_uppercase();
    if let Some(t) = warnings.template(level) {
        let tokens = interband::context::tokens_text;
        let (used, window, left) = match figures {
            Some(f) => (
                tokens(f.used_tokens),
                tokens(f.window),
                interband::context::pct_text(f.usable_remaining()),
            ),
            None => (
                format!("about {} (estimate)", tokens(s.est_tokens as u64)),
                "?".to_owned(),
                "?".to_owned(),
            ),
        };
        return t
            .replace("{level}", &name)
            .replace("{used}", &used)
            .replace("{window}", &window)
            .replace("{left}", &left)
            .replace("{next}", next_step(level));
    }
    let head = match figures {
        Some(f) => format!(
            "Context {name}: {} (from the {}).",
            f.describe(),
            f.source.as_str().replace('_', " ")
        ),
        None => format!(
            "Context {name} (estimate: no usage figure yet): pressure {:.0} over {} tool calls, about {} tokens of tool output.",
            s.pressure,
            s.calls - s.subagent_calls,
            interband::context::tokens_text(s.est_tokens as u64)
        ),
    };
    format!("{head} {}", next_step(level))
}

/// What the agent is told when its window is a guess and the smaller
/// window it may be would put the context at `level` (from that window's
/// yellow on): the tokens used, both windows and what each would mean.
/// Never an order: nothing needs to stop on a guess.
///
/// ```
/// use interband::payloads::Level;
/// use interpulse::context::{Figures, Source, WindowSource};
/// let mut f = Figures::new(160_000, 1_000_000, 967_000, Source::Transcript);
/// f.window_source = Some(WindowSource::Guess);
/// f.window_other = Some(200_000);
/// f.compact_at_other = Some(167_000);
/// assert_eq!(
///     interpulse::messages::unsure(Level::Red, &f),
///     "Context: 160k tokens used, window not known: if it is 200k, 80% used, 7k to compact; \
///      if it is 1M, 16% used, 807k to compact (from the transcript). \
///      Bringing the current step to a stable point soon is safe either way; nothing needs to stop."
/// );
/// ```
pub fn unsure(level: Level, f: &Figures) -> String {
    let advice = if level >= Level::Orange {
        "Bringing the current step to a stable point soon is safe either way; nothing needs to stop."
    } else {
        "Finishing the current task before starting a large new one is safe either way."
    };
    format!(
        "Context: {} (from the {}). {advice}",
        f.describe(),
        f.source.as_str().replace('_', " ")
    )
}

/// The directives block, bounded to `max_bytes` with a visible mark when cut.
pub fn directives(text: &str, max_bytes: usize, at: Option<f64>) -> String {
    let why = match at {
        Some(t) => format!("context passed {t:.0}% used"),
        None => "periodic reminder".to_owned(),
    };
    let mut body = text.trim();
    let mut cut = false;
    if body.len() > max_bytes {
        let mut end = max_bytes;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        body = &body[..end];
        cut = true;
    }
    let mark = if cut {
        "\n[... directives truncated]"
    } else {
        ""
    };
    format!("Project directives, re-injected ({why}):\n{body}{mark}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_names_its_next_step() {
        assert!(next_step(Level::Yellow).contains("room to finish the current task"));
        // Whether a note was saved is said by whoever saved it, when it was.
        assert!(!next_step(Level::Orange).contains("note"));
        for level in [Level::Green, Level::Yellow, Level::Orange, Level::Red] {
            let t = next_step(level).to_lowercase();
            assert!(!t.contains("commit"), "{level:?} orders a commit: {t}");
            assert!(
                !t.contains("compaction follows"),
                "{level:?} promises a compaction: {t}"
            );
        }
        assert!(next_step(Level::Orange).contains("work saved the way this project does"));
        assert!(next_step(Level::Red).contains("nearly full"));
        let s = State {
            pressure: 95.0,
            calls: 80,
            est_tokens: 150_000.0,
            ..Default::default()
        };
        let w = warning(Level::Orange, None, &s, &Default::default());
        assert!(
            w.contains("estimate") && w.contains("pressure 95") && w.contains("150k"),
            "{w}"
        );
    }

    #[test]
    fn directives_are_bounded_on_a_char_boundary() {
        let d = directives(&"é".repeat(100), 11, Some(30.0));
        assert!(d.contains("passed 30% used"));
        assert!(d.ends_with("[... directives truncated]"));
        assert!(d.contains(&"é".repeat(5)) && !d.contains(&"é".repeat(6)));
    }
}
