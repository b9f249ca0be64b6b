//! How a host's settings file holds its hooks, and the one shape interband
//! edits them in: every event a list of groups, each group
//! `{matcher?, hooks: [{type, command, timeout}]}` (Claude Code's, Codex's,
//! Gemini's, Qwen's). A host whose events list the hooks themselves
//! (GitHub Copilot CLI: `{type, bash, timeoutSec}`) is read into that shape
//! and written back in its own, each of its hooks a group of one, with every
//! other key and their order kept.

use serde_json::{Map, Value};

/// How a host's settings hold a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookShape {
    /// Each event a list of groups of hooks, the command under `command`.
    Grouped,
    /// Each event a list of hooks, the command under `command` and the
    /// timeout under `timeout`.
    Flat {
        /// The key of the shell command (Copilot: `bash`).
        command: &'static str,
        /// The key of the timeout (Copilot: `timeoutSec`).
        timeout: &'static str,
        /// Every key a command goes under, one per system (Copilot: `bash`,
        /// `powershell`), of which the host runs its own system's alone.
        systems: &'static [&'static str],
    },
}

impl HookShape {
    /// The settings' hooks in the grouped shape (for interband to edit).
    ///
    /// ```
    /// use interband_hosts::shape::HookShape;
    /// let flat = HookShape::Flat { command: "bash", timeout: "timeoutSec", systems: &["bash"] };
    /// let mut s = serde_json::json!({"hooks": {"Stop": [{"type": "command", "bash": "x", "timeoutSec": 5}]}});
    /// let own = s.clone();
    /// flat.to_grouped(&mut s);
    /// assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["command"], "x");
    /// flat.to_own(&mut s);
    /// assert_eq!(s, own);
    /// ```
    pub fn to_grouped(self, settings: &mut Value) {
        let HookShape::Flat {
            command, timeout, ..
        } = self
        else {
            return;
        };
        each_entry(settings, |entry| {
            let Value::Object(hook) = entry else {
                return;
            };
            if hook.contains_key("command") || hook.contains_key("timeout") {
                // Not a hook of the host's shape that renaming keeps whole.
                return;
            }
            let hook = renamed(
                std::mem::take(hook),
                &[(command, "command"), (timeout, "timeout")],
            );
            *entry = serde_json::json!({ "hooks": [Value::Object(hook)] });
        });
    }

    /// The keys a command goes under besides [`HookShape::Flat`]'s
    /// `command` in a file every system reads (a project's): each other
    /// system's, so that the hook runs on all of them.
    ///
    /// ```
    /// use interband_hosts::shape::HookShape;
    /// let flat = HookShape::Flat { command: "bash", timeout: "timeoutSec", systems: &["bash", "powershell"] };
    /// assert_eq!(flat.other_systems(), ["powershell"]);
    /// assert!(HookShape::Grouped.other_systems().is_empty());
    /// ```
    pub fn other_systems(self) -> Vec<&'static str> {
        match self {
            HookShape::Flat {
                command, systems, ..
            } => systems.iter().copied().filter(|k| *k != command).collect(),
            HookShape::Grouped => Vec::new(),
        }
    }

    /// The settings' hooks back in the host's own shape.
    pub fn to_own(self, settings: &mut Value) {
        let HookShape::Flat {
            command, timeout, ..
        } = self
        else {
            return;
        };
        each_entry(settings, |entry| {
            let Some(group) = entry.as_object() else {
                return;
            };
            let one = match group.get("hooks") {
                Some(Value::Array(hooks)) if group.len() == 1 && hooks.len() == 1 => {
                    hooks[0].as_object().cloned()
                }
                _ => None,
            };
            if let Some(hook) = one.filter(|h| !h.contains_key(command) && !h.contains_key(timeout))
            {
                *entry =
                    Value::Object(renamed(hook, &[("command", command), ("timeout", timeout)]));
            }
        });
    }
}

/// Calls `f` on every entry of every event's list under `hooks`.
fn each_entry(settings: &mut Value, mut f: impl FnMut(&mut Value)) {
    let Some(Value::Object(events)) = settings.get_mut("hooks") else {
        return;
    };
    for list in events.values_mut() {
        if let Value::Array(entries) = list {
            entries.iter_mut().for_each(&mut f);
        }
    }
}

/// `map` with the keys `from` renamed `to`, each in its place.
fn renamed(map: Map<String, Value>, names: &[(&str, &str)]) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| {
            let k = names
                .iter()
                .find(|(from, _)| *from == k)
                .map_or(k, |(_, to)| (*to).to_owned());
            (k, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FLAT: HookShape = HookShape::Flat {
        command: "bash",
        timeout: "timeoutSec",
        systems: &["bash", "powershell"],
    };

    #[test]
    fn a_user_s_own_hooks_and_keys_come_back_as_they_were() {
        let own = json!({"version": 1, "hooks": {
            "PostToolUse": [
                {"type": "command", "bash": "theirs.sh", "powershell": "theirs.ps1", "cwd": ".", "timeoutSec": 30, "env": {"A": "1"}},
                {"type": "command", "bash": "second.sh"}
            ],
            "Stop": "not a list",
            "sessionStart": [{"type": "prompt", "prompt": "hi"}, 5]
        }, "statusLine": {"type": "command", "command": "s"}});
        let mut s = own.clone();
        FLAT.to_grouped(&mut s);
        assert_eq!(
            s["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            "theirs.sh"
        );
        assert_eq!(s["hooks"]["PostToolUse"][0]["hooks"][0]["timeout"], 30);
        assert_eq!(s["statusLine"]["command"], "s", "only hooks change");
        FLAT.to_own(&mut s);
        assert_eq!(s, own);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            serde_json::to_string(&own).unwrap(),
            "in the same order"
        );
    }

    #[test]
    fn a_group_added_in_the_grouped_shape_is_written_in_the_host_s() {
        let mut s = json!({"hooks": {"Stop": []}});
        FLAT.to_grouped(&mut s);
        s["hooks"]["Stop"]
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [{"type": "command", "command": "interband hook --host copilot", "timeout": 10}]}));
        FLAT.to_own(&mut s);
        assert_eq!(
            s,
            json!({"hooks": {"Stop": [{"type": "command", "bash": "interband hook --host copilot", "timeoutSec": 10}]}})
        );
        let mut grouped = s.clone();
        HookShape::Grouped.to_grouped(&mut grouped);
        assert_eq!(grouped, s, "the grouped shape is left as it is");
    }
}
