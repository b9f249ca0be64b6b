//! Gemini CLI: its chat recording, its token limit and where it compresses.
//!
//! The transcript is `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`
//! (JSONL since 0.39). A model reply is a record `"type":"gemini"` with
//! `model` and `tokens: {input, output, cached, thoughts, tool, total}`;
//! `tokens.input` is the API's `promptTokenCount` (cached tokens included),
//! the figure Gemini itself compares with its limit. The same message id is
//! appended again when its tool calls are added, with the same tokens: the
//! latest reply's (the largest of its records') `tokens.input` is the figure,
//! by [`crate::usage`]'s rule; a `user` record comes between replies, unless
//! it is a tool's result (`functionResponse`). `$set` lines only update
//! metadata.
//!
//! Gemini compresses the history when the last prompt reaches
//! `compressionThreshold` × the model's token limit (0.5 by default;
//! `model.compressionThreshold` in `~/.gemini/settings.json`, then the
//! project's `.gemini/settings.json` where Gemini trusts the folder). A
//! compression rewrites the recording's whole message list around a
//! `<state_snapshot>` (`{"$set":{"messages":[...]}}`): a compaction, with no
//! figure until the next reply (the context it replaced is gone). The same
//! line at a session's start or on a resume (the whole history) is none.
//!
//! Before 0.39 the recording was one JSON document (`session-*.json`,
//! pretty-printed, rewritten whole at each change): the same records, in
//! its `messages` ([`crate::tail::Layout::Document`]); a compression left no
//! mark there (the next reply's figure is lower).

pub mod digest;

use std::path::Path;

use serde_json::Value;

use crate::forward::{Happening, Seen, raw};
use crate::tail::contains;
use crate::usage::Fact;

/// Why nobody is at this session's keyboard, as far as the process that
/// runs the hook shows: Gemini CLI tells its hooks nothing of it, so the
/// `gemini` process is looked for among the hook's ancestors (see
/// [`crate::process`]): started with `-p`/`--prompt`, or with an input that
/// is not a terminal (a pipe, `/dev/null`: it runs the one prompt and
/// exits), it is headless. `None` where no such process is found.
pub fn headless() -> Option<String> {
    let (pid, args) = crate::process::host_ancestor(|a| gemini_args(a).is_some())?;
    headless_args(&args).or_else(|| {
        (crate::process::stdin_is_terminal(pid) == Some(false))
            .then(|| "its `gemini` process does not read a terminal".to_owned())
    })
}

/// The arguments after the program, when `args` are Gemini CLI's (`gemini
/// ...`, or `node .../gemini ...`, `node .../@google/gemini-cli/dist/index.js ...`).
fn gemini_args(args: &[String]) -> Option<&[String]> {
    crate::process::args_after(args, "gemini", "gemini-cli")
}

/// Why a process with the command line `args` is a headless Gemini CLI,
/// when its arguments say (`-p`, `--prompt`); `None` for any other process.
///
/// ```
/// # use interband_hosts::gemini::headless_args;
/// let args = |a: &str| a.split(' ').map(str::to_owned).collect::<Vec<_>>();
/// assert!(headless_args(&args("/usr/bin/node --max-old-space-size=8 /x/bin/gemini -p hi")).is_some());
/// assert!(headless_args(&args("gemini --model m --prompt=hi")).is_some());
/// assert_eq!(headless_args(&args("gemini -i hi")), None);
/// assert_eq!(headless_args(&args("gemini --resume latest")), None);
/// assert_eq!(headless_args(&args("node -p 1")), None);
/// ```
pub fn headless_args(args: &[String]) -> Option<String> {
    crate::process::prompt_flag(gemini_args(args)?, "gemini")
}

/// The token limit of current Gemini models: 1,048,576.
pub const DEFAULT_LIMIT: u64 = 1_048_576;

/// The share of the limit at which Gemini compresses, by default.
pub const DEFAULT_THRESHOLD: f64 = 0.5;

#[derive(serde::Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<Value>,
    id: Option<Value>,
    model: Option<Value>,
    tokens: Option<Value>,
}

/// Only whether a `$set` line replaces the message list.
#[derive(serde::Deserialize)]
struct SetLine {
    #[serde(rename = "$set")]
    set: Option<SetMessages>,
}

#[derive(serde::Deserialize)]
struct SetMessages {
    messages: Option<serde::de::IgnoredAny>,
}

/// Gemini CLI's reader (see the module's documentation).
pub(crate) fn fact(line: &[u8], offset: u64) -> Option<Fact> {
    let line = crate::tail::trimmed(line);
    if line.starts_with(b"{\"$set\"") && contains(line, b"\"messages\"") {
        // A compression rewrites the history around its `<state_snapshot>`;
        // a session's first history and a resumed one's are no compression.
        let rewritten = contains(line, b"<state_snapshot>")
            && serde_json::from_slice::<SetLine>(line)
                .is_ok_and(|l| l.set.is_some_and(|s| s.messages.is_some()));
        return rewritten.then(|| Fact::Compaction {
            mark: format!("messages@{offset}"),
            tokens: None,
            before: None,
            automatic: None,
            window: None,
        });
    }
    if !contains(line, b"\"gemini\"") && !contains(line, b"\"user\"") {
        return None;
    }
    let l = serde_json::from_slice::<Line>(line).ok()?;
    match l.kind.as_ref().and_then(Value::as_str) {
        // A tool's result does not end the reply whose call it answers.
        Some("user") => (!contains(line, b"\"functionResponse\"")).then_some(Fact::Break),
        Some("gemini") => {
            let tokens = l
                .tokens
                .as_ref()
                .and_then(|t| crate::usage::count(t.get("input")?))?;
            let model = l.model.as_ref().and_then(Value::as_str).map(str::to_owned);
            Some(Fact::Usage {
                message: l.id.as_ref().and_then(Value::as_str).map(str::to_owned),
                tokens,
                window: model.as_deref().map(limit),
                model,
                version: None,
            })
        }
        _ => None,
    }
}

/// Writes a chat recorded as one JSON document (Gemini CLI before 0.39,
/// `session-*.json`: `{sessionId, projectHash, startTime, lastUpdated,
/// messages: [...]}`) as the JSONL Gemini writes since: the document's other
/// members as its first line, each message as a line of its own, members
/// after the messages as a `$set` line. The document is read as a stream,
/// one message held at a time. Returns the messages written.
///
/// ```
/// let doc = br#"{"sessionId": "s", "messages": [
///   {"id": "a", "type": "user", "content": [{"text": "hi"}]},
///   {"id": "b", "type": "gemini", "content": "} {", "tokens": {"input": 120000}, "model": "gemini-2.5-pro"}
/// ], "kind": "main"}"#;
/// let mut out = Vec::new();
/// assert_eq!(interband_hosts::gemini::document_lines(&doc[..], &mut out).unwrap(), 2);
/// let lines: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
/// assert_eq!(lines[0], r#"{"sessionId":"s"}"#);
/// assert!(lines[2].contains(r#""tokens":{"input":120000}"#));
/// assert_eq!(lines[3], r#"{"$set":{"kind":"main"}}"#);
/// ```
pub fn document_lines(
    document: impl std::io::Read,
    out: &mut impl std::io::Write,
) -> std::io::Result<u64> {
    use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
    use serde_json::Map;

    fn line<E: serde::de::Error>(
        out: &mut impl std::io::Write,
        v: &impl serde::Serialize,
    ) -> Result<(), E> {
        serde_json::to_writer(&mut *out, v)
            .map_err(E::custom)
            .and_then(|()| out.write_all(b"\n").map_err(E::custom))
    }

    struct Messages<'o, W>(&'o mut W, &'o mut u64);
    impl<'de, W: std::io::Write> DeserializeSeed<'de> for Messages<'_, W> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de, W: std::io::Write> Visitor<'de> for Messages<'_, W> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of messages")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(message) = seq.next_element::<Value>()? {
                line(self.0, &message)?;
                *self.1 += 1;
            }
            Ok(())
        }
    }

    struct Root<'o, W>(&'o mut W, &'o mut u64);
    impl<'de, W: std::io::Write> Visitor<'de> for Root<'_, W> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a chat recording: an object with its messages")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut members = Map::new();
            let mut seen = false;
            while let Some(key) = map.next_key::<String>()? {
                if key == "messages" && !seen {
                    line(self.0, &std::mem::take(&mut members))?;
                    map.next_value_seed(Messages(&mut *self.0, &mut *self.1))?;
                    seen = true;
                } else {
                    members.insert(key, map.next_value()?);
                }
            }
            if !seen {
                return Err(A::Error::missing_field("messages"));
            }
            if !members.is_empty() {
                line(self.0, &serde_json::json!({"$set": members}))?;
            }
            Ok(())
        }
    }

    let mut written = 0;
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(document));
    de.deserialize_map(Root(out, &mut written))
        .and_then(|()| de.end())
        .map_err(std::io::Error::other)?;
    Ok(written)
}

/// The token limit of a model, as Gemini CLI counts it.
///
/// ```
/// assert_eq!(interband_hosts::gemini::limit("gemini-2.5-flash"), 1_048_576);
/// assert_eq!(interband_hosts::gemini::limit("gemma-4-31b-it"), 256_000);
/// ```
pub fn limit(model: &str) -> u64 {
    if model.starts_with("gemma-4") {
        256_000
    } else {
        DEFAULT_LIMIT
    }
}

/// Where Gemini's settings keep the compression threshold.
const THRESHOLD_KEY: &str = "/model/compressionThreshold";

/// `model.compressionThreshold` from Gemini's settings: the project's
/// `.gemini/settings.json` where it counts ([`project_settings`]) over the
/// user's `~/.gemini/settings.json`, else [`DEFAULT_THRESHOLD`]. Files are
/// read bounded and without blocking; a value outside (0, 1] is ignored.
pub fn compression_threshold(
    home: Option<&Path>,
    project: Option<&Path>,
    env: &dyn interband::settings::Env,
) -> f64 {
    let threshold = |v: &Value| v.as_f64().filter(|t| *t > 0.0 && *t <= 1.0);
    // The user's file once, for the trust rule and the threshold both.
    let user = home.and_then(settings);
    project
        .map(|p| project_settings_with(user.as_ref(), home, p, env))
        .and_then(|set| crate::project::counted(&set, THRESHOLD_KEY).and_then(threshold))
        .or_else(|| user.as_ref()?.pointer(THRESHOLD_KEY).and_then(threshold))
        .unwrap_or(DEFAULT_THRESHOLD)
}

/// What the project's `.gemini/settings.json` sets that interband reads
/// (the compression threshold), each with whether it counts: only where
/// Gemini trusts the folder ([`trusts`]) and interband trusts the file
/// ([`crate::project`]).
pub(crate) fn project_settings(
    project: &Path,
    env: &dyn interband::settings::Env,
) -> Vec<crate::project::Setting> {
    let home = interband::paths::home(env);
    let user = home.as_deref().and_then(settings);
    project_settings_with(user.as_ref(), home.as_deref(), project, env)
}

fn project_settings_with(
    user: Option<&Value>,
    home: Option<&Path>,
    project: &Path,
    env: &dyn interband::settings::Env,
) -> Vec<crate::project::Setting> {
    let file = interband::paths::under(project, ".gemini/settings.json");
    if home.is_some_and(|h| {
        crate::project::same_file(&interband::paths::under(h, ".gemini/settings.json"), &file)
    }) {
        return Vec::new();
    }
    crate::project::settings(
        &file,
        true,
        &[THRESHOLD_KEY],
        || trusts_with(user, home, project, env),
        env,
    )
}

/// `<dir>/.gemini/settings.json` (comments allowed, as Gemini strips
/// them), read bounded and without blocking.
fn settings(dir: &Path) -> Option<Value> {
    crate::project::read_json(&interband::paths::under(dir, ".gemini/settings.json"), true)
        .map(|(_, v)| v)
}

/// Whether Gemini CLI trusts `folder`, so reads its project settings.
///
/// Gemini's rules: `GEMINI_RESTRICTED_MODE=true` or
/// `GEMINI_CLI_TRUST_WORKSPACE=false` distrust, `GEMINI_CLI_TRUST_WORKSPACE=true`
/// trusts; with folder trust turned off in the user's settings
/// (`security.folderTrust.enabled: false`) every folder is trusted; otherwise
/// the longest rule of `trustedFolders.json` (`$GEMINI_CLI_TRUSTED_FOLDERS_PATH`,
/// else `~/.gemini/trustedFolders.json`) covering the folder decides
/// (`TRUST_FOLDER`, `TRUST_PARENT` for the rule's parent, `DO_NOT_TRUST`),
/// and a folder no rule covers is not trusted. An unreadable rules file
/// trusts nothing.
pub fn trusts(home: Option<&Path>, folder: &Path, env: &dyn interband::settings::Env) -> bool {
    trusts_with(home.and_then(settings).as_ref(), home, folder, env)
}

/// [`trusts`], with the user's settings already read.
fn trusts_with(
    user: Option<&Value>,
    home: Option<&Path>,
    folder: &Path,
    env: &dyn interband::settings::Env,
) -> bool {
    let is = |var: &str, value: &str| env.var(var).is_some_and(|v| v == value);
    if is("GEMINI_RESTRICTED_MODE", "true") || is("GEMINI_CLI_TRUST_WORKSPACE", "false") {
        return false;
    }
    if is("GEMINI_CLI_TRUST_WORKSPACE", "true") {
        return true;
    }
    if user.and_then(|u| u["security"]["folderTrust"]["enabled"].as_bool()) == Some(false) {
        return true;
    }
    env.var("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| home.map(|h| interband::paths::under(h, ".gemini/trustedFolders.json")))
        .and_then(|rules| crate::project::folder_rule(&rules, folder, true))
        .unwrap_or(false)
}

/// Where Gemini compresses a window of `limit` tokens: `threshold × limit`.
pub fn compression_point(limit: u64, threshold: f64) -> u64 {
    (limit as f64 * threshold).floor() as u64
}

/// Gemini CLI's records, forward (see [`crate::forward`]): a `gemini`
/// record is activity, and its `toolCalls` are calls (the record is written
/// again with them, so a call comes once per id); a `user` record's
/// `functionResponse` parts are results, and a `user` record with text is a
/// prompt, which ends the turn before it; a rewrite of the message list is
/// a compression (the first one, before any reply, is the session's start).
pub(crate) fn forward(line: &[u8], offset: u64) -> Seen {
    Seen::stamped(line, fact(line, offset), happenings(line))
}

fn happenings(line: &[u8]) -> Vec<Happening> {
    let line = crate::tail::trimmed(line);
    if line.starts_with(b"{\"$set\"") {
        return match fact(line, 0) {
            Some(Fact::Compaction { .. }) => vec![Happening::Compaction {
                trigger: Some("auto".to_owned()),
                pre_tokens: None,
                post_tokens: None,
            }],
            _ => Vec::new(),
        };
    }
    if !contains(line, b"\"gemini\"") && !contains(line, b"\"user\"") {
        return Vec::new();
    }
    let Ok(v) = serde_json::from_slice::<Value>(line) else {
        return Vec::new();
    };
    match v["type"].as_str() {
        Some("gemini") => {
            let mut out = vec![Happening::Activity];
            for c in v["toolCalls"].as_array().into_iter().flatten() {
                out.push(Happening::ToolCall {
                    id: c["id"].as_str().map(str::to_owned),
                    name: c["name"].as_str().unwrap_or("?").to_owned(),
                    input: raw(&c["args"]),
                    subagent: false,
                });
            }
            out
        }
        Some("user") => {
            let parts = v["content"].as_array().cloned().unwrap_or_default();
            let mut out = Vec::new();
            for part in &parts {
                let r = &part["functionResponse"];
                if let Some(id) = r["id"].as_str() {
                    out.push(Happening::ToolResult {
                        id: id.to_owned(),
                        error: r["response"].get("error").is_some(),
                        response: raw(&r["response"]),
                        subagent: false,
                    });
                }
            }
            if out.is_empty() && parts.iter().any(|p| p["text"].is_string()) {
                out.extend([Happening::TurnEnded, Happening::Prompt]);
            }
            out
        }
        _ => Vec::new(),
    }
}

/// The window and compaction point of a Gemini session ([`crate::Host::limits`]):
/// the model's limit, else configured, else [`DEFAULT_LIMIT`]; compression
/// at `compressionThreshold` of it.
pub(crate) fn limits(k: &crate::Known, env: &dyn interband::settings::Env) -> crate::Limits {
    use interband::context::WindowSource as From;
    let (window, source) = k
        .stated
        .filter(|(w, _)| *w > 0)
        .or(k.transcript.map(|w| (w, From::Transcript)))
        .or((k.configured > 0).then_some((k.configured, From::Configured)))
        .unwrap_or((DEFAULT_LIMIT, From::Default));
    let home = interband::paths::home(env);
    let threshold = compression_threshold(home.as_deref(), k.project, env);
    crate::Limits {
        window,
        compact_at: compression_point(window, threshold),
        source,
        other: None,
        other_compact_at: None,
    }
}

/// Whether a transcript at `path` is Gemini's chat recording
/// (`chats/session-*.jsonl`, or `.json` before 0.39).
pub(crate) fn owns_transcript(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str());
    name.starts_with("session-")
        && (name.ends_with(".jsonl") || name.ends_with(".json"))
        && parent == Some("chats")
}

/// [`headless`], as the profile asks it: only the host's process tells.
pub(crate) fn headless_of(
    _transcript: Option<&Path>,
    _env: &dyn interband::settings::Env,
) -> Option<String> {
    headless()
}

/// Where Gemini keeps a session's chat: `tmp/<project>/chats/session-<time>-<id8>.jsonl`.
pub(crate) fn transcript_at(folder: &Path, _project: &Path, session: &str) -> std::path::PathBuf {
    folder.join("tmp/replay/chats").join(format!(
        "session-2026-01-01T00-00-{}.jsonl",
        session.chars().take(8).collect::<String>()
    ))
}

/// What installing into Gemini's settings must say beyond what every host's
/// install says (hooks turned off: [`crate::Profile::hooks_off`]): nothing.
pub(crate) fn install_notes(_settings: &Value, flags: &str) -> Vec<String> {
    // Seen live in 0.26.0 and 0.61.0 (tests/fixtures/project-forms-live/).
    if flags.contains(" --project") {
        vec![
            "Gemini CLI runs a project's hooks only in a folder it trusts (its folder trust), and \
             says at each start that the project has hooks of its own"
                .to_owned(),
        ]
    } else {
        Vec::new()
    }
}

/// The tools a session runs a subagent with: `invoke_agent` (0.61),
/// `delegate_to_agent` (0.26).
const AGENT_TOOLS: &[&str] = &["invoke_agent", "delegate_to_agent"];

/// The folder of the session's subagents' chats, `chats/<session>/`,
/// beside the session's own (0.61).
fn subagent_chats(chat: &Path, session: &str) -> Option<std::path::PathBuf> {
    Some(chat.parent()?.join(interband::paths::safe_key(session)))
}

/// The chat of one of the session's subagents: `chats/<session>/<id>.jsonl`.
fn subagent_chat(chat: &Path, session: &str, agent: &str) -> Option<std::path::PathBuf> {
    Some(
        subagent_chats(chat, session)?.join(format!("{}.jsonl", interband::paths::safe_key(agent))),
    )
}

/// When a file was last written.
fn written(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

/// The subagent running now, by its chat's name: the newest of the
/// session's subagent chats, written since the session's own chat was.
/// While a subagent runs, Gemini writes its chat and nothing of the
/// session's: the reply that called it is written once it has finished,
/// with its answer (tests/fixtures/gemini-cli-0.61.0-subagent/, and its
/// `verified/` run). A subagent stopped half way is over once the session
/// writes its chat again.
fn running_subagent(chat: &Path, session: &str) -> Option<String> {
    let since = written(chat)?;
    std::fs::read_dir(subagent_chats(chat, session)?)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|p| Some((written(&p)?, p)))
        .max()
        .filter(|(at, _)| *at > since)
        .and_then(|(_, p)| Some(p.file_stem()?.to_str()?.to_owned()))
}

/// The subagent a tool call was made in ([`crate::Profile::subagent_of`]):
/// the one running, unless the call is the one that ran it. Its kind is
/// not written anywhere a hook can read while it runs.
pub(crate) fn subagent_of(input: &crate::input::HookInput) -> Option<(String, Option<String>)> {
    if input.in_subagent() || AGENT_TOOLS.contains(&input.tool_name.as_str()) {
        return None;
    }
    let chat = Path::new(input.transcript_path.as_deref()?);
    running_subagent(chat, &input.session_id).map(|agent| (agent, None))
}

/// A subagent's own figure, from its own chat's last reply (its model with
/// it; the window is the model's).
pub(crate) fn subagent_figure(
    transcript: &Path,
    session: &str,
    agent: &str,
) -> Option<crate::usage::TailUsage> {
    let own = subagent_chat(transcript, session, agent)?;
    crate::tail::figure_of(&own, crate::Host::Gemini)
}

/// Whether a subagent has finished: the session's chat was written since
/// its own was last.
pub(crate) fn subagent_done(transcript: &Path, session: &str, agent: &str) -> bool {
    let own = subagent_chat(transcript, session, agent).and_then(|p| written(&p));
    match (own, written(transcript)) {
        (Some(own), Some(session)) => session >= own,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;
    use crate::tail::tail_of;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/gemini-cli-0.61.0/transcript.session.jsonl"
    );

    #[test]
    fn the_real_chat_file_gives_its_last_reply_tokens_and_model() {
        let tail = tail_of(&std::fs::read(FIXTURE).unwrap(), Host::Gemini);
        let u = tail.usage.unwrap();
        assert_eq!(u.used_tokens, 190_000);
        assert_eq!(u.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(u.window, Some(DEFAULT_LIMIT));
    }

    #[test]
    fn an_interactive_compression_s_snapshot_is_the_summary_and_the_prompts_stay() {
        // The real 0.61.0 in tmux: three prompts, `/compress`, a fourth.
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/gemini-cli-0.61.0-compress-canary/transcript.session.jsonl"
        ))
        .unwrap();
        let mut items = Vec::new();
        for line in bytes.split(|&b| b == b'\n') {
            digest::items(line, &mut items);
        }
        let summaries: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                crate::digest::Item::Summary(s) => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(summaries.len(), 1, "{summaries:?}");
        assert!(summaries[0].starts_with("<state_snapshot>"));
        let prompts: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                crate::digest::Item::Prompt(p) => Some(p.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            prompts.len(),
            4,
            "the person's four, no context part: {prompts:?}"
        );
        assert!(prompts[3].starts_with("Fourth question"), "{prompts:?}");
    }

    #[test]
    fn user_lines_metadata_and_torn_lines_decide_nothing() {
        let bytes = concat!(
            r#"{"id":"a","type":"gemini","tokens":{"input":1000,"output":5},"model":"gemini-2.5-pro"}"#,
            "\n",
            r#"{"$set":{"lastUpdated":"x"}}"#,
            "\n",
            r#"{"id":"u","type":"user","content":[{"text":"gemini \"gemini\""}]}"#,
            "\n",
            r#"{"id":"b","type":"gemini","tokens":{"inp"#
        );
        let u = tail_of(bytes.as_bytes(), Host::Gemini).usage.unwrap();
        assert_eq!(
            (u.used_tokens, u.model.as_deref()),
            (1000, Some("gemini-2.5-pro"))
        );
    }

    #[test]
    fn a_rewritten_message_list_is_a_compression() {
        let reply = |input: u64| {
            format!(
                r#"{{"id":"a","type":"gemini","tokens":{{"input":{input}}},"model":"gemini-2.5-flash"}}"#
            )
        };
        let set = r#"{"$set":{"messages":[{"id":"s","type":"user","content":[{"text":"<state_snapshot>"}]}]}}"#;
        let meta = r#"{"$set":{"lastUpdated":"x"}}"#;
        let bytes = format!("{}\n{set}\n{meta}\n", reply(600_000));
        let tail = tail_of(bytes.as_bytes(), Host::Gemini);
        assert_eq!(tail.usage, None);
        assert!(tail.latest_boundary.is_some());
        let bytes = format!("{}\n{set}\n{}\n", reply(600_000), reply(9_000));
        assert_eq!(
            tail_of(bytes.as_bytes(), Host::Gemini)
                .usage
                .unwrap()
                .used_tokens,
            9_000
        );
    }

    #[test]
    fn the_threshold_comes_from_a_trusted_project_then_the_user() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let (h, p) = (home.path(), project.path());
        let no_env = |_: &str| None::<String>;
        let trust_env = |v: &str| (v == "GEMINI_CLI_TRUST_WORKSPACE").then(|| "true".to_string());
        assert_eq!(compression_threshold(Some(h), Some(p), &no_env), 0.5);
        std::fs::create_dir_all(h.join(".gemini")).unwrap();
        std::fs::write(
            h.join(".gemini/settings.json"),
            r#"{"model":{"compressionThreshold":0.7}}"#,
        )
        .unwrap();
        assert_eq!(compression_threshold(Some(h), Some(p), &no_env), 0.7);
        std::fs::create_dir_all(p.join(".gemini")).unwrap();
        std::fs::write(
            p.join(".gemini/settings.json"),
            r#"{"model":{"compressionThreshold":0.3}}"#,
        )
        .unwrap();
        // A cloned repository's settings do not count until Gemini trusts
        // the folder and the user trusts the file.
        assert_eq!(compression_threshold(Some(h), Some(p), &no_env), 0.7);
        assert_eq!(compression_threshold(Some(h), Some(p), &trust_env), 0.7);
        let store = h.join("trusted.json");
        let mut trusted = interband::trust::Store::default();
        let file = p.join(".gemini/settings.json");
        trusted.add(&file, &std::fs::read(&file).unwrap());
        trusted.save(&store).unwrap();
        let store = store.display().to_string();
        let with = |trust_workspace: bool| {
            let store = store.clone();
            move |v: &str| match v {
                "INTERBAND_TRUST_FILE" => Some(store.clone()),
                "GEMINI_CLI_TRUST_WORKSPACE" if trust_workspace => Some("true".to_owned()),
                _ => None,
            }
        };
        assert_eq!(compression_threshold(Some(h), Some(p), &with(true)), 0.3);
        assert_eq!(compression_threshold(Some(h), Some(p), &with(false)), 0.7);
        let rules =
            |json: String| std::fs::write(h.join(".gemini/trustedFolders.json"), json).unwrap();
        rules(crate::project::rules_for_test(&[(p, "TRUST_FOLDER")]));
        assert_eq!(compression_threshold(Some(h), Some(p), &with(false)), 0.3);
        assert_eq!(compression_threshold(Some(h), Some(p), &no_env), 0.7);
        assert_eq!(compression_point(DEFAULT_LIMIT, 0.5), 524_288);
    }

    #[test]
    fn folder_trust_follows_geminis_rules() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        std::fs::create_dir_all(h.join(".gemini")).unwrap();
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("a/b"));
        std::fs::create_dir_all(&b).unwrap();
        let none = |_: &str| None::<String>;
        let env = |k: &'static str, v: &'static str| move |n: &str| (n == k).then(|| v.to_string());
        let rules =
            |json: String| std::fs::write(h.join(".gemini/trustedFolders.json"), json).unwrap();
        // No rules file: nothing is trusted.
        assert!(!trusts(Some(h), &b, &none));
        assert!(trusts(
            Some(h),
            &b,
            &env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        ));
        rules(crate::project::rules_for_test(&[(&a, "TRUST_FOLDER")]));
        assert!(trusts(Some(h), &a, &none));
        assert!(
            trusts(Some(h), &b, &none),
            "a subfolder of a trusted folder"
        );
        assert!(!trusts(Some(h), root.path(), &none), "its parent is not");
        assert!(!trusts(
            Some(h),
            &b,
            &env("GEMINI_CLI_TRUST_WORKSPACE", "false")
        ));
        assert!(!trusts(Some(h), &b, &env("GEMINI_RESTRICTED_MODE", "true")));
        // The longest rule wins.
        rules(crate::project::rules_for_test(&[
            (&a, "TRUST_FOLDER"),
            (&b, "DO_NOT_TRUST"),
        ]));
        assert!(trusts(Some(h), &a, &none));
        assert!(!trusts(Some(h), &b, &none));
        // TRUST_PARENT trusts the rule's parent and everything under it.
        rules(crate::project::rules_for_test(&[(&b, "TRUST_PARENT")]));
        assert!(trusts(Some(h), &a, &none));
        // A malformed file trusts nothing (Gemini refuses to start on it).
        rules(crate::project::rules_for_test(&[(&a, "TRUST_EVERYTHING")]));
        assert!(!trusts(Some(h), &a, &none));
        // The file may live elsewhere.
        let elsewhere = root.path().join("rules.json");
        std::fs::write(
            &elsewhere,
            crate::project::rules_for_test(&[(&a, "TRUST_FOLDER")]),
        )
        .unwrap();
        let moved = move |n: &str| {
            (n == "GEMINI_CLI_TRUSTED_FOLDERS_PATH").then(|| elsewhere.display().to_string())
        };
        assert!(trusts(Some(h), &a, &moved));
        // Folder trust turned off by the user: every folder is trusted.
        std::fs::write(
            h.join(".gemini/settings.json"),
            r#"{"security":{"folderTrust":{"enabled":false}}}"#,
        )
        .unwrap();
        assert!(trusts(Some(h), root.path(), &none));
    }
}
