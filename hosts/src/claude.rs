//! Claude Code: its transcript's usage, as Claude Code itself computes it.
//!
//! Scanning backwards, the first line that decides the answer is:
//!
//! * an assistant line: `"type":"assistant"`, `isSidechain` not `true`, a
//!   `message.usage` object and `message.model` not `"<synthetic>"`. The
//!   context is `input_tokens + cache_creation_input_tokens +
//!   cache_read_input_tokens` of that usage (a missing or non-integer number
//!   counts as 0). One response is written as several lines with the same
//!   `message.id` and the same usage; only the last one is taken, never a sum.
//! * a compaction boundary: `"type":"system","subtype":"compact_boundary"`
//!   (`isSidechain` not `true`). It comes after every assistant line of the
//!   context it replaced, so the context is its `compactMetadata.postTokens`.
//!   A boundary without an integer `postTokens` still ends the scan, with no
//!   figure: the assistant lines before it describe a context that is gone.
//!
//! Every other line is skipped. Only lines containing `"assistant"` or
//! `compact_boundary` are parsed at all.

use serde_json::Value;

use crate::tail::{Tail, TailUsage, UsageKind, contains, number};

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
    model: Option<Value>,
    usage: Option<Value>,
}

/// Claude Code's reader (see the module's documentation).
pub(crate) fn judge(line: &[u8], offset: u64, tail: &mut Tail) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !contains(line, b"\"assistant\"") && !contains(line, b"compact_boundary") {
        return false;
    }
    let Ok(l) = serde_json::from_slice::<Line>(line) else {
        return false;
    };
    if l.is_sidechain == Some(Value::Bool(true)) {
        return false;
    }
    match l.kind.as_ref().and_then(Value::as_str) {
        Some("assistant") => {
            let Some(message) = l.message else {
                return false;
            };
            let Some(Value::Object(usage)) = message.usage else {
                return false;
            };
            let model = message.model.as_ref().and_then(Value::as_str);
            if model == Some("<synthetic>") {
                return false;
            }
            let used_tokens = [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ]
            .iter()
            .fold(0u64, |sum, key| sum.saturating_add(number(&usage, key)));
            tail.usage = Some(TailUsage {
                used_tokens,
                kind: UsageKind::Assistant,
                model: model.map(str::to_owned),
                window: None,
                offset,
            });
            true
        }
        Some("system")
            if l.subtype.as_ref().and_then(Value::as_str) == Some("compact_boundary") =>
        {
            tail.latest_boundary = l.uuid.as_ref().and_then(Value::as_str).map(str::to_owned);
            tail.usage = l
                .compact_metadata
                .as_ref()
                .and_then(|meta| meta.get("postTokens"))
                .and_then(Value::as_u64)
                .map(|used_tokens| TailUsage {
                    used_tokens,
                    kind: UsageKind::CompactBoundary,
                    model: None,
                    window: None,
                    offset,
                });
            true
        }
        _ => false,
    }
}
