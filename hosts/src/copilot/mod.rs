//! GitHub Copilot CLI: its session log, its window and where it compacts,
//! its statusline, and how a hook tells a headless run (captured from the
//! real CLI, 1.0.30 to 1.0.102, `tests/fixtures/copilot-cli-*`).
//!
//! The transcript is `$COPILOT_HOME/session-state/<session>/events.jsonl`
//! (`~/.copilot` by default): one event a line, `{type, data, id,
//! timestamp, parentId}`. The `Stop` and `PreCompact` inputs name it; a tool
//! call's do not, and it is found by its session. Each model call writes a
//! `session.usage_record` (1.0.102 and later; before, a hook can read no
//! call's usage, only the statusline's): `data.usage.inputTokens` is the
//! prompt it sent (the agent's own calls are `interactionType:
//! "conversation-agent"`), `maxPromptTokens` the window Copilot measures it
//! against, `model` the model. A compaction is `session.compaction_complete`
//! (`success`, `postCompactionTokens`, `preCompactionTokens`, `trigger`:
//! `threshold` when Copilot compacted on its own, `tokenLimit`: the window
//! it compacted for); Copilot compacts at 80% of the window
//! (`COPILOT_BACKGROUND_COMPACTION_THRESHOLD`), with no hook after it: the
//! note comes back with the next tool call. A session's end,
//! `session.shutdown`, states `currentTokens` of `currentModel` in every
//! release (1.0.30 on): the figure of a session that ended, and where a
//! resumed one starts.
//!
//! Its statusline (interactive only) states the context Copilot counts,
//! `context_window.current_context_tokens` of `displayed_context_limit`;
//! its `current_usage` is the session's running total, no context figure.

pub mod digest;

use std::path::Path;

use serde_json::Value;

use crate::forward::{Happening, Seen, raw};
use crate::tail::contains;
use crate::usage::Fact;

/// The share of the window at which Copilot compacts, by default.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// The window assumed before Copilot states one (its models' largest prompt
/// limits), with [`SMALLER_WINDOW`] the other possibility.
pub const LARGEST_WINDOW: u64 = 128_000;

/// The smaller window a Copilot model may have (gpt-4.1's 64,000).
pub const SMALLER_WINDOW: u64 = 64_000;

/// One event line, as far as the figure needs it.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    data: Option<Value>,
    /// The subagent whose line it is (1.0.102: its events are written
    /// into its session's log, each naming it).
    #[serde(rename = "agentId")]
    agent: Option<Value>,
}

impl Line {
    /// The subagent the line is of, if any.
    fn agent(&self) -> Option<&str> {
        self.agent
            .as_ref()
            .and_then(Value::as_str)
            .filter(|a| !a.is_empty())
    }
}

/// Copilot CLI's reader (see the module's documentation).
pub(crate) fn fact(line: &[u8], offset: u64) -> Option<Fact> {
    let line = crate::tail::trimmed(line);
    let usage = contains(line, b"session.usage_record");
    let compaction = contains(line, b"session.compaction_complete");
    let user = contains(line, b"user.message");
    let shutdown = contains(line, b"session.shutdown");
    if !usage && !compaction && !user && !shutdown {
        return None;
    }
    let l = serde_json::from_slice::<Line>(line).ok()?;
    // A subagent's line is its own context's, none of the session's.
    if l.agent().is_some() {
        return None;
    }
    let data = l.data.unwrap_or_default();
    let id = l.id.as_ref().and_then(Value::as_str).map(str::to_owned);
    match l.kind.as_ref().and_then(Value::as_str) {
        Some("session.usage_record") => {
            let u = data.get("usage")?;
            let agent = u
                .get("interactionType")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "conversation-agent");
            if !agent {
                return None;
            }
            usage_of(u, id)
        }
        Some("user.message") => Some(Fact::Break),
        // A session's end states its context (every release seen, 1.0.30 on,
        // where no call's usage is written before 1.0.102): a resumed
        // session starts from it, an ended one shows it.
        Some("session.shutdown") => Some(Fact::Usage {
            message: id,
            tokens: crate::usage::count(data.get("currentTokens")?).filter(|t| *t > 0)?,
            model: data
                .get("currentModel")
                .and_then(Value::as_str)
                .map(str::to_owned),
            window: None,
            version: None,
        }),
        Some("session.compaction_complete") if data["success"] != false => Some(Fact::Compaction {
            mark: id.unwrap_or_else(|| format!("compaction@{offset}")),
            tokens: data
                .get("postCompactionTokens")
                .and_then(crate::usage::count),
            before: data
                .get("preCompactionTokens")
                .and_then(crate::usage::count),
            // Copilot compacts on its own at its threshold.
            automatic: data["trigger"].as_str().map(|t| t != "manual"),
            window: data
                .get("tokenLimit")
                .and_then(crate::usage::count)
                .filter(|w| *w > 0),
        }),
        _ => None,
    }
}

/// A `session.usage_record`'s `usage`, as a figure.
fn usage_of(u: &Value, message: Option<String>) -> Option<Fact> {
    Some(Fact::Usage {
        message,
        tokens: crate::usage::count(u.get("inputTokens")?)?,
        model: u.get("model").and_then(Value::as_str).map(str::to_owned),
        window: u
            .get("maxPromptTokens")
            .and_then(crate::usage::count)
            .filter(|w| *w > 0),
        version: None,
    })
}

/// The subagent `agent`'s own figure: its last `session.usage_record` in
/// its session's log (`transcript`), whose lines name it (1.0.102). Copilot
/// appends that log in batches, some hundreds of milliseconds late
/// (docs/hosts.md): a hook may read the answer before the last, or none yet.
pub(crate) fn subagent_figure(
    transcript: &Path,
    _session: &str,
    agent: &str,
) -> Option<crate::usage::TailUsage> {
    let bytes = crate::tail::last_bytes(transcript, crate::tail::SUBAGENT_SCAN)?;
    bytes.split(|&b| b == b'\n').rev().find_map(|raw| {
        let line = crate::tail::trimmed(raw);
        if !contains(line, b"session.usage_record") || !contains(line, agent.as_bytes()) {
            return None;
        }
        let l = serde_json::from_slice::<Line>(line).ok()?;
        if l.agent() != Some(agent) {
            return None;
        }
        let Fact::Usage {
            tokens,
            model,
            window,
            ..
        } = usage_of(l.data.as_ref()?.get("usage")?, None)?
        else {
            return None;
        };
        Some(crate::usage::TailUsage {
            used_tokens: tokens,
            kind: crate::usage::UsageKind::Assistant,
            model,
            window,
            version: None,
            offset: 0,
        })
    })
}

/// A line read forward, for a re-enactment.
pub(crate) fn forward(line: &[u8], offset: u64) -> Seen {
    Seen::stamped(line, fact(line, offset), happenings(line))
}

fn happenings(line: &[u8]) -> Vec<Happening> {
    let line = crate::tail::trimmed(line);
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return Vec::new();
    };
    let d = &v["data"];
    // A subagent's line (1.0.102): its calls and results, nothing of the
    // session's turn.
    let sub = v["agentId"].as_str().is_some_and(|a| !a.is_empty());
    match v["type"].as_str() {
        Some("assistant.message") => {
            let mut out = Vec::new();
            if !sub {
                out.push(Happening::Activity);
            }
            for t in d["toolRequests"].as_array().into_iter().flatten() {
                out.push(Happening::ToolCall {
                    id: t["toolCallId"].as_str().map(str::to_owned),
                    name: t["name"].as_str().unwrap_or("?").to_owned(),
                    input: raw(&t["arguments"]),
                    subagent: sub,
                });
            }
            if !sub && d["toolRequests"].as_array().is_none_or(Vec::is_empty) {
                out.push(Happening::EndsTurn);
            }
            out
        }
        Some("tool.execution_complete") => d["toolCallId"]
            .as_str()
            .map(|id| Happening::ToolResult {
                id: id.to_owned(),
                error: d["success"] == false,
                response: raw(&d["result"]),
                subagent: sub,
            })
            .into_iter()
            .collect(),
        _ if sub => Vec::new(),
        Some("user.message") => vec![Happening::TurnEnded, Happening::Prompt],
        Some("session.compaction_start") => vec![Happening::Compaction {
            trigger: d["trigger"]
                .as_str()
                .map(|t| if t == "manual" { "manual" } else { "auto" }.to_owned()),
            pre_tokens: d["currentTokens"].as_u64(),
            post_tokens: None,
        }],
        _ => Vec::new(),
    }
}

/// Whether a transcript at `path` is Copilot's: `events.jsonl` in a
/// session's folder under `session-state`.
pub(crate) fn owns_transcript(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "events.jsonl")
        && path
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .is_some_and(|n| n == "session-state")
}

/// Where Copilot keeps a session's log: `session-state/<session>/events.jsonl`.
pub(crate) fn transcript_at(folder: &Path, _project: &Path, session: &str) -> std::path::PathBuf {
    folder
        .join("session-state")
        .join(session)
        .join("events.jsonl")
}

/// Its statusline's context: `current_context_tokens` of
/// `displayed_context_limit` (else `context_window_size`); the transcript is
/// the session's folder's `events.jsonl`.
///
/// ```
/// # use interband_hosts::copilot::statusline_context;
/// let input = serde_json::json!({"transcript_path": "/h/.copilot/session-state/s1",
///     "context_window": {"current_usage": {"input_tokens": 61000}, "current_context_tokens": 12555,
///                        "displayed_context_limit": 64000, "context_window_size": 64000}});
/// let s = statusline_context(&input);
/// assert_eq!((s.used, s.window), (Some(12_555), Some(64_000)));
/// assert_eq!(s.transcript.as_deref(), Some("/h/.copilot/session-state/s1/events.jsonl"));
/// ```
pub fn statusline_context(input: &Value) -> crate::Stated {
    let cw = &input["context_window"];
    let n = |k: &str| crate::usage::count(&cw[k]).filter(|n| *n > 0);
    crate::Stated {
        used: crate::usage::count(&cw["current_context_tokens"]),
        window: n("displayed_context_limit").or_else(|| n("context_window_size")),
        transcript: input["transcript_path"]
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .map(|t| {
                let t = Path::new(t);
                if t.file_name().is_some_and(|n| n == "events.jsonl") {
                    t.to_path_buf()
                } else {
                    t.join("events.jsonl")
                }
                .to_string_lossy()
                .into_owned()
            }),
    }
}

/// The window and compaction point of a Copilot session ([`crate::Host::limits`]):
/// the statusline's, else the transcript's (each call's `maxPromptTokens`),
/// else `COPILOT_PROVIDER_MAX_PROMPT_TOKENS`, else `[interpulse] window`,
/// else [`LARGEST_WINDOW`] assumed with [`SMALLER_WINDOW`] possible;
/// compaction at `COPILOT_BACKGROUND_COMPACTION_THRESHOLD` (0.8) of it.
pub(crate) fn limits(k: &crate::Known, env: &dyn interband::settings::Env) -> crate::Limits {
    use interband::context::WindowSource as From;
    let provider = env
        .var("COPILOT_PROVIDER_MAX_PROMPT_TOKENS")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|w| *w > 0);
    let known = k
        .stated
        .filter(|(w, _)| *w > 0)
        .or(k.transcript.map(|w| (w, From::Transcript)))
        .or(provider.map(|w| (w, From::Launch)))
        .or((k.configured > 0).then_some((k.configured, From::Configured)));
    let threshold = env
        .var("COPILOT_BACKGROUND_COMPACTION_THRESHOLD")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0 && *t <= 1.0)
        .unwrap_or(DEFAULT_THRESHOLD);
    let at = |w: u64| (w as f64 * threshold).floor() as u64;
    let settled = k
        .history
        .and_then(|h| h.settles(LARGEST_WINDOW, SMALLER_WINDOW, at(LARGEST_WINDOW)));
    let (window, source, other) = match known.or(settled) {
        Some((w, source)) => (w, source, None),
        None if k.used > SMALLER_WINDOW => (LARGEST_WINDOW, From::Usage, None),
        None => (LARGEST_WINDOW, From::Guess, Some(SMALLER_WINDOW)),
    };
    crate::Limits {
        window,
        compact_at: at(window),
        source,
        other,
        other_compact_at: other.map(at),
    }
}

/// Why the Copilot CLI running this hook is headless (`copilot -p`), `None`
/// for an interactive one and where no Copilot process is found among the
/// hook's parent and grandparent.
pub(crate) fn headless_of(
    _transcript: Option<&Path>,
    _env: &dyn interband::settings::Env,
) -> Option<String> {
    let (_, args) = crate::process::host_ancestor(|a| copilot_args(a).is_some())?;
    headless_args(&args)
}

/// The arguments after the program, when `args` are Copilot CLI's (its
/// native `copilot`, or `node .../bin/copilot`, `node .../@github/copilot/index.js`).
fn copilot_args(args: &[String]) -> Option<&[String]> {
    crate::process::args_after(args, "copilot", "@github/copilot")
}

/// Why a process with the command line `args` is a headless Copilot CLI
/// (`-p`, `--prompt`); `None` for any other process.
///
/// ```
/// # use interband_hosts::copilot::headless_args;
/// let args = |a: &str| a.split(' ').map(str::to_owned).collect::<Vec<_>>();
/// assert!(headless_args(&args("/x/@github/copilot-linux-x64/copilot -p Run --allow-all-tools")).is_some());
/// assert!(headless_args(&args("node /x/bin/copilot --prompt=hi")).is_some());
/// assert_eq!(headless_args(&args("/x/copilot --allow-all-tools")), None);
/// assert_eq!(headless_args(&args("node -p 1")), None);
/// ```
pub fn headless_args(args: &[String]) -> Option<String> {
    crate::process::prompt_flag(copilot_args(args)?, "copilot")
}

/// Copilot CLI's camelCase hook input (what its camelCase keys are always
/// sent, and its PascalCase keys before the later 1.0 releases: 1.0.49 sends
/// every event but `Stop` so): made snake_case, the event named from what it
/// carries (such an input has no event name).
///
/// ```
/// # use interband_hosts::input::HookInput;
/// let camel = br#"{"sessionId":"s1","timestamp":1796292398116,"cwd":"/p","toolName":"bash",
///     "toolArgs":{"command":"echo hi"},"toolResult":{"resultType":"success","textResultForLlm":"hi"}}"#;
/// let i = HookInput::parse_as(camel, Some(interband_hosts::Host::Copilot)).unwrap();
/// assert_eq!((i.hook_event_name.as_str(), i.session_id.as_str(), i.tool_name.as_str()), ("PostToolUse", "s1", "bash"));
/// assert!(i.tool_response.is_some());
/// ```
pub(crate) fn input_shape(o: &mut crate::input::TopLevel) {
    if o.contains_key("hook_event_name") {
        return;
    }
    let has = |k: &str| o.contains_key(k);
    let event = if has("toolResult") {
        "PostToolUse"
    } else if has("toolName") && has("error") {
        "PostToolUseFailure"
    } else if has("toolName") {
        "PreToolUse"
    } else if has("stopReason") {
        "Stop"
    } else if has("trigger") {
        "PreCompact"
    } else if has("initialPrompt") || has("source") {
        "SessionStart"
    } else if has("reason") {
        "SessionEnd"
    } else if has("prompt") {
        "UserPromptSubmit"
    } else {
        return;
    };
    const NAMES: &[(&str, &str)] = &[
        ("sessionId", "session_id"),
        ("transcriptPath", "transcript_path"),
        ("toolName", "tool_name"),
        ("toolArgs", "tool_input"),
        ("toolResult", "tool_result"),
        ("stopReason", "stop_reason"),
        ("stopHookActive", "stop_hook_active"),
        ("customInstructions", "custom_instructions"),
        ("initialPrompt", "initial_prompt"),
        // A subagent's (1.0.102): its own id, and its session's.
        ("agentId", "agent_id"),
        ("agentType", "agent_type"),
        ("parentAgentId", "parent_agent_id"),
    ];
    for (camel, snake) in NAMES {
        if let Some(v) = o.remove(*camel) {
            o.insert((*snake).to_owned(), v);
        }
    }
    let name = serde_json::value::to_raw_value(event).expect("a string serializes");
    o.insert("hook_event_name".into(), name);
}

/// What installing into Copilot's settings must say: which releases run
/// these hooks, and where a project's go.
pub(crate) fn install_notes(_settings: &Value, flags: &str) -> Vec<String> {
    let mut notes = vec![
        "Copilot CLI runs the hooks of its settings.json from 1.0.30, gives the agent what a hook says \
         after a tool call from 1.0.49, and writes each call's usage to its session log from 1.0.102 \
         (before, interband has its statusline's figure, interactively, or the labelled heuristic): \
         `npm install -g @github/copilot` updates it"
            .to_owned(),
    ];
    // "Loading repo hooks ... (folder is trusted or opt-in set)", its log
    // says (tests/fixtures/project-forms-live/).
    if flags.contains(" --project") {
        notes.push(
            "Copilot CLI runs a repository's hooks only in a folder you trust (`trusted_folders` \
             in ~/.copilot/config.json)"
                .to_owned(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;
    use crate::digest::Item;

    fn fixture(version: &str, name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../tests/fixtures/copilot-cli-{version}/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn lines(bytes: &[u8]) -> Vec<Value> {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The log of a session whose `sync` subagent ran (1.0.102, captured
    /// whole: tests/fixtures/qwen-copilot-subagents/copilot-1.0.102/).
    fn with_subagent() -> Vec<u8> {
        let path = format!(
            "{}/../tests/fixtures/qwen-copilot-subagents/copilot-1.0.102/events.trimmed.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    const AGENT: &str = "694171c2-b121-4e29-8597-816a6a9a3496";

    #[test]
    fn a_subagent_s_lines_are_its_own_never_its_session_s() {
        let log = with_subagent();
        // Until its shutdown line, the session's own last figure: 31k, not
        // its subagent's 60k after it.
        let until: Vec<u8> = String::from_utf8_lossy(&log)
            .lines()
            .take_while(|l| !l.contains("session.shutdown"))
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        let t = crate::tail::tail_of(&until, Host::Copilot);
        assert_eq!(t.usage.unwrap().used_tokens, 31_000);
        // Its own lines, forward: its calls and results, no turn of the session's.
        let mut ends = 0;
        let mut sub_calls = 0;
        for l in String::from_utf8_lossy(&log).lines() {
            let sub = l.contains("\"agentId\"");
            for h in forward(l.as_bytes(), 0).happenings {
                match h {
                    Happening::ToolCall { subagent, .. } => {
                        assert_eq!(subagent, sub, "{l}");
                        sub_calls += usize::from(sub);
                    }
                    Happening::EndsTurn | Happening::TurnEnded | Happening::Prompt => {
                        assert!(!sub, "{l}");
                        ends += 1;
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(sub_calls, 2);
        assert!(ends > 0);
        // Nothing of it in the session's note.
        let mut items = Vec::new();
        for l in String::from_utf8_lossy(&log).lines() {
            digest::items(l.as_bytes(), &mut items);
        }
        let prompts: Vec<&Item> = items
            .iter()
            .filter(|i| matches!(i, Item::Prompt(_)))
            .collect();
        assert_eq!(prompts.len(), 1, "{prompts:?}");
    }

    #[test]
    fn a_subagent_s_figure_is_its_own_last_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, with_subagent()).unwrap();
        let u = subagent_figure(&path, "s", AGENT).unwrap();
        assert_eq!((u.used_tokens, u.window), (60_000, Some(64_000)));
        assert_eq!(u.model.as_deref(), Some("gpt-4.1"));
        assert!(subagent_figure(&path, "s", "another").is_none());
        assert!(subagent_figure(&dir.path().join("none"), "s", AGENT).is_none());
    }

    #[test]
    fn the_figure_is_the_last_agent_call_s_prompt_against_its_limit() {
        let t = fixture("1.0.102", "events.interactive-manual-compact.jsonl");
        let all = lines(&t);
        let last = all
            .iter()
            .rev()
            .find(|v| {
                v["type"] == "session.usage_record"
                    && v["data"]["usage"]["interactionType"] == "conversation-agent"
            })
            .unwrap();
        // Cut before the session's end: the last call's prompt, against its limit.
        let end = String::from_utf8_lossy(&t)
            .find(r#""type": "session.shutdown""#)
            .map(|i| {
                t[..i]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |n| n + 1)
            })
            .unwrap();
        let live = &t[..end];
        let r = Host::Copilot.read_forward(live);
        let from_end = crate::tail::tail_of(live, Host::Copilot).usage.unwrap();
        assert_eq!(r.used(), last["data"]["usage"]["inputTokens"].as_u64());
        assert_eq!(
            Some(from_end.used_tokens),
            last["data"]["usage"]["inputTokens"].as_u64()
        );
        assert_eq!(
            from_end.window,
            last["data"]["usage"]["maxPromptTokens"].as_u64()
        );
        // The session's end states its context last: the figure it ended on.
        let shutdown = all
            .iter()
            .rev()
            .find(|v| v["type"] == "session.shutdown")
            .unwrap();
        let ended = crate::tail::tail_of(&t, Host::Copilot).usage.unwrap();
        assert_eq!(
            Some(ended.used_tokens),
            shutdown["data"]["currentTokens"].as_u64()
        );
        assert_eq!(
            Host::Copilot.read_forward(&t).used(),
            Some(ended.used_tokens)
        );
    }

    #[test]
    fn a_compaction_says_whether_copilot_compacted_on_its_own_and_for_which_window() {
        let mut seen = Vec::new();
        for name in [
            "events.compaction-threshold.filtered.jsonl",
            "events.interactive-manual-compact.jsonl",
        ] {
            let t = fixture("1.0.102", name);
            for (i, line) in t.split(|b| *b == b'\n').enumerate() {
                if let Some(Fact::Compaction {
                    before,
                    automatic,
                    window,
                    ..
                }) = fact(line, i as u64)
                {
                    let v: Value = serde_json::from_slice(line).unwrap();
                    let d = &v["data"];
                    assert_eq!(automatic, Some(d["trigger"] == "threshold"), "{name}");
                    assert_eq!(before, d["preCompactionTokens"].as_u64(), "{name}");
                    assert_eq!(window, d["tokenLimit"].as_u64(), "{name}");
                    seen.push(automatic);
                }
            }
        }
        assert!(
            seen.contains(&Some(true)) && seen.contains(&Some(false)),
            "{seen:?}"
        );
    }

    #[test]
    fn a_session_before_1_0_102_shows_the_figure_it_ended_on() {
        // 1.0.73 writes no call's usage; each end states the context.
        let t = fixture("1.0.73", "events.shutdown-resume.jsonl");
        let last = lines(&t)
            .into_iter()
            .rev()
            .find(|v| v["type"] == "session.shutdown")
            .unwrap();
        let from_end = crate::tail::tail_of(&t, Host::Copilot).usage.unwrap();
        assert_eq!(
            Some(from_end.used_tokens),
            last["data"]["currentTokens"].as_u64()
        );
        assert_eq!(
            from_end.model.as_deref(),
            last["data"]["currentModel"].as_str()
        );
    }

    #[test]
    fn a_compaction_starts_the_context_over() {
        for (version, file) in [
            ("1.0.102", "events.compaction-headless.jsonl"),
            ("1.0.30", "events.compaction-headless.jsonl"),
        ] {
            let t = fixture(version, file);
            let all = lines(&t);
            let at = all
                .iter()
                .rposition(|v| v["type"] == "session.compaction_complete")
                .unwrap();
            let text = String::from_utf8_lossy(&t);
            let upto: Vec<&str> = text.lines().take(at + 1).collect();
            let r = Host::Copilot.read_forward(format!("{}\n", upto.join("\n")).as_bytes());
            assert!(
                r.latest_boundary.is_some(),
                "{version}: a compaction, no reply after it"
            );
        }
    }

    #[test]
    fn its_logs_are_told_apart_and_found_by_session() {
        let v: Value = serde_json::from_slice(&fixture("1.0.102", "Stop.input.json")).unwrap();
        let path = v["transcript_path"].as_str().unwrap();
        assert_eq!(Host::of_transcript(path), Some(Host::Copilot));
        let at = transcript_at(Path::new("/h/.copilot"), Path::new("/p"), "s1");
        assert_eq!(
            at,
            Path::new("/h/.copilot/session-state/s1/events.jsonl"),
            "compared part by part"
        );
        for other in [
            "/h/.qwen/projects/-p/chats/s.jsonl",
            "/h/.claude/projects/-p/s.jsonl",
            "/h/events.jsonl",
        ] {
            assert_ne!(Host::of_transcript(other), Some(Host::Copilot), "{other}");
        }
    }

    #[test]
    fn the_statusline_s_context_is_what_copilot_counts_not_its_running_total() {
        for name in [
            "statusLine.input.after-first-prompt.json",
            "statusLine.input.after-compact-and-second-prompt.json",
        ] {
            let v: Value = serde_json::from_slice(&fixture("1.0.102", name)).unwrap();
            let s = statusline_context(&v);
            assert_eq!(
                s.used,
                v["context_window"]["current_context_tokens"].as_u64(),
                "{name}"
            );
            assert_ne!(
                s.used,
                v["context_window"]["current_usage"]["input_tokens"].as_u64(),
                "{name}"
            );
            assert_eq!(s.window, Some(64_000), "{name}");
        }
    }

    #[test]
    fn every_camel_case_input_reads_as_its_snake_case_twin() {
        for name in [
            "postToolUse.bash",
            "postToolUseFailure.view-missing",
            "agentStop",
            "preCompact.auto",
            "sessionStart.new",
            "sessionEnd.complete",
            "preToolUse.bash",
            "userPromptSubmitted",
        ] {
            let camel = crate::input::HookInput::parse_as(
                &fixture("1.0.102", &format!("camel.{name}.input.json")),
                Some(Host::Copilot),
            )
            .unwrap();
            let twin = match name {
                "agentStop" => "Stop".to_owned(),
                "userPromptSubmitted" => "UserPromptSubmit".to_owned(),
                n => {
                    let (event, rest) = n.split_once('.').unwrap_or((n, ""));
                    let event = format!("{}{}", event[..1].to_uppercase(), &event[1..]);
                    if rest.is_empty() {
                        event
                    } else {
                        format!("{event}.{rest}")
                    }
                }
            };
            let snake = crate::input::HookInput::parse_as(
                &fixture("1.0.102", &format!("{twin}.input.json")),
                Some(Host::Copilot),
            )
            .unwrap();
            assert_eq!(camel.hook_event_name, snake.hook_event_name, "{name}");
            assert!(!camel.session_id.is_empty(), "{name}");
            assert_eq!(camel.source, snake.source, "{name}");
            assert_eq!(camel.trigger, snake.trigger, "{name}");
            assert_eq!(
                camel.tool_response.is_some(),
                snake.tool_response.is_some(),
                "{name}"
            );
            assert_eq!(
                camel.transcript_path.is_some(),
                snake.transcript_path.is_some(),
                "{name}"
            );
        }
    }

    #[test]
    fn the_window_the_log_states_else_the_provider_s_else_a_guess() {
        use interband::context::WindowSource;
        let none = |_: &str| None;
        let l = limits(
            &crate::Known {
                transcript: Some(20_000),
                used: 15_000,
                ..Default::default()
            },
            &none,
        );
        assert_eq!(
            (l.window, l.compact_at, l.source),
            (20_000, 16_000, WindowSource::Transcript)
        );
        let env = |v: &str| (v == "COPILOT_PROVIDER_MAX_PROMPT_TOKENS").then(|| "30000".to_owned());
        assert_eq!(limits(&crate::Known::default(), &env).window, 30_000);
        let g = limits(
            &crate::Known {
                used: 40_000,
                ..Default::default()
            },
            &none,
        );
        assert_eq!(
            (g.window, g.source, g.other),
            (128_000, WindowSource::Guess, Some(64_000))
        );
    }

    #[test]
    fn only_the_agent_s_own_calls_state_the_context() {
        // Copilot also asks its model for a title, a summary and the like,
        // with prompts of their own: those are not the session's context.
        let record = |n: u64, kind: Option<&str>| {
            let mut usage = serde_json::json!({"model": "gpt-4.1", "inputTokens": n, "maxPromptTokens": 128_000});
            if let Some(k) = kind {
                usage["interactionType"] = k.into();
            }
            serde_json::json!({"type": "session.usage_record", "id": format!("u{n}"), "data": {"usage": usage}})
                .to_string()
        };
        for (other, why) in [
            ("conversation-title", "a title"),
            ("conversation-compaction", "a compaction's summary"),
            ("something-new", "a kind not seen yet"),
        ] {
            let log = format!(
                "{}\n{}\n",
                record(30_000, Some("conversation-agent")),
                record(90_000, Some(other))
            );
            let t = crate::tail::tail_of(log.as_bytes(), Host::Copilot);
            assert_eq!(t.usage.map(|u| u.used_tokens), Some(30_000), "{why}");
            assert_eq!(
                Host::Copilot.read_forward(log.as_bytes()).used(),
                Some(30_000),
                "{why}"
            );
        }
        // A record that does not say (an earlier release) is the agent's.
        let log = format!(
            "{}\n{}\n",
            record(30_000, Some("conversation-agent")),
            record(40_000, None)
        );
        let t = crate::tail::tail_of(log.as_bytes(), Host::Copilot);
        assert_eq!(t.usage.map(|u| u.used_tokens), Some(40_000));
    }

    #[test]
    fn copilot_s_own_threshold_variable_moves_the_compaction_point() {
        let known = crate::Known {
            transcript: Some(20_000),
            used: 15_000,
            ..Default::default()
        };
        let with = |v: &'static str| {
            move |k: &str| (k == "COPILOT_BACKGROUND_COMPACTION_THRESHOLD").then(|| v.to_owned())
        };
        assert_eq!(limits(&known, &with("0.5")).compact_at, 10_000);
        assert_eq!(limits(&known, &with(" 0.95 ")).compact_at, 19_000);
        for ignored in ["0", "1.5", "-0.2", "most", ""] {
            assert_eq!(
                limits(&known, &with(ignored)).compact_at,
                16_000,
                "{ignored:?}"
            );
        }
    }

    #[test]
    fn a_note_reads_its_prompts_commands_and_the_summary() {
        let mut items = Vec::new();
        for line in fixture("1.0.102", "events.compaction-headless.jsonl").split(|&b| b == b'\n') {
            digest::items(line, &mut items);
        }
        assert!(
            items
                .iter()
                .any(|i| matches!(i, Item::Prompt(p) if p == "compaction test")),
            "{items:?}"
        );
        assert!(items.iter().any(
            |i| matches!(i, Item::Call(c) if c.command.as_deref() == Some("echo step1; sleep 1"))
        ));
        assert!(
            items
                .iter()
                .any(|i| matches!(i, Item::Summary(s) if s.contains("MOCK-SUMMARY")))
        );
        assert!(items.iter().any(|i| matches!(i, Item::Cwd(_))));
    }
}
