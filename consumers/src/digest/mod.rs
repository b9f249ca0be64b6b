//! What a memory note needs from a session's transcript, read cheaply:
//! Claude Code's transcript, Codex CLI's rollout or Gemini CLI's chat
//! recording (each host's own lines; see [`Host`]).
//!
//! A memory note is written for a session just before its context is
//! compacted. The session's transcript is JSONL (one JSON object a line) and
//! can reach hundreds of megabytes, with single lines of hundreds of
//! kilobytes, so this module never reads it whole: it reads the HEAD (at most
//! [`Limits::head_cap`] bytes, for the first user prompt) and the TAIL (at
//! most [`Limits::tail_cap`] bytes from the end, for everything else). A file
//! no bigger than both caps together is read once, whole.
//!
//! The extraction is deterministic and never panics: lines that do not parse
//! are skipped (the last line may be half-written), the tail window's first
//! line is skipped unless the window starts at offset 0 (it is usually cut),
//! and the head window's last line is skipped unless it ends with a newline.
//! Lines with `isSidechain: true` belong to subagents and are ignored
//! everywhere.
//!
//! [`digest_file`] reads a file; [`digest`] does the same on bytes in memory,
//! with the same windows, so both give the same [`Digest`] for the same
//! content. A window of a megabyte or more is scanned as two halves on two
//! threads, cut after a line near its middle, and the two scans joined in
//! order: the same digest as one scan gives (Gemini's windows, whose reader
//! looks back at what it has seen, are scanned whole).

use crate::truncate;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use interband_hosts::Host;
use interband_hosts::digest::{Item, Reader};

mod read;
mod scan;

use read::*;
use scan::*;

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Todo {
    /// What is to be done (`content` of the TodoWrite item, truncated to
    /// [`Limits::text`] characters).
    pub content: String,
    /// `pending`, `in_progress` or `completed` as written by the agent (empty
    /// when the item has no string status).
    pub status: String,
}

/// One shell command the agent ran.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Command {
    /// The command line (`input.command` of a `Bash` tool call, truncated to
    /// [`Limits::text`] characters).
    pub command: String,
    /// Whether its latest run's tool result has `is_error: true`. A command
    /// whose result is not in the window read (or not written yet) counts as
    /// not failed.
    pub failed: bool,
    /// How many times it ran (the same command line, in the window read).
    pub runs: usize,
}

/// A tool call that failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolError {
    /// The tool's name, found through `tool_use_id`; `?` when the call is not
    /// in the window read.
    pub tool: String,
    /// The first non-empty line of the result's text (a `<tool_use_error>`
    /// wrapper removed), truncated to [`Limits::text`] characters.
    pub message: String,
}

/// What a memory note needs from a transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Digest {
    /// The first real user prompt, from the head of the file.
    pub first_prompt: Option<String>,
    /// The last real user prompt in the tail; failing one, the tail's last
    /// `last-prompt` record (the client's own note of the latest prompt).
    pub latest_prompt: Option<String>,
    /// The real user prompts since the last compaction (the requests the
    /// context being replaced holds), chronological, the last
    /// [`Limits::prompts`], each truncated to [`Limits::text`] characters.
    pub prompts: Vec<String>,
    /// The current todo list: the last TodoWrite call's `todos` (empty when
    /// there is none in the tail, or when it cleared the list).
    pub todos: Vec<Todo>,
    /// Files written by `Edit`, `Write`, `MultiEdit` and `NotebookEdit`: most
    /// recent first, each path once, at most [`Limits::files`].
    pub files_changed: Vec<String>,
    /// `Bash` commands: each command line once, at its latest run,
    /// chronological, the last [`Limits::commands`].
    pub commands: Vec<Command>,
    /// Tool results with `is_error: true`: chronological, the last
    /// [`Limits::errors`].
    pub tool_errors: Vec<ToolError>,
    /// The text of the last main-thread assistant message that has text
    /// (synthetic messages skipped).
    pub last_assistant: Option<String>,
    /// The text of the last compaction summary (`isCompactSummary: true`),
    /// whole: it is not truncated.
    pub compaction_summary: Option<String>,
    /// The working directory of the last line that has one (the tail's, else
    /// the head's).
    pub cwd: Option<String>,
    /// The git branch of the last line that has one (the tail's, else the
    /// head's).
    pub git_branch: Option<String>,
}

/// Caps on what is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes read from the start of the file, for the first prompt.
    pub head_cap: u64,
    /// Bytes read from the end of the file, for everything else.
    pub tail_cap: u64,
    /// Most files kept in [`Digest::files_changed`].
    pub files: usize,
    /// Most commands kept in [`Digest::commands`].
    pub commands: usize,
    /// Most prompts kept in [`Digest::prompts`].
    pub prompts: usize,
    /// Most errors kept in [`Digest::tool_errors`].
    pub errors: usize,
    /// Most characters kept of each prompt, assistant message, todo, command
    /// and error message; a truncated text gets `…` appended (so it is at
    /// most `text + 1` characters).
    pub text: usize,
}

impl Default for Limits {
    /// Head 256 KiB, tail 4 MiB, 20 files, 100 commands, 40 prompts, 8
    /// errors, 600 characters of text.
    fn default() -> Self {
        Limits {
            head_cap: 256 * 1024,
            tail_cap: 4 * 1024 * 1024,
            files: 20,
            commands: 100,
            prompts: 40,
            errors: 8,
            text: 600,
        }
    }
}

/// Reads the head and tail of the transcript at `path`.
///
/// Reads at most `head_cap + tail_cap` bytes: the whole file when it is no
/// bigger than that, else its first `head_cap` and last `tail_cap` bytes.
/// Errors only when the file cannot be opened or read; its content, whatever
/// it is, gives a [`Digest`] (an empty one for an empty or garbage file).
pub fn digest_file(path: &Path, limits: &Limits) -> io::Result<Digest> {
    let host = Host::of_transcript(&path.to_string_lossy()).unwrap_or(Host::Claude);
    digest_file_as(path, limits, host)
}

/// [`digest_file`] of a transcript in `host`'s format.
pub fn digest_file_as(path: &Path, limits: &Limits, host: Host) -> io::Result<Digest> {
    let (file, len) = interband_hosts::open_transcript(path)?;
    // Gemini CLI before 0.39 recorded a chat as one JSON document: read as
    // the lines it writes since (bounded: a larger one gives no digest).
    let document = host == Host::Gemini && path.extension().is_some_and(|e| e == "json");
    if document {
        if len > MAX_DOCUMENT_BYTES {
            return Ok(Digest::default());
        }
        let mut lines = Vec::new();
        interband_hosts::gemini::document_lines(io::BufReader::new(&file), &mut lines)?;
        return Ok(digest_as(&lines, limits, host));
    }
    digest_source(&file, len, limits, host, Reading::DEFAULT)
}

/// The largest one-document chat read for a digest (Gemini CLI before 0.39).
const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// The same on bytes in memory (the whole file).
///
/// Uses the same head and tail windows as [`digest_file`], so both give the
/// same result for the same content.
pub fn digest(bytes: &[u8], limits: &Limits) -> Digest {
    digest_as(bytes, limits, Host::Claude)
}

/// [`digest`] of a transcript in `host`'s format.
pub fn digest_as(bytes: &[u8], limits: &Limits, host: Host) -> Digest {
    // The very reading a file gets, from memory (which cannot fail).
    digest_source(bytes, bytes.len() as u64, limits, host, Reading::DEFAULT).unwrap_or_default()
}

#[cfg(test)]
mod tests;
