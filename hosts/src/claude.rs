//! Claude Code: its transcript's usage, as Claude Code itself computes it
//! (the rule is [`crate::usage`]'s; this says what each line means).
//!
//! * An assistant line (`"type":"assistant"`, `isSidechain` not `true`, a
//!   `message.usage` object, `message.model` not `"<synthetic>"`) is a
//!   response's usage: `input_tokens + cache_creation_input_tokens +
//!   cache_read_input_tokens` (a missing or `null` one counts as 0, a float
//!   or a numeric string as the number it says; any other value makes the
//!   line say nothing, so the last good figure stands),
//!   under its `message.id` and `requestId`. One response is written as
//!   several lines with one id: the largest counts, never a sum. (Some
//!   backends give every response the same message id; each API request
//!   still has its own id.)
//! * A compaction boundary (`"type":"system","subtype":"compact_boundary"`,
//!   not a sidechain's) starts the context over at its
//!   `compactMetadata.postTokens`, or with no figure when it has none (no
//!   real boundary seen so far has it).
//! * Any other line naming `"user"` that is a prompt (not a sidechain's,
//!   not a tool's result) comes between two responses. A tool's result does
//!   not: one response's calls can be run, and their results written,
//!   between that response's lines.
//!
//! Every other line says nothing. Only lines naming `"assistant"` or
//! `compact_boundary` are parsed at all: a tool's result of megabytes is
//! only searched.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::forward::{Happening, Seen, own};
use crate::tail::contains;
use crate::usage::Fact;
use crate::usage::{count, field};

/// A line's fields that matter, for both directions; serde skips the rest,
/// and the message's content and the tool's result (they can be large) are
/// only delimited, not built.
#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: Option<Value>,
    subtype: Option<Value>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<Value>,
    #[serde(rename = "isMeta")]
    meta: Option<Value>,
    #[serde(rename = "isCompactSummary")]
    compact_summary: Option<Value>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    uuid: Option<Value>,
    #[serde(rename = "requestId")]
    request_id: Option<Value>,
    timestamp: Option<Value>,
    #[serde(rename = "compactMetadata")]
    compact_metadata: Option<Value>,
    #[serde(rename = "toolUseResult", borrow)]
    tool_use_result: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct Message<'a> {
    id: Option<Value>,
    model: Option<Value>,
    usage: Option<Value>,
    stop_reason: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

fn str_of(v: &Option<Value>) -> Option<&str> {
    v.as_ref().and_then(Value::as_str)
}

/// Claude Code's reader (see the module's documentation). A line that
/// names neither `"assistant"` nor `compact_boundary` is never parsed: it is
/// a break between responses when it is a prompt (see [`prompt`]), whatever
/// its size.
pub(crate) fn fact(line: &[u8], _offset: u64) -> Option<Fact> {
    // A tool's result runs to tens of kilobytes and the tail reader passes
    // over it at every call: a SIMD search per name (GB/s on text) beats
    // one multi-name automaton, whose prefilter stumbles on text's many
    // candidate bytes (measured 4-5x slower on code and prose).
    let line = crate::tail::trimmed(line);
    if contains(line, b"\"assistant\"") || contains(line, b"compact_boundary") {
        return fact_of(&serde_json::from_slice::<Line>(line).ok()?, line);
    }
    prompt(line).then_some(Fact::Break)
}

/// Whether a line naming `"user"` (its bytes, with nothing parsed) is the
/// main thread's prompt: not a sidechain's, and no tool's result (a
/// `tool_use_id` key; in a prompt's text those quotes are escaped). A tool's
/// result does not end a response: the calls of one response can be run,
/// and their results written, between the response's own lines.
fn prompt(line: &[u8]) -> bool {
    contains(line, b"\"user\"")
        && !contains(line, b"\"isSidechain\":true")
        && !contains(line, b"\"tool_use_id\"")
}

/// What a parsed line (`line`, its bytes) says of the context.
fn fact_of(l: &Line, line: &[u8]) -> Option<Fact> {
    if l.sidechain == Some(Value::Bool(true)) {
        return None;
    }
    match str_of(&l.kind) {
        Some("assistant") => {
            let message = l.message.as_ref()?;
            let Some(Value::Object(usage)) = &message.usage else {
                return None;
            };
            let model = str_of(&message.model);
            if model == Some("<synthetic>") {
                return None;
            }
            const CONTEXT: [&str; 3] = [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ];
            // A usage that states none of them is no figure (0 is not one).
            if CONTEXT
                .iter()
                .all(|k| usage.get(*k).is_none_or(Value::is_null))
            {
                return None;
            }
            let tokens = CONTEXT.iter().try_fold(0u64, |sum, key| {
                Some(sum.saturating_add(field(usage, key)?))
            })?;
            // One response's lines share its message id and the API
            // request's id; a backend that gives every response the same
            // message id still gives each its own request.
            let key = match (str_of(&message.id), str_of(&l.request_id)) {
                (Some(id), Some(request)) => Some(format!("{id} {request}")),
                (id, _) => id.map(str::to_owned),
            };
            Some(Fact::Usage {
                message: key,
                tokens,
                model: model.map(str::to_owned),
                window: None,
            })
        }
        Some("user") => prompt(line).then_some(Fact::Break),
        Some("system") if str_of(&l.subtype) == Some("compact_boundary") => {
            Some(Fact::Compaction {
                mark: str_of(&l.uuid).unwrap_or("compact_boundary").to_owned(),
                tokens: l
                    .compact_metadata
                    .as_ref()
                    .and_then(|meta| meta.get("postTokens"))
                    .and_then(count),
            })
        }
        _ => None,
    }
}

/// A line read forward: its fact, what happens, its time (one parse).
pub(crate) fn forward(line: &[u8], offset: u64) -> Seen {
    let line = crate::tail::trimmed(line);
    // The same reading as from the end, by construction, even of a line
    // that does not parse.
    let fact = fact(line, offset);
    let Ok(l) = serde_json::from_slice::<Line>(line) else {
        return Seen {
            fact,
            ..Seen::default()
        };
    };
    Seen {
        fact,
        happenings: happenings_of(&l),
        timestamp: str_of(&l.timestamp).map(str::to_owned),
    }
}

#[derive(serde::Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    name: Option<Value>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    tool_use_id: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    is_error: Option<Value>,
}

/// Claude Code's lines, forward (see [`crate::forward`]):
///
/// * an assistant line (not `<synthetic>`, an error the client wrote) is
///   model activity; each `tool_use` block is a call (a sidechain's is a
///   subagent's); a `stop_reason` other than `null`, `tool_use` or
///   `pause_turn` on a line with no call ends the turn (versions 1.0.x,
///   2.0.76 and 2.1.29–2.1.34 write `null` on every line);
/// * a user line's `tool_result` blocks are results (the line's
///   `toolUseResult` is what the hook gets); a main-thread user line with
///   text, not meta, is a prompt, and ends the turn before it; the one with
///   `isCompactSummary` is a compaction's summary;
/// * `system` lines: `compact_boundary` (a compaction), `stop_hook_summary`
///   and `turn_duration` (written after a turn's end).
fn happenings_of(l: &Line) -> Vec<Happening> {
    let side = l.sidechain == Some(Value::Bool(true));
    let mut out = Vec::new();
    match str_of(&l.kind) {
        Some("assistant") => {
            let Some(m) = &l.message else { return out };
            if str_of(&m.model) == Some("<synthetic>") {
                return out;
            }
            if !side {
                out.push(Happening::Activity);
            }
            let blocks: Vec<Block> = m
                .content
                .filter(|c| c.get().starts_with('['))
                .and_then(|c| serde_json::from_str(c.get()).ok())
                .unwrap_or_default();
            for b in &blocks {
                if str_of(&b.kind) == Some("tool_use") {
                    out.push(Happening::ToolCall {
                        id: str_of(&b.id).map(str::to_owned),
                        name: str_of(&b.name).unwrap_or("?").to_owned(),
                        input: own(b.input),
                        subagent: side,
                    });
                }
            }
            let stop = str_of(&m.stop_reason);
            let calls = out.iter().any(|h| matches!(h, Happening::ToolCall { .. }));
            if !side && !calls && stop.is_some_and(|s| s != "tool_use" && s != "pause_turn") {
                out.push(Happening::EndsTurn);
            }
        }
        Some("user") => {
            if l.compact_summary == Some(Value::Bool(true)) {
                out.push(Happening::CompactionSummary);
                return out;
            }
            let Some(m) = &l.message else { return out };
            let content = m.content.map(RawValue::get).unwrap_or("");
            if content.starts_with('"') {
                if !side && l.meta != Some(Value::Bool(true)) {
                    out.extend([Happening::TurnEnded, Happening::Prompt]);
                }
                return out;
            }
            let blocks: Vec<Block> = serde_json::from_str(content).unwrap_or_default();
            let results: Vec<&Block> = blocks
                .iter()
                .filter(|b| str_of(&b.kind) == Some("tool_result"))
                .collect();
            for b in &results {
                let Some(id) = str_of(&b.tool_use_id) else {
                    continue;
                };
                // The hook is given the tool's own output object when the
                // line has it for its only result.
                let response = match (results.len(), l.tool_use_result) {
                    (1, Some(r)) => r.to_owned(),
                    _ => own(b.content),
                };
                out.push(Happening::ToolResult {
                    id: id.to_owned(),
                    response,
                    error: b.is_error == Some(Value::Bool(true)),
                    subagent: side,
                });
            }
            let text = blocks.iter().any(|b| str_of(&b.kind) == Some("text"));
            if results.is_empty() && text && !side && l.meta != Some(Value::Bool(true)) {
                out.extend([Happening::TurnEnded, Happening::Prompt]);
            }
        }
        Some("system") if !side => match str_of(&l.subtype) {
            Some("compact_boundary") => {
                let get = |k: &str| l.compact_metadata.as_ref().and_then(|m| m.get(k));
                out.push(Happening::Compaction {
                    trigger: get("trigger").and_then(Value::as_str).map(str::to_owned),
                    pre_tokens: get("preTokens").and_then(Value::as_u64),
                    post_tokens: get("postTokens").and_then(Value::as_u64),
                });
            }
            Some("stop_hook_summary" | "turn_duration") => out.push(Happening::TurnEnded),
            _ => {}
        },
        _ => {}
    }
    out
}
