//! What a GitHub Copilot CLI `events.jsonl` line gives a memory note (see
//! [`crate::digest`]): `session.start` the folder and branch, `user.message`
//! the prompts (`content`, as typed), `assistant.message` the replies and
//! the calls (`toolRequests`), a `tool.execution_complete` that did not
//! succeed a failure, and `session.compaction_complete` the summary. A
//! subagent's lines (1.0.102 writes them into its session's log, each with
//! its `agentId`) are its own work, none of the session's.

use serde_json::Value;

use crate::digest::{Call, Item, first_line, object, prompt_from_str};

/// A Copilot CLI event line's items ([`crate::digest::Reader`]).
pub fn items(raw: &[u8], out: &mut Vec<Item>) {
    let Some(line) = object(raw) else {
        return;
    };
    if line
        .get("agentId")
        .and_then(Value::as_str)
        .is_some_and(|a| !a.is_empty())
    {
        return;
    }
    let data = line.get("data").unwrap_or(&Value::Null);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match line.get("type").and_then(Value::as_str) {
        Some("session.start" | "session.resume") => {
            let context = data.get("context").unwrap_or(&Value::Null);
            out.extend(text(context, "cwd").map(Item::Cwd));
            out.extend(text(context, "branch").map(Item::Branch));
        }
        Some("user.message") => {
            if let Some(p) = data
                .get("content")
                .and_then(Value::as_str)
                .and_then(prompt_from_str)
            {
                out.push(Item::Prompt(p.to_owned()));
            }
        }
        Some("assistant.message") => {
            if let Some(reply) = data
                .get("content")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|r| !r.is_empty())
            {
                out.push(Item::Reply(reply.to_owned()));
            }
            for t in data
                .get("toolRequests")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(Item::Call(call(t)));
            }
        }
        Some("tool.execution_complete") if data.get("success") == Some(&Value::Bool(false)) => {
            let message = data
                .pointer("/error/message")
                .or_else(|| data.pointer("/result/content"))
                .and_then(Value::as_str)
                .unwrap_or("");
            out.push(Item::Failed {
                id: text(data, "toolCallId"),
                message: first_line(message).to_owned(),
            });
        }
        Some("session.compaction_complete") => {
            if let Some(summary) = text(data, "summaryContent").filter(|s| !s.trim().is_empty()) {
                out.push(Item::Summary(summary));
            }
        }
        _ => {}
    }
}

/// One of an assistant message's `toolRequests`.
fn call(t: &Value) -> Call {
    let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
    let args = t.get("arguments").unwrap_or(&Value::Null);
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let mut c = Call {
        id: t
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        name: name.to_owned(),
        ..Call::default()
    };
    match name {
        "bash" => c.command = arg("command").map(str::to_owned),
        "create" | "edit" => c
            .files
            .extend(arg("path").filter(|p| !p.is_empty()).map(str::to_owned)),
        _ => {}
    }
    c
}
