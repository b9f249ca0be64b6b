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
    },
    /// A line between two responses (a prompt; not a tool's result): what
    /// follows is another response.
    Break,
    /// The model in use from here on (Codex's `turn_context`).
    Model(String),
    /// A compaction: the context starts over.
    Compaction {
        /// Names this compaction (a line's uuid, or where it is).
        mark: String,
        /// The new context's tokens, when the compaction says.
        tokens: Option<u64>,
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
/// let usage = |m: &str, t| Fact::Usage { message: Some(m.into()), tokens: t, model: None, window: None };
/// let mut r = Reading::default();
/// r.apply(usage("a", 108_000), 10);
/// r.apply(usage("a", 111), 20);
/// assert_eq!(r.used(), Some(108_000), "one response: its largest line");
/// r.apply(Fact::Break, 30);
/// r.apply(usage("b", 90_000), 40);
/// assert_eq!(r.used(), Some(90_000), "the next response replaces it");
/// r.apply(Fact::Compaction { mark: "c".into(), tokens: None }, 50);
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
                    offset,
                });
            }
            Fact::Break => self.message = None,
            Fact::Model(m) => {
                self.model = Some(m);
                if let Some(u) = &mut self.usage {
                    u.model.clone_from(&self.model);
                }
            }
            Fact::Compaction { mark, tokens } => {
                let (model, window) = (self.model.take(), self.window);
                *self = Reading {
                    // The compaction's own figure states nothing else.
                    usage: tokens.map(|used_tokens| TailUsage {
                        used_tokens,
                        kind: UsageKind::CompactBoundary,
                        model: None,
                        window: None,
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
