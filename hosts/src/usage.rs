//! The usage rule, in one place, for every host and both directions.
//!
//! Each host's reader says what one transcript line means for the context
//! (a [`Fact`]); a [`Reading`] folds facts in file order into the current
//! figure. The replay feeds it every line forward; the hook's tail reader
//! ([`crate::tail`]) collects facts backwards from the end only until the
//! older ones can no longer change the fold ([`Backward`]), then folds those
//! forward with the same [`Reading`]. So both see the same figure by
//! construction.
//!
//! The rule:
//!
//! * A model response's usage sets the figure. One response may be written
//!   as several lines with one message id, each with a usage (some backends
//!   put the whole prompt on the first line and a tiny figure on the last):
//!   the figure is the largest of that response's lines, never their sum.
//!   A response ends at another response's line, or at a prompt
//!   ([`Fact::Break`]); not at a tool's result, which can be written between
//!   the lines of the response that called the tool.
//! * A compaction starts the context over: at the figure the compaction
//!   states (Claude Code's `postTokens`), else with no figure until the next
//!   response's usage.
//! * The window and the model are the latest stated, before a compaction
//!   too: a compaction changes neither (Codex states its window again only
//!   after the next response). A host that states them on every response's
//!   line (Claude Code, Gemini) is read from the end only back to the
//!   compaction.

/// A token count as a host wrote it: a non-negative integer, a float (the
/// number it says, rounded: `1.8e5`, `150000.7`) or a string of either
/// (`"180000"`); `None` for anything else (negative, not finite, text,
/// `true`, an object), so that the line is skipped and the last good figure
/// kept, never read as 0.
///
/// ```
/// use interband_hosts::usage::count;
/// use serde_json::json;
/// assert_eq!(count(&json!(180000)), Some(180_000));
/// assert_eq!(count(&json!(1.8e5)), Some(180_000));
/// assert_eq!(count(&json!(150000.7)), Some(150_001));
/// assert_eq!(count(&json!(" 180000 ")), Some(180_000));
/// assert_eq!(count(&json!("1.5e5")), Some(150_000));
/// for bad in [json!(-1), json!("lots"), json!(""), json!(true), json!(null), json!({"n": 1}), json!("NaN")] {
///     assert_eq!(count(&bad), None, "{bad}");
/// }
/// ```
pub fn count(v: &serde_json::Value) -> Option<u64> {
    use serde_json::Value;
    let float = match v {
        Value::Number(n) => match n.as_u64() {
            Some(u) => return Some(u),
            None => n.as_f64()?,
        },
        Value::String(s) => {
            let s = s.trim();
            if let Ok(u) = s.parse::<u64>() {
                return Some(u);
            }
            s.parse::<f64>().ok()?
        }
        _ => return None,
    };
    // Past 2^53 a float is no token count anyone meant; u64::MAX as f64
    // rounds up, so the bound is strict.
    (float.is_finite() && float >= 0.0 && float < u64::MAX as f64).then(|| float.round() as u64)
}

/// A usage object's count for `key`: absent (or `null`) is 0, a count is
/// its number ([`count`]), anything else makes the whole usage unreadable
/// (`None`): the line is skipped rather than read low.
pub fn field(usage: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<u64> {
    match usage.get(key) {
        None | Some(serde_json::Value::Null) => Some(0),
        Some(v) => count(v),
    }
}

/// What one transcript line says about the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// A model response's usage.
    Usage {
        /// The response's message id, when the line has one: lines of one
        /// response share it.
        message: Option<String>,
        /// Tokens in context after the response.
        tokens: u64,
        /// The model, when the line says.
        model: Option<String>,
        /// The window, when the line says (Codex's `model_context_window`).
        window: Option<u64>,
        /// The host's release that wrote the line, when it says (Claude
        /// Code's `version`): its model table is that release's.
        version: Option<String>,
    },
    /// A line between two responses (a prompt; not a tool's result): what
    /// follows is another response.
    Break,
    /// The model in use from here on (Codex's `turn_context`).
    Model(String),
    /// The host's own estimate of the context a compaction left (Codex
    /// writes one, with no input and no output, just after it): the figure
    /// only right after a compaction, before any response; anywhere else
    /// nothing (the same shape has carried the session's running total).
    Estimate {
        /// The estimated tokens, at most the window the line states.
        tokens: u64,
        /// The window the line states.
        window: u64,
    },
    /// A compaction: the context starts over.
    Compaction {
        /// Names this compaction (a line's uuid, or where it is).
        mark: String,
        /// The new context's tokens, when the compaction says.
        tokens: Option<u64>,
        /// The context's tokens before it, as the host counted them
        /// (Claude Code's `preTokens`: an estimate), when it says.
        before: Option<u64>,
        /// Whether the host compacted on its own (`Some(true)`) or was
        /// asked to (`Some(false)`), when it says.
        automatic: Option<bool>,
        /// The window the host compacted for, when it says (Copilot's
        /// `tokenLimit`).
        window: Option<u64>,
    },
}

/// A host's reader: what a line (without its `\n`) says, if anything.
pub type LineReader = fn(&[u8], u64) -> Option<Fact>;

/// Where a context figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKind {
    /// The usage of the last model response.
    Assistant,
    /// A compaction's own figure (Claude Code's `postTokens`), later than
    /// any response.
    CompactBoundary,
}

/// The context's figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailUsage {
    /// Tokens in context now.
    pub used_tokens: u64,
    /// From a response's usage, or a compaction's own figure.
    pub kind: UsageKind,
    /// The model, when known.
    pub model: Option<String>,
    /// The window the transcript says the model has, when it says (Codex's
    /// `model_context_window`, Gemini's model limit), tokens.
    pub window: Option<u64>,
    /// The host's release that wrote the figure's line, when it says.
    pub version: Option<String>,
    /// Byte offset just past the line the figure came from (the response's
    /// last line): where the next line starts, or the file's length for a
    /// last line without its `\n`. Used to judge whether another observation
    /// saw the transcript as far.
    pub offset: u64,
}

/// The fold: the context as the lines read so far show it.
///
/// ```
/// use interband_hosts::usage::{Fact, Reading};
/// let usage = |m: &str, t| Fact::Usage { message: Some(m.into()), tokens: t, model: None, window: None, version: None };
/// let mut r = Reading::default();
/// r.apply(usage("a", 108_000), 10);
/// r.apply(usage("a", 111), 20);
/// assert_eq!(r.used(), Some(108_000), "one response: its largest line");
/// r.apply(Fact::Break, 30);
/// r.apply(usage("b", 90_000), 40);
/// assert_eq!(r.used(), Some(90_000), "the next response replaces it");
/// r.apply(Fact::Compaction { mark: "c".into(), tokens: None, before: None, automatic: None, window: None }, 50);
/// assert_eq!(r.used(), None, "a compaction without a figure: unknown");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    /// The figure, when one is known in this context.
    pub usage: Option<TailUsage>,
    /// The mark of the latest compaction, while no response came after it.
    pub latest_boundary: Option<String>,
    /// The response the figure belongs to, while its lines may go on.
    message: Option<String>,
    model: Option<String>,
    window: Option<u64>,
}

impl Reading {
    /// Applies one line's fact; `offset` is just past that line.
    pub fn apply(&mut self, fact: Fact, offset: u64) {
        match fact {
            Fact::Usage {
                message,
                tokens,
                model,
                window,
                version,
            } => {
                let same = message.is_some() && message == self.message;
                let tokens = match &self.usage {
                    Some(u) if same && u.kind == UsageKind::Assistant => u.used_tokens.max(tokens),
                    _ => tokens,
                };
                if model.is_some() {
                    self.model = model;
                }
                if window.is_some() {
                    self.window = window;
                }
                self.message = message;
                self.latest_boundary = None;
                self.usage = Some(TailUsage {
                    used_tokens: tokens,
                    kind: UsageKind::Assistant,
                    model: self.model.clone(),
                    window: self.window,
                    version,
                    offset,
                });
            }
            Fact::Estimate { tokens, window } => {
                if self.usage.is_none() && self.latest_boundary.is_some() {
                    self.window = Some(window);
                    self.usage = Some(TailUsage {
                        used_tokens: tokens,
                        kind: UsageKind::CompactBoundary,
                        model: self.model.clone(),
                        window: self.window,
                        version: None,
                        offset,
                    });
                }
            }
            Fact::Break => self.message = None,
            Fact::Model(m) => {
                self.model = Some(m);
                if let Some(u) = &mut self.usage {
                    u.model.clone_from(&self.model);
                }
            }
            Fact::Compaction {
                mark,
                tokens,
                window: stated,
                ..
            } => {
                let (model, window) = (self.model.take(), stated.or(self.window));
                *self = Reading {
                    // The compaction's own figure states nothing else.
                    usage: tokens.map(|used_tokens| TailUsage {
                        used_tokens,
                        kind: UsageKind::CompactBoundary,
                        model: None,
                        window: None,
                        version: None,
                        offset,
                    }),
                    latest_boundary: Some(mark),
                    message: None,
                    model,
                    window,
                };
            }
        }
    }

    /// Tokens in context, when known.
    pub fn used(&self) -> Option<u64> {
        self.usage.as_ref().map(|u| u.used_tokens)
    }
}

/// Collects facts going backwards from the end until older lines can no
/// longer change the [`Reading`] of the whole file, then folds them.
#[derive(Debug)]
pub struct Backward {
    /// Newest first.
    facts: Vec<(Fact, u64)>,
    /// Whether this host states the window and the model on lines of their
    /// own (then they are looked for).
    wants_window: bool,
    /// The newest response's message id, once found (`Some(None)`: it has none).
    newest: Option<Option<String>>,
    /// The newest response can have no more lines: older ones are another's.
    closed: bool,
    window: bool,
    model: bool,
}

impl Backward {
    /// A collector; `wants_window` when the host states the window and the
    /// model on lines of their own (Codex).
    pub fn new(wants_window: bool) -> Self {
        Backward {
            facts: Vec::new(),
            wants_window,
            newest: None,
            closed: false,
            window: false,
            model: false,
        }
    }

    /// Takes the fact of the line ending at `offset`, going backwards.
    /// Returns true once the answer is decided.
    pub fn take(&mut self, fact: Fact, offset: u64) -> bool {
        if let Fact::Usage {
            message, window, ..
        } = &fact
        {
            match &self.newest {
                None => {
                    self.newest = Some(message.clone());
                    self.closed = message.is_none();
                }
                Some(newest) if !self.closed && (message.is_none() || message != newest) => {
                    self.closed = true;
                }
                _ => {}
            }
            self.window |= window.is_some();
        }
        match &fact {
            Fact::Break if self.newest.is_some() => self.closed = true,
            Fact::Model(_) => self.model = true,
            Fact::Estimate { .. } => self.window = true,
            _ => {}
        }
        // Older lines can change only the window and the model, which a
        // compaction keeps: past one, look on only for those.
        let barrier = matches!(fact, Fact::Compaction { .. });
        self.facts.push((fact, offset));
        let stated = !self.wants_window || (self.window && self.model);
        stated && (barrier || self.closed)
    }

    /// The figure from the facts collected, folded in file order.
    pub fn reading(self) -> Reading {
        let mut r = Reading::default();
        for (fact, offset) in self.facts.into_iter().rev() {
            r.apply(fact, offset);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use crate::Host;
    use serde_json::{Value, json};

    /// The figure each host's reader finds after a good response of 100k
    /// then one whose input is written as `input` (Claude's `input_tokens`,
    /// Codex's `input_tokens`, Gemini's `tokens.input`), both ways.
    fn after(host: Host, input: &Value) -> (Option<u64>, Option<u64>) {
        let lines = match host {
            Host::Claude => [100_000.into(), input.clone()].map(|n: Value| {
                json!({"type": "assistant", "requestId": format!("r{n}"), "message": {"id": format!("m{n}"),
                    "model": "claude-sonnet-4-5", "usage": {"input_tokens": n, "output_tokens": 10}}})
            }),
            Host::Codex => [100_000.into(), input.clone()].map(|n: Value| {
                json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
                    "last_token_usage": {"input_tokens": n, "output_tokens": 1}, "model_context_window": 258_400}}})
            }),
            Host::Gemini => [100_000.into(), input.clone()].map(|n: Value| {
                json!({"id": format!("g{n}"), "type": "gemini", "model": "gemini-2.5-flash",
                    "tokens": {"input": n, "output": 1}})
            }),
            Host::Copilot => [100_000.into(), input.clone()].map(|n: Value| {
                json!({"type": "session.usage_record", "id": format!("u{n}"), "data": {"usage": {
                    "model": "gpt-4.1", "inputTokens": n, "interactionType": "conversation-agent"}}})
            }),
            Host::Qwen => [100_000.into(), input.clone()].map(|n: Value| {
                json!({"uuid": format!("q{n}"), "type": "assistant", "model": "qwen3-coder-plus",
                    "usageMetadata": {"promptTokenCount": n, "candidatesTokenCount": 1}})
            }),
        };
        let bytes: Vec<u8> = lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        let extra = u64::from(host == Host::Codex);
        let back = crate::tail::tail_of(&bytes, host)
            .usage
            .map(|u| u.used_tokens - extra);
        let forward = host
            .read_forward(&bytes)
            .usage
            .map(|u| u.used_tokens - extra);
        (back, forward)
    }

    #[test]
    fn every_reader_reads_a_count_as_the_number_it_says_and_skips_the_rest() {
        for host in Host::ALL {
            for (written, read) in [
                (json!(180_000), 180_000),
                (json!(1.8e5), 180_000),
                (json!(150_000.7), 150_001),
                (json!("180000"), 180_000),
                (json!(" 1.8e5 "), 180_000),
            ] {
                assert_eq!(
                    after(host, &written),
                    (Some(read), Some(read)),
                    "{host:?} {written}"
                );
            }
            for junk in [
                json!("lots"),
                json!(-3),
                json!(true),
                json!({"n": 1}),
                json!([1]),
                json!(""),
            ] {
                assert_eq!(
                    after(host, &junk),
                    (Some(100_000), Some(100_000)),
                    "{host:?} {junk}: the last good figure"
                );
            }
        }
    }

    #[test]
    fn a_claude_usage_that_states_no_context_count_is_no_figure() {
        let bytes = [
            json!({"type": "assistant", "message": {"id": "a", "model": "m", "usage": {"input_tokens": 90_000}}}),
            json!({"type": "assistant", "message": {"id": "b", "model": "m", "usage": {"output_tokens": 4}}}),
        ]
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect::<Vec<u8>>();
        assert_eq!(
            crate::tail::tail_of(&bytes, Host::Claude)
                .usage
                .unwrap()
                .used_tokens,
            90_000
        );
    }
}
