//! A mock OpenAI-compatible chat-completions API, just enough to drive the
//! real Qwen Code (`--openai-base-url`) and GitHub Copilot CLI
//! (`COPILOT_PROVIDER_BASE_URL`) offline.
//!
//! `POST .../chat/completions`: a request of the agent's loop (it offers the
//! host's shell tool among more than a few tools, and is no compaction or
//! suggestion) takes the next scripted turn: a call of the shell tool, or
//! text, streamed as server-sent chunks, with `usage.prompt_tokens` in a
//! last chunk of its own. A compaction's request (it asks for a
//! `<state_snapshot>` or a detailed summary) gets one; anything else a short text.
//! Every request is recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One scripted answer, with the prompt tokens it reports.
#[derive(Clone, Debug)]
pub enum Turn {
    /// Run a shell command.
    Command { command: String, prompt: u64 },
    /// Answer in text.
    Text { text: String, prompt: u64 },
}

pub fn command(prompt: u64) -> Turn {
    Turn::Command {
        command: "echo hello-from-mock".into(),
        prompt,
    }
}

pub fn text(prompt: u64, text: &str) -> Turn {
    Turn::Text {
        text: text.into(),
        prompt,
    }
}

/// What a request was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The agent's loop.
    Main,
    /// A compaction's summary.
    Summary,
    /// Anything else (titles, suggestions, memory, unknown paths).
    Other,
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub body: String,
    pub kind: Kind,
    /// The prompt tokens answered (a main request's).
    pub prompt: u64,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    script: VecDeque<Turn>,
    last: u64,
    calls: u64,
    /// How long a main answer takes, as a real model's would.
    latency: std::time::Duration,
}

pub struct Mock {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Mock {
    /// Listens on 127.0.0.1; `shell` is the host's shell tool (Qwen:
    /// `run_shell_command`, Copilot: `bash`), `model` the model it answers as.
    pub fn start(shell: &'static str, model: &'static str) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let port = super::listen(Arc::new(move |method, path, body| {
            answer(method, path, body, &shared, shell, model)
        }));
        Mock { port, state }
    }

    /// The base URL, `/v1` included.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Each main answer takes `latency`, as a real model's would (Copilot
    /// writes its session log every so often: without a delay a hook reads
    /// a log that a whole quick run has not reached yet).
    pub fn latency(&self, latency: std::time::Duration) {
        self.state.lock().unwrap().latency = latency;
    }

    pub fn script(&self, turns: impl IntoIterator<Item = Turn>) {
        self.state.lock().unwrap().script = turns.into_iter().collect();
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

/// The text of a request's last user message.
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.iter().rev().find(|m| m["role"] == "user");
    match last.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn classify(body: &Value, shell: &str) -> Kind {
    let last = last_user_text(body);
    // Qwen's compaction asks for a `<state_snapshot>` (its summary then
    // opens the new context: no request); Copilot's for "a detailed summary".
    let asks = |s: &str| last.contains(s);
    if asks("summarizes a conversation")
        || asks("produce the <state_snapshot>")
        || asks("create a detailed summary of the conversation")
    {
        return Kind::Summary;
    }
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let offers_shell = tools
        .iter()
        .any(|t| t["function"]["name"] == shell || t["name"] == shell);
    if offers_shell && tools.len() > 6 && !last.contains("Reply with ONLY the suggestion") {
        Kind::Main
    } else {
        Kind::Other
    }
}

fn answer(
    method: &str,
    path: &str,
    raw: &[u8],
    state: &Mutex<State>,
    shell: &str,
    model: &str,
) -> super::Answer {
    let text_body = String::from_utf8_lossy(raw).into_owned();
    let body: Value = serde_json::from_slice(raw).unwrap_or_default();
    if method != "POST" || !path.ends_with("/chat/completions") {
        state.lock().unwrap().requests.push(Request {
            path: path.into(),
            body: text_body,
            kind: Kind::Other,
            prompt: 0,
        });
        return ("404 Not Found", "application/json", "{}".into());
    }
    let kind = classify(&body, shell);
    let latency = state.lock().unwrap().latency;
    if kind == Kind::Main {
        std::thread::sleep(latency);
    }
    let (turn, id) = {
        let mut s = state.lock().unwrap();
        let last = s.last;
        let turn = match kind {
            Kind::Main => s.script.pop_front().unwrap_or_else(|| text(last, "Done.")),
            Kind::Summary => text(
                last / 20,
                "<state_snapshot>\n<overall_goal>the mock session ran echo</overall_goal>\n</state_snapshot>",
            ),
            Kind::Other => text(100, "ok"),
        };
        let prompt = match &turn {
            Turn::Command { prompt, .. } | Turn::Text { prompt, .. } => *prompt,
        };
        if kind == Kind::Main {
            s.last = prompt;
        }
        s.calls += 1;
        let id = s.calls;
        s.requests.push(Request {
            path: path.into(),
            body: text_body,
            kind,
            prompt,
        });
        (turn, id)
    };
    let (delta, finish, prompt) = match &turn {
        Turn::Command { command, prompt } => (
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{id}"), "type": "function",
                "function": {"name": shell, "arguments": json!({"command": command, "description": "echo"}).to_string()}}]}),
            "tool_calls",
            *prompt,
        ),
        Turn::Text { text, prompt } => (
            json!({"role": "assistant", "content": text}),
            "stop",
            *prompt,
        ),
    };
    let usage =
        json!({"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10});
    if body["stream"] != true {
        let message = match &turn {
            Turn::Command { .. } => {
                json!({"role": "assistant", "content": null, "tool_calls": delta["tool_calls"]})
            }
            Turn::Text { text, .. } => json!({"role": "assistant", "content": text}),
        };
        let reply = json!({"id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage});
        return ("200 OK", "application/json", reply.to_string());
    }
    let chunk = |choices: Value, usage: Option<&Value>| {
        let mut c = json!({"id": format!("chatcmpl-{id}"), "object": "chat.completion.chunk", "created": 0,
            "model": model, "choices": choices});
        if let Some(u) = usage {
            c["usage"] = u.clone();
        }
        format!("data: {c}\n\n")
    };
    let stream = [
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            None,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
            None,
        ),
        chunk(json!([]), Some(&usage)),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    ("200 OK", "text/event-stream", stream)
}
