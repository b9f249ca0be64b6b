//! What the hosts send and accept: the one hook input type (every event,
//! every host, read tolerantly), and the host responses interband prints.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The largest hook input read from stdin: 16 MiB (a tool response can be big).
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// A hook's input, read tolerantly: every field optional, unknown fields ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HookInput {
    /// The session (subagents share their parent's).
    pub session_id: String,
    /// The session's transcript (Codex may send null).
    pub transcript_path: Option<String>,
    /// The working folder.
    pub cwd: Option<String>,
    /// `PostToolUse`, `AfterTool`, `Stop`...
    pub hook_event_name: String,
    /// The tool (`Bash`, `Read`, `Agent`; Gemini: `run_shell_command`...).
    pub tool_name: String,
    /// The tool's input.
    pub tool_input: Option<Box<RawValue>>,
    /// The tool's output, kept raw: only its size matters here (Copilot
    /// CLI's `tool_result`).
    #[serde(alias = "tool_result")]
    pub tool_response: Option<Box<RawValue>>,
    /// Set when the call happened inside a subagent.
    pub agent_id: Option<String>,
    /// The subagent's kind (`Explore`...), with `agent_id`.
    #[serde(deserialize_with = "or_default")]
    pub agent_type: Option<String>,
    /// The call's id, as the model's answer names it (Qwen Code).
    #[serde(deserialize_with = "or_default")]
    pub tool_call_id: Option<String>,
    /// The prompt a call answers (Qwen Code from 0.23.4, whose calls made in
    /// a subagent carry its `agent_id` too).
    #[serde(deserialize_with = "or_default")]
    pub prompt_id: Option<String>,
    /// The subagent's parent, where a subagent's hooks carry its own id as
    /// `session_id` (Copilot CLI from 1.0.102: the session's id; see
    /// [`crate::Profile::subagent_names_its_session_parent`]).
    #[serde(deserialize_with = "or_default")]
    pub parent_agent_id: Option<String>,
    /// At a turn's end, the session's tasks still running in the background
    /// (Claude Code: `[{"id", "type": "subagent", "status": "running"}]`).
    #[serde(deserialize_with = "or_default")]
    pub background_tasks: Option<serde_json::Value>,
    /// The context window, if a host ever sends it in hook input.
    pub context_window: Option<HostContext>,
    /// The prompt's tokens of the last reply (Qwen Code's `Stop`).
    #[serde(deserialize_with = "or_default")]
    pub input_tokens: Option<serde_json::Value>,
    /// The window (Qwen Code's `Stop`).
    #[serde(deserialize_with = "or_default")]
    pub context_limit: Option<serde_json::Value>,
    /// Codex CLI's turn (only Codex sends it).
    pub turn_id: Option<String>,
    /// The event's time, as text (Gemini CLI, Qwen Code, Copilot CLI); a
    /// number (Copilot's milliseconds) reads as none.
    #[serde(deserialize_with = "or_default")]
    pub timestamp: Option<String>,
    /// A context's start: `startup`, `resume`, `clear`, `compact`, `fork`.
    #[serde(deserialize_with = "or_default")]
    pub source: Option<String>,
    /// Before a compaction: `manual` or `auto`.
    #[serde(deserialize_with = "or_default")]
    pub trigger: Option<String>,
    /// Before a compaction: the user's own instructions to the summary
    /// (`/compact <instructions>`), which interband's never override.
    #[serde(deserialize_with = "or_default")]
    pub custom_instructions: Option<String>,
    /// After a compaction: the host's summary, the text that replaced the
    /// context (Claude Code's and Qwen Code's `PostCompact`).
    #[serde(deserialize_with = "or_default")]
    pub compact_summary: Option<String>,
    /// At a turn's end: a stop hook already blocked this stop once.
    #[serde(deserialize_with = "or_default")]
    pub stop_hook_active: bool,
    /// The host, when the command line named it (`interband hook --host
    /// KEY`, as `interband install` registers it): never read from the
    /// input, and above anything [`crate::Host::detect`] would say.
    #[serde(skip)]
    pub named: Option<crate::Host>,
}

/// A field of one event only, read tolerantly: a value of another type (a
/// host's `null`, a number) is the default, never a reason to refuse the
/// whole input, which every other event's handling also reads.
fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}

/// A statusline-style `context_window` object, read as the statusline's
/// is: counts as [`crate::usage::count`] reads them, and a usage
/// with a count that cannot be read is no figure (never a low one).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct HostContext {
    /// The window size, tokens (as written).
    context_window_size: serde_json::Value,
    /// The last response's usage (as written).
    current_usage: serde_json::Value,
}

impl HostContext {
    /// The window size, tokens.
    pub fn window(&self) -> Option<u64> {
        crate::usage::count(&self.context_window_size).filter(|&w| w > 0)
    }

    /// Tokens in context: input, cache creation and cache read, when the
    /// usage states them readably.
    pub fn context_tokens(&self) -> Option<u64> {
        let usage = self.current_usage.as_object()?;
        [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .try_fold(0u64, |sum, k| {
            Some(sum.saturating_add(crate::usage::field(usage, k)?))
        })
    }
}

/// A hook input's top level, each value as raw JSON text: what a host's
/// [`crate::Profile::input_shape`] renames.
pub type TopLevel = std::collections::BTreeMap<String, Box<RawValue>>;

impl HookInput {
    /// The host that sent it: the one the command line named, else the one
    /// its input says (see [`crate::Host::detect`]).
    pub fn host(&self) -> crate::Host {
        if let Some(host) = self.named {
            return host;
        }
        crate::Host::detect(
            &self.hook_event_name,
            self.transcript_path.as_deref(),
            self.turn_id.is_some(),
            self.timestamp.is_some(),
        )
    }

    /// Parses one hook input object. A figure stated as `input_tokens` of
    /// `context_limit` (Qwen Code's `Stop`) reads as a `context_window`.
    ///
    /// ```
    /// let i = interband_hosts::input::HookInput::parse(br#"{"hook_event_name":"Stop",
    ///     "input_tokens":145000,"context_limit":200000,"context_usage":0.725}"#).unwrap();
    /// let c = i.context_window.unwrap();
    /// assert_eq!((c.context_tokens(), c.window()), (Some(145_000), Some(200_000)));
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        Self::parse_as(bytes, None)
    }

    /// Parses the hook input of `host`, when the command line named it
    /// (`--host`): an input the host sends in a shape of its own is first
    /// made the one this type reads ([`crate::Profile::input_shape`]), and
    /// [`HookInput::named`] is set.
    pub fn parse_as(bytes: &[u8], host: Option<crate::Host>) -> Result<Self, serde_json::Error> {
        let mut input: HookInput = serde_json::from_slice(bytes)?;
        // Reshaped only when it is not in the one shape already, and then
        // only its top level: each value stays raw text, read once more (an
        // input of megabytes costs a few times its size, not forty).
        if input.hook_event_name.is_empty()
            && let Some(reshape) = host.and_then(|h| h.profile().input_shape)
        {
            let mut top: TopLevel = serde_json::from_slice(bytes)?;
            reshape(&mut top);
            input = serde_json::from_str(&serde_json::to_string(&top)?)?;
        }
        input.named = host;
        if input.context_window.is_none()
            && let Some(used) = input.input_tokens.take()
        {
            input.context_window = Some(HostContext {
                context_window_size: input.context_limit.take().unwrap_or_default(),
                current_usage: serde_json::json!({ "input_tokens": used }),
            });
        }
        Ok(input)
    }

    /// True for a call made inside a subagent.
    pub fn in_subagent(&self) -> bool {
        self.agent_id
            .as_deref()
            .is_some_and(|a| !a.trim().is_empty())
    }

    /// A short summary of the tool's argument (the command, file, pattern...), at most `max` chars.
    pub fn argument_summary(&self, max: usize) -> String {
        let v: serde_json::Value = self
            .tool_input
            .as_ref()
            .and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or_default();
        let keys = [
            "command",
            "file_path",
            "notebook_path",
            "pattern",
            "url",
            "query",
            "description",
            "prompt",
        ];
        let text = keys
            .iter()
            .find_map(|k| match &v[*k] {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Array(a) => Some(
                    a.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            })
            .unwrap_or_default();
        let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        match one_line.char_indices().nth(max) {
            Some((i, _)) => format!("{}…", &one_line[..i]),
            None => one_line,
        }
    }

    /// True when the tool's response says it failed (`is_error`, `error`, `interrupted`).
    pub fn looks_failed(&self) -> bool {
        /// Only the three flags are read: the rest of a response of
        /// megabytes is passed over, never built.
        #[derive(Deserialize)]
        struct Flags {
            #[serde(default)]
            is_error: serde_json::Value,
            #[serde(default)]
            error: serde_json::Value,
            #[serde(default)]
            interrupted: serde_json::Value,
        }
        let Some(f) = self
            .tool_response
            .as_ref()
            .and_then(|r| serde_json::from_str::<Flags>(r.get()).ok())
        else {
            return false;
        };
        let set = |v: &serde_json::Value| match v {
            serde_json::Value::Bool(b) => *b,
            serde_json::Value::Null => false,
            serde_json::Value::String(s) => !s.is_empty(),
            _ => true,
        };
        set(&f.is_error) || set(&f.error) || set(&f.interrupted)
    }

    /// Size of the tool's response in bytes.
    pub fn response_bytes(&self) -> u64 {
        self.tool_response
            .as_ref()
            .map_or(0, |r| r.get().len() as u64)
    }
}

/// The stdout that makes a host add `text` to the model's context after this
/// event: `hookSpecificOutput` with the input's own event name (a top-level
/// `additionalContext` is silently ignored; a mismatched name is rejected).
///
/// ```
/// let out = interband_hosts::input::additional_context("PostToolUse", "hi");
/// let v: serde_json::Value = serde_json::from_str(&out).unwrap();
/// assert_eq!(v, serde_json::json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "hi"}}));
/// ```
pub fn additional_context(event: &str, text: &str) -> String {
    serde_json::json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
        .to_string()
}

/// The stdout that is `text` itself (Claude Code adds a `PreCompact` hook's
/// plain stdout to its summary's instructions).
///
/// ```
/// assert_eq!(interband_hosts::input::plain("PreCompact", "keep x"), "keep x");
/// ```
pub fn plain(_event: &str, text: &str) -> String {
    text.to_owned()
}

/// The stdout that gives the agent `text` as a top-level `additionalContext`
/// (GitHub Copilot CLI reads it there, whatever the event, and ignores the
/// `hookSpecificOutput` shape).
///
/// ```
/// assert_eq!(interband_hosts::input::top_level_context("PostToolUse", "hi"), r#"{"additionalContext":"hi"}"#);
/// ```
pub fn top_level_context(_event: &str, text: &str) -> String {
    serde_json::json!({ "additionalContext": text }).to_string()
}

/// The stdout that shows `text` to the person (never to the model).
///
/// ```
/// assert_eq!(interband_hosts::input::system_message("hi"), r#"{"systemMessage":"hi"}"#);
/// ```
pub fn system_message(text: &str) -> String {
    serde_json::json!({ "systemMessage": text }).to_string()
}

/// A host response `out` (a JSON object) with `text` shown to the person
/// beside it (`systemMessage`); `out` unchanged when it is not an object.
///
/// ```
/// use interband_hosts::input::{additional_context, with_system_message};
/// let out = with_system_message(&additional_context("SessionStart", "note"), "compacted");
/// let v: serde_json::Value = serde_json::from_str(&out).unwrap();
/// assert_eq!(v["systemMessage"], "compacted");
/// assert_eq!(v["hookSpecificOutput"]["additionalContext"], "note");
/// ```
pub fn with_system_message(out: &str, text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(out) {
        Ok(serde_json::Value::Object(mut o)) => {
            o.insert("systemMessage".into(), text.into());
            serde_json::Value::Object(o).to_string()
        }
        _ => out.to_owned(),
    }
}

/// `out` (a JSON answer) with a `terminalSequence` for the terminal the
/// session runs in (Claude Code writes it there, and nowhere else); any
/// other answer as it is.
pub fn with_terminal_sequence(out: &str, sequence: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(out) {
        Ok(serde_json::Value::Object(mut o)) => {
            o.insert("terminalSequence".into(), sequence.into());
            serde_json::Value::Object(o).to_string()
        }
        _ => out.to_owned(),
    }
}

/// The stdout that blocks a turn's end: the agent goes on with `reason`;
/// `message` is shown to the person beside it.
///
/// ```
/// let v: serde_json::Value =
///     serde_json::from_str(&interband_hosts::input::block("go on", "told")).unwrap();
/// assert_eq!(v, serde_json::json!({"decision": "block", "reason": "go on", "systemMessage": "told"}));
/// ```
pub fn block(reason: &str, message: &str) -> String {
    serde_json::json!({"decision": "block", "reason": reason, "systemMessage": message}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/claude-code-2.1.332"
    );

    #[test]
    fn reads_the_real_post_tool_use_input() {
        let bytes = std::fs::read(format!("{FIXTURES}/PostToolUse.input.json")).unwrap();
        let i = HookInput::parse(&bytes).unwrap();
        assert_eq!(i.hook_event_name, "PostToolUse");
        assert_eq!(i.tool_name, "Bash");
        assert_eq!(i.session_id, "d6d5a7f1-e821-4196-b0bd-c3da854c1920");
        assert!(!i.in_subagent());
        assert_eq!(
            i.response_bytes(),
            r#"{"stdout":"hello","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}"#.len() as u64
        );
        assert!(
            i.context_window.is_none(),
            "no hook input carries context_window"
        );
    }

    #[test]
    fn subagents_and_gemini_shapes() {
        let sub = br#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","agent_id":"a1","tool_response":"x"}"#;
        assert!(HookInput::parse(sub).unwrap().in_subagent());
        let gemini = br#"{"session_id":"s","hook_event_name":"AfterTool","tool_name":"run_shell_command","timestamp":"t","tool_response":{"llmContent":"abc","returnDisplay":"abc"}}"#;
        let g = HookInput::parse(gemini).unwrap();
        assert_eq!(g.hook_event_name, "AfterTool");
        assert!(g.response_bytes() > 20);
        assert!(HookInput::parse(br#"{"session_id":7}"#).is_err());
        let floats = br#"{"session_id":"s","context_window":{"context_window_size":1e6,"current_usage":{"input_tokens":"150000","cache_read_input_tokens":2.5e4}}}"#;
        let c = HookInput::parse(floats).unwrap().context_window.unwrap();
        assert_eq!(
            (c.window(), c.context_tokens()),
            (Some(1_000_000), Some(175_000))
        );
        let junk = br#"{"session_id":"s","context_window":{"context_window_size":"big","current_usage":{"input_tokens":"lots"}}}"#;
        let c = HookInput::parse(junk).unwrap().context_window.unwrap();
        assert_eq!((c.window(), c.context_tokens()), (None, None));
        let failed = br#"{"tool_name":"Bash","tool_input":{"command":"cargo   test\n --all"},"tool_response":{"stdout":"","interrupted":true}}"#;
        let f = HookInput::parse(failed).unwrap();
        assert!(f.looks_failed());
        assert_eq!(f.argument_summary(8), "cargo te…");
        assert_eq!(f.argument_summary(80), "cargo test --all");
        assert!(!g.looks_failed());
        assert_eq!(HookInput::parse(b"{}").unwrap().session_id, "");
        // One event's fields in an odd shape cost only themselves.
        let odd = br#"{"session_id":"s","hook_event_name":"Stop","stop_hook_active":null,"source":5,"trigger":["auto"]}"#;
        let o = HookInput::parse(odd).unwrap();
        assert_eq!(
            (o.stop_hook_active, o.source, o.trigger),
            (false, None, None)
        );
        let set =
            br#"{"session_id":"s","stop_hook_active":true,"source":"compact","trigger":"manual"}"#;
        let o = HookInput::parse(set).unwrap();
        assert!(o.stop_hook_active);
        assert_eq!(
            (o.source.as_deref(), o.trigger.as_deref()),
            (Some("compact"), Some("manual"))
        );
    }
}
