//! Claude Code: its transcript's usage, as Claude Code itself computes it
//! (the rule is [`crate::usage`]'s; this says what each line means).
//!
//! * An assistant line (`"type":"assistant"`, `isSidechain` not `true`, a
//!   `message.usage` object, `message.model` not `"<synthetic>"`) is a
//!   response's usage: `input_tokens + cache_creation_input_tokens +
//!   cache_read_input_tokens` (a missing or non-integer number counts as 0),
//!   under its `message.id`. One response is written as several lines with
//!   one id: the largest counts, never a sum.
//! * A compaction boundary (`"type":"system","subtype":"compact_boundary"`,
//!   not a sidechain's) starts the context over at its
//!   `compactMetadata.postTokens`, or with no figure when it has none (no
//!   real boundary seen so far has it).
//! * A main-thread `user` line (a prompt, a tool's result) comes between
//!   two responses.
//!
//! Every other line says nothing. Only lines containing `"assistant"`,
//! `compact_boundary` or `"user"` are parsed at all.

use serde_json::Value;

use crate::tail::{contains, number};
use crate::usage::Fact;

/// The few fields of a transcript line that matter; serde skips the rest
/// (message content can be large) without building it.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    subtype: Option<Value>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<Value>,
    message: Option<LineMessage>,
    uuid: Option<Value>,
    #[serde(rename = "compactMetadata")]
    compact_metadata: Option<Value>,
}

#[derive(serde::Deserialize)]
struct LineMessage {
    id: Option<Value>,
    model: Option<Value>,
    usage: Option<Value>,
}

/// Claude Code's reader (see the module's documentation).
pub(crate) fn fact(line: &[u8], _offset: u64) -> Option<Fact> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !contains(line, b"\"assistant\"")
        && !contains(line, b"compact_boundary")
        && !contains(line, b"\"user\"")
    {
        return None;
    }
    let l = serde_json::from_slice::<Line>(line).ok()?;
    if l.is_sidechain == Some(Value::Bool(true)) {
        return None;
    }
    match l.kind.as_ref().and_then(Value::as_str) {
        Some("assistant") => {
            let message = l.message?;
            let Some(Value::Object(usage)) = message.usage else {
                return None;
            };
            let model = message.model.as_ref().and_then(Value::as_str);
            if model == Some("<synthetic>") {
                return None;
            }
            let tokens = [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ]
            .iter()
            .fold(0u64, |sum, key| sum.saturating_add(number(&usage, key)));
            Some(Fact::Usage {
                message: message
                    .id
                    .as_ref()
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                tokens,
                model: model.map(str::to_owned),
                window: None,
            })
        }
        Some("user") => Some(Fact::Break),
        Some("system")
            if l.subtype.as_ref().and_then(Value::as_str) == Some("compact_boundary") =>
        {
            Some(Fact::Compaction {
                mark: l
                    .uuid
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or("compact_boundary")
                    .to_owned(),
                tokens: l
                    .compact_metadata
                    .as_ref()
                    .and_then(|meta| meta.get("postTokens"))
                    .and_then(Value::as_u64),
            })
        }
        _ => None,
    }
}
