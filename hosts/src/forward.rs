//! Reading a transcript forward, to re-enact its session: what each line
//! shows happening, in host-neutral terms. Each host's module says it for
//! its own lines ([`crate::Host::happenings`]); a re-enactor turns these into
//! the host's hook events, in order (see `interband replay`).
//!
//! Timing, relative to the line the host writes: a turn's end, a prompt and
//! a compaction come *before* the line that shows them is written (the
//! compaction's hook runs before the host writes its boundary); a tool call,
//! its result, model activity and a turn end a line itself records come with
//! the line.

use serde_json::value::RawValue;

/// What a transcript line shows happening.
#[derive(Debug, Clone)]
pub enum Happening {
    /// The main thread's turn ended before this line (a new prompt, or the
    /// host's own turn-end record written after its end-of-turn hook).
    TurnEnded,
    /// A prompt from the user starts a turn (after the last one ended).
    Prompt,
    /// The model answered on the main thread: a turn is under way.
    Activity,
    /// This line ends the main thread's turn (an answer that asks for no tool).
    EndsTurn,
    /// A tool call.
    ToolCall {
        /// The call's id, when the line has one (its result names it).
        id: Option<String>,
        /// The tool, as the host's hooks name it.
        name: String,
        /// Its input (JSON).
        input: Box<RawValue>,
        /// Made by a subagent, in its own context.
        subagent: bool,
    },
    /// A tool's result.
    ToolResult {
        /// The call it answers.
        id: String,
        /// What the host's hook is given as the tool's response (JSON).
        response: Box<RawValue>,
        /// The tool failed.
        error: bool,
        /// A subagent's.
        subagent: bool,
    },
    /// The host compacted here: its pre-compaction hook ran before this line.
    Compaction {
        /// `manual` or `auto`, when the line says.
        trigger: Option<String>,
        /// Tokens before, when the line says.
        pre_tokens: Option<u64>,
        /// Tokens after, when the line says.
        post_tokens: Option<u64>,
    },
    /// The summary the host writes just after a compaction (the new
    /// context's first line): its start hook runs after it.
    CompactionSummary,
}

/// One line read forward.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// What it says of the context (for the usage rule, [`crate::usage`]).
    pub fact: Option<crate::usage::Fact>,
    /// What it shows happening.
    pub happenings: Vec<Happening>,
    /// Its time, as the line states it (RFC 3339), when it does.
    pub timestamp: Option<String>,
}

impl Seen {
    /// A line of a host whose lines each carry a top-level `timestamp`
    /// (Codex, Gemini): its `fact` and `happenings`, and that time.
    pub(crate) fn stamped(
        line: &[u8],
        fact: Option<crate::usage::Fact>,
        happenings: Vec<Happening>,
    ) -> Seen {
        /// Only a line's time.
        #[derive(serde::Deserialize)]
        struct Stamp {
            timestamp: Option<String>,
        }
        let line = crate::tail::trimmed(line);
        let timestamp = crate::tail::contains(line, b"\"timestamp\"")
            .then(|| serde_json::from_slice::<Stamp>(line).ok())
            .flatten()
            .and_then(|s| s.timestamp);
        Seen {
            fact,
            happenings,
            timestamp,
        }
    }
}

/// JSON for `value` (a string, `null` when it cannot be written).
pub(crate) fn raw(value: &impl serde::Serialize) -> Box<RawValue> {
    serde_json::value::to_raw_value(value)
        .unwrap_or_else(|_| RawValue::from_string("null".into()).expect("valid JSON"))
}

/// A borrowed raw value, owned.
pub(crate) fn own(v: Option<&RawValue>) -> Box<RawValue> {
    v.map_or_else(|| raw(&()), |v| v.to_owned())
}
