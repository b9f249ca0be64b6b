//! Transcripts in the real client's shapes, written line by line: for the
//! demo, the tests and the benchmarks. The shapes are those of
//! `tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The model written on assistant lines, and asked for (`requestedModel`,
/// as Claude Code 2.1.x writes it): a 200k one.
pub const MODEL: &str = "claude-sonnet-4-6";

/// A `usage` object putting `used` tokens in context (mostly cache reads, as in real sessions).
pub fn usage(used: u64) -> Value {
    let fresh = used / 10;
    json!({"input_tokens": fresh, "cache_creation_input_tokens": 0, "cache_read_input_tokens": used - fresh, "output_tokens": 40})
}

/// Appends lines to a transcript file.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use interpulse::synthetic::Writer;
/// let mut t = Writer::new(dir.path().join("s.jsonl"), "s", dir.path());
/// t.prompt("Fix the parser").unwrap();
/// t.tool("Bash", serde_json::json!({"command": "cargo test"}), "ok", false, 120_000, false).unwrap();
/// let tail = interband_hosts::tail::read_tail(t.path(), 1 << 20, interband_hosts::Host::Claude).unwrap();
/// assert_eq!(tail.usage.unwrap().used_tokens, 120_000);
/// ```
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    session: String,
    cwd: PathBuf,
    branch: String,
    lines: usize,
}

impl Writer {
    /// A writer appending to `path` for `session`, working in `cwd`.
    pub fn new(path: impl Into<PathBuf>, session: &str, cwd: impl Into<PathBuf>) -> Self {
        Writer {
            path: path.into(),
            session: session.to_owned(),
            cwd: cwd.into(),
            branch: "main".into(),
            lines: 0,
        }
    }

    /// Sets the git branch written on each line.
    pub fn branch(mut self, branch: &str) -> Self {
        self.branch = branch.to_owned();
        self
    }

    /// The transcript file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session's working folder.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Appends one line, adding the fields every line carries.
    pub fn line(&mut self, mut v: Value) -> std::io::Result<()> {
        self.lines += 1;
        if let Some(o) = v.as_object_mut() {
            o.entry("isSidechain").or_insert(json!(false));
            o.insert(
                "uuid".into(),
                json!(format!("00000000-0000-4000-8000-{:012}", self.lines)),
            );
            o.insert("sessionId".into(), json!(self.session));
            o.insert("cwd".into(), json!(self.cwd));
            o.insert("gitBranch".into(), json!(self.branch));
            o.insert(
                "timestamp".into(),
                json!(interband::envelope::now_timestamp()),
            );
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        writeln!(f, "{v}")
    }

    /// A user prompt.
    pub fn prompt(&mut self, text: &str) -> std::io::Result<()> {
        self.line(json!({"type": "user", "message": {"role": "user", "content": text}}))
    }

    /// A tool call at `used` tokens of context and its result; `sidechain` for a subagent's call.
    /// Returns the tool-use id.
    pub fn tool(
        &mut self,
        name: &str,
        input: Value,
        result: &str,
        is_error: bool,
        used: u64,
        sidechain: bool,
    ) -> std::io::Result<String> {
        let id = format!("toolu_{:06}", self.lines + 1);
        self.line(json!({"type": "assistant", "isSidechain": sidechain, "requestedModel": MODEL, "message": {"id": format!("msg_{id}"), "type": "message",
            "role": "assistant", "model": MODEL, "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}], "usage": usage(used)}}))?;
        self.line(json!({"type": "user", "isSidechain": sidechain, "message": {"role": "user",
            "content": [{"tool_use_id": id, "type": "tool_result", "content": result, "is_error": is_error}]},
            "toolUseResult": {"stdout": result}}))?;
        Ok(id)
    }

    /// The assistant's closing text of a turn, at `used` tokens.
    pub fn say(&mut self, text: &str, used: u64) -> std::io::Result<()> {
        let id = format!("msg_{:06}", self.lines + 1);
        self.line(json!({"type": "assistant", "requestedModel": MODEL, "message": {"id": id, "type": "message", "role": "assistant", "model": MODEL,
            "stop_reason": "end_turn", "content": [{"type": "text", "text": text}], "usage": usage(used)}}))
    }

    /// A compaction: the boundary (from `pre` to `post` tokens) and the summary the host writes after it.
    pub fn compact(&mut self, pre: u64, post: u64, summary: &str) -> std::io::Result<()> {
        self.line(json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "compactMetadata": {"trigger": "manual", "preTokens": pre, "postTokens": post}}))?;
        self.line(json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": summary}}))
    }
}
