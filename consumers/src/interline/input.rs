//! The statusline's input, read tolerantly, and the figures it gives.

use super::*;

/// The token counts of the last response (`context_window.current_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Tokens in context: input + cache creation + cache read.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

/// The statusline input, read tolerantly: every field optional, nulls and
/// unknown fields fine, and a field of the wrong type only loses that field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Input {
    /// `session_id`.
    pub session_id: Option<String>,
    /// `transcript_path`.
    pub transcript_path: Option<String>,
    /// `cwd`.
    pub cwd: Option<String>,
    /// `model.id`, e.g. `claude-opus-5-5`.
    pub model_id: Option<String>,
    /// `model.display_name`, e.g. `Opus 5.5`.
    pub model_name: Option<String>,
    /// `workspace.current_dir`.
    pub current_dir: Option<String>,
    /// `workspace.project_dir`.
    pub project_dir: Option<String>,
    /// `context_window.context_window_size`, tokens.
    pub window: Option<u64>,
    /// `context_window.current_usage`; `None` before the first response.
    pub usage: Option<Usage>,
    /// `context_window.used_percentage` (raw, of the whole window).
    pub used_percentage: Option<f64>,
    /// `context_window.remaining_percentage` (raw).
    pub remaining_percentage: Option<f64>,
    /// The host whose statusline input it is (its window and compaction
    /// rules; Claude Code's unless the command named another).
    pub host: interband_hosts::Host,
}

impl Input {
    /// Parses `host`'s statusline input: as Claude Code's, the context as
    /// the host's profile reads it where it differs
    /// ([`interband_hosts::Profile::statusline_context`]). Never fails.
    pub fn parse_as(bytes: &[u8], host: interband_hosts::Host) -> Input {
        let mut input = Input::parse(bytes);
        input.host = host;
        if let Some(read) = host.profile().statusline_context {
            let stated = serde_json::from_slice::<Value>(bytes)
                .map(|v| read(&v))
                .unwrap_or_default();
            input.usage = stated.used.map(|used| Usage {
                input_tokens: used,
                ..Usage::default()
            });
            input.window = stated.window.filter(|&w| w > 0);
            input.transcript_path = stated.transcript;
            // Claude's percentages are of the window; another host's may not be.
            input.used_percentage = None;
            input.remaining_percentage = None;
        }
        input
    }

    /// Parses Claude Code's statusline stdin. Never fails: garbage gives `Input::default()`.
    pub fn parse(bytes: &[u8]) -> Input {
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return Input::default();
        };
        let cw = &v["context_window"];
        let cu = &cw["current_usage"];
        // A usage whose numbers cannot all be read is no figure (never a
        // low one); one that states none of the context's is not yet one.
        let usage = cu.as_object().and_then(|u| {
            let n = |k: &str| interband_hosts::usage::field(u, k);
            let context_fields = [
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ];
            if context_fields
                .iter()
                .all(|k| u.get(*k).is_none_or(Value::is_null))
            {
                return None;
            }
            Some(Usage {
                input_tokens: n("input_tokens")?,
                output_tokens: n("output_tokens")?,
                cache_creation_input_tokens: n("cache_creation_input_tokens")?,
                cache_read_input_tokens: n("cache_read_input_tokens")?,
            })
        });
        Input {
            session_id: text(&v["session_id"]),
            transcript_path: text(&v["transcript_path"]),
            cwd: text(&v["cwd"]),
            model_id: text(&v["model"]["id"]),
            model_name: text(&v["model"]["display_name"]),
            current_dir: text(&v["workspace"]["current_dir"]),
            project_dir: text(&v["workspace"]["project_dir"]),
            window: interband_hosts::usage::count(&cw["context_window_size"]).filter(|&w| w > 0),
            usage,
            used_percentage: number(&cw["used_percentage"]),
            remaining_percentage: number(&cw["remaining_percentage"]),
            host: interband_hosts::Host::Claude,
        }
    }

    /// The session id, trimmed, when there is one.
    pub fn session(&self) -> Option<&str> {
        self.session_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// Tokens in context (input + cache creation + cache read), once known:
    /// a context always holds the system prompt, so 0 is no figure (the
    /// host's placeholder after a compaction, until the next answer).
    pub fn used_tokens(&self) -> Option<u64> {
        self.usage.map(|u| u.context_tokens()).filter(|&u| u > 0)
    }

    /// Whether the host reports zeros for the context: right after a
    /// compaction, before the next answer states a figure.
    pub fn just_compacted(&self) -> bool {
        self.usage.is_some_and(|u| u.context_tokens() == 0)
    }

    /// The context figures the input itself gives, once usage is known. The
    /// window is the input's (else its model's, by its host's rules).
    pub fn figures(&self, env: &dyn Env) -> Option<Figures> {
        let used = self.used_tokens()?;
        let limits = self.host.limits(
            &interband_hosts::Known {
                stated: self.window.map(|w| (w, context::WindowSource::Statusline)),
                transcript: self
                    .model_id
                    .as_deref()
                    .zip(self.host.profile().model_window)
                    .map(|(model, window)| window(model)),
                model: self.model_id.as_deref(),
                used,
                ..Default::default()
            },
            env,
        );
        Some(limits.figures(used, Source::Statusline))
    }
}

/// A non-blank string.
pub(crate) fn text(v: &Value) -> Option<String> {
    v.as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// A finite number, or a string of one.
pub(crate) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => s.trim().parse::<f64>().ok(),
        v => v.as_f64(),
    }
    .filter(|n| n.is_finite())
}
