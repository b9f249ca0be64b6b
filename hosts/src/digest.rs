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
    /// A change to the host's task list, one task at a time (Claude Code's
    /// `TaskCreate`, `TaskUpdate`, `TaskList`).
    Task(TaskEvent),
}

/// A change to a task list kept one task at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEvent {
    /// A call made a task (its id comes with the call's result).
    Made {
        /// The call that made it.
        call: String,
        /// Its title.
        subject: String,
    },
    /// A call's result named the task it made.
    Numbered {
        /// The call that made it.
        call: String,
        /// The task's id.
        id: String,
        /// Its title as saved.
        subject: String,
    },
    /// A task changed.
    Changed {
        /// The task's id.
        id: String,
        /// Its new title, if it changed.
        subject: Option<String>,
        /// Its new status (`pending`, `in_progress`, `completed`, `deleted`).
        status: Option<String>,
    },
    /// The whole list, as the host listed it: `(id, subject, status)`.
    All(Vec<(String, String, String)>),
}

/// The task list `events` leave, in the order the tasks were made: `(id,
/// subject, status)`, an id unknown while the call's result is not read.
/// A deleted task leaves it; a change to a task made before the events read
/// keeps it when it gives its title.
///
/// ```
/// use interband_hosts::digest::{TaskEvent, tasks};
/// let made = |call: &str, subject: &str| TaskEvent::Made { call: call.into(), subject: subject.into() };
/// let events = [
///     made("c1", "Parse"),
///     TaskEvent::Numbered { call: "c1".into(), id: "1".into(), subject: "Parse".into() },
///     made("c2", "Lex"),
///     TaskEvent::Changed { id: "1".into(), subject: None, status: Some("in_progress".into()) },
/// ];
/// let list: Vec<(String, String)> = tasks(&events).into_iter().map(|t| (t.subject, t.status)).collect();
/// assert_eq!(list, [("Parse".into(), "in_progress".into()), ("Lex".into(), "pending".into())]);
/// ```
pub fn tasks(events: &[TaskEvent]) -> Vec<Task> {
    let mut list: Vec<Task> = Vec::new();
    for e in events {
        match e {
            TaskEvent::Made { call, subject } => list.push(Task {
                call: Some(call.clone()),
                id: None,
                subject: subject.clone(),
                status: "pending".into(),
            }),
            TaskEvent::Numbered { call, id, subject } => {
                match list.iter_mut().find(|t| t.call.as_ref() == Some(call)) {
                    Some(t) => t.id = Some(id.clone()),
                    None => list.push(Task {
                        call: Some(call.clone()),
                        id: Some(id.clone()),
                        subject: subject.clone(),
                        status: "pending".into(),
                    }),
                }
            }
            TaskEvent::Changed {
                id,
                subject,
                status,
            } => {
                let at = list.iter().position(|t| t.id.as_ref() == Some(id));
                match (at, status.as_deref()) {
                    (Some(i), Some("deleted")) => {
                        list.remove(i);
                    }
                    (Some(i), _) => {
                        let t = &mut list[i];
                        if let Some(s) = subject {
                            t.subject = s.clone();
                        }
                        if let Some(s) = status {
                            t.status = s.clone();
                        }
                    }
                    (None, Some("deleted")) => {}
                    (None, _) => {
                        if let Some(s) = subject {
                            list.push(Task {
                                call: None,
                                id: Some(id.clone()),
                                subject: s.clone(),
                                status: status.clone().unwrap_or_else(|| "pending".into()),
                            });
                        }
                    }
                }
            }
            TaskEvent::All(all) => {
                list = all
                    .iter()
                    .map(|(id, subject, status)| Task {
                        call: None,
                        id: Some(id.clone()),
                        subject: subject.clone(),
                        status: status.clone(),
                    })
                    .collect();
            }
        }
    }
    list
}

/// One task of a task list ([`tasks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The call that made it, when read.
    pub call: Option<String>,
    /// Its id, when known.
    pub id: Option<String>,
    /// Its title.
    pub subject: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
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
