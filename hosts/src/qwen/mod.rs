//! Qwen Code: its transcript, its window and where it compacts, and how a
//! hook tells a headless run (captured from the real CLI, 0.21.2 and 0.24.4,
//! `tests/fixtures/qwen-code-*`).
//!
//! The transcript is `~/.qwen/projects/<cwd, / as ->/chats/<session>.jsonl`
//! (`$QWEN_HOME/projects/...` when set). Every line has `type` (`user`,
//! `assistant`, `tool_result`, `system`), `uuid`, `sessionId`, `cwd` and
//! `version`; an `assistant` line carries the `model` and
//! `usageMetadata.promptTokenCount`, the prompt the reply answered: the
//! figure Qwen itself reports (`input_tokens` in its `Stop` input, and
//! `context_usage` = that over `context_limit`). A compaction is a `system`
//! line of subtype `chat_compression`, with `systemPayload.info
//! .newTokenCount`, Qwen's estimate of the new context.
//!
//! The window: Qwen's `Stop` input states it (`context_limit`: the model's
//! by Qwen's own table, or `model.generationConfig.contextWindowSize`); a
//! `PostToolUse` input states nothing. Where nothing states it, the window
//! is the setting, else 1,000,000 assumed with 200,000 as the smaller
//! possibility (Qwen's table gives its own and many other models 1M, and
//! unknown ones 200,000): nothing is said before it is certain. Qwen compacts
//! at `context.autoCompactThreshold` (0.85 by default) of the window, but at
//! most 33,000 tokens below it.

pub mod digest;

use std::path::Path;

use serde_json::Value;

use crate::forward::{Happening, Seen, raw};
use crate::tail::contains;
use crate::usage::Fact;

/// The window Qwen gives a model its table does not know.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// The window assumed before Qwen states one: its table's largest.
pub const LARGEST_WINDOW: u64 = 1_000_000;

/// The share of the window at which Qwen compacts, by default.
pub const DEFAULT_THRESHOLD: f64 = 0.85;

/// The room Qwen keeps below the window at least (its output reserve and
/// buffer, 20,000 + 13,000).
pub const RESERVE: u64 = 33_000;

/// Where Qwen compacts a `window` at `threshold`:
/// min(threshold × window, window − [`RESERVE`]).
///
/// ```
/// use interband_hosts::qwen::compaction_point;
/// assert_eq!(compaction_point(200_000, 0.85), 167_000);
/// assert_eq!(compaction_point(160_000, 0.5), 80_000);
/// ```
pub fn compaction_point(window: u64, threshold: f64) -> u64 {
    let share = (window as f64 * threshold).floor() as u64;
    share.min(window.saturating_sub(RESERVE))
}

/// One line, as far as the figure needs it.
#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    subtype: Option<Value>,
    uuid: Option<Value>,
    model: Option<Value>,
    #[serde(rename = "usageMetadata")]
    usage: Option<Value>,
    #[serde(rename = "systemPayload")]
    payload: Option<Value>,
}

/// Qwen Code's reader (see the module's documentation).
pub(crate) fn fact(line: &[u8], offset: u64) -> Option<Fact> {
    let line = crate::tail::trimmed(line);
    let assistant = contains(line, b"usageMetadata");
    let compaction = contains(line, b"chat_compression");
    let user = contains(line, b"\"user\"");
    if !assistant && !compaction && !user {
        return None;
    }
    let l = serde_json::from_slice::<Line>(line).ok()?;
    let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_owned);
    match l.kind.as_ref().and_then(Value::as_str) {
        Some("assistant") => {
            let tokens = crate::usage::count(l.usage.as_ref()?.get("promptTokenCount")?)?;
            Some(Fact::Usage {
                message: text(&l.uuid),
                tokens,
                model: text(&l.model),
                window: None,
                version: None,
            })
        }
        // A prompt comes between two replies (a tool's result has a type of its own).
        Some("user") => Some(Fact::Break),
        Some("system")
            if l.subtype.as_ref().and_then(Value::as_str) == Some("chat_compression") =>
        {
            let info = l.payload.as_ref().and_then(|p| p.get("info"));
            let field = |k: &str| info.and_then(|i| crate::usage::count(i.get(k)?));
            let reason = info
                .and_then(|i| i.get("triggerReason"))
                .and_then(Value::as_str);
            Some(Fact::Compaction {
                mark: text(&l.uuid).unwrap_or_else(|| format!("compression@{offset}")),
                tokens: field("newTokenCount"),
                before: field("originalTokenCount"),
                // Qwen compresses on its own when the prompt reaches its limit.
                automatic: reason.map(|r| r == "token_limit"),
                window: None,
            })
        }
        _ => None,
    }
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
    let parts = v.pointer("/message/parts").and_then(Value::as_array);
    match v["type"].as_str() {
        Some("assistant") => {
            let mut out = vec![Happening::Activity];
            for call in parts
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("functionCall"))
            {
                out.push(Happening::ToolCall {
                    id: call["id"].as_str().map(str::to_owned),
                    name: call["name"].as_str().unwrap_or("?").to_owned(),
                    input: raw(&call["args"]),
                    subagent: false,
                });
            }
            out
        }
        Some("tool_result") => {
            let failed =
                v.pointer("/toolCallResult/status").and_then(Value::as_str) == Some("error");
            parts
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("functionResponse"))
                .filter_map(|r| {
                    Some(Happening::ToolResult {
                        id: r["id"].as_str()?.to_owned(),
                        error: failed || r["response"].get("error").is_some(),
                        response: raw(&r["response"]),
                        subagent: false,
                    })
                })
                .collect()
        }
        Some("user") => vec![Happening::TurnEnded, Happening::Prompt],
        Some("system") if v["subtype"] == "chat_compression" => vec![Happening::Compaction {
            trigger: v
                .pointer("/systemPayload/info/triggerReason")
                .and_then(Value::as_str)
                .map(|r| if r == "token_limit" { "auto" } else { "manual" }.to_owned()),
            pre_tokens: v
                .pointer("/systemPayload/info/originalTokenCount")
                .and_then(Value::as_u64),
            post_tokens: v
                .pointer("/systemPayload/info/newTokenCount")
                .and_then(Value::as_u64),
        }],
        _ => Vec::new(),
    }
}

/// Whether a transcript at `path` is Qwen Code's: `<session>.jsonl` in a
/// `chats` folder of a project under `~/.qwen/projects/` (or
/// `$QWEN_HOME/projects/`).
pub(crate) fn owns_transcript(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let up = |n: usize| {
        path.ancestors()
            .nth(n)
            .and_then(|d| d.file_name())
            .and_then(|d| d.to_str())
    };
    name.ends_with(".jsonl")
        && !name.starts_with("session-")
        && up(1) == Some("chats")
        && up(3) == Some("projects")
}

/// Qwen's settings that interband reads: the window and the threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Settings {
    /// `model.generationConfig.contextWindowSize`.
    pub window: Option<u64>,
    /// `context.autoCompactThreshold`, in (0, 1].
    pub threshold: Option<f64>,
}

/// Where Qwen's settings keep the window.
const WINDOW_KEY: &str = "/model/generationConfig/contextWindowSize";
/// Where Qwen's settings keep the compaction threshold.
const THRESHOLD_KEY: &str = "/context/autoCompactThreshold";

fn window_of(v: &Value) -> Option<u64> {
    crate::usage::count(v).filter(|w| *w > 0)
}

fn threshold_of(v: &Value) -> Option<f64> {
    v.as_f64().filter(|t| *t > 0.0 && *t <= 1.0)
}

/// Qwen's settings: the project's `.qwen/settings.json` where it counts
/// ([`project_settings`]) over the user's (`$QWEN_HOME/settings.json`,
/// else `~/.qwen/settings.json`), each read once, bounded and without
/// blocking, comments allowed (Qwen strips them).
pub fn settings(project: Option<&Path>, env: &dyn interband::settings::Env) -> Settings {
    let user = user_settings(env);
    let theirs = project
        .map(|p| project_settings_with(user.as_ref(), p, env))
        .unwrap_or_default();
    let at =
        |key: &str| crate::project::counted(&theirs, key).or_else(|| user.as_ref()?.pointer(key));
    Settings {
        window: at(WINDOW_KEY).and_then(window_of),
        threshold: at(THRESHOLD_KEY).and_then(threshold_of),
    }
}

fn user_settings(env: &dyn interband::settings::Env) -> Option<Value> {
    let file = crate::QWEN.user_settings(env)?;
    crate::project::read_json(&file, true).map(|(_, v)| v)
}

/// What the project's `.qwen/settings.json` sets that interband reads (the
/// window, the compaction threshold), each with whether it counts: only
/// where Qwen trusts the folder ([`trusts`]) and interband trusts the file
/// ([`crate::project`]).
pub(crate) fn project_settings(
    project: &Path,
    env: &dyn interband::settings::Env,
) -> Vec<crate::project::Setting> {
    project_settings_with(user_settings(env).as_ref(), project, env)
}

fn project_settings_with(
    user: Option<&Value>,
    project: &Path,
    env: &dyn interband::settings::Env,
) -> Vec<crate::project::Setting> {
    let file = interband::paths::under(project, ".qwen/settings.json");
    // The home folder's own `.qwen/settings.json` is the user's (Qwen reads
    // no project file there).
    if crate::QWEN
        .user_settings(env)
        .is_some_and(|u| crate::project::same_file(&u, &file))
    {
        return Vec::new();
    }
    crate::project::settings(
        &file,
        true,
        &[WINDOW_KEY, THRESHOLD_KEY],
        || trusts(user, project, env),
        env,
    )
}

/// Whether Qwen Code trusts `folder`, so merges its project settings.
///
/// Qwen's rules (its `trustedFolders.ts` and `settings.ts`): folder trust is
/// off unless the system settings (`$QWEN_CODE_SYSTEM_SETTINGS_PATH`, else
/// `/etc/qwen-code/settings.json`) or the user's turn on
/// `security.folderTrust.enabled`, and off, every folder is trusted. On, a
/// `TRUST_FOLDER` or `TRUST_PARENT` rule of `trustedFolders.json`
/// (`$QWEN_CODE_TRUSTED_FOLDERS_PATH`, else in Qwen's own folder) covering
/// the folder trusts it, else a `DO_NOT_TRUST` rule for the folder itself
/// does not, and a folder no rule speaks of is trusted. A rules file Qwen
/// cannot read stops Qwen: nothing is trusted.
pub fn trusts(user: Option<&Value>, folder: &Path, env: &dyn interband::settings::Env) -> bool {
    let system = env
        .var("QWEN_CODE_SYSTEM_SETTINGS_PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/etc/qwen-code/settings.json".to_owned());
    let system = crate::project::read_json(Path::new(&system), true).map(|(_, v)| v);
    let enabled = |s: Option<&Value>| s?.pointer("/security/folderTrust/enabled")?.as_bool();
    if enabled(system.as_ref()).or(enabled(user)) != Some(true) {
        return true;
    }
    env.var("QWEN_CODE_TRUSTED_FOLDERS_PATH")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            crate::QWEN
                .host_home(env)
                .map(|h| h.join("trustedFolders.json"))
        })
        .and_then(|rules| crate::project::folder_rule(&rules, folder, false))
        .unwrap_or(true)
}

/// The window and compaction point of a Qwen session ([`crate::Host::limits`]):
/// what the host stated (its `Stop` input), else its settings' window, else
/// `[interpulse] window`, else [`LARGEST_WINDOW`] assumed with
/// [`DEFAULT_WINDOW`] the other possibility (a usage past the smaller one
/// settles it).
pub(crate) fn limits(k: &crate::Known, env: &dyn interband::settings::Env) -> crate::Limits {
    use interband::context::WindowSource as From;
    let s = settings(k.project, env);
    let known = k
        .stated
        .filter(|(w, _)| *w > 0)
        .or(s.window.map(|w| (w, From::HostSettings)))
        .or((k.configured > 0).then_some((k.configured, From::Configured)));
    let threshold = s.threshold.unwrap_or(DEFAULT_THRESHOLD);
    let settled = k.history.and_then(|h| {
        h.settles(
            LARGEST_WINDOW,
            DEFAULT_WINDOW,
            compaction_point(LARGEST_WINDOW, threshold),
        )
    });
    let (window, source, other) = match known.or(settled) {
        Some((w, source)) => (w, source, None),
        None if k.used > DEFAULT_WINDOW => (LARGEST_WINDOW, From::Usage, None),
        None => (LARGEST_WINDOW, From::Guess, Some(DEFAULT_WINDOW)),
    };
    crate::Limits {
        window,
        compact_at: compaction_point(window, threshold),
        source,
        other,
        other_compact_at: other.map(|o| compaction_point(o, threshold)),
    }
}

/// Why the Qwen Code running this hook is headless (`qwen "prompt"`,
/// `qwen -p`, a prompt from a pipe), `None` for an interactive one and where
/// no Qwen process is found among the hook's parent and grandparent.
pub(crate) fn headless_of(
    _transcript: Option<&Path>,
    _env: &dyn interband::settings::Env,
) -> Option<String> {
    let (pid, args) = crate::process::host_ancestor(|a| qwen_args(a).is_some())?;
    headless_args(&args).or_else(|| {
        (crate::process::stdin_is_terminal(pid) == Some(false))
            .then(|| "its `qwen` process does not read a terminal".to_owned())
    })
}

/// The arguments after the program, when `args` are Qwen Code's (`qwen ...`,
/// `node .../bin/qwen ...`, `node .../@qwen-code/qwen-code/cli.js ...`).
fn qwen_args(args: &[String]) -> Option<&[String]> {
    crate::process::args_after(args, "qwen", "qwen-code")
}

/// Options of Qwen's that take a value (its `--help`, 0.24.4); an array's
/// values run to the next option.
const VALUED: &[&str] = &[
    "-m",
    "--model",
    "-o",
    "--output-format",
    "--input-format",
    "--approval-mode",
    "--auth-type",
    "--openai-api-key",
    "--openai-base-url",
    "--openai-logging-dir",
    "-r",
    "--resume",
    "--session-id",
    "--system-prompt",
    "--append-system-prompt",
    "--output-style",
    "--channel",
    "--mcp-config",
    "--proxy",
    "--sandbox-image",
    "--telemetry-target",
    "--telemetry-otlp-endpoint",
    "--telemetry-otlp-protocol",
    "--telemetry-outfile",
    "--json-fd",
    "--json-file",
    "--json-schema",
    "--input-file",
    "--worktree",
    "--max-session-turns",
    "--max-wall-time",
    "--max-tool-calls",
    "--max-subagent-depth",
];
const ARRAYS: &[&str] = &[
    "--fallback-model",
    "--allowed-mcp-server-names",
    "--allowed-tools",
    "-e",
    "--extensions",
    "--include-directories",
    "--add-dir",
    "--core-tools",
    "--exclude-tools",
    "--disabled-slash-commands",
];

/// Why a process with the command line `args` is a headless Qwen Code, when
/// its arguments say: `-p`/`--prompt`, or a prompt given as an argument
/// (without `-i`, which goes on interactively); `None` for any other process.
///
/// ```
/// # use interband_hosts::qwen::headless_args;
/// let args = |a: &str| a.split(' ').map(str::to_owned).collect::<Vec<_>>();
/// assert!(headless_args(&args("node /x/bin/qwen run it --output-format json --yolo -m m")).is_some());
/// assert!(headless_args(&args("qwen -p hi")).is_some());
/// assert_eq!(headless_args(&args("node /x/qwen-code/cli.js --yolo --auth-type openai -m mock-model")), None);
/// assert_eq!(headless_args(&args("qwen -i hi")), None);
/// assert_eq!(headless_args(&args("qwen --allowed-tools a b --resume s")), None);
/// assert_eq!(headless_args(&args("node -p 1")), None);
/// ```
pub fn headless_args(args: &[String]) -> Option<String> {
    let args = qwen_args(args)?;
    let mut prompt = None;
    let mut i = 0;
    let mut in_array = false;
    while i < args.len() {
        let a = args[i].as_str();
        let flag = a.split('=').next().unwrap_or(a);
        if a == "--" {
            prompt = prompt.or(args.get(i + 1).map(|_| "a prompt as its argument"));
            break;
        } else if flag == "-i" || flag == "--prompt-interactive" {
            return None;
        } else if flag == "-p" || flag == "--prompt" {
            prompt = Some("`-p`");
        } else if a.starts_with('-') {
            in_array = ARRAYS.contains(&flag);
            if VALUED.contains(&flag) && !a.contains('=') {
                i += 1;
            }
        } else if !in_array {
            prompt = prompt.or(Some("a prompt as its argument"));
        }
        i += 1;
    }
    prompt.map(|how| format!("its `qwen` process was started with {how}"))
}
/// Where Qwen keeps a session's transcript: `projects/<slug>/chats/<session>.jsonl`.
pub(crate) fn transcript_at(folder: &Path, project: &Path, session: &str) -> std::path::PathBuf {
    folder
        .join("projects")
        .join(crate::project_slug(project))
        .join("chats")
        .join(format!("{session}.jsonl"))
}

/// A subagent's own transcript: `subagents/<session>/agent-<id>.jsonl`
/// beside the session's `chats/` folder (0.21.2 and 0.24.4 alike; its
/// lines are the chat's, each a sidechain's, and Qwen writes an answer's
/// line before the calls it makes run their hooks).
pub(crate) fn subagent_transcript(
    transcript: &Path,
    session: &str,
    agent: &str,
) -> Option<std::path::PathBuf> {
    Some(
        subagents(transcript, session)?
            .join(format!("agent-{}.jsonl", interband::paths::safe_key(agent))),
    )
}

/// The folder of the session's subagents' transcripts, given the session's.
fn subagents(transcript: &Path, session: &str) -> Option<std::path::PathBuf> {
    let project = transcript.parent()?.parent()?;
    Some(
        project
            .join("subagents")
            .join(interband::paths::safe_key(session)),
    )
}

/// The subagent `agent`'s own figure, from its own transcript
/// ([`subagent_transcript`]), given the session's.
pub(crate) fn subagent_figure(
    transcript: &Path,
    session: &str,
    agent: &str,
) -> Option<crate::usage::TailUsage> {
    let own = subagent_transcript(transcript, session, agent)?;
    crate::tail::figure_of(&own, crate::Host::Qwen)
}

/// The subagent a tool call was made in, and its kind, where the call does
/// not say them ([`crate::Profile::subagent_of`]). From 0.23.4 a
/// subagent's calls carry its `agent_id` (and every call a `prompt_id`),
/// never its kind: that is its record's (`agent-<id>.meta.json`). Before,
/// they carry nothing naming it; a subagent writes each answer, with the
/// ids of the calls it makes, to its own transcript before those calls run
/// their hooks: a call whose `tool_call_id` a running subagent's
/// transcript names is that subagent's. (Its transcript's time tells
/// nothing: Qwen writes its own records of the subagent's requests to the
/// session's chat just after, seen live in 0.21.2.)
pub(crate) fn subagent_of(input: &crate::input::HookInput) -> Option<(String, Option<String>)> {
    let chat = Path::new(input.transcript_path.as_deref()?);
    let session = input.session_id.trim();
    let dir = subagents(chat, session)?;
    // (A regular file of the user's, read without blocking, at most 64 KiB:
    // a record is some hundreds of bytes.)
    let record = |path: &Path| -> Option<Value> {
        serde_json::from_slice(&crate::tail::last_bytes(path, 64 << 10)?).ok()
    };
    let kind = |meta: &Value| meta["agentType"].as_str().map(str::to_owned);
    if input.in_subagent() {
        let agent = input.agent_id.as_deref()?.trim();
        let meta = dir.join(format!(
            "agent-{}.meta.json",
            interband::paths::safe_key(agent)
        ));
        return Some((agent.to_owned(), record(&meta).as_ref().and_then(kind)));
    }
    if input.prompt_id.is_some() {
        return None;
    }
    let call = input
        .tool_call_id
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())?;
    let quoted = serde_json::to_string(call).ok()?;
    std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_str().is_some_and(|n| n.ends_with(".meta.json")))
        .filter_map(|p| record(&p))
        .filter(|m| m["status"] == "running" && m["parentSessionId"].as_str() == Some(session))
        .find_map(|m| {
            let agent = m["agentId"].as_str().filter(|a| !a.is_empty())?;
            let own = subagent_transcript(chat, session, agent)?;
            let tail = crate::tail::last_bytes(&own, crate::tail::SUBAGENT_SCAN)?;
            contains(&tail, quoted.as_bytes()).then(|| (agent.to_owned(), kind(&m)))
        })
}

/// What installing into Qwen's settings must say beyond what every host's
/// install says (hooks turned off: [`crate::Profile::hooks_off`]): a
/// project's hooks that a folder Qwen does not trust ignores (0.24 and
/// later, with folder trust on).
pub(crate) fn install_notes(settings: &Value, _flags: &str) -> Vec<String> {
    let mut notes = Vec::new();
    if settings
        .pointer("/security/folderTrust/enabled")
        .and_then(Value::as_bool)
        == Some(true)
    {
        notes.push(
            "folder trust is on: Qwen Code runs a project's hooks only in a folder it trusts"
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
            "{}/../tests/fixtures/qwen-code-{version}/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn a_subagent_s_figure_is_its_own_transcript_s() {
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join("projects/-home-user-proj");
        let session = "1ce1b995-2e10-4568-aabd-def284368152";
        let agent = "general-purpose-call_mock1_0";
        let chat = project.join(format!("chats/{session}.jsonl"));
        let own = project.join(format!("subagents/{session}/agent-{agent}.jsonl"));
        assert_eq!(
            subagent_transcript(&chat, session, agent).as_ref(),
            Some(&own)
        );
        std::fs::create_dir_all(own.parent().unwrap()).unwrap();
        let path = format!(
            "{}/../tests/fixtures/qwen-copilot-subagents/qwen-0.24.4/subagents.SESSION.agent-{agent}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::copy(&path, &own).unwrap();
        let u = subagent_figure(&chat, session, agent).unwrap();
        assert_eq!(u.used_tokens, 60_000);
        assert!(subagent_figure(&chat, session, "general-purpose-other").is_none());
        // An id that would climb out names a file in the session's folder.
        let climbing = subagent_transcript(&chat, session, "../../x").unwrap();
        assert_eq!(
            climbing.parent(),
            Some(project.join("subagents").join(session).as_path()),
            "{climbing:?}"
        );
    }

    #[test]
    fn the_figure_is_the_last_reply_s_prompt_tokens_in_both_releases() {
        for version in ["0.24.4", "0.21.2"] {
            let t = fixture(version, "transcript.jsonl");
            let last = String::from_utf8_lossy(&t)
                .lines()
                .rev()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find_map(|v| v.pointer("/usageMetadata/promptTokenCount")?.as_u64())
                .unwrap();
            let forward = Host::Qwen.read_forward(&t);
            assert_eq!(forward.used(), Some(last), "{version}");
            let from_end = crate::tail::tail_of(&t, Host::Qwen);
            assert_eq!(
                from_end.usage.map(|u| u.used_tokens),
                Some(last),
                "{version}"
            );
        }
    }

    #[test]
    fn a_compression_starts_the_context_over_at_its_estimate() {
        let t = fixture("0.24.4", "transcript.auto-compaction.jsonl");
        let text = String::from_utf8_lossy(&t);
        let at = text
            .lines()
            .position(|l| l.contains("chat_compression"))
            .expect("the capture has one");
        let before: Vec<&str> = text.lines().take(at + 1).collect();
        let r = Host::Qwen.read_forward(format!("{}\n", before.join("\n")).as_bytes());
        assert!(
            r.latest_boundary.is_some(),
            "a compaction with no reply after it"
        );
        let v: Value = serde_json::from_str(before[at]).unwrap();
        assert_eq!(
            r.used(),
            v.pointer("/systemPayload/info/newTokenCount")
                .and_then(Value::as_u64)
        );
    }

    #[test]
    fn its_transcripts_are_told_apart_from_every_other_host_s() {
        for name in [
            "Stop.input.json",
            "PostToolUse.run_shell_command.input.json",
        ] {
            let v: Value = serde_json::from_slice(&fixture("0.24.4", name)).unwrap();
            let path = v["transcript_path"].as_str().unwrap();
            assert_eq!(Host::of_transcript(path), Some(Host::Qwen), "{path}");
            assert_eq!(
                Host::detect("PostToolUse", Some(path), false, true),
                Host::Qwen,
                "its timestamp does not make it Gemini's"
            );
        }
        for other in [
            "/h/.gemini/tmp/p/chats/session-2026-11-30T07-27-566ab2a4.jsonl",
            "/h/.claude/projects/-p/d6d5.jsonl",
            "/h/.codex/sessions/2026/11/30/rollout-2026-11-30T07-24-45-01a2.jsonl",
        ] {
            assert_ne!(Host::of_transcript(other), Some(Host::Qwen), "{other}");
        }
        let at = transcript_at(Path::new("/h/.qwen"), Path::new("/w/my.proj"), "s1");
        assert_eq!(
            at,
            Path::new("/h/.qwen/projects/-w-my-proj/chats/s1.jsonl"),
            "compared part by part"
        );
        assert!(owns_transcript(&at));
    }

    #[test]
    fn the_window_is_what_qwen_states_else_a_guess_that_says_nothing_too_soon() {
        use interband::context::WindowSource;
        let env = |_: &str| None;
        let guess = limits(
            &crate::Known {
                used: 150_000,
                ..Default::default()
            },
            &env,
        );
        assert_eq!(
            (guess.window, guess.source, guess.other),
            (1_000_000, WindowSource::Guess, Some(200_000))
        );
        assert_eq!(guess.compact_at, 850_000);
        let past = limits(
            &crate::Known {
                used: 250_000,
                ..Default::default()
            },
            &env,
        );
        assert_eq!((past.window, past.source), (1_000_000, WindowSource::Usage));
        let stated = limits(
            &crate::Known {
                stated: Some((200_000, WindowSource::HookInput)),
                used: 150_000,
                ..Default::default()
            },
            &env,
        );
        assert_eq!((stated.window, stated.compact_at), (200_000, 167_000));
    }

    #[test]
    fn its_settings_set_the_window_and_the_threshold_a_trusted_project_s_first() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("proj");
        std::fs::create_dir_all(home.join(".qwen")).unwrap();
        std::fs::create_dir_all(project.join(".qwen")).unwrap();
        std::fs::write(
            home.join(".qwen/settings.json"),
            r#"{"model":{"generationConfig":{"contextWindowSize":160000}},"context":{"autoCompactThreshold":0.9}}"#,
        )
        .unwrap();
        let theirs = project.join(".qwen/settings.json");
        std::fs::write(
            &theirs,
            "// the team's\n{\"context\":{\"autoCompactThreshold\":0.5}}",
        )
        .unwrap();
        let h = home.to_string_lossy().into_owned();
        let env = move |v: &str| match v {
            "HOME" => Some(h.clone()),
            "QWEN_CODE_SYSTEM_SETTINGS_PATH" => Some("/nonexistent".to_owned()),
            _ => None,
        };
        let limits_now = || {
            limits(
                &crate::Known {
                    project: Some(&project),
                    ..Default::default()
                },
                &env,
            )
        };
        let l = limits_now();
        assert_eq!(
            (l.window, l.source),
            (160_000, interband::context::WindowSource::HostSettings)
        );
        // A cloned repository's threshold waits for the user's trust.
        assert_eq!(
            l.compact_at,
            compaction_point(160_000, 0.9),
            "the user's 0.9"
        );
        let set = project_settings(&project, &env);
        assert_eq!(set[0].ignored, Some(crate::project::Ignored::NotTrusted));
        crate::project::trust_for_test(&theirs, &home.join(".config/interband/trusted.json"));
        assert_eq!(
            limits_now().compact_at,
            80_000,
            "the project's 0.5 of 160k, as the capture saw it compact"
        );
        // Qwen's own distrust comes first, trusted by interband or not.
        std::fs::write(
            home.join(".qwen/settings.json"),
            r#"{"security":{"folderTrust":{"enabled":true}}}"#,
        )
        .unwrap();
        let rules = home.join(".qwen/trustedFolders.json");
        std::fs::write(
            &rules,
            crate::project::rules_for_test(&[(&project, "DO_NOT_TRUST")]),
        )
        .unwrap();
        assert_eq!(
            limits_now().compact_at,
            compaction_point(LARGEST_WINDOW, DEFAULT_THRESHOLD)
        );
        assert_eq!(
            project_settings(&project, &env)[0].ignored,
            Some(crate::project::Ignored::HostDistrusts)
        );
        std::fs::write(
            &rules,
            crate::project::rules_for_test(&[(&project, "TRUST_FOLDER")]),
        )
        .unwrap();
        assert_eq!(
            limits_now().compact_at,
            compaction_point(LARGEST_WINDOW, 0.5)
        );
        // QWEN_HOME holds the user's settings.json directly.
        std::fs::write(
            home.join(".qwen/settings.json"),
            r#"{"model":{"generationConfig":{"contextWindowSize":160000}}}"#,
        )
        .unwrap();
        let q = home.join(".qwen").to_string_lossy().into_owned();
        let moved = move |v: &str| (v == "QWEN_HOME").then(|| q.clone());
        assert_eq!(settings(None, &moved).window, Some(160_000));
    }

    #[test]
    fn a_note_reads_its_prompts_commands_files_and_failures() {
        let t = fixture("0.24.4", "transcript.jsonl");
        let mut items = Vec::new();
        for line in t.split(|&b| b == b'\n') {
            digest::items(line, &mut items);
        }
        assert!(
            items.contains(&Item::Prompt("do the tasks".into())),
            "{items:?}"
        );
        let calls: Vec<&crate::digest::Call> = items
            .iter()
            .filter_map(|i| if let Item::Call(c) = i { Some(c) } else { None })
            .collect();
        assert!(
            calls
                .iter()
                .any(|c| c.command.as_deref() == Some("echo ok-shell"))
        );
        assert!(
            calls
                .iter()
                .any(|c| c.files.iter().any(|f| f.ends_with("new.txt")))
        );
        let failed: Vec<&str> = items
            .iter()
            .filter_map(|i| {
                if let Item::Failed { message, .. } = i {
                    Some(message.as_str())
                } else {
                    None
                }
            })
            .collect();
        assert!(
            failed.iter().any(|m| m.contains("echo failing")),
            "{failed:?}"
        );
        assert!(
            failed.iter().any(|m| m.contains("File not found")),
            "{failed:?}"
        );
        assert!(
            !items
                .iter()
                .any(|i| matches!(i, Item::Prompt(p) if p.contains("qwen:"))),
            "Qwen's own parts are no prompt"
        );
        let mut compacted = Vec::new();
        for line in fixture("0.24.4", "transcript.auto-compaction.jsonl").split(|&b| b == b'\n') {
            digest::items(line, &mut compacted);
        }
        assert!(
            compacted
                .iter()
                .any(|i| matches!(i, Item::Summary(s) if s.contains("<state_snapshot>")))
        );
    }
}
