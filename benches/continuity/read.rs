//! Each host's session file, read line by line into the few events the
//! benchmark counts facts from. Written from the files themselves (the
//! fixtures' READMEs say where each comes from), not from interband's own
//! readers, so the note is measured against what happened.

use interband_hosts::Host;
use serde_json::Value;

/// What one line of a session file says, as far as the benchmark cares.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// A person's request.
    Request(String),
    /// A file the agent wrote or edited.
    File(String),
    /// A command the agent ran, with its call's id when it has one.
    Command { id: Option<String>, text: String },
    /// The call of this id failed.
    Failed(String),
    /// The whole todo list, as (text, status) pairs.
    Todos(Vec<(String, String)>),
    /// A task made by the call `call` (Claude Code's `TaskCreate`).
    Task { call: String, subject: String },
    /// The call `call`'s result gave its task the id `id`.
    TaskId { call: String, id: String },
    /// The task `id` changed (`TaskUpdate`): its status, its new subject.
    TaskChange {
        id: String,
        status: Option<String>,
        subject: Option<String>,
    },
    /// The context to be replaced ends here: what a `PreCompact` hook sees.
    Boundary,
    /// The host's summary of the context it replaced.
    Summary(String),
}

/// Which host wrote a session file, from its first lines.
pub fn host_of(bytes: &[u8]) -> Option<Host> {
    for raw in bytes.split(|&b| b == b'\n').take(40) {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        let kind = v["type"].as_str().unwrap_or("");
        if v.get("projectHash").is_some() {
            return Some(Host::Gemini);
        }
        if kind == "session_meta" {
            return Some(Host::Codex);
        }
        if kind.starts_with("session.") {
            return Some(Host::Copilot);
        }
        if v.get("provenance").is_some() || v["message"]["parts"].is_array() {
            return Some(Host::Qwen);
        }
        if v.get("sessionId").is_some() && v["message"].is_object() {
            return Some(Host::Claude);
        }
    }
    None
}

/// The events of one line of `host`'s session file.
pub fn events(host: Host, line: &Value) -> Vec<Event> {
    match host {
        Host::Claude => claude(line),
        Host::Codex => codex(line),
        Host::Qwen => qwen(line),
        Host::Copilot => copilot(line),
        Host::Gemini => gemini(line),
    }
}

/// A person's words, unless they are a host's echo or wrapper.
fn request(text: &str) -> Option<Event> {
    let t = text.trim();
    let echo = [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "Caveat:",
        "[Request interrupted",
        "<system-reminder>",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<environment_context>",
        "<user_instructions>",
        "# AGENTS.md",
        "<turn_aborted>",
        "<session_context>",
        "<state_snapshot>",
    ];
    if t.is_empty() || echo.iter().any(|e| t.starts_with(e)) {
        return None;
    }
    Some(Event::Request(t.chars().take(600).collect()))
}

/// A command's first line, at most 200 characters.
fn command(id: Option<&str>, cmd: &str) -> Event {
    Event::Command {
        id: id.map(str::to_owned),
        text: cmd.lines().next().unwrap_or("").chars().take(200).collect(),
    }
}

fn todos(list: &Value, text: &str) -> Event {
    Event::Todos(
        list.as_array()
            .map(|l| {
                l.iter()
                    .map(|t| {
                        (
                            t[text].as_str().unwrap_or("").to_owned(),
                            t["status"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    )
}

fn texts(blocks: &Value, key: &str) -> String {
    match blocks {
        Value::String(s) => s.clone(),
        Value::Array(b) => b
            .iter()
            .filter_map(|x| x[key].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Claude Code's transcript: `user` and `assistant` lines, the
/// `compact_boundary` line, then the `isCompactSummary` user line.
fn claude(line: &Value) -> Vec<Event> {
    let kind = line["type"].as_str().unwrap_or("");
    if kind == "system" && line["subtype"] == "compact_boundary" {
        return vec![Event::Boundary];
    }
    if kind == "user" && line["isCompactSummary"] == true {
        return vec![Event::Summary(texts(&line["message"]["content"], "text"))];
    }
    if line["isSidechain"] == true || line["isMeta"] == true {
        return Vec::new();
    }
    let content = &line["message"]["content"];
    let mut out = Vec::new();
    if kind == "user" {
        let blocks = content.as_array();
        let results = blocks.is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"));
        if !results {
            out.extend(request(&texts(content, "text")));
        }
        for b in blocks.into_iter().flatten() {
            if b["type"] == "tool_result" && b["is_error"] == true {
                out.extend(b["tool_use_id"].as_str().map(|i| Event::Failed(i.into())));
            }
            let task = &line["toolUseResult"]["task"]["id"];
            if let (Some(call), Some(id)) = (b["tool_use_id"].as_str(), task.as_str()) {
                out.push(Event::TaskId {
                    call: call.into(),
                    id: id.into(),
                });
            }
        }
    }
    if kind == "assistant" {
        for b in content.as_array().into_iter().flatten() {
            if b["type"] != "tool_use" {
                continue;
            }
            let input = &b["input"];
            match b["name"].as_str().unwrap_or("") {
                "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => out.extend(
                    input["file_path"]
                        .as_str()
                        .or(input["notebook_path"].as_str())
                        .map(|p| Event::File(p.into())),
                ),
                "Bash" => out.extend(
                    input["command"]
                        .as_str()
                        .map(|c| command(b["id"].as_str(), c)),
                ),
                "TodoWrite" => out.push(todos(&input["todos"], "content")),
                "TaskCreate" => out.extend(b["id"].as_str().zip(input["subject"].as_str()).map(
                    |(call, subject)| Event::Task {
                        call: call.into(),
                        subject: subject.into(),
                    },
                )),
                "TaskUpdate" => out.extend(input["taskId"].as_str().map(|id| Event::TaskChange {
                    id: id.into(),
                    status: input["status"].as_str().map(str::to_owned),
                    subject: input["subject"].as_str().map(str::to_owned),
                })),
                _ => {}
            }
        }
    }
    out
}

/// Codex's rollout: `response_item`s (a user `message`, a `function_call`
/// and its `function_call_output`), and the `compacted` line that holds the
/// summary where the context was replaced.
fn codex(line: &Value) -> Vec<Event> {
    let p = &line["payload"];
    match line["type"].as_str().unwrap_or("") {
        "compacted" => vec![
            Event::Boundary,
            Event::Summary(p["message"].as_str().unwrap_or("").into()),
        ],
        "response_item" => match p["type"].as_str().unwrap_or("") {
            "message" if p["role"] == "user" => {
                request(&texts(&p["content"], "text")).into_iter().collect()
            }
            "function_call" => {
                let args: Value = p["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or(Value::Null);
                let id = p["call_id"].as_str();
                match p["name"].as_str().unwrap_or("") {
                    "exec_command" => args["cmd"]
                        .as_str()
                        .map(|c| command(id, c))
                        .into_iter()
                        .collect(),
                    "shell" => {
                        let argv: Vec<&str> = args["command"]
                            .as_array()
                            .map(|a| a.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        // `["bash", "-lc", "the command"]`: the command is the last word.
                        argv.last().map(|c| command(id, c)).into_iter().collect()
                    }
                    "update_plan" => vec![todos(&args["plan"], "step")],
                    "apply_patch" => patch_files(args["input"].as_str().unwrap_or("")),
                    _ => Vec::new(),
                }
            }
            "custom_tool_call" if p["name"] == "apply_patch" => {
                patch_files(p["input"].as_str().unwrap_or(""))
            }
            "function_call_output" => {
                let out = p["output"].as_str().unwrap_or("");
                let code = out
                    .lines()
                    .find_map(|l| l.strip_prefix("Process exited with code "))
                    .and_then(|c| c.trim().parse::<i64>().ok());
                match (code, p["call_id"].as_str()) {
                    (Some(c), Some(id)) if c != 0 => vec![Event::Failed(id.into())],
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The files an `apply_patch` names (`*** Add File: …`, `*** Update File: …`).
fn patch_files(patch: &str) -> Vec<Event> {
    patch
        .lines()
        .filter_map(|l| {
            l.strip_prefix("*** Add File: ")
                .or_else(|| l.strip_prefix("*** Update File: "))
        })
        .map(|p| Event::File(p.trim().into()))
        .collect()
}

/// Qwen Code's transcript: `user` lines (a person's are `real_user`),
/// `assistant` lines with `functionCall` parts, `tool_result` lines, and the
/// `chat_compression` system line whose compressed history opens with the
/// summary.
fn qwen(line: &Value) -> Vec<Event> {
    let kind = line["type"].as_str().unwrap_or("");
    if kind == "system" && line["subtype"] == "chat_compression" {
        let first = &line["systemPayload"]["compressedHistory"][0]["parts"];
        return vec![Event::Boundary, Event::Summary(texts(first, "text"))];
    }
    let parts = &line["message"]["parts"];
    match kind {
        "user" if line["provenance"] == "real_user" => {
            request(&texts(parts, "text")).into_iter().collect()
        }
        "assistant" => parts
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let call = &p["functionCall"];
                let args = &call["args"];
                match call["name"].as_str()? {
                    "run_shell_command" => {
                        Some(command(call["id"].as_str(), args["command"].as_str()?))
                    }
                    "write_file" | "edit" | "replace" => {
                        Some(Event::File(args["file_path"].as_str()?.into()))
                    }
                    "todo_write" => Some(todos(&args["todos"], "content")),
                    _ => None,
                }
            })
            .collect(),
        "tool_result" => {
            let r = &line["toolCallResult"];
            let failed = r["status"] == "error"
                || r["resultDisplay"]["exitCode"]
                    .as_i64()
                    .is_some_and(|c| c != 0);
            match (failed, r["callId"].as_str()) {
                (true, Some(id)) => vec![Event::Failed(id.into())],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// Copilot CLI's events log: `user.message`, `assistant.message` with its
/// `toolRequests`, `tool.execution_complete`, and a compaction's start and
/// completion (whose `summaryContent` is the summary: the agent goes on
/// working in between).
fn copilot(line: &Value) -> Vec<Event> {
    let d = &line["data"];
    match line["type"].as_str().unwrap_or("") {
        "session.compaction_start" => vec![Event::Boundary],
        "session.compaction_complete" if d["success"] == true => {
            vec![Event::Summary(
                d["summaryContent"].as_str().unwrap_or("").into(),
            )]
        }
        "user.message" => request(d["content"].as_str().unwrap_or(""))
            .into_iter()
            .collect(),
        "assistant.message" => d["toolRequests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                let args = &t["arguments"];
                match t["name"].as_str()? {
                    "bash" | "powershell" => {
                        Some(command(t["toolCallId"].as_str(), args["command"].as_str()?))
                    }
                    "create" | "edit" | "str_replace_editor" => {
                        Some(Event::File(args["path"].as_str()?.into()))
                    }
                    _ => None,
                }
            })
            .collect(),
        "tool.execution_complete" => {
            let failed = d["success"] == false
                || d["shellExecution"]["exitCode"]
                    .as_i64()
                    .is_some_and(|c| c != 0);
            match (failed, d["toolCallId"].as_str()) {
                (true, Some(id)) => vec![Event::Failed(id.into())],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// Gemini CLI's chat file (0.61.0's JSON lines): `user` and `gemini`
/// messages (a `gemini` one with its `toolCalls`), and a compression: the
/// whole history set again (`$set.messages`), opening with the
/// `<state_snapshot>` that summarises what it replaced.
fn gemini(line: &Value) -> Vec<Event> {
    if let Some(history) = line["$set"]["messages"].as_array() {
        let snapshot = history.iter().find_map(|m| {
            let text = texts(&m["content"], "text");
            let at = text.find("<state_snapshot>")?;
            Some(text[at..].to_owned())
        });
        return match snapshot {
            Some(s) => vec![Event::Boundary, Event::Summary(s)],
            None => Vec::new(),
        };
    }
    match line["type"].as_str().unwrap_or("") {
        "user" => request(&texts(&line["content"], "text"))
            .into_iter()
            .collect(),
        "gemini" => {
            let mut out = Vec::new();
            for call in line["toolCalls"].as_array().into_iter().flatten() {
                let args = &call["args"];
                let id = call["id"].as_str();
                match call["name"].as_str().unwrap_or("") {
                    "run_shell_command" => {
                        out.extend(args["command"].as_str().map(|c| command(id, c)))
                    }
                    "write_file" | "replace" => {
                        out.extend(args["file_path"].as_str().map(|p| Event::File(p.into())))
                    }
                    "write_todos" => out.push(todos(&args["todos"], "description")),
                    _ => {}
                }
                if call["status"] == "error"
                    && let Some(id) = id
                {
                    out.push(Event::Failed(id.into()));
                }
            }
            out
        }
        _ => Vec::new(),
    }
}
