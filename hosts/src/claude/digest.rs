//! What a Claude Code transcript line gives a memory note (see
//! [`crate::digest`]). Lines with `isSidechain: true` belong to subagents
//! and give nothing; a compaction's summary is the user line marked
//! `isCompactSummary`; `isMeta` lines are the host's own, no prompt.

use serde_json::Value;

use crate::digest::{Call, Item, TaskEvent, first_line, object, prompt_from_str, todos};

/// Tools that change a file, and the input field naming it.
const FILE_TOOLS: &[(&str, &str)] = &[
    ("Edit", "file_path"),
    ("Write", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// A Claude Code transcript line's items ([`crate::digest::Reader`]).
pub fn items(raw: &[u8], out: &mut Vec<Item>) {
    // A tool's plain result that did not fail tells a note nothing (the
    // call itself is on the assistant line): not parsed, whatever its size.
    // A SIMD search per name for what would make it tell something (one
    // multi-name automaton is 4-5x slower on text: its prefilter stumbles
    // on text's many candidate bytes).
    static TELLING: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 5]> =
        std::sync::LazyLock::new(|| {
            [
                &b"\"is_error\":true"[..],
                b"\"type\":\"text\"",
                b"isCompactSummary",
                // A task made (TaskCreate's result) or listed (TaskList's).
                b"\"task\":{\"id\"",
                b"\"tasks\":[",
            ]
            .map(memchr::memmem::Finder::new)
        });
    if memchr::memmem::find(raw, b"\"tool_result\"").is_some()
        && !TELLING.iter().any(|f| f.find(raw).is_some())
    {
        return;
    }
    let Some(line) = object(raw) else {
        return;
    };
    if line.get("isSidechain").and_then(Value::as_bool) == Some(true) {
        return;
    }
    if let Some(cwd) = line.get("cwd").and_then(Value::as_str) {
        out.push(Item::Cwd(cwd.to_owned()));
    }
    if let Some(branch) = line.get("gitBranch").and_then(Value::as_str) {
        out.push(Item::Branch(branch.to_owned()));
    }
    let message = line.get("message");
    let content = message.and_then(|m| m.get("content"));
    match line.get("type").and_then(Value::as_str) {
        Some("user") => user(&line, content, out),
        Some("assistant") => assistant(message, content, out),
        Some("last-prompt") => {
            if let Some(text) = line.get("lastPrompt").and_then(Value::as_str)
                && let Some(text) = prompt_from_str(text)
            {
                out.push(Item::PromptRecord(text.to_owned()));
            }
        }
        _ => {}
    }
}

fn user(line: &serde_json::Map<String, Value>, content: Option<&Value>, out: &mut Vec<Item>) {
    let flag = |key: &str| line.get(key).and_then(Value::as_bool) == Some(true);
    if flag("isCompactSummary") {
        if let Some(text) = content.and_then(content_text) {
            out.push(Item::Summary(text));
        }
        return;
    }
    if let Some(items) = content.and_then(Value::as_array) {
        for item in items.iter().filter(|i| item_type(i) == Some("tool_result")) {
            tool_result(line, item, out);
            task_result(line, item, out);
        }
    }
    if flag("isMeta") {
        return;
    }
    if let Some(prompt) = content.and_then(prompt_text) {
        out.push(Item::Prompt(prompt));
    }
}

/// What a task tool's result says of the task list: the task a
/// `TaskCreate` made (its id), or the whole list `TaskList` gave.
fn task_result(line: &serde_json::Map<String, Value>, item: &Value, out: &mut Vec<Item>) {
    let Some(result) = line.get("toolUseResult").and_then(Value::as_object) else {
        return;
    };
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    if let (Some(call), Some(task)) = (text(item, "tool_use_id"), result.get("task"))
        && let (Some(id), Some(subject)) = (text(task, "id"), text(task, "subject"))
    {
        out.push(Item::Task(TaskEvent::Numbered { call, id, subject }));
    }
    if let Some(list) = result.get("tasks").and_then(Value::as_array) {
        let all = list
            .iter()
            .filter_map(|t| Some((text(t, "id")?, text(t, "subject")?, text(t, "status")?)))
            .collect();
        out.push(Item::Task(TaskEvent::All(all)));
    }
}

fn tool_result(line: &serde_json::Map<String, Value>, item: &Value, out: &mut Vec<Item>) {
    if item.get("is_error").and_then(Value::as_bool) != Some(true) {
        return;
    }
    let id = item
        .get("tool_use_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut text = item
        .get("content")
        .and_then(content_text)
        .unwrap_or_default();
    if text.trim().is_empty()
        && let Some(extra) = line.get("toolUseResult").and_then(Value::as_str)
    {
        text = extra.to_owned();
    }
    let message = first_line(&text).to_owned();
    out.push(Item::Failed { id, message });
}

fn assistant(message: Option<&Value>, content: Option<&Value>, out: &mut Vec<Item>) {
    if message.and_then(|m| m.get("model")).and_then(Value::as_str) == Some("<synthetic>") {
        return;
    }
    let Some(items) = content.and_then(Value::as_array) else {
        return;
    };
    let mut texts = Vec::new();
    for item in items {
        match item_type(item) {
            Some("text") => {
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    texts.push(text);
                }
            }
            Some("tool_use") => {
                if let Some(call) = tool_use(item) {
                    out.push(Item::Call(call));
                }
                if let Some(task) = task_call(item) {
                    out.push(Item::Task(task));
                }
            }
            _ => {}
        }
    }
    let text = texts.join("\n");
    let text = text.trim();
    if !text.is_empty() {
        out.push(Item::Reply(text.to_owned()));
    }
}

fn tool_use(item: &Value) -> Option<Call> {
    let name = item.get("name").and_then(Value::as_str)?;
    let input = item.get("input");
    let field = |key: &str| input.and_then(|i| i.get(key)).and_then(Value::as_str);
    let mut call = Call {
        id: item.get("id").and_then(Value::as_str).map(str::to_owned),
        name: name.to_owned(),
        ..Call::default()
    };
    if let Some((_, key)) = FILE_TOOLS.iter().find(|(tool, _)| *tool == name)
        && let Some(path) = field(key).filter(|p| !p.is_empty())
    {
        call.files.push(path.to_owned());
    }
    match name {
        "Bash" => call.command = field("command").map(str::to_owned),
        "TodoWrite" => {
            call.todos = input
                .and_then(|i| i.get("todos"))
                .and_then(Value::as_array)
                .map(|t| todos(t, "content"));
        }
        _ => {}
    }
    Some(call)
}

/// What a task tool's call does to the task list: `TaskCreate` makes one
/// (numbered by its result), `TaskUpdate` changes one.
fn task_call(item: &Value) -> Option<TaskEvent> {
    let input = item.get("input")?;
    let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
    match item.get("name").and_then(Value::as_str)? {
        "TaskCreate" => Some(TaskEvent::Made {
            call: item.get("id").and_then(Value::as_str)?.to_owned(),
            subject: text("subject")?,
        }),
        "TaskUpdate" => Some(TaskEvent::Changed {
            id: text("taskId")?,
            subject: text("subject"),
            status: text("status"),
        }),
        _ => None,
    }
}

/// An item's `type`.
fn item_type(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

/// The text of a content value: a string, or the `text` items of an array
/// joined by newlines.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let texts: Vec<&str> = items
                .iter()
                .filter(|i| item_type(i) == Some("text"))
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The prompt a user's content holds, if it is one: not a tool result, and
/// the text that is not the host's own.
fn prompt_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => prompt_from_str(s).map(str::to_owned),
        Value::Array(items) => {
            if items.iter().any(|i| item_type(i) == Some("tool_result")) {
                return None;
            }
            let texts: Vec<&str> = items
                .iter()
                .filter(|i| item_type(i) == Some("text"))
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .filter_map(prompt_from_str)
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}
