//! Gemini CLI: its chat recording, its token limit and where it compresses.
//!
//! The transcript is `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`
//! (JSONL since 0.39). A model reply is a record `"type":"gemini"` with
//! `model` and `tokens: {input, output, cached, thoughts, tool, total}`;
//! `tokens.input` is the API's `promptTokenCount` (cached tokens included),
//! the figure Gemini itself compares with its limit. The same message id is
//! appended again when its tool calls are added, with the same tokens:
//! scanning backwards, the first `gemini` record with a `tokens.input` decides.
//! `$set` lines only update metadata.
//!
//! Gemini compresses the history when the last prompt reaches
//! `compressionThreshold` × the model's token limit (0.5 by default;
//! `model.compressionThreshold` in `~/.gemini/settings.json`, then the
//! project's `.gemini/settings.json`). A compression rewrites the recording's
//! whole message list (`{"$set":{"messages":[...]}}`): scanning backwards,
//! such a line before any newer reply ends the scan with no figure (the
//! context it replaced is gone), and the next reply's figure is the new one.

use std::path::Path;

use serde_json::Value;

use crate::tail::{Tail, TailUsage, UsageKind, contains};

/// The token limit of current Gemini models: 1,048,576.
pub const DEFAULT_LIMIT: u64 = 1_048_576;

/// The share of the limit at which Gemini compresses, by default.
pub const DEFAULT_THRESHOLD: f64 = 0.5;

#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    model: Option<Value>,
    tokens: Option<Value>,
}

/// Only whether a `$set` line replaces the message list.
#[derive(serde::Deserialize)]
struct SetLine {
    #[serde(rename = "$set")]
    set: Option<SetMessages>,
}

#[derive(serde::Deserialize)]
struct SetMessages {
    messages: Option<serde::de::IgnoredAny>,
}

/// Gemini CLI's reader (see the module's documentation).
pub(crate) fn judge(line: &[u8], offset: u64, tail: &mut Tail) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.starts_with(b"{\"$set\"") && contains(line, b"\"messages\"") {
        let rewritten = serde_json::from_slice::<SetLine>(line)
            .is_ok_and(|l| l.set.is_some_and(|s| s.messages.is_some()));
        if rewritten {
            // A compression (or a session's first history): no figure yet.
            tail.latest_boundary = Some(format!("messages@{offset}"));
            return true;
        }
        return false;
    }
    if !contains(line, b"\"gemini\"") {
        return false;
    }
    let Ok(l) = serde_json::from_slice::<Line>(line) else {
        return false;
    };
    if l.kind.as_ref().and_then(Value::as_str) != Some("gemini") {
        return false;
    }
    let Some(input) = l.tokens.as_ref().and_then(|t| t.get("input")?.as_u64()) else {
        return false;
    };
    let model = l.model.as_ref().and_then(Value::as_str).map(str::to_owned);
    tail.usage = Some(TailUsage {
        used_tokens: input,
        kind: UsageKind::Assistant,
        window: model.as_deref().map(limit),
        model,
        offset,
    });
    true
}

/// The token limit of a model, as Gemini CLI counts it.
///
/// ```
/// assert_eq!(interband_hosts::gemini::limit("gemini-2.5-flash"), 1_048_576);
/// assert_eq!(interband_hosts::gemini::limit("gemma-4-31b-it"), 256_000);
/// ```
pub fn limit(model: &str) -> u64 {
    if model.starts_with("gemma-4") {
        256_000
    } else {
        DEFAULT_LIMIT
    }
}

/// `model.compressionThreshold` from Gemini's settings: the project's
/// `.gemini/settings.json` over the user's `~/.gemini/settings.json`, else
/// [`DEFAULT_THRESHOLD`]. Files are read bounded and without blocking; a
/// value outside (0, 1] is ignored.
pub fn compression_threshold(home: Option<&Path>, project: Option<&Path>) -> f64 {
    let read = |dir: &Path| -> Option<f64> {
        let bytes =
            interband::fsio::read_regular(&dir.join(".gemini/settings.json"), 1 << 20).ok()?;
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        v["model"]["compressionThreshold"]
            .as_f64()
            .filter(|t| *t > 0.0 && *t <= 1.0)
    };
    project
        .and_then(read)
        .or_else(|| home.and_then(read))
        .unwrap_or(DEFAULT_THRESHOLD)
}

/// Where Gemini compresses a window of `limit` tokens: `threshold × limit`.
pub fn compression_point(limit: u64, threshold: f64) -> u64 {
    (limit as f64 * threshold).floor() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;
    use crate::tail::tail_of;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/gemini-cli-0.61.0/transcript.session.jsonl"
    );

    #[test]
    fn the_real_chat_file_gives_its_last_reply_tokens_and_model() {
        let tail = tail_of(&std::fs::read(FIXTURE).unwrap(), Host::Gemini);
        let u = tail.usage.unwrap();
        assert_eq!(u.used_tokens, 190_000);
        assert_eq!(u.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(u.window, Some(DEFAULT_LIMIT));
    }

    #[test]
    fn user_lines_metadata_and_torn_lines_decide_nothing() {
        let bytes = concat!(
            r#"{"id":"a","type":"gemini","tokens":{"input":1000,"output":5},"model":"gemini-2.5-pro"}"#,
            "\n",
            r#"{"$set":{"lastUpdated":"x"}}"#,
            "\n",
            r#"{"id":"u","type":"user","content":[{"text":"gemini \"gemini\""}]}"#,
            "\n",
            r#"{"id":"b","type":"gemini","tokens":{"inp"#
        );
        let u = tail_of(bytes.as_bytes(), Host::Gemini).usage.unwrap();
        assert_eq!(
            (u.used_tokens, u.model.as_deref()),
            (1000, Some("gemini-2.5-pro"))
        );
    }

    #[test]
    fn a_rewritten_message_list_is_a_compression() {
        let reply = |input: u64| {
            format!(
                r#"{{"id":"a","type":"gemini","tokens":{{"input":{input}}},"model":"gemini-2.5-flash"}}"#
            )
        };
        let set = r#"{"$set":{"messages":[{"id":"s","type":"user","content":[{"text":"<state_snapshot>"}]}]}}"#;
        let meta = r#"{"$set":{"lastUpdated":"x"}}"#;
        let bytes = format!("{}\n{set}\n{meta}\n", reply(600_000));
        let tail = tail_of(bytes.as_bytes(), Host::Gemini);
        assert_eq!(tail.usage, None);
        assert!(tail.latest_boundary.is_some());
        let bytes = format!("{}\n{set}\n{}\n", reply(600_000), reply(9_000));
        assert_eq!(
            tail_of(bytes.as_bytes(), Host::Gemini)
                .usage
                .unwrap()
                .used_tokens,
            9_000
        );
    }

    #[test]
    fn the_threshold_comes_from_the_project_then_the_user() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        assert_eq!(
            compression_threshold(Some(home.path()), Some(project.path())),
            0.5
        );
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        std::fs::write(
            home.path().join(".gemini/settings.json"),
            r#"{"model":{"compressionThreshold":0.7}}"#,
        )
        .unwrap();
        assert_eq!(
            compression_threshold(Some(home.path()), Some(project.path())),
            0.7
        );
        std::fs::create_dir_all(project.path().join(".gemini")).unwrap();
        std::fs::write(
            project.path().join(".gemini/settings.json"),
            r#"{"model":{"compressionThreshold":0.3}}"#,
        )
        .unwrap();
        assert_eq!(
            compression_threshold(Some(home.path()), Some(project.path())),
            0.3
        );
        assert_eq!(compression_point(DEFAULT_LIMIT, 0.5), 524_288);
    }
}
