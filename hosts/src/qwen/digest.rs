//! What a Qwen Code transcript line gives a memory note (see
//! [`crate::digest`]): `user` lines hold the prompts (the parts Qwen adds
//! itself open with a `<qwen:` tag), `assistant` lines the replies and the
//! calls (`functionCall` parts), `tool_result` lines the results (a failed
//! one has `toolCallResult.status: "error"`), and a `system` line of subtype
//! `chat_compression` the compaction's `<state_snapshot>`.

use serde_json::Value;

use crate::digest::{Call, Item, first_line, object, prompt_from_str, todos};

/// A Qwen Code transcript line's items ([`crate::digest::Reader`]).
pub fn items(raw: &[u8], out: &mut Vec<Item>) {
    let Some(line) = object(raw) else {
        return;
    };
    if let Some(cwd) = line.get("cwd").and_then(Value::as_str) {
        out.push(Item::Cwd(cwd.to_owned()));
    }
    if let Some(branch) = line.get("gitBranch").and_then(Value::as_str) {
        out.push(Item::Branch(branch.to_owned()));
    }
    let parts = line
        .get("message")
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array);
    let texts = || {
        parts
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
    };
    match line.get("type").and_then(Value::as_str) {
        Some("user") => {
            let prompt: Vec<&str> = texts()
                .filter_map(prompt_from_str)
                .filter(|t| !t.starts_with('<'))
                .collect();
            if !prompt.is_empty() {
                out.push(Item::Prompt(prompt.join("\n")));
            }
        }
        Some("assistant") => {
            let reply = texts().collect::<Vec<_>>().join("\n");
            if !reply.trim().is_empty() {
                out.push(Item::Reply(reply.trim().to_owned()));
            }
            for call in parts
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("functionCall"))
            {
                out.push(Item::Call(tool_call(call)));
            }
        }
        Some("tool_result") => {
            let result = line.get("toolCallResult");
            if result.and_then(|r| r.get("status")).and_then(Value::as_str) != Some("error") {
                return;
            }
            let id = result
                .and_then(|r| r.get("callId"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let response = parts
                .into_iter()
                .flatten()
                .filter_map(|p| p.pointer("/functionResponse/response"))
                .next();
            let text = response
                .and_then(|r| r.get("error").or(r.get("output")))
                .and_then(Value::as_str)
                .or_else(|| {
                    result
                        .and_then(|r| r.get("resultDisplay"))
                        .and_then(Value::as_str)
                })
                .unwrap_or("");
            out.push(Item::Failed {
                id,
                message: first_line(text).to_owned(),
            });
        }
        Some("system")
            if line.get("subtype").and_then(Value::as_str) == Some("chat_compression") =>
        {
            let history = line
                .get("systemPayload")
                .and_then(|p| p.get("compressedHistory"))
                .and_then(Value::as_array);
            let summary = history
                .into_iter()
                .flatten()
                .filter_map(|m| m.get("parts").and_then(Value::as_array))
                .flatten()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .find(|t| t.trim_start().starts_with("<state_snapshot>"));
            if let Some(s) = summary {
                out.push(Item::Summary(s.to_owned()));
            }
        }
        _ => {}
    }
}

/// One `functionCall` part.
fn tool_call(call: &Value) -> Call {
    let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
    let args = call.get("args").unwrap_or(&Value::Null);
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let mut c = Call {
        id: call.get("id").and_then(Value::as_str).map(str::to_owned),
        name: name.to_owned(),
        ..Call::default()
    };
    match name {
        "run_shell_command" => c.command = arg("command").map(str::to_owned),
        "write_file" | "edit" => {
            c.files.extend(
                arg("file_path")
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned),
            );
        }
        "todo_write" => {
            c.todos = args
                .get("todos")
                .and_then(Value::as_array)
                .map(|t| todos(t, "content"));
        }
        _ => {}
    }
    c
}
