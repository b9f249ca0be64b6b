//! What a Codex CLI rollout line (`{timestamp, type, payload}`) gives a
//! memory note (see [`crate::digest`]). The folder and branch come with
//! `turn_context` and `session_meta`; a compaction is a `compacted` line
//! whose `message` is the summary; a command that failed says `Process
//! exited with code N` in its output.

use serde_json::Value;

use crate::digest::{Call, Item, object, prompt_from_str, todos};

/// A Codex rollout line's items ([`crate::digest::Reader`]).
pub fn items(raw: &[u8], out: &mut Vec<Item>) {
    let Some(line) = object(raw) else {
        return;
    };
    let p = line.get("payload").unwrap_or(&Value::Null);
    let text = |key: &str| p.get(key).and_then(Value::as_str);
    match line.get("type").and_then(Value::as_str) {
        Some("turn_context" | "session_meta") => {
            if let Some(cwd) = text("cwd") {
                out.push(Item::Cwd(cwd.to_owned()));
            }
            if let Some(branch) = p.pointer("/git/branch").and_then(Value::as_str) {
                out.push(Item::Branch(branch.to_owned()));
            }
        }
        Some("compacted") => {
            if let Some(summary) = text("message") {
                out.push(Item::Summary(summary.to_owned()));
            }
        }
        Some("response_item") => match text("type") {
            Some("message") => {
                let parts: Vec<&str> = p
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.get("text").and_then(Value::as_str))
                    .collect();
                let joined = parts.join("\n");
                match text("role") {
                    Some("user") => {
                        // Codex's own context (environment, instructions) opens with a tag.
                        if let Some(prompt) = prompt_from_str(&joined)
                            .filter(|t| !t.starts_with('<') && !t.starts_with("# AGENTS.md"))
                        {
                            out.push(Item::Prompt(prompt.to_owned()));
                        }
                    }
                    Some("assistant") if !joined.trim().is_empty() => {
                        out.push(Item::Reply(joined.trim().to_owned()));
                    }
                    _ => {}
                }
            }
            Some("function_call" | "custom_tool_call") => out.push(Item::Call(call(p))),
            Some("function_call_output" | "custom_tool_call_output") => {
                let output = match p.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v
                        .get("output")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    None => String::new(),
                };
                let failed = output.lines().any(|l| {
                    l.trim()
                        .strip_prefix("Process exited with code ")
                        .is_some_and(|c| c.trim() != "0")
                });
                if failed {
                    let message = output
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty() && !l.starts_with("Chunk ID"))
                        .find(|l| !l.starts_with("Wall time"))
                        .unwrap_or("")
                        .to_owned();
                    let id = text("call_id").map(str::to_owned);
                    out.push(Item::Failed { id, message });
                }
            }
            _ => {}
        },
        _ => {}
    }
}

/// A `function_call` or `custom_tool_call` payload.
fn call(p: &Value) -> Call {
    let text = |key: &str| p.get(key).and_then(Value::as_str);
    let name = text("name").unwrap_or_default().to_owned();
    // Arguments come as a JSON string; a custom tool's as its input.
    let args: Value = text("arguments")
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or_default();
    let mut call = Call {
        id: text("call_id").map(str::to_owned),
        ..Call::default()
    };
    match name.as_str() {
        "exec_command" | "shell" | "local_shell" | "Bash" => {
            call.command = match args.get("cmd").or(args.get("command")) {
                Some(Value::String(c)) => Some(c.clone()),
                Some(Value::Array(a)) => Some(
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            };
        }
        "apply_patch" => {
            let patch = text("input")
                .or_else(|| args.get("input").and_then(Value::as_str))
                .unwrap_or_default();
            for l in patch.lines() {
                for head in ["*** Add File: ", "*** Update File: ", "*** Delete File: "] {
                    if let Some(path) = l.strip_prefix(head) {
                        call.files.push(path.trim().to_owned());
                    }
                }
            }
        }
        "update_plan" => {
            call.todos = args
                .get("plan")
                .and_then(Value::as_array)
                .map(|plan| todos(plan, "step"));
        }
        _ => {}
    }
    call.name = name;
    call
}
