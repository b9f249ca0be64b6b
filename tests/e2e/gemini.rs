//! A mock Gemini API, just enough to drive the real Gemini CLI offline
//! (`GOOGLE_GEMINI_BASE_URL`).
//!
//! `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` answers one
//! server-sent chunk: a `functionCall` of `run_shell_command`, or text, with
//! `usageMetadata.promptTokenCount` as scripted. Non-streaming
//! `:generateContent` (the next-speaker check, a compression's summary)
//! answers plain JSON. Every request is recorded.

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

/// A request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub body: String,
    /// A streamed request of the agent's loop.
    pub main: bool,
    pub prompt: u64,
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

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn script(&self, turns: impl IntoIterator<Item = Turn>) {
        self.state.lock().unwrap().script = turns.into_iter().collect();
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn answer(method: &str, path: &str, body: &[u8], state: &Mutex<State>) -> super::Answer {
    let raw = String::from_utf8_lossy(body).into_owned();
    if path.contains(":countTokens") {
        return (
            "200 OK",
            "application/json",
            r#"{"totalTokens": 42}"#.into(),
        );
    }
    let stream = path.contains(":streamGenerateContent");
    let once = path.contains(":generateContent");
    if method != "POST" || !(stream || once) {
        state.lock().unwrap().requests.push(Request {
            path: path.into(),
            body: raw,
            main: false,
            prompt: 0,
        });
        return ("404 Not Found", "application/json", "{}".into());
    }
    let (turn, prompt) = {
        let mut s = state.lock().unwrap();
        let last = s.last;
        let turn = if stream {
            s.script.pop_front().unwrap_or_else(|| text(last, "Done."))
        } else if raw.contains("next_speaker") {
            text(
                100,
                r#"{"reasoning": "the model answered", "next_speaker": "user"}"#,
            )
        } else {
            text(
                last / 20,
                "<state_snapshot>the mock session ran echo</state_snapshot>",
            )
        };
        let prompt = match &turn {
            Turn::Command { prompt, .. } | Turn::Text { prompt, .. } => *prompt,
        };
        if stream {
            s.last = prompt;
        }
        s.requests.push(Request {
            path: path.into(),
            body: raw,
            main: stream,
            prompt,
        });
        (turn, prompt)
    };
    let part = match &turn {
        Turn::Command { command, .. } => {
            json!({"functionCall": {"name": "run_shell_command", "args": {"command": command}}})
        }
        Turn::Text { text, .. } => json!({"text": text}),
    };
    let chunk: Value = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 10, "totalTokenCount": prompt + 10},
        "modelVersion": "gemini-2.5-flash",
    });
    if stream {
        ("200 OK", "text/event-stream", format!("data: {chunk}\n\n"))
    } else {
        ("200 OK", "application/json", chunk.to_string())
    }
}
