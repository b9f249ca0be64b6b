//! Claude Code: its transcript's usage, as Claude Code itself computes it
//! (the rule is [`crate::usage`]'s; this says what each line means).
//!
//! * An assistant line (`"type":"assistant"`, `isSidechain` not `true`, a
//!   `message.usage` object, `message.model` not `"<synthetic>"`) is a
//!   response's usage: `input_tokens + cache_creation_input_tokens +
//!   cache_read_input_tokens` (a missing or `null` one counts as 0, a float
//!   or a numeric string as the number it says; any other value makes the
//!   line say nothing, so the last good figure stands),
//!   under its `message.id` and `requestId`. One response is written as
//!   several lines with one id: the largest counts, never a sum. (Some
//!   backends give every response the same message id; each API request
//!   still has its own id.)
//! * A compaction boundary (`"type":"system","subtype":"compact_boundary"`,
//!   not a sidechain's) starts the context over with no figure until the
//!   next answer: its `compactMetadata.postTokens` (2.1.105 on) counts the
//!   summary alone, not the system prompt and tools. Its `trigger` and
//!   `preTokens` are the session's evidence of its window
//!   ([`crate::history`]).
//! * Any other line naming `"user"` that is a prompt (not a sidechain's,
//!   not a tool's result) comes between two responses. A tool's result does
//!   not: one response's calls can be run, and their results written,
//!   between that response's lines.
//!
//! Every other line says nothing. Only lines naming `"assistant"` or
//! `compact_boundary` are parsed at all: a tool's result of megabytes is
//! only searched.
//!
//! # The window
//!
//! Claude Code's models have one window, or 200k unless the session asked
//! for 1M with a `[1m]` tag on the model (`--model 'claude-sonnet-4-5[1m]'`,
//! `ANTHROPIC_MODEL`, the settings' `model`, `/model`); the transcript's
//! `message.model` never carries the tag. The window of a session, best
//! first ([`window`]):
//!
//! 1. the statusline's `context_window.context_window_size` for the same
//!    session (matched by session, never by model name);
//! 2. the `requestedModel` of the transcript's latest response with the
//!    `[1m]` tag (2.1.292 on write it on every assistant line): 1M;
//! 3. the session's own history of that model ([`crate::history`]): usage
//!    past 200k is 1M, an automatic compaction below where 1M compacts is
//!    200k;
//! 4. an untagged `requestedModel`: its window by the table of the release
//!    that wrote the line ([`requested_window_at`]);
//! 5. `[interpulse] window`;
//! 6. how the session was started ([`launch_model`]): the `--model` of the
//!    `claude` process that runs the hook, `ANTHROPIC_MODEL`, the settings'
//!    `model`; a model named there with `[1m]` is 1M, a start that names
//!    none (or one without the tag) keeps the model's own window;
//! 7. the model's own window ([`model_window_at`], the table of the release
//!    that wrote the transcript): a model with one window has it; one that
//!    can be opened to 1M, with nothing above saying whether it was, is a
//!    guess: 1M is assumed for the level and the 200k it may be is told
//!    alongside (the agent hears both from 200k's yellow on); a model the
//!    table does not know has `CLAUDE_CODE_MAX_CONTEXT_TOKENS`, else it is
//!    a guess too;
//!
//! `CLAUDE_CODE_DISABLE_1M_CONTEXT` makes every window 200k (after the
//! statusline's), and the usage past the window assumed makes it 1M.
//! `CLAUDE_CODE_AUTO_COMPACT_WINDOW` moves only the compaction point
//! ([`compaction_point`]), never the window.

pub mod digest;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::forward::{Happening, Seen, own};
use crate::process;
use crate::tail::contains;
use crate::usage::Fact;
use crate::usage::{count, field};

/// A line's fields that matter, for both directions; serde skips the rest,
/// and the message's content and the tool's result (they can be large) are
/// only delimited, not built.
#[derive(serde::Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: Option<Value>,
    subtype: Option<Value>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<Value>,
    #[serde(rename = "isMeta")]
    meta: Option<Value>,
    #[serde(rename = "isCompactSummary")]
    compact_summary: Option<Value>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    uuid: Option<Value>,
    #[serde(rename = "requestId")]
    request_id: Option<Value>,
    #[serde(rename = "requestedModel")]
    requested_model: Option<Value>,
    timestamp: Option<Value>,
    #[serde(rename = "compactMetadata")]
    compact_metadata: Option<Value>,
    #[serde(rename = "toolUseResult", borrow)]
    tool_use_result: Option<&'a RawValue>,
    version: Option<Value>,
}

#[derive(serde::Deserialize)]
struct Message<'a> {
    id: Option<Value>,
    model: Option<Value>,
    usage: Option<Value>,
    stop_reason: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

fn str_of(v: &Option<Value>) -> Option<&str> {
    v.as_ref().and_then(Value::as_str)
}

/// Claude Code's reader (see the module's documentation). A line that
/// names neither `"assistant"` nor `compact_boundary` is never parsed: it is
/// a break between responses when it is a prompt (see [`prompt`]), whatever
/// its size.
pub(crate) fn fact(line: &[u8], _offset: u64) -> Option<Fact> {
    // A tool's result runs to tens of kilobytes and the tail reader passes
    // over it at every call: a SIMD search per name (GB/s on text) beats
    // one multi-name automaton, whose prefilter stumbles on text's many
    // candidate bytes (measured 4-5x slower on code and prose).
    let line = crate::tail::trimmed(line);
    if contains(line, b"\"assistant\"") || contains(line, b"compact_boundary") {
        return fact_of(&serde_json::from_slice::<Line>(line).ok()?, line);
    }
    prompt(line).then_some(Fact::Break)
}

/// Whether a line naming `"user"` (its bytes, with nothing parsed) is the
/// main thread's prompt: not a sidechain's, and no tool's result (a
/// `tool_use_id` key; in a prompt's text those quotes are escaped). A tool's
/// result does not end a response: the calls of one response can be run,
/// and their results written, between the response's own lines.
fn prompt(line: &[u8]) -> bool {
    contains(line, b"\"user\"")
        && !contains(line, b"\"isSidechain\":true")
        && !contains(line, b"\"tool_use_id\"")
}

/// The figure of a subagent's own transcript (every line of it a
/// sidechain's): its last response's usage, read from at most the file's
/// last 256 KiB.
pub(crate) fn subagent_usage(path: &std::path::Path) -> Option<crate::usage::TailUsage> {
    crate::tail::last_bytes(path, 256 << 10)?
        .split(|&b| b == b'\n')
        .rev()
        .find_map(|raw| {
            let line = crate::tail::trimmed(raw);
            if !contains(line, b"\"assistant\"") {
                return None;
            }
            let mut l = serde_json::from_slice::<Line>(line).ok()?;
            l.sidechain = None;
            match fact_of(&l, line)? {
                Fact::Usage {
                    tokens,
                    model,
                    window,
                    version,
                    ..
                } => Some(crate::usage::TailUsage {
                    used_tokens: tokens,
                    kind: crate::usage::UsageKind::Assistant,
                    model,
                    window,
                    version,
                    offset: 0,
                }),
                _ => None,
            }
        })
}

/// What a parsed line (`line`, its bytes) says of the context.
fn fact_of(l: &Line, line: &[u8]) -> Option<Fact> {
    if l.sidechain == Some(Value::Bool(true)) {
        return None;
    }
    match str_of(&l.kind) {
        Some("assistant") => {
            let message = l.message.as_ref()?;
            let Some(Value::Object(usage)) = &message.usage else {
                return None;
            };
            let model = str_of(&message.model);
            if model == Some("<synthetic>") {
                return None;
            }
            const CONTEXT: [&str; 3] = [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ];
            // A usage that states none of them is no figure (0 is not one).
            if CONTEXT
                .iter()
                .all(|k| usage.get(*k).is_none_or(Value::is_null))
            {
                return None;
            }
            let tokens = CONTEXT.iter().try_fold(0u64, |sum, key| {
                Some(sum.saturating_add(field(usage, key)?))
            })?;
            // One response's lines share its message id and the API
            // request's id; a backend that gives every response the same
            // message id still gives each its own request.
            let key = match (str_of(&message.id), str_of(&l.request_id)) {
                (Some(id), Some(request)) => Some(format!("{id} {request}")),
                (id, _) => id.map(str::to_owned),
            };
            // The model as asked for (2.1.x: with its `[1m]` tag) names the
            // window; the response's own name never carries the tag.
            let requested = str_of(&l.requested_model).filter(|m| !m.trim().is_empty());
            let version = str_of(&l.version);
            Some(Fact::Usage {
                message: key,
                tokens,
                model: requested.or(model).map(str::to_owned),
                window: requested.map(|m| requested_window_at(m, version)),
                version: version.map(str::to_owned),
            })
        }
        Some("user") => prompt(line).then_some(Fact::Break),
        Some("system") if str_of(&l.subtype) == Some("compact_boundary") => {
            let meta = l.compact_metadata.as_ref();
            let trigger = meta.and_then(|m| m.get("trigger")).and_then(Value::as_str);
            Some(Fact::Compaction {
                mark: str_of(&l.uuid).unwrap_or("compact_boundary").to_owned(),
                // `postTokens` counts the summary alone, not the system prompt
                // and tools (4k where Claude Code's own `/context` says 17.6k):
                // no figure of the context, which is unknown until the next answer.
                tokens: None,
                before: meta.and_then(|m| m.get("preTokens")).and_then(count),
                automatic: trigger.map(|t| t == "auto"),
                window: None,
            })
        }
        _ => None,
    }
}

/// The large window: 1M tokens.
pub const LARGE_WINDOW: u64 = 1_000_000;

/// The window of older Claude Code releases, and of every model under
/// `CLAUDE_CODE_DISABLE_1M_CONTEXT`: 200k.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// A Claude Code release, as its lines' `version` names it.
type Release = (u32, u32, u32);

/// A release from its name (`2.1.92`); `None` for anything else.
///
/// ```
/// use interband_hosts::claude::release;
/// assert_eq!(release("2.1.92"), Some((2, 1, 92)));
/// assert_eq!(release(" 1.0.128 "), Some((1, 0, 128)));
/// assert_eq!(release("2.1"), None);
/// assert_eq!(release("next"), None);
/// ```
pub fn release(version: &str) -> Option<(u32, u32, u32)> {
    let mut parts = version.trim().split('.').map(|p| {
        // A pre-release or build suffix (`2.1.92-beta`) names the same release.
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let r = (parts.next()??, parts.next()??, parts.next()??);
    Some(r)
}

/// Claude Code's model table, by the model's canonical name: its window,
/// whether a `[1m]` tag opens it to 1M, and for a model whose window is 1M
/// of its own, the first release that gave it that (before it, 200k unless
/// tagged). A dated, Bedrock or Vertex spelling names the same model (the
/// longest name it contains). Read from each release's own code
/// (docs/hosts.md, "Windows"); where a release gap was not read, the later
/// end, so a release in the gap is told both windows rather than none.
const MODELS: &[(&str, u64, bool, Option<Release>)] = &[
    ("claude-3-5-haiku", 200_000, false, None),
    ("claude-3-5-sonnet", 200_000, false, None),
    ("claude-3-7-sonnet", 200_000, false, None),
    ("claude-haiku-4-5", 200_000, true, None),
    ("claude-haiku-5-5", LARGE_WINDOW, false, Some((2, 1, 295))),
    ("claude-sonnet-4-0", 200_000, true, None),
    ("claude-sonnet-4-2025", 200_000, true, None),
    ("claude-sonnet-4@2025", 200_000, true, None),
    ("claude-sonnet-4-5", 200_000, true, None),
    ("claude-sonnet-4-6", 200_000, true, None),
    ("claude-sonnet-5", LARGE_WINDOW, false, Some((2, 1, 197))),
    ("claude-sonnet-5-5", LARGE_WINDOW, false, Some((2, 1, 287))),
    ("claude-opus-4-0", 200_000, true, None),
    ("claude-opus-4-2025", 200_000, true, None),
    ("claude-opus-4@2025", 200_000, true, None),
    ("claude-opus-4-1", 200_000, true, None),
    ("claude-opus-4-5", 200_000, true, None),
    ("claude-opus-4-6", 200_000, true, None),
    ("claude-opus-4-7", LARGE_WINDOW, false, Some((2, 1, 117))),
    ("claude-opus-4-8", LARGE_WINDOW, false, Some((2, 1, 157))),
    ("claude-opus-5", LARGE_WINDOW, false, Some((2, 1, 220))),
    ("claude-opus-5-5", LARGE_WINDOW, false, Some((2, 1, 280))),
    ("claude-fable-5", LARGE_WINDOW, false, Some((2, 1, 170))),
    ("claude-fable-5-1", LARGE_WINDOW, false, Some((2, 1, 260))),
    ("claude-fable-5-2", LARGE_WINDOW, false, Some((2, 1, 321))),
    ("claude-mythos-5", LARGE_WINDOW, false, Some((2, 1, 170))),
    ("claude-mythos-5-1", LARGE_WINDOW, false, Some((2, 1, 260))),
    ("claude-mythos-5-2", LARGE_WINDOW, false, Some((2, 1, 321))),
];

/// A model's own window in today's Claude Code (2.1.332), and whether a
/// `[1m]` tag opens it to 1M; `None` for a model the table does not know. A
/// tag on the name is not looked at here.
///
/// ```
/// use interband_hosts::claude::model_window;
/// assert_eq!(model_window("claude-opus-5-5"), Some((1_000_000, false)));
/// assert_eq!(model_window("claude-sonnet-4-5-20250929"), Some((200_000, true)));
/// assert_eq!(model_window("us.anthropic.claude-sonnet-4-20250514-v1:0"), Some((200_000, true)));
/// assert_eq!(model_window("claude-sonnet-5-5[1m]"), Some((1_000_000, false)));
/// assert_eq!(model_window("glm-4.6"), None);
/// ```
pub fn model_window(model: &str) -> Option<(u64, bool)> {
    model_window_at(model, None)
}

/// [`model_window`] in the release `version` names (`None`, or a name that
/// is no release: today's): a model whose 1M came in a later release had
/// 200k then, and could be opened to 1M with the tag.
///
/// ```
/// use interband_hosts::claude::model_window_at;
/// assert_eq!(model_window_at("claude-opus-4-7", Some("2.1.111")), Some((200_000, true)));
/// assert_eq!(model_window_at("claude-opus-4-7", Some("2.1.117")), Some((1_000_000, false)));
/// assert_eq!(model_window_at("claude-haiku-4-5-20251001", Some("2.1.92")), Some((200_000, true)));
/// assert_eq!(model_window_at("claude-fable-5-1", Some("2.1.200")), Some((200_000, true)));
/// ```
pub fn model_window_at(model: &str, version: Option<&str>) -> Option<(u64, bool)> {
    let m = model.to_ascii_lowercase();
    let at = version.and_then(release);
    MODELS
        .iter()
        .filter(|(name, ..)| m.contains(name))
        .max_by_key(|(name, ..)| name.len())
        .map(|&(_, window, opt_in, since)| match (since, at) {
            (Some(since), Some(at)) if at < since => (DEFAULT_WINDOW, true),
            _ => (window, opt_in),
        })
}

/// The first release that gives a model its table does not know 1M
/// (before it, 200k).
const UNKNOWN_1M_SINCE: Release = (2, 1, 323);

/// Whether a tag asks for 1M: `[1m]` at the end of the name.
pub fn tagged_1m(model: &str) -> bool {
    model.to_ascii_lowercase().trim_end().ends_with("[1m]")
}

/// The window a model as asked for means (the `requestedModel` Claude Code
/// writes, `--model`'s value): 1M with the `[1m]` tag, else the model's
/// own; a model the table does not know has 1M in the Claude Code that
/// writes `requestedModel` (2.1.332).
///
/// ```
/// use interband_hosts::claude::requested_window;
/// assert_eq!(requested_window("claude-sonnet-4-5[1m]"), 1_000_000);
/// assert_eq!(requested_window("claude-sonnet-4-5"), 200_000);
/// assert_eq!(requested_window("claude-opus-5-5"), 1_000_000);
/// assert_eq!(requested_window("some-proxy-model"), 1_000_000);
/// ```
pub fn requested_window(model: &str) -> u64 {
    requested_window_at(model, None)
}

/// [`requested_window`] in the release `version` names: a model the table
/// does not know had 200k before 2.1.323, and a model whose 1M came later
/// had 200k then.
///
/// ```
/// use interband_hosts::claude::requested_window_at;
/// assert_eq!(requested_window_at("some-proxy-model", Some("2.1.300")), 200_000);
/// assert_eq!(requested_window_at("some-proxy-model", Some("2.1.323")), 1_000_000);
/// assert_eq!(requested_window_at("claude-haiku-5-5", Some("2.1.292")), 200_000);
/// assert_eq!(requested_window_at("claude-haiku-5-5[1m]", Some("2.1.292")), 1_000_000);
/// ```
pub fn requested_window_at(model: &str, version: Option<&str>) -> u64 {
    if tagged_1m(model) {
        return LARGE_WINDOW;
    }
    let unknown = match version.and_then(release) {
        Some(at) if at < UNKNOWN_1M_SINCE => DEFAULT_WINDOW,
        _ => LARGE_WINDOW,
    };
    model_window_at(model, version).map_or(unknown, |(w, _)| w)
}

/// How a session was started, as far as a hook can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A model was named: `--model`, else `ANTHROPIC_MODEL`, else the
    /// settings' `model` (as written, with its tag).
    Named(String),
    /// The `claude` process was found and nothing names a model: the
    /// default model, at its own window.
    Unnamed,
    /// Nothing could be told (no `claude` process found, nothing named).
    Unknown,
}

/// How the session that runs this hook was started: the command line of
/// the `claude` process (`$CLAUDE_PID`, else the nearest of the hook's
/// ancestors whose program is `claude`, read from `/proc`), its
/// `--model`; else `ANTHROPIC_MODEL`; else the `model` of the settings
/// (`.claude/settings.local.json` and `.claude/settings.json` in the
/// project, then `~/.claude/settings.json`; the `--settings` file first).
pub fn launch_model(
    env: &dyn interband::settings::Env,
    project: Option<&std::path::Path>,
) -> Launch {
    let var = |k: &str| env.var(k).filter(|v| !v.trim().is_empty());
    // Set (Claude Code sets it for its hooks), it names the process: set
    // empty, no process is looked for.
    let args = match env.var("CLAUDE_PID") {
        Some(pid) => pid.trim().parse().ok().and_then(claude_process),
        None => claude_ancestor(),
    };
    if let Some(m) = args.as_deref().and_then(|a| flag(a, "--model")) {
        return Launch::Named(m);
    }
    if let Some(m) = var("ANTHROPIC_MODEL") {
        return Launch::Named(m);
    }
    let model_in = |f: &std::path::Path| {
        let (_, v) = crate::project::read_json(f, false)?;
        v["model"]
            .as_str()
            .filter(|m| !m.trim().is_empty())
            .map(str::to_owned)
    };
    let named = args
        .as_deref()
        .and_then(|a| flag(a, "--settings"))
        .and_then(|f| model_in(f.as_ref()));
    // The project's files name the model only where they count; one that
    // names it and does not count leaves the model unknown (the user's own
    // file is not what Claude Code runs then).
    let named = match (named, project) {
        (Some(m), _) => Some(Ok(m)),
        (None, Some(p)) => project_settings(p, env).into_iter().find_map(|s| {
            match (s.ignored, s.value.as_str().filter(|m| !m.trim().is_empty())) {
                (None, Some(m)) => Some(Ok(m.to_owned())),
                (None, None) => None,
                // Ignored, or unreadable (what it sets is not known).
                (Some(_), _) => Some(Err(())),
            }
        }),
        (None, None) => None,
    };
    let named = named.or_else(|| {
        let home = interband::paths::home(env)?;
        model_in(&interband::paths::under(&home, ".claude/settings.json")).map(Ok)
    });
    match (named, args) {
        (Some(Ok(m)), _) => Launch::Named(m),
        (Some(Err(())), _) => Launch::Unknown,
        (None, Some(_)) => Launch::Unnamed,
        (None, None) => Launch::Unknown,
    }
}

/// What the project's `.claude/settings.local.json` and
/// `.claude/settings.json` set that interband reads (the `model`, which
/// decides a window), in Claude Code's order, each with whether it counts.
/// Claude Code runs a session only in a folder whose trust dialog was
/// accepted (or headless, `-p`, which skips the dialog and applies the
/// project's settings all the same): the host's trust is the session's
/// being there; interband's is `interband trust FILE` ([`crate::project`]).
pub(crate) fn project_settings(
    project: &std::path::Path,
    env: &dyn interband::settings::Env,
) -> Vec<crate::project::Setting> {
    let users = crate::CLAUDE.user_settings(env);
    [".claude/settings.local.json", ".claude/settings.json"]
        .iter()
        .map(|f| project.join(f))
        .filter(|f| {
            !users
                .as_ref()
                .is_some_and(|u| crate::project::same_file(u, f))
        })
        .flat_map(|f| crate::project::settings(&f, false, &["/model"], || true, env))
        .collect()
}

/// The value of `--name V` or `--name=V` among `args`.
fn flag(args: &[String], name: &str) -> Option<String> {
    let eq = format!("{name}=");
    args.iter().enumerate().find_map(|(i, a)| {
        if a == name {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(&eq).map(str::to_owned)
        }
    })
}

/// The arguments of process `pid` when its program is Claude Code's and
/// they can be read: the Node.js releases (1.x, 2.0) set their process's
/// title to `claude`, which leaves no arguments to read (then `None`: how
/// the session was started cannot be told from it).
fn claude_process(pid: u32) -> Option<Vec<String>> {
    process::args(pid).filter(|a| is_claude(a))
}

fn is_claude(args: &[String]) -> bool {
    args.len() > 1
        && args
            .iter()
            .take(2)
            .any(|a| process::names(a, "claude") || a.ends_with("/claude-code/cli.js"))
}

/// The arguments of the `claude` process that runs this hook (see
/// [`process::host_ancestor`]).
fn claude_ancestor() -> Option<Vec<String>> {
    process::host_ancestor(is_claude).map(|(_, args)| args)
}

/// Why nobody is at this session's keyboard, when Claude Code says so to
/// its hooks: `CLAUDE_CODE_SESSION_ATTENDED=0` (2.1.269 and later; `1` in
/// the interactive UI), else `CLAUDE_CODE_ENTRYPOINT` naming an SDK entry
/// (`sdk-cli` for `claude -p`, `sdk-ts`, `sdk-py`; `cli` in the UI).
///
/// ```
/// use interband_hosts::claude::headless;
/// let p = |k: &str| (k == "CLAUDE_CODE_ENTRYPOINT").then(|| "sdk-cli".to_string());
/// assert!(headless(&p).unwrap().contains("sdk-cli"));
/// let ui = |k: &str| (k == "CLAUDE_CODE_ENTRYPOINT").then(|| "cli".to_string());
/// assert_eq!(headless(&ui), None);
/// ```
pub fn headless(env: &dyn interband::settings::Env) -> Option<String> {
    let var = |k: &str| env.var(k).map(|v| v.trim().to_owned());
    match var("CLAUDE_CODE_SESSION_ATTENDED").as_deref() {
        Some("0" | "false") => return Some("CLAUDE_CODE_SESSION_ATTENDED=0".into()),
        Some("1" | "true") => return None,
        _ => {}
    }
    var("CLAUDE_CODE_ENTRYPOINT")
        .filter(|e| e.starts_with("sdk"))
        .map(|e| format!("CLAUDE_CODE_ENTRYPOINT={e}"))
}

/// Whether this hook runs from a Claude Code plugin: Claude Code sets
/// `CLAUDE_PLUGIN_ROOT` for a plugin's hooks only.
pub fn from_plugin(env: &dyn interband::settings::Env) -> bool {
    env.var("CLAUDE_PLUGIN_ROOT")
        .is_some_and(|r| !r.trim().is_empty())
}

/// The `statusLine` command of the user's settings (`~/.claude/settings.json`,
/// read bounded, without blocking), if it has one. A plugin cannot add a
/// statusline (Claude Code keeps only `agent` and `subagentStatusLine` of a
/// plugin's settings, 2.0.76 to 2.1.332): only the user's own shows one.
pub fn user_statusline(home: &std::path::Path) -> Option<String> {
    let path = interband::paths::under(home, ".claude/settings.json");
    let bytes = interband::fsio::read_regular(&path, 1 << 20).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.pointer("/statusLine/command")?
        .as_str()
        .map(str::to_owned)
}

/// Output tokens Claude Code reserves for a compaction's summary, at most.
const OUTPUT_RESERVE: u64 = 20_000;
/// Claude Code's fixed buffer before the reserve.
const BUFFER: u64 = 13_000;

/// Where Claude Code starts to compact a window: at `window − min(max
/// output, 20000) − 13000` tokens (167k of 200k, a 16.5% reserve; 967k of 1M,
/// 3.3%), of the window `CLAUDE_CODE_AUTO_COMPACT_WINDOW` sets when it is
/// smaller (the window itself stays); `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`
/// lowers it to P% of the effective window (less the output reserve), never
/// above the default; `DISABLE_AUTO_COMPACT` turns it off (the whole window
/// is usable).
///
/// ```
/// use interband_hosts::claude::compaction_point;
/// let none = |_: &str| None;
/// assert_eq!(compaction_point(200_000, &none), 167_000);
/// assert_eq!(compaction_point(1_000_000, &none), 967_000);
/// let pct = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "50".to_string());
/// assert_eq!(compaction_point(200_000, &pct), 90_000);
/// assert_eq!(compaction_point(1_000_000, &pct), 490_000);
/// let cap = |k: &str| (k == "CLAUDE_CODE_AUTO_COMPACT_WINDOW").then(|| "500000".to_string());
/// assert_eq!(compaction_point(1_000_000, &cap), 467_000);
/// assert_eq!(compaction_point(200_000, &cap), 167_000);
/// ```
pub fn compaction_point(window: u64, env: &dyn interband::settings::Env) -> u64 {
    let on = |k: &str| {
        env.var(k)
            .is_some_and(|v| !matches!(v.trim(), "" | "0" | "false"))
    };
    if on("DISABLE_AUTO_COMPACT") {
        return window;
    }
    let compacts_as = env
        .var("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&w| w > 0)
        .map_or(window, |cap| cap.min(window));
    let effective = compacts_as.saturating_sub(OUTPUT_RESERVE.min(compacts_as / 4));
    let default = effective.saturating_sub(BUFFER).max(compacts_as / 2);
    match env
        .var("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        Some(p) if p > 0.0 && p <= 100.0 => {
            ((effective as f64 * p / 100.0).floor() as u64).min(default)
        }
        _ => default,
    }
}

/// What a Claude Code session's window is known from (see the module's
/// documentation for the order).
#[derive(Debug, Clone, Copy, Default)]
pub struct WindowFacts<'a> {
    /// The statusline's (or the hook input's) window for this session.
    pub stated: Option<(u64, interband::context::WindowSource)>,
    /// The window the transcript's latest `requestedModel` means.
    pub requested: Option<u64>,
    /// `[interpulse] window` (0: unset).
    pub configured: u64,
    /// The model of the latest response, as asked for when the transcript
    /// says (`requestedModel`, with its `[1m]` tag).
    pub model: Option<&'a str>,
    /// Tokens in context now.
    pub used: u64,
    /// What the session's own history showed of that model.
    pub history: Option<&'a crate::history::Evidence>,
    /// The release that wrote the transcript (its model table is used).
    pub version: Option<&'a str>,
}

/// A session's window: how large, where that came from, and (a guess) the
/// smaller one it may be.
pub fn window(
    k: &WindowFacts,
    env: &dyn interband::settings::Env,
    launch: impl FnOnce() -> Launch,
) -> (u64, interband::context::WindowSource, Option<u64>) {
    use interband::context::WindowSource as From;
    let set = |key: &str| {
        env.var(key)
            .filter(|v| !matches!(v.trim(), "" | "0" | "false"))
    };
    if let Some((w, from)) = k.stated.filter(|(w, _)| *w > 0) {
        return (w, from, None);
    }
    // Claude Code gives every model 200k under CLAUDE_CODE_DISABLE_1M_CONTEXT.
    if set("CLAUDE_CODE_DISABLE_1M_CONTEXT").is_some() {
        return (DEFAULT_WINDOW, From::HostSettings, None);
    }
    // The session's own history settles what only a table would say: an
    // automatic compaction below 1M's compaction point is 200k, usage past
    // 200k is 1M. A model asked for with `[1m]` is 1M whatever came before.
    let settled = k.history.and_then(|h| {
        h.settles(
            LARGE_WINDOW,
            DEFAULT_WINDOW,
            compaction_point(LARGE_WINDOW, env),
        )
    });
    let tagged = k.model.is_some_and(tagged_1m);
    let (window, from, other) = if tagged {
        (LARGE_WINDOW, From::Transcript, None)
    } else if let Some((w, from)) = settled {
        (w, from, None)
    } else if let Some(w) = k.requested {
        (w, From::Transcript, None)
    } else if k.configured > 0 {
        (k.configured, From::Configured, None)
    } else {
        let max_context = env
            .var("CLAUDE_CODE_MAX_CONTEXT_TOKENS")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&w| w > 0);
        match k.model.map(|m| (m, model_window_at(m, k.version))) {
            Some((_, Some((w, false)))) => (w, From::Model, None),
            Some((_, Some((w, true)))) => match launch() {
                Launch::Named(m) if tagged_1m(&m) => (LARGE_WINDOW, From::Launch, None),
                Launch::Named(_) | Launch::Unnamed => (w, From::Launch, None),
                Launch::Unknown => (LARGE_WINDOW, From::Guess, Some(w)),
            },
            // A model the table does not know: CLAUDE_CODE_MAX_CONTEXT_TOKENS,
            // else 1M in today's Claude Code, 200k in older ones.
            Some((_, None)) => match max_context {
                Some(w) => (w, From::HostSettings, None),
                None => (LARGE_WINDOW, From::Guess, Some(DEFAULT_WINDOW)),
            },
            None => (DEFAULT_WINDOW, From::Default, None),
        }
    };
    if k.used > window {
        (window.max(LARGE_WINDOW), From::Usage, None)
    } else if other.is_some_and(|o| k.used > o) {
        (window, From::Usage, None)
    } else {
        (window, from, other)
    }
}

/// A line read forward: its fact, what happens, its time (one parse).
pub(crate) fn forward(line: &[u8], offset: u64) -> Seen {
    let line = crate::tail::trimmed(line);
    // The same reading as from the end, by construction, even of a line
    // that does not parse.
    let fact = fact(line, offset);
    let Ok(l) = serde_json::from_slice::<Line>(line) else {
        return Seen {
            fact,
            ..Seen::default()
        };
    };
    Seen {
        fact,
        happenings: happenings_of(&l),
        timestamp: str_of(&l.timestamp).map(str::to_owned),
    }
}

#[derive(serde::Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    name: Option<Value>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    tool_use_id: Option<Value>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    is_error: Option<Value>,
}

/// Claude Code's lines, forward (see [`crate::forward`]):
///
/// * an assistant line (not `<synthetic>`, an error the client wrote) is
///   model activity; each `tool_use` block is a call (a sidechain's is a
///   subagent's); a `stop_reason` other than `null`, `tool_use` or
///   `pause_turn` on a line with no call ends the turn (versions 1.0.x,
///   2.0.76 and 2.1.29–2.1.34 write `null` on every line);
/// * a user line's `tool_result` blocks are results (the line's
///   `toolUseResult` is what the hook gets); a main-thread user line with
///   text, not meta, is a prompt, and ends the turn before it; the one with
///   `isCompactSummary` is a compaction's summary;
/// * `system` lines: `compact_boundary` (a compaction), `stop_hook_summary`
///   and `turn_duration` (written after a turn's end).
fn happenings_of(l: &Line) -> Vec<Happening> {
    let side = l.sidechain == Some(Value::Bool(true));
    let mut out = Vec::new();
    match str_of(&l.kind) {
        Some("assistant") => {
            let Some(m) = &l.message else { return out };
            if str_of(&m.model) == Some("<synthetic>") {
                return out;
            }
            if !side {
                out.push(Happening::Activity);
            }
            let blocks: Vec<Block> = m
                .content
                .filter(|c| c.get().starts_with('['))
                .and_then(|c| serde_json::from_str(c.get()).ok())
                .unwrap_or_default();
            for b in &blocks {
                if str_of(&b.kind) == Some("tool_use") {
                    out.push(Happening::ToolCall {
                        id: str_of(&b.id).map(str::to_owned),
                        name: str_of(&b.name).unwrap_or("?").to_owned(),
                        input: own(b.input),
                        subagent: side,
                    });
                }
            }
            let stop = str_of(&m.stop_reason);
            let calls = out.iter().any(|h| matches!(h, Happening::ToolCall { .. }));
            if !side && !calls && stop.is_some_and(|s| s != "tool_use" && s != "pause_turn") {
                out.push(Happening::EndsTurn);
            }
        }
        Some("user") => {
            if l.compact_summary == Some(Value::Bool(true)) {
                out.push(Happening::CompactionSummary);
                return out;
            }
            let Some(m) = &l.message else { return out };
            let content = m.content.map(RawValue::get).unwrap_or("");
            if content.starts_with('"') {
                if !side && l.meta != Some(Value::Bool(true)) {
                    out.extend([Happening::TurnEnded, Happening::Prompt]);
                }
                return out;
            }
            let blocks: Vec<Block> = serde_json::from_str(content).unwrap_or_default();
            let results: Vec<&Block> = blocks
                .iter()
                .filter(|b| str_of(&b.kind) == Some("tool_result"))
                .collect();
            for b in &results {
                let Some(id) = str_of(&b.tool_use_id) else {
                    continue;
                };
                // The hook is given the tool's own output object when the
                // line has it for its only result.
                let response = match (results.len(), l.tool_use_result) {
                    (1, Some(r)) => r.to_owned(),
                    _ => own(b.content),
                };
                out.push(Happening::ToolResult {
                    id: id.to_owned(),
                    response,
                    error: b.is_error == Some(Value::Bool(true)),
                    subagent: side,
                });
            }
            let text = blocks.iter().any(|b| str_of(&b.kind) == Some("text"));
            if results.is_empty() && text && !side && l.meta != Some(Value::Bool(true)) {
                out.extend([Happening::TurnEnded, Happening::Prompt]);
            }
        }
        Some("system") if !side => match str_of(&l.subtype) {
            Some("compact_boundary") => {
                let get = |k: &str| l.compact_metadata.as_ref().and_then(|m| m.get(k));
                out.push(Happening::Compaction {
                    trigger: get("trigger").and_then(Value::as_str).map(str::to_owned),
                    pre_tokens: get("preTokens").and_then(Value::as_u64),
                    post_tokens: get("postTokens").and_then(Value::as_u64),
                });
            }
            Some("stop_hook_summary" | "turn_duration") => out.push(Happening::TurnEnded),
            _ => {}
        },
        _ => {}
    }
    out
}

/// The window and compaction point of a Claude Code session ([`crate::Host::limits`]).
pub(crate) fn limits(k: &crate::Known, env: &dyn interband::settings::Env) -> crate::Limits {
    let facts = WindowFacts {
        stated: k.stated.filter(|(w, _)| *w > 0),
        requested: k.transcript,
        configured: k.configured,
        model: k.model,
        used: k.used,
        history: k.history,
        version: k.version,
    };
    let (window, source, other) = window(&facts, env, || launch_model(env, k.project));
    crate::Limits {
        window,
        compact_at: compaction_point(window, env),
        source,
        other,
        other_compact_at: other.map(|o| compaction_point(o, env)),
    }
}

/// Whether a transcript at `path` is Claude Code's (`~/.claude/projects/`).
/// A subagent's transcript: `<session>/subagents/agent-<id>.jsonl` beside
/// the session's own `<session>.jsonl` (2.1.332, its `SubagentStop`'s
/// `agent_transcript_path`).
pub(crate) fn subagent_transcript(parent: &std::path::Path, agent: &str) -> std::path::PathBuf {
    parent
        .with_extension("")
        .join("subagents")
        .join(format!("agent-{}.jsonl", interband::paths::safe_key(agent)))
}

/// [`subagent_usage`] of the subagent `agent` of the session whose
/// transcript is `parent`.
pub(crate) fn subagent_figure(
    parent: &std::path::Path,
    _session: &str,
    agent: &str,
) -> Option<crate::usage::TailUsage> {
    subagent_usage(&subagent_transcript(parent, agent))
}

pub(crate) fn owns_transcript(path: &std::path::Path) -> bool {
    // Either separator: a Windows session's path (`C:\Users\me\.claude\projects\...`).
    path.to_str()
        .is_some_and(|p| p.replace('\\', "/").contains("/.claude/projects/"))
}

/// [`headless`], as the profile asks it.
pub(crate) fn headless_of(
    _transcript: Option<&std::path::Path>,
    env: &dyn interband::settings::Env,
) -> Option<String> {
    headless(env)
}

/// Where Claude Code keeps a session's transcript: `projects/<slug>/<session>.jsonl`.
pub(crate) fn transcript_at(
    folder: &std::path::Path,
    project: &std::path::Path,
    session: &str,
) -> std::path::PathBuf {
    folder
        .join("projects")
        .join(crate::project_slug(project))
        .join(format!("{session}.jsonl"))
}

/// What installing into Claude Code's settings must say: interband's plugin,
/// enabled there, runs the same hooks.
pub(crate) fn install_notes(settings: &Value, _flags: &str) -> Vec<String> {
    let plugins = settings.get("enabledPlugins").and_then(Value::as_object);
    plugins
        .into_iter()
        .flatten()
        .filter(|(name, on)| name.split('@').next() == Some("interband") && on.as_bool() == Some(true))
        .map(|(name, _)| {
            format!("the plugin {name} is enabled here and registers the same hooks: disable one of the two")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_transcripts_are_told_apart_written_with_either_separator() {
        for path in [
            "/home/me/.claude/projects/-w-p/3e48b9d6.jsonl",
            r"C:\Users\me\.claude\projects\C--w-p\3e48b9d6.jsonl",
            "C:/Users/me/.claude/projects/C--w-p/3e48b9d6.jsonl",
        ] {
            assert_eq!(
                crate::Host::of_transcript(path),
                Some(crate::Host::Claude),
                "{path}"
            );
        }
        for other in [
            r"C:\Users\me\.claude\todos\x.jsonl",
            r"C:\Users\me\.codex\sessions\2026\11\30\rollout-x.jsonl",
        ] {
            assert_ne!(
                crate::Host::of_transcript(other),
                Some(crate::Host::Claude),
                "{other}"
            );
        }
    }

    #[test]
    fn a_project_s_model_counts_once_the_user_trusts_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("proj"));
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), r#"{"model":"haiku"}"#).unwrap();
        let theirs = project.join(".claude/settings.json");
        std::fs::write(&theirs, r#"{"model":"opus[1m]"}"#).unwrap();
        let h = home.display().to_string();
        // CLAUDE_PID set empty: no process is looked for.
        let env = move |k: &str| match k {
            "HOME" => Some(h.clone()),
            "CLAUDE_PID" => Some(String::new()),
            _ => None,
        };
        // Not trusted: the model is not known (the user's own file is not
        // what Claude Code runs here).
        assert_eq!(launch_model(&env, Some(&project)), Launch::Unknown);
        let set = project_settings(&project, &env);
        assert_eq!(set[0].ignored, Some(crate::project::Ignored::NotTrusted));
        crate::project::trust_for_test(&theirs, &home.join(".config/interband/trusted.json"));
        assert_eq!(
            launch_model(&env, Some(&project)),
            Launch::Named("opus[1m]".into())
        );
        // A project without a model: the user's; the home folder as the
        // project: the user's own file, trusted as such.
        std::fs::write(&theirs, "{}").unwrap();
        assert_eq!(
            launch_model(&env, Some(&project)),
            Launch::Named("haiku".into())
        );
        assert_eq!(
            launch_model(&env, Some(&home)),
            Launch::Named("haiku".into())
        );
        assert!(project_settings(&home, &env).is_empty());
        // A project file interband cannot read (over 1 MiB) sets what is
        // not known: never the user's own model in its place.
        let pad = "x".repeat(1 << 20);
        std::fs::write(&theirs, format!(r#"{{"model":"opus[1m]","pad":"{pad}"}}"#)).unwrap();
        assert_eq!(launch_model(&env, Some(&project)), Launch::Unknown);
    }
    use interband::context::WindowSource as From;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn facts(model: &str, used: u64) -> WindowFacts<'_> {
        WindowFacts {
            model: Some(model),
            used,
            ..Default::default()
        }
    }

    #[test]
    fn the_window_comes_from_the_sessions_own_signals_best_first() {
        let unknown = || Launch::Unknown;
        let sonnet = facts("claude-sonnet-4-5-20250929", 175_000);
        // Nothing says: a guess, the larger assumed, the smaller told.
        assert_eq!(
            window(&sonnet, &none, unknown),
            (1_000_000, From::Guess, Some(200_000))
        );
        // Started with the tag, or with a model named without it, or with none.
        let named = |m: &str| {
            let m = m.to_owned();
            move || Launch::Named(m)
        };
        assert_eq!(window(&sonnet, &none, named("sonnet[1m]")).0, 1_000_000);
        assert_eq!(
            window(&sonnet, &none, named("claude-sonnet-4-5")),
            (200_000, From::Launch, None)
        );
        assert_eq!(
            window(&sonnet, &none, || Launch::Unnamed),
            (200_000, From::Launch, None)
        );
        // The transcript's requested model wins over the start (a /model switch).
        let asked = WindowFacts {
            requested: Some(requested_window("claude-sonnet-4-5[1m]")),
            ..sonnet
        };
        assert_eq!(
            window(&asked, &none, named("claude-sonnet-4-5")),
            (1_000_000, From::Transcript, None)
        );
        // The user's setting comes before the start and the table.
        let configured = WindowFacts {
            configured: 300_000,
            ..sonnet
        };
        assert_eq!(
            window(&configured, &none, || panic!("not asked")),
            (300_000, From::Configured, None)
        );
        // This session's statusline before everything.
        let stated = WindowFacts {
            stated: Some((1_000_000, From::Statusline)),
            ..asked
        };
        assert_eq!(
            window(&stated, &none, unknown),
            (1_000_000, From::Statusline, None)
        );
        // A model with one window has it; the launch is not even looked at.
        assert_eq!(
            window(&facts("claude-opus-5-5", 175_000), &none, || panic!(
                "not asked"
            )),
            (1_000_000, From::Model, None)
        );
        assert_eq!(
            window(
                &facts("claude-3-7-sonnet-20250219", 150_000),
                &none,
                unknown
            ),
            (200_000, From::Model, None)
        );
        // Past the smaller window: certain.
        assert_eq!(
            window(&facts("claude-sonnet-4-6", 230_000), &none, unknown),
            (1_000_000, From::Usage, None)
        );
        let small = WindowFacts {
            configured: 100_000,
            ..facts("claude-sonnet-4-6", 150_000)
        };
        assert_eq!(
            window(&small, &none, unknown),
            (1_000_000, From::Usage, None)
        );
        // A model the table does not know: 1M in today's client, 200k in older ones.
        assert_eq!(
            window(&facts("glm-4.6", 150_000), &none, unknown),
            (1_000_000, From::Guess, Some(200_000))
        );
        let max = |k: &str| (k == "CLAUDE_CODE_MAX_CONTEXT_TOKENS").then(|| "500000".to_owned());
        assert_eq!(
            window(&facts("glm-4.6", 150_000), &max, unknown),
            (500_000, From::HostSettings, None)
        );
        // No model at all (no response yet).
        assert_eq!(
            window(&WindowFacts::default(), &none, unknown),
            (200_000, From::Default, None)
        );
        // 1M turned off: 200k for every model, whatever was asked for.
        let off = |k: &str| (k == "CLAUDE_CODE_DISABLE_1M_CONTEXT").then(|| "1".to_owned());
        assert_eq!(
            window(&asked, &off, unknown),
            (200_000, From::HostSettings, None)
        );
        assert_eq!(
            window(&facts("claude-opus-5-5", 10), &off, unknown).0,
            200_000
        );
        // The compaction window moves only the compaction point.
        let cap = |k: &str| (k == "CLAUDE_CODE_AUTO_COMPACT_WINDOW").then(|| "500000".to_owned());
        assert_eq!(window(&asked, &cap, unknown).0, 1_000_000);
    }

    #[test]
    fn a_model_is_found_by_any_of_its_spellings_and_tags() {
        for (id, want) in [
            ("claude-sonnet-4-20250514", Some((200_000, true))),
            ("claude-sonnet-4@20250514", Some((200_000, true))),
            (
                "anthropic.claude-opus-4-1-20250805-v1:0",
                Some((200_000, true)),
            ),
            ("CLAUDE-OPUS-4-7", Some((1_000_000, false))),
            ("claude-sonnet-5", Some((1_000_000, false))),
            ("claude-sonnet-4-6[1m]", Some((200_000, true))),
            ("claude-fable-5-2", Some((1_000_000, false))),
            ("gpt-5", None),
        ] {
            assert_eq!(model_window(id), want, "{id}");
        }
        assert!(tagged_1m("Claude-Sonnet-4-5[1M] "));
        assert!(!tagged_1m("claude-sonnet-4-5"));
    }

    #[test]
    fn the_requested_model_on_the_real_transcripts() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/claude-code-1m"
        );
        for (file, window) in [
            ("transcript.sonnet-1m.jsonl", 1_000_000),
            ("transcript.at-PostToolUse.sonnet-1m.jsonl", 1_000_000),
            ("transcript.sonnet-200k.jsonl", 200_000),
            ("transcript.at-PostToolUse.switch-to-1m.jsonl", 1_000_000),
            ("transcript.default.jsonl", 1_000_000),
        ] {
            let bytes =
                std::fs::read(format!("{dir}/{file}")).unwrap_or_else(|e| panic!("{file}: {e}"));
            let u = crate::tail::tail_of(&bytes, crate::Host::Claude)
                .usage
                .unwrap();
            assert_eq!(u.window, Some(window), "{file}");
            assert_eq!(
                crate::Host::Claude
                    .read_forward(&bytes)
                    .usage
                    .unwrap()
                    .window,
                Some(window),
                "{file}"
            );
        }
    }

    #[test]
    fn compaction_can_be_lowered_or_disabled() {
        let off = |k: &str| (k == "DISABLE_AUTO_COMPACT").then(|| "1".to_owned());
        assert_eq!(compaction_point(200_000, &off), 200_000);
        let high = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "95".to_owned());
        assert_eq!(
            compaction_point(200_000, &high),
            167_000,
            "an override only lowers it"
        );
        let junk = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "abc".to_owned());
        assert_eq!(compaction_point(200_000, &junk), 167_000);
        assert!(
            compaction_point(10_000, &none) >= 5_000,
            "tiny windows keep a sane budget"
        );
    }

    use crate::history::Evidence;
    use proptest::prelude::*;

    /// Models whose window a table may leave open, or give wrong for an
    /// older release: the history decides for each.
    const MODELS: &[&str] = &[
        "claude-haiku-4-5-20251001",
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "glm-4.6",
    ];

    proptest! {
        #[test]
        fn any_automatic_compaction_below_300k_settles_200k(
            at in 1u64..300_000,
            used in 0u64..200_000,
            model in prop::sample::select(MODELS),
        ) {
            let history = Evidence { auto_compacted_at: Some(at), peak: used.min(200_000), ..Default::default() };
            let k = WindowFacts { history: Some(&history), ..facts(model, used) };
            let (w, from, other) = window(&k, &none, || Launch::Unknown);
            prop_assert_eq!((w, from, other), (200_000, From::Compaction, None));
        }

        #[test]
        fn any_usage_above_200k_settles_1m(
            peak in 200_001u64..1_000_000,
            used in 0u64..1_000_000,
            at in prop::option::of(1u64..300_000),
            model in prop::sample::select(MODELS),
        ) {
            let history = Evidence { auto_compacted_at: at, peak, ..Default::default() };
            let k = WindowFacts { history: Some(&history), ..facts(model, used) };
            let (w, from, other) = window(&k, &none, || Launch::Unknown);
            prop_assert_eq!((w, other), (1_000_000, None));
            prop_assert!(matches!(from, From::Usage), "{:?}", from);
        }

        #[test]
        fn a_model_asked_for_with_1m_is_1m_whatever_came_before(
            at in 1u64..300_000,
        ) {
            let history = Evidence { auto_compacted_at: Some(at), ..Default::default() };
            let k = WindowFacts {
                history: Some(&history),
                requested: Some(LARGE_WINDOW),
                ..facts("claude-sonnet-4-5[1m]", 100_000)
            };
            prop_assert_eq!(window(&k, &none, || Launch::Unknown), (1_000_000, From::Transcript, None));
        }
    }

    #[test]
    fn a_manual_compaction_or_none_leaves_the_guess() {
        let manual = Evidence {
            peak: 150_000,
            ..Default::default()
        };
        let k = WindowFacts {
            history: Some(&manual),
            ..facts("claude-haiku-4-5-20251001", 160_000)
        };
        assert_eq!(
            window(&k, &none, || Launch::Unknown),
            (1_000_000, From::Guess, Some(200_000))
        );
        // A lowered compaction point for 1M makes a compaction at 171k no evidence.
        let pct = |k: &str| (k == "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").then(|| "15".to_owned());
        let auto = Evidence {
            auto_compacted_at: Some(171_000),
            ..manual.clone()
        };
        let k = WindowFacts {
            history: Some(&auto),
            ..k
        };
        assert_eq!(window(&k, &pct, || Launch::Unknown).1, From::Guess);
    }
}
