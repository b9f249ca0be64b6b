//! Codex CLI: its rollout file, its window and where it compacts.
//!
//! The transcript is the session's rollout,
//! `$CODEX_HOME/sessions/<y>/<m>/<d>/rollout-<time>-<session>.jsonl`. Each line
//! is `{timestamp, type, payload}`. Usage comes in two kinds of line:
//!
//! * `event_msg` lines whose `payload.type` is `token_count`, with
//!   `payload.info.last_token_usage` (the last response's usage) and
//!   `payload.info.model_context_window` (the effective window); `info` is
//!   null before the first response;
//! * `token_usage_record` lines, `payload.usage`, written before the hook
//!   for the response that asked for the tool runs (its `token_count` comes
//!   just after).
//!
//! The tokens in context are the usage's `total_tokens`, as Codex counts
//! them itself (`cached_input_tokens` is a part of `input_tokens`, never
//! added again; output and reasoning count). The latest usage is the
//! figure; the window is the latest `token_count`'s, the model the latest
//! `turn_context`'s (the rule is [`crate::usage`]'s). A `compacted` line is
//! a compaction: no figure until the next usage (the context it replaced is
//! gone), or the estimate of the new context Codex writes just after it (a
//! `token_count` with no input and no output, see [`estimate`]).
//!
//! The window Codex reports is an effective one, 95% of the model's (190,000
//! for 200,000). It compacts at `model_auto_compact_token_limit` when
//! `config.toml` sets it, but never past 90% of the model's window, which is
//! also the point when nothing sets it.

pub mod digest;

use std::path::Path;

use serde_json::Value;

use crate::forward::{Happening, Seen, raw};
use crate::tail::contains;
use crate::usage::Fact;
use crate::usage::{count, field};

/// Where Codex compacts when nothing sets it, and at most: this share of the
/// model's (not the effective) window.
pub const COMPACT_SHARE: f64 = 0.90;

/// The window of a model Codex knows nothing of: 272,000 (258,400 effective).
pub const DEFAULT_MODEL_WINDOW: u64 = 272_000;

#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    payload: Option<Value>,
}

/// The tokens in context after a response, from its usage: its
/// `total_tokens`, else input (cached input is a part of it) and output;
/// counts as [`count`] reads them. A usage whose input and output are both
/// 0 is no response's (see [`estimate`]): `None`, as is one whose numbers
/// cannot be read.
///
/// ```
/// use interband_hosts::codex::context_tokens;
/// use serde_json::json;
/// assert_eq!(context_tokens(&json!({"input_tokens": 120000, "output_tokens": 500, "total_tokens": 120500})), Some(120_500));
/// assert_eq!(context_tokens(&json!({"input_tokens": 0, "output_tokens": 0, "total_tokens": 940499})), None);
/// assert_eq!(context_tokens(&json!({"input_tokens": "1.2e5", "output_tokens": 0})), Some(120_000));
/// assert_eq!(context_tokens(&json!({"input_tokens": 120000, "total_tokens": "many"})), None);
/// ```
pub fn context_tokens(usage: &Value) -> Option<u64> {
    let obj = usage.as_object()?;
    obj.get("input_tokens").or(obj.get("total_tokens"))?;
    let input = field(obj, "input_tokens")?;
    let output = field(obj, "output_tokens")?;
    if input == 0 && output == 0 && estimated(obj) {
        return None;
    }
    match obj.get("total_tokens").filter(|v| !v.is_null()) {
        Some(total) => count(total),
        None => Some(input.saturating_add(output)),
    }
}

/// Whether a usage states no input and no output: Codex writes such a
/// `token_count` just after a compaction (in 0.104 also just before it),
/// its `total_tokens` Codex's estimate of the new context (2.7k-7k seen),
/// where a real 0.104 rollout also carried the session's running total
/// (940,499 in a 258,400 window).
fn estimated(obj: &serde_json::Map<String, Value>) -> bool {
    let stated = |k: &str| obj.get(k).is_some_and(|v| !v.is_null());
    stated("input_tokens") || stated("output_tokens")
}

/// Codex's estimate of the context a compaction left, from such a usage
/// and the window its line states: only when it fits the window.
///
/// ```
/// use interband_hosts::codex::estimate;
/// use serde_json::json;
/// let e = |total| json!({"input_tokens": 0, "output_tokens": 0, "total_tokens": total});
/// assert_eq!(estimate(&e(6_074), Some(258_400)), Some(6_074));
/// assert_eq!(estimate(&e(940_499), Some(258_400)), None, "a running total");
/// assert_eq!(estimate(&e(6_074), None), None, "no window to judge it by");
/// assert_eq!(estimate(&json!({"input_tokens": 5, "output_tokens": 0, "total_tokens": 5}), Some(258_400)), None);
/// ```
pub fn estimate(usage: &Value, window: Option<u64>) -> Option<u64> {
    let obj = usage.as_object()?;
    let zero = field(obj, "input_tokens")? == 0 && field(obj, "output_tokens")? == 0;
    if !(zero && estimated(obj)) {
        return None;
    }
    let window = window?;
    count(obj.get("total_tokens")?).filter(|&t| t <= window)
}

/// Codex CLI's reader (see the module's documentation).
pub(crate) fn fact(line: &[u8], offset: u64) -> Option<Fact> {
    let line = crate::tail::trimmed(line);
    let interesting = contains(line, b"token_count")
        || contains(line, b"token_usage_record")
        || contains(line, b"\"compacted\"")
        || contains(line, b"turn_context");
    if !interesting {
        return None;
    }
    let l = serde_json::from_slice::<Line>(line).ok()?;
    let payload = l.payload.unwrap_or_default();
    let usage = |usage: &Value, window: Option<u64>| {
        Some(Fact::Usage {
            message: None,
            tokens: context_tokens(usage)?,
            model: None,
            window,
            version: None,
        })
    };
    match l.kind.as_ref().and_then(Value::as_str) {
        Some("event_msg") if payload["type"] == "token_count" => {
            let info = &payload["info"];
            let (last, window) = (
                &info["last_token_usage"],
                count(&info["model_context_window"]).filter(|&w| w > 0),
            );
            match estimate(last, window) {
                Some(tokens) => Some(Fact::Estimate {
                    tokens,
                    window: window?,
                }),
                None => usage(last, window),
            }
        }
        Some("token_usage_record") => usage(&payload["usage"], None),
        Some("turn_context") => payload["model"].as_str().map(|m| Fact::Model(m.to_owned())),
        Some("compacted") => Some(Fact::Compaction {
            mark: format!("compacted@{offset}"),
            tokens: None,
            before: None,
            automatic: None,
            window: None,
        }),
        _ => None,
    }
}

/// What Codex's `config.toml` (`$CODEX_HOME`, else `~/.codex`) says of the
/// window and the compaction point, when it says.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Config {
    /// `model_context_window`.
    pub window: Option<u64>,
    /// `model_auto_compact_token_limit`.
    pub compact_at: Option<u64>,
}

/// Reads `config.toml` from Codex's home folder (bounded, without blocking).
pub fn config(codex_home: Option<&Path>) -> Config {
    let Some(home) = codex_home else {
        return Config::default();
    };
    let Ok(bytes) = interband::fsio::read_regular(&home.join("config.toml"), 1 << 20) else {
        return Config::default();
    };
    let Ok(t) = toml::from_str::<toml::Table>(&String::from_utf8_lossy(&bytes)) else {
        return Config::default();
    };
    let n = |k: &str| {
        t.get(k)
            .and_then(toml::Value::as_integer)
            .filter(|v| *v > 0)
            .map(|v| v as u64)
    };
    Config {
        window: n("model_context_window"),
        compact_at: n("model_auto_compact_token_limit"),
    }
}

/// The window Codex reports (`model_context_window` in its token counts)
/// for a model's: it keeps a share back (190,000 for 200,000).
pub fn effective_window(model_window: u64) -> u64 {
    (model_window as f64 * EFFECTIVE_SHARE).round() as u64
}

/// The share of a model's window Codex counts as its effective window.
pub const EFFECTIVE_SHARE: f64 = 0.95;

/// Where Codex compacts, given the effective window it reports: the
/// configured limit, at most [`COMPACT_SHARE`] of the model's window (the
/// effective one over [`EFFECTIVE_SHARE`]), which is also the point when
/// nothing is configured.
///
/// ```
/// use interband_hosts::codex::{compaction_point, Config};
/// assert_eq!(compaction_point(190_000, &Config::default()), 180_000);
/// let low = Config { compact_at: Some(150_000), ..Default::default() };
/// assert_eq!(compaction_point(190_000, &low), 150_000);
/// let high = Config { compact_at: Some(195_000), ..Default::default() };
/// assert_eq!(compaction_point(190_000, &high), 180_000);
/// ```
pub fn compaction_point(effective: u64, config: &Config) -> u64 {
    let model_window = (effective as f64 / EFFECTIVE_SHARE).round();
    let cap = (model_window * COMPACT_SHARE).floor() as u64;
    config.compact_at.map_or(cap, |at| at.min(cap))
}

/// Why nobody is at this session's keyboard, when its rollout says so: the
/// first line (`session_meta`) names who started the session, `originator:
/// "codex_exec"` and `source: "exec"` for `codex exec` (also `mcp`: a
/// program drives it); the interactive UI writes `originator: "codex-tui"`,
/// `source: "cli"` (captured: `tests/fixtures/headless/`). At most [`HEAD_LIMIT`] bytes are read; a first line longer than
/// that is searched for the exec originator as it stands.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let rollout = dir.path().join("rollout-2026-11-30T07-24-45-01a2.jsonl");
/// std::fs::write(&rollout, r#"{"type":"session_meta","payload":{"originator":"codex_exec","source":"exec"}}
/// "#).unwrap();
/// assert!(interband_hosts::codex::headless(&rollout).unwrap().contains("codex exec"));
/// std::fs::write(&rollout, r#"{"type":"session_meta","payload":{"originator":"codex-tui","source":"cli"}}
/// "#).unwrap();
/// assert_eq!(interband_hosts::codex::headless(&rollout), None);
/// ```
pub fn headless(rollout: &Path) -> Option<String> {
    use std::io::Read;
    let (file, _) = crate::open_transcript(rollout).ok()?;
    let mut head = Vec::new();
    file.take(HEAD_LIMIT).read_to_end(&mut head).ok()?;
    let exec = || "its rollout says `codex exec` started it".to_owned();
    let Some(end) = memchr::memchr(b'\n', &head) else {
        return contains(&head, br#""originator":"codex_exec""#).then(exec);
    };
    let meta: Value = serde_json::from_slice(&head[..end]).ok()?;
    let payload = meta
        .get("payload")
        .filter(|_| meta["type"] == "session_meta")?;
    let originator = payload["originator"].as_str().unwrap_or("");
    match payload["source"].as_str() {
        Some("exec") => Some(exec()),
        Some("mcp") => Some("its rollout says a program started it (`codex mcp`)".into()),
        Some(_) => None,
        None => (originator == "codex_exec").then(exec),
    }
}

/// The most of a rollout's head [`headless`] reads.
pub const HEAD_LIMIT: u64 = 256 << 10;

/// Codex CLI's lines, forward (see [`crate::forward`]): a `response_item`
/// function or custom tool call is a call (its `arguments` are a JSON
/// string), its `*_output` the result; an assistant message is activity; an
/// `event_msg` `user_message` is a prompt, `task_complete` ends the turn; a
/// `compacted` line is a compaction.
pub(crate) fn forward(line: &[u8], offset: u64) -> Seen {
    Seen::stamped(line, fact(line, offset), happenings(line))
}

fn happenings(line: &[u8]) -> Vec<Happening> {
    let line = crate::tail::trimmed(line);
    let interesting = contains(line, b"response_item")
        || contains(line, b"event_msg")
        || contains(line, b"\"compacted\"");
    if !interesting {
        return Vec::new();
    }
    let Ok(l) = serde_json::from_slice::<Line>(line) else {
        return Vec::new();
    };
    let p = l.payload.unwrap_or_default();
    let kind = p["type"].as_str().unwrap_or("");
    match l.kind.as_ref().and_then(Value::as_str) {
        Some("response_item") => match kind {
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let arguments = match &p["arguments"] {
                    Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                    Value::Null => p["input"].clone(),
                    v => v.clone(),
                };
                let arguments = if kind == "local_shell_call" {
                    p["action"].clone()
                } else {
                    arguments
                };
                let (name, input) = hook_tool(p["name"].as_str().unwrap_or("shell"), &arguments);
                vec![
                    Happening::Activity,
                    Happening::ToolCall {
                        id: p["call_id"].as_str().map(str::to_owned),
                        name,
                        input: raw(&input),
                        subagent: false,
                    },
                ]
            }
            "function_call_output" | "custom_tool_call_output" => {
                let Some(id) = p["call_id"].as_str() else {
                    return Vec::new();
                };
                vec![Happening::ToolResult {
                    id: id.to_owned(),
                    response: raw(&p["output"]),
                    error: false,
                    subagent: false,
                }]
            }
            "message" if p["role"] == "assistant" => vec![Happening::Activity],
            _ => Vec::new(),
        },
        Some("event_msg") => match kind {
            "user_message" => vec![Happening::TurnEnded, Happening::Prompt],
            "task_complete" => vec![Happening::EndsTurn],
            _ => Vec::new(),
        },
        Some("compacted") => vec![Happening::Compaction {
            trigger: Some("auto".to_owned()),
            pre_tokens: None,
            post_tokens: None,
        }],
        _ => Vec::new(),
    }
}

/// The tool name Codex's hooks give a call, and the input they give it:
/// its shell tools are `Bash` with `{command}`, as in its hook inputs.
fn hook_tool(name: &str, arguments: &Value) -> (String, Value) {
    match name {
        "exec_command" | "shell" | "local_shell" | "container.exec" => {
            let command = match (&arguments["cmd"], &arguments["command"]) {
                (Value::String(c), _) | (_, Value::String(c)) => Value::String(c.clone()),
                (_, Value::Array(parts)) => Value::String(
                    parts
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => Value::Null,
            };
            ("Bash".to_owned(), serde_json::json!({ "command": command }))
        }
        other => (other.to_owned(), arguments.clone()),
    }
}

/// Codex's home folder: `$CODEX_HOME`, else `~/.codex` ([`crate::Profile::host_home`]).
pub fn home(env: &dyn interband::settings::Env) -> Option<std::path::PathBuf> {
    crate::CODEX.host_home(env)
}

/// The window and compaction point of a Codex session ([`crate::Host::limits`]):
/// the rollout's effective window, else `config.toml`'s, else configured,
/// or [`DEFAULT_MODEL_WINDOW`]'s effective window.
pub(crate) fn limits(k: &crate::Known, env: &dyn interband::settings::Env) -> crate::Limits {
    use interband::context::WindowSource as From;
    let cfg = config(home(env).as_deref());
    let (window, source) = k
        .stated
        .filter(|(w, _)| *w > 0)
        .or(k.transcript.map(|w| (w, From::Transcript)))
        .or(cfg
            .window
            .map(|w| (effective_window(w), From::HostSettings)))
        .or((k.configured > 0).then_some((k.configured, From::Configured)))
        .unwrap_or((effective_window(DEFAULT_MODEL_WINDOW), From::Default));
    crate::Limits {
        window,
        compact_at: compaction_point(window, &cfg),
        source,
        other: None,
        other_compact_at: None,
    }
}

/// Whether a transcript at `path` is a Codex rollout (`rollout-*.jsonl`).
pub(crate) fn owns_transcript(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// [`headless`], as the profile asks it: only a rollout tells.
pub(crate) fn headless_of(
    transcript: Option<&Path>,
    _env: &dyn interband::settings::Env,
) -> Option<String> {
    transcript.and_then(headless)
}

/// Where Codex keeps a session's rollout: `sessions/<date>/rollout-<time>-<session>.jsonl`
/// (a fixed date: only the name's shape tells).
pub(crate) fn transcript_at(folder: &Path, _project: &Path, session: &str) -> std::path::PathBuf {
    folder
        .join("sessions/2026/01/01")
        .join(format!("rollout-2026-01-01T00-00-00-{session}.jsonl"))
}

/// What installing into Codex must say: it runs a hook only once trusted,
/// and a project's (its `.codex/` folder) only in a project it trusts
/// (0.171.0 says "Untrusted project-local configuration is disabled" and
/// runs none of them, the hooks' own trust notwithstanding; seen live in
/// tests/fixtures/project-forms-live/).
pub(crate) fn install_notes(_settings: &Value, flags: &str) -> Vec<String> {
    let mut notes = vec![format!(
        "Codex CLI runs a hook only once you trust it: review them with `/hooks` in Codex, \
         or run `interband install{flags} --trust` to trust interband's"
    )];
    if flags.contains(" --project") {
        notes.push(
            "Codex CLI reads a project's .codex/ folder, its hooks with it, only in a project it \
             trusts: run `codex exec --trust` there once, as Codex itself advises"
                .to_owned(),
        );
    }
    notes
}

/// The rollout of the subagent `agent` (a thread of its own, spawned by
/// the session's `spawn_agent`): `transcript` itself where it is that
/// rollout (a subagent's own hooks name it), else the one beside it, in the
/// session's day folder, named `rollout-<time>-<agent>.jsonl`
/// (tests/fixtures/codex-0.171.0-subagent/).
fn subagent_rollout(transcript: &Path, agent: &str) -> Option<std::path::PathBuf> {
    let agent = interband::paths::safe_key(agent);
    let end = format!("-{agent}.jsonl");
    let named = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&end))
    };
    if named(transcript) {
        return Some(transcript.to_path_buf());
    }
    std::fs::read_dir(transcript.parent()?)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| named(p))
}

/// A subagent's own figure, from its own rollout's last `token_count` (its
/// model's window with it).
pub(crate) fn subagent_figure(
    transcript: &Path,
    _session: &str,
    agent: &str,
) -> Option<crate::usage::TailUsage> {
    let rollout = subagent_rollout(transcript, agent)?;
    crate::tail::figure_of(&rollout, crate::Host::Codex)
}

/// Whether a subagent's last turn has ended (`task_complete`, or
/// `turn_aborted` when its session ended under it), as its own rollout says;
/// a turn started again (the session sent it more) runs.
pub(crate) fn subagent_done(transcript: &Path, _session: &str, agent: &str) -> bool {
    let Some(bytes) =
        subagent_rollout(transcript, agent).and_then(|r| crate::tail::last_bytes(&r, 256 << 10))
    else {
        return false;
    };
    bytes
        .split(|&b| b == b'\n')
        .rev()
        .filter(|l| contains(l, b"\"task_") || contains(l, b"turn_aborted"))
        .find_map(|l| {
            let v: Value = serde_json::from_slice(crate::tail::trimmed(l)).ok()?;
            match v["payload"]["type"].as_str()? {
                "task_complete" | "turn_aborted" => Some(true),
                "task_started" => Some(false),
                _ => None,
            }
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;
    use crate::tail::tail_of;
    use crate::usage::UsageKind;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl"
    );

    fn line(kind: &str, payload: Value) -> String {
        serde_json::json!({"timestamp": "2026-11-30T00:00:00Z", "type": kind, "payload": payload})
            .to_string()
    }

    fn token_count(input: u64, output: u64, window: u64) -> String {
        let usage = serde_json::json!({"input_tokens": input, "cached_input_tokens": input / 2,
            "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output});
        line(
            "event_msg",
            serde_json::json!({"type": "token_count", "info": {"total_token_usage": usage,
                "last_token_usage": usage, "model_context_window": window}}),
        )
    }

    fn record(input: u64) -> String {
        line(
            "token_usage_record",
            serde_json::json!({"usage": {"input_tokens": input, "cached_input_tokens": input, "output_tokens": 20}}),
        )
    }

    fn file(lines: &[String]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    #[test]
    fn the_real_rollout_at_post_tool_use_gives_the_record() {
        let tail = tail_of(&std::fs::read(FIXTURE).unwrap(), Host::Codex);
        let u = tail.usage.unwrap();
        assert_eq!(
            u.used_tokens, 140_020,
            "total_tokens: input (cached is a part of it) and output"
        );
        assert_eq!(u.model.as_deref(), Some("gpt-5.1-codex"));
    }

    #[test]
    fn the_nearest_usage_decides_and_the_nearest_token_count_gives_the_window() {
        let bytes = file(&[
            token_count(100_000, 10, 190_000),
            line(
                "turn_context",
                serde_json::json!({"model": "gpt-5.1-codex"}),
            ),
            record(120_000),
        ]);
        let u = tail_of(&bytes, Host::Codex).usage.unwrap();
        assert_eq!((u.used_tokens, u.window), (120_020, Some(190_000)));
        assert_eq!(u.model.as_deref(), Some("gpt-5.1-codex"));
        let bytes = file(&[record(120_000), token_count(130_000, 5, 190_000)]);
        let u = tail_of(&bytes, Host::Codex).usage.unwrap();
        assert_eq!((u.used_tokens, u.window), (130_005, Some(190_000)));
    }

    #[test]
    fn a_compaction_ends_the_old_figures() {
        let bytes = file(&[
            token_count(180_000, 10, 190_000),
            line("compacted", serde_json::json!({"message": "summary"})),
        ]);
        let tail = tail_of(&bytes, Host::Codex);
        assert_eq!(tail.usage, None);
        assert!(tail.latest_boundary.is_some());
        let bytes = file(&[
            token_count(180_000, 10, 190_000),
            line("compacted", serde_json::json!({"message": "summary"})),
            token_count(9_000, 10, 190_000),
        ]);
        assert_eq!(
            tail_of(&bytes, Host::Codex).usage.unwrap().used_tokens,
            9_010
        );
    }

    #[test]
    fn the_compaction_point_comes_from_config_toml() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(config(Some(home.path())), Config::default());
        assert_eq!(compaction_point(190_000, &Config::default()), 180_000);
        std::fs::write(
            home.path().join("config.toml"),
            "model_context_window = 200000\nmodel_auto_compact_token_limit = 150000\n",
        )
        .unwrap();
        let c = config(Some(home.path()));
        assert_eq!((c.window, c.compact_at), (Some(200_000), Some(150_000)));
        assert_eq!(compaction_point(190_000, &c), 150_000);
    }

    /// Codex 0.104 at a compaction: `token_count` lines with no input and
    /// no output, whose `total_tokens` is the session's running total.
    fn running_total(total: u64, window: u64) -> String {
        let usage = serde_json::json!({"input_tokens": 0, "cached_input_tokens": 0,
            "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": total});
        line(
            "event_msg",
            serde_json::json!({"type": "token_count", "info": {"total_token_usage": usage,
                "last_token_usage": usage, "model_context_window": window}}),
        )
    }

    #[test]
    fn a_token_count_of_no_input_and_no_output_is_no_figure() {
        let compacted = line("compacted", serde_json::json!({"message": "summary"}));
        // After the compaction: unknown until a real response, never the running total.
        let bytes = file(&[
            token_count(230_000, 10, 258_400),
            compacted.clone(),
            running_total(940_499, 258_400),
            running_total(940_499, 258_400),
        ]);
        let tail = tail_of(&bytes, Host::Codex);
        assert_eq!(tail.usage, None, "no figure after the compaction yet");
        assert!(tail.latest_boundary.is_some(), "the compaction still shows");
        let forward = Host::Codex.read_forward(&bytes);
        assert_eq!(forward.usage, None);
        // Codex's estimate of the new context, right after it, is its figure.
        let bytes = file(&[
            token_count(230_000, 10, 258_400),
            running_total(6_074, 258_400),
            compacted.clone(),
            running_total(6_074, 258_400),
        ]);
        for u in [
            tail_of(&bytes, Host::Codex).usage,
            Host::Codex.read_forward(&bytes).usage,
        ] {
            let u = u.unwrap();
            assert_eq!(
                (u.used_tokens, u.kind, u.window),
                (6_074, UsageKind::CompactBoundary, Some(258_400))
            );
        }
        // Without a compaction before them, the last good figure stands.
        let bytes = file(&[
            token_count(120_000, 10, 258_400),
            running_total(940_499, 258_400),
        ]);
        assert_eq!(
            tail_of(&bytes, Host::Codex).usage.unwrap().used_tokens,
            120_010
        );
        // The next real response gives the figure again.
        let bytes = file(&[
            token_count(230_000, 10, 258_400),
            compacted,
            running_total(940_499, 258_400),
            token_count(21_000, 0, 258_400),
        ]);
        let u = tail_of(&bytes, Host::Codex).usage.unwrap();
        assert_eq!((u.used_tokens, u.window), (21_000, Some(258_400)));
    }

    #[test]
    fn usage_written_as_floats_or_strings_is_the_number_it_says() {
        let with = |usage: serde_json::Value| {
            file(&[
                token_count(100_000, 0, 258_400),
                line(
                    "event_msg",
                    serde_json::json!({"type": "token_count", "info": {"last_token_usage": usage,
                        "model_context_window": 258_400}}),
                ),
            ])
        };
        let used = |usage| {
            tail_of(&with(usage), Host::Codex)
                .usage
                .map(|u| u.used_tokens)
        };
        use serde_json::json;
        assert_eq!(
            used(json!({"input_tokens": 1.8e5, "output_tokens": 0, "total_tokens": 1.8e5})),
            Some(180_000)
        );
        assert_eq!(
            used(json!({"input_tokens": "180000", "output_tokens": "5"})),
            Some(180_005)
        );
        assert_eq!(
            used(json!({"input_tokens": 150000.7, "output_tokens": 0})),
            Some(150_001)
        );
        // Anything else: the line is skipped, the last good figure kept.
        assert_eq!(
            used(json!({"input_tokens": "many", "total_tokens": 5})),
            Some(100_000)
        );
        assert_eq!(
            used(json!({"input_tokens": -5, "output_tokens": 1})),
            Some(100_000)
        );
        assert_eq!(
            used(json!({"input_tokens": 10, "total_tokens": {"n": 1}})),
            Some(100_000)
        );
    }
}
