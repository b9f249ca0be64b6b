//! What a Gemini CLI chat recording line gives a memory note (see
//! [`crate::digest`]): a message record, or `$set` metadata. A compression
//! rewrites the history with `$set`, whose `<state_snapshot>` is the
//! summary; a message is written again as its calls are added (each call
//! has an id, and counts once).

use serde_json::Value;

use crate::digest::{Call, Item, first_line, object, prompt_from_str, todos};

/// A Gemini chat recording line's items ([`crate::digest::Reader`]).
pub fn items(raw: &[u8], out: &mut Vec<Item>) {
    let Some(line) = object(raw) else {
        return;
    };
    if let Some(messages) = line
        .get("$set")
        .and_then(|s| s.get("messages"))
        .and_then(Value::as_array)
    {
        // A compression rewrote the history: its state snapshot is the summary.
        for m in messages {
            let text = m
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .find(|t| t.trim_start().starts_with("<state_snapshot>"));
            if let Some(t) = text {
                out.push(Item::Summary(t.to_owned()));
            }
        }
        return;
    }
    match line.get("type").and_then(Value::as_str) {
        Some("user") => {
            // Before 0.39 (one JSON document) a prompt's content is its text.
            if let Some(text) = line.get("content").and_then(Value::as_str)
                && let Some(prompt) = prompt_from_str(text).filter(|t| !t.starts_with('<'))
            {
                out.push(Item::Prompt(prompt.to_owned()));
            }
            let content = line.get("content").and_then(Value::as_array);
            for part in content.into_iter().flatten() {
                if let Some(r) = part.get("functionResponse") {
                    if let Some(err) = r.pointer("/response/error") {
                        let id = r.get("id").and_then(Value::as_str).map(str::to_owned);
                        let message = err
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| err.to_string());
                        let message = first_line(&message).to_owned();
                        out.push(Item::Failed { id, message });
                    }
                } else if let Some(text) = part.get("text").and_then(Value::as_str)
                    && let Some(prompt) = prompt_from_str(text).filter(|t| !t.starts_with('<'))
                {
                    out.push(Item::Prompt(prompt.to_owned()));
                }
            }
        }
        Some("gemini") => {
            if let Some(text) = line.get("content").and_then(Value::as_str)
                && !text.trim().is_empty()
            {
                out.push(Item::Reply(text.trim().to_owned()));
            }
            let calls = line.get("toolCalls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                out.push(Item::Call(tool_call(call)));
            }
        }
        _ => {}
    }
}

/// One of a message's `toolCalls`.
fn tool_call(call: &Value) -> Call {
    let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
    let args = call.get("args").unwrap_or(&Value::Null);
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let mut c = Call {
        id: call.get("id").and_then(Value::as_str).map(str::to_owned),
        name: name.to_owned(),
        failed: call.get("status").and_then(Value::as_str) == Some("error"),
        ..Call::default()
    };
    match name {
        "run_shell_command" => c.command = arg("command").map(str::to_owned),
        "write_file" | "replace" => {
            c.files.extend(
                arg("file_path")
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            );
        }
        "write_todos" => {
            c.todos = args
                .get("todos")
                .and_then(Value::as_array)
                .map(|t| todos(t, "description"));
        }
        _ => {}
    }
    c
}
