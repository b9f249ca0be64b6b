//! A mock OpenAI Responses API, just enough to drive the real Codex CLI offline
//! through a custom provider (`wire_api = "responses"`).
//!
//! `POST /v1/responses` answers with server-sent events: `response.created`,
//! one `response.output_item.done` (a `function_call` of `exec_command`, or an
//! assistant message) and `response.completed` with the usage of the turn.
//! The agent's own requests (those offering `exec_command`) follow a script;
//! a title request gets a title, a compaction request a summary. Every
//! request is recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One scripted answer, with the total tokens its usage reports.
#[derive(Clone, Debug)]
pub enum Turn {
    /// Run a shell command.
    Command { cmd: String, total: u64 },
    /// Answer in text.
    Text { text: String, total: u64 },
}

pub fn command(total: u64) -> Turn {
    Turn::Command {
        cmd: "echo hello-from-mock".into(),
        total,
    }
}

pub fn text(total: u64, text: &str) -> Turn {
    Turn::Text {
        text: text.into(),
        total,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The agent's loop.
    Main,
    /// A compaction's summary request.
    Summary,
    /// Titles and the rest.
    Other,
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub body: String,
    pub kind: Kind,
    pub total: u64,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    script: VecDeque<Turn>,
    last: u64,
}

pub struct Mock {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Mock {
    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let port = super::listen(Arc::new(move |method, path, body| {
            answer(method, path, body, &shared)
        }));
        Mock { port, state }
    }

    /// The provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn script(&self, turns: impl IntoIterator<Item = Turn>) {
        let mut s = self.state.lock().unwrap();
        s.script = turns.into_iter().collect();
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn classify(body: &Value) -> Kind {
    let text = body.to_string();
    if text.contains("CONTEXT CHECKPOINT COMPACTION") {
        Kind::Summary
    } else if body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "exec_command"))
    {
        Kind::Main
    } else {
        Kind::Other
    }
}

fn answer(method: &str, path: &str, body: &[u8], state: &Mutex<State>) -> super::Answer {
    let raw = String::from_utf8_lossy(body).into_owned();
    if method != "POST" || !path.starts_with("/v1/responses") {
        state.lock().unwrap().requests.push(Request {
            path: path.into(),
            body: raw,
            kind: Kind::Other,
            total: 0,
        });
        return ("404 Not Found", "application/json", "{}".into());
    }
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let kind = classify(&json);
    let (turn, n) = {
        let mut s = state.lock().unwrap();
        let last = s.last;
        let turn = match kind {
            Kind::Main => s.script.pop_front().unwrap_or_else(|| text(last, "Done.")),
            Kind::Summary => text(last / 20, "Summary: the mock session ran echo."),
            Kind::Other => text(100, "Mock title"),
        };
        let total = match &turn {
            Turn::Command { total, .. } | Turn::Text { total, .. } => *total,
        };
        if kind == Kind::Main {
            s.last = total;
        }
        s.requests.push(Request {
            path: path.into(),
            body: raw,
            kind,
            total,
        });
        (turn, s.requests.len())
    };
    let (item, total) = match &turn {
        Turn::Command { cmd, total } => (
            json!({"type": "function_call", "name": "exec_command",
                "arguments": json!({"cmd": cmd}).to_string(), "call_id": format!("call_{n}")}),
            *total,
        ),
        Turn::Text { text, total } => (
            json!({"type": "message", "role": "assistant", "id": format!("msg_{n}"),
                "content": [{"type": "output_text", "text": text}]}),
            *total,
        ),
    };
    let usage = json!({"input_tokens": total.saturating_sub(20), "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20.min(total), "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": total});
    let id = format!("resp_{n}");
    let events = [
        json!({"type": "response.created", "response": {"id": id}}),
        json!({"type": "response.output_item.done", "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "usage": usage}}),
    ];
    let sse = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    ("200 OK", "text/event-stream", sse)
}
