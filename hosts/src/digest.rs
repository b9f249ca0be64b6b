//! What a transcript line gives a memory note, in host-neutral terms: the
//! prompts, the replies, the tool calls with the commands they ran and the
//! files they changed, the todo list, the failures, a compaction's summary,
//! the folder and branch. Each host's module says it for its own lines
//! ([`crate::Profile::digest`]); the note's digest (`interband-consumers`)
//! reads windows of a transcript and folds these items, knowing no host.
//!
//! ```
//! use interband_hosts::{Host, digest::Item};
//! let line = br#"{"type":"user","message":{"role":"user","content":"fix the bug"},"cwd":"/w"}"#;
//! let mut items = Vec::new();
//! (Host::Claude.profile().digest)(line, &mut items);
//! assert!(items.contains(&Item::Prompt("fix the bug".into())));
//! assert!(items.contains(&Item::Cwd("/w".into())));
//! ```

/// Reads one transcript line (without its line end) and appends what it
/// gives a note to `out`; a line that gives nothing, or does not parse,
/// appends nothing.
pub type Reader = fn(line: &[u8], out: &mut Vec<Item>);

/// One thing a transcript line says, for a memory note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// The session's working folder.
    Cwd(String),
    /// The git branch checked out.
    Branch(String),
    /// A real prompt of the user's (not text the host wrote itself), trimmed.
    Prompt(String),
    /// The host's own record of the latest prompt (Claude Code's
    /// `last-prompt`), for when no prompt line is in what was read.
    PromptRecord(String),
    /// Text the agent answered on the main thread, trimmed.
    Reply(String),
    /// A tool call on the main thread.
    Call(Call),
    /// A tool's result that says it failed.
    Failed {
        /// The call it answers, when the line names it.
        id: Option<String>,
        /// The failure's first line, trimmed.
        message: String,
    },
    /// The summary a compaction replaced the context with: the prompts
    /// before it are in it.
    Summary(String),
}

/// A tool call, with what it did that a note keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    /// Its id, when the line has one: a call written again (Gemini writes
    /// a message again as its calls are added) counts once.
    pub id: Option<String>,
    /// The tool, as the host names it.
    pub name: String,
    /// The command line it ran, for a shell tool.
    pub command: Option<String>,
    /// The files it changed.
    pub files: Vec<String>,
    /// The whole todo list it set, for the host's todo tool.
    pub todos: Option<Vec<Todo>>,
    /// The line already says the call failed.
    pub failed: bool,
}

/// One item of the agent's todo list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    /// What is to be done.
    pub content: String,
    /// Its status as the agent wrote it (`pending`, `in_progress`,
    /// `completed`...); empty when it has none.
    pub status: String,
}

/// Text openings a host writes into a user's message itself (Claude Code's
/// commands, reminders and shell echoes): a text that starts so is no
/// prompt, whatever the host.
const HARNESS_PREFIXES: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
];

/// `text` trimmed, unless it is empty or written by the host itself.
pub(crate) fn prompt_from_str(text: &str) -> Option<&str> {
    let text = text.trim();
    let harness = HARNESS_PREFIXES.iter().any(|p| text.starts_with(p));
    (!text.is_empty() && !harness).then_some(text)
}

/// The first non-empty line of `text`, trimmed, without a
/// `<tool_use_error>` wrapper.
pub(crate) fn first_line(text: &str) -> &str {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line.strip_prefix("<tool_use_error>").unwrap_or(line);
    line.strip_suffix("</tool_use_error>")
        .unwrap_or(line)
        .trim()
}

/// A todo list from `items`, each item's text under `text` and its status
/// under `status`; an item without text is left out.
pub(crate) fn todos(items: &[serde_json::Value], text: &str) -> Vec<Todo> {
    items
        .iter()
        .filter_map(|t| {
            let content = t.get(text).and_then(serde_json::Value::as_str)?;
            let status = t.get("status").and_then(serde_json::Value::as_str);
            Some(Todo {
                content: content.trim().to_owned(),
                status: status.unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// Parses a line as a JSON object.
pub(crate) fn object(line: &[u8]) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_slice(line) {
        Ok(serde_json::Value::Object(m)) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_text_is_no_prompt_and_errors_lose_their_wrapper() {
        assert_eq!(prompt_from_str("  go on \n"), Some("go on"));
        assert_eq!(prompt_from_str("<system-reminder>x"), None);
        assert_eq!(prompt_from_str(" \n "), None);
        assert_eq!(
            first_line("\n <tool_use_error>File does not exist.</tool_use_error>\nmore"),
            "File does not exist."
        );
    }
}
