//! Codex CLI runs a hook from `hooks.json` only once the user trusts it: its
//! `/hooks` review writes, into `config.toml`,
//!
//! ```toml
//! [hooks.state."<hooks.json path>:<event_snake>:<group>:<handler>"]
//! trusted_hash = "sha256:<hex>"
//! ```
//!
//! where the hash is SHA-256 of the canonical JSON (keys sorted, no spaces,
//! absent fields left out) of the event's snake-case name and the matcher
//! group reduced to that one handler, normalized:
//! `{"event_name":"stop","hooks":[{"async":false,"command":"…","timeout":10,"type":"command"}]}`
//! (plus `"matcher"` for a group that has one). `interband install --host
//! codex --trust` writes the same entries for interband's own hooks, only
//! when asked; `uninstall` takes out the ones that are still interband's.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

/// One trust entry: its key and the hash of the hook it trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `<hooks.json path>:<event_snake>:<group>:<handler>`.
    pub key: String,
    /// `sha256:<hex>`.
    pub hash: String,
}

/// `PostToolUse` → `post_tool_use`.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The canonical JSON Codex hashes for one handler of a group.
fn canonical(event: &str, handler: &Value, matcher: Option<&str>) -> Option<String> {
    let command = handler.get("command")?.as_str()?;
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600);
    let is_async = handler
        .get("async")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let s = |v: &str| serde_json::to_string(v).expect("a string serializes");
    let mut json = format!(
        "{{\"event_name\":{},\"hooks\":[{{\"async\":{is_async},\"command\":{},\"timeout\":{timeout},\"type\":\"command\"}}]",
        s(&snake(event)),
        s(command)
    );
    if let Some(m) = matcher {
        json += &format!(",\"matcher\":{}", s(m));
    }
    json.push('}');
    Some(json)
}

/// The trust entries of the handlers in `settings` (a `hooks.json`) whose
/// command is `ours`.
pub fn entries(hooks_json: &Path, settings: &Value, ours: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                if handler.get("command").and_then(Value::as_str) != Some(ours) {
                    continue;
                }
                let Some(json) = canonical(event, handler, matcher) else {
                    continue;
                };
                out.push(Entry {
                    key: format!("{}:{}:{g}:{h}", hooks_json.display(), snake(event)),
                    hash: interband::trust::digest(json.as_bytes()),
                });
            }
        }
    }
    out
}

/// Codex's `config.toml`, beside its `hooks.json`.
pub fn config_file(hooks_json: &Path) -> PathBuf {
    hooks_json.with_file_name("config.toml")
}

fn load(config: &Path) -> Result<toml_edit::DocumentMut> {
    let text = match interband::fsio::read_regular(config, 1 << 20) {
        Ok(bytes) => String::from_utf8(bytes).with_context(|| config.display().to_string())?,
        Err(interband::Error::NotFound { .. }) => String::new(),
        Err(e) => return Err(e.into()),
    };
    text.parse::<toml_edit::DocumentMut>()
        .with_context(|| format!("{}: not valid TOML", config.display()))
}

fn save(config: &Path, doc: &toml_edit::DocumentMut) -> Result<()> {
    write_keeping_mode(config, doc.to_string().as_bytes())
}

/// Writes `config` atomically, keeping the mode the user's file had.
fn write_keeping_mode(config: &Path, bytes: &[u8]) -> Result<()> {
    let mode = std::fs::metadata(config).ok().map(|m| m.permissions());
    interband::fsio::write_atomic(config, bytes, true)?;
    if let Some(mode) = mode {
        std::fs::set_permissions(config, mode).with_context(|| config.display().to_string())?;
    }
    Ok(())
}

/// The first line of a `config.toml` that `--trust` created: uninstall
/// removes such a file once nothing else is in it.
const CREATED: &str = "# Written by `interband install --trust`: `interband uninstall` removes it once nothing else is in it.\n";

/// `config.toml` as it was before `--trust` first changed it, beside it.
fn backup_of(config: &Path) -> PathBuf {
    let mut name = config.as_os_str().to_owned();
    name.push(".interband-backup");
    PathBuf::from(name)
}

/// The same settings, whatever the formatting and the empty tables.
fn same_toml(a: &str, b: &str) -> bool {
    fn pruned(t: toml::Table) -> toml::Table {
        t.into_iter()
            .filter_map(|(k, v)| match v {
                toml::Value::Table(t) => {
                    let t = pruned(t);
                    (!t.is_empty()).then_some((k, toml::Value::Table(t)))
                }
                v => Some((k, v)),
            })
            .collect()
    }
    match (a.parse::<toml::Table>(), b.parse::<toml::Table>()) {
        (Ok(a), Ok(b)) => pruned(a) == pruned(b),
        _ => false,
    }
}

/// Writes the entries into `config.toml` (created when missing), keeping the
/// rest of it as it was. Returns how many were new or changed.
pub fn trust(config: &Path, entries: &[Entry]) -> Result<usize> {
    let before = match interband::fsio::read_regular(config, 1 << 20) {
        Ok(bytes) => Some(bytes),
        Err(interband::Error::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let mut doc = load(config)?;
    if before.is_none() {
        doc.decor_mut().set_prefix(CREATED);
    }
    let hooks = doc
        .entry("hooks")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .with_context(|| format!("{}: `hooks` is not a table", config.display()))?;
    hooks.set_implicit(true);
    let state = hooks
        .entry("state")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .with_context(|| format!("{}: `hooks.state` is not a table", config.display()))?;
    state.set_implicit(true);
    let mut changed = 0;
    for e in entries {
        let table = state
            .entry(&e.key)
            .or_insert(toml_edit::table())
            .as_table_mut()
            .with_context(|| {
                format!(
                    "{}: `hooks.state.{}` is not a table",
                    config.display(),
                    e.key
                )
            })?;
        if table.get("trusted_hash").and_then(|v| v.as_str()) != Some(e.hash.as_str()) {
            table["trusted_hash"] = toml_edit::value(e.hash.clone());
            changed += 1;
        }
    }
    if changed > 0 {
        // The user's own file as it was, for uninstall to give back.
        let backup = backup_of(config);
        if let Some(bytes) = &before
            && !backup.exists()
        {
            interband::fsio::write_atomic(&backup, bytes, true)?;
        }
        save(config, &doc)?;
    }
    Ok(changed)
}

/// How `config` trusts each entry: `Some(true)` with its hash (Codex runs
/// the hook), `Some(false)` with another hash (stale: the hook changed since
/// it was trusted, and Codex skips it), `None` not at all.
pub fn standing(config: &Path, entries: &[Entry]) -> Result<Vec<Option<bool>>> {
    let doc = load(config)?;
    let state = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(|s| s.as_table_like());
    Ok(entries
        .iter()
        .map(|e| {
            let hash = state?.get(&e.key)?.get("trusted_hash")?.as_str()?;
            Some(hash == e.hash)
        })
        .collect())
}

/// Takes out the entries that still trust exactly these hooks. Returns how many.
pub fn untrust(config: &Path, entries: &[Entry]) -> Result<usize> {
    if !config.exists() {
        return Ok(0);
    }
    let mut doc = load(config)?;
    let Some(state) = doc
        .get_mut("hooks")
        .and_then(|h| h.as_table_mut())
        .and_then(|h| h.get_mut("state"))
        .and_then(|s| s.as_table_mut())
    else {
        return Ok(0);
    };
    let mut removed = 0;
    for e in entries {
        let ours = state
            .get(&e.key)
            .and_then(|t| t.get("trusted_hash"))
            .and_then(|v| v.as_str())
            == Some(e.hash.as_str());
        if ours {
            state.remove(&e.key);
            removed += 1;
        }
    }
    if removed == 0 {
        return Ok(0);
    }
    // Tables left empty by taking ours out go too, and a file left empty
    // (one `--trust` made) with them.
    if state.is_empty()
        && let Some(hooks) = doc.get_mut("hooks").and_then(|h| h.as_table_mut())
    {
        hooks.remove("state");
        if hooks.is_empty() {
            doc.remove("hooks");
        }
    }
    let text = doc.to_string();
    let backup = backup_of(config);
    let original = interband::fsio::read_regular(&backup, 1 << 20)
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    match original {
        // The user's file as it was, byte for byte, when nothing else changed.
        Some(o) if same_toml(&o, &text) => {
            write_keeping_mode(config, o.as_bytes())?;
            std::fs::remove_file(&backup).with_context(|| backup.display().to_string())?;
        }
        // One that --trust made (no backup of the user's), with nothing
        // else in it.
        None if doc.as_table().is_empty()
            && (text.trim().is_empty() || text.trim() == CREATED.trim()) =>
        {
            std::fs::remove_file(config).with_context(|| config.display().to_string())?;
        }
        _ => save(config, &doc)?,
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_codexs_own() {
        // The canonical JSON Codex 0.171.0 hashed, field for field.
        let handler =
            serde_json::json!({"type": "command", "command": "python3 /tmp/x.py", "timeout": 5});
        assert_eq!(
            canonical("Stop", &handler, None).unwrap(),
            r#"{"event_name":"stop","hooks":[{"async":false,"command":"python3 /tmp/x.py","timeout":5,"type":"command"}]}"#
        );
        let handler = serde_json::json!({"type": "command", "command": "echo hi"});
        assert_eq!(
            canonical("PreToolUse", &handler, Some("Bash")).unwrap(),
            r#"{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"echo hi","timeout":600,"type":"command"}],"matcher":"Bash"}"#
        );
        assert_eq!(snake("PostToolUse"), "post_tool_use");
        assert_eq!(snake("SessionEnd"), "session_end");
    }

    #[test]
    fn trust_and_untrust_keep_the_rest_of_config_toml() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = dir.path().join("hooks.json");
        let config = config_file(&hooks);
        std::fs::write(&config, "model = \"gpt-5.1-codex\" # mine\n").unwrap();
        let settings = serde_json::json!({"hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "other"}]},
                     {"hooks": [{"type": "command", "command": "/bin/interband hook", "timeout": 10}]}]}});
        let e = entries(&hooks, &settings, "/bin/interband hook");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].key, format!("{}:stop:1:0", hooks.display()));
        assert_eq!(trust(&config, &e).unwrap(), 1);
        assert_eq!(trust(&config, &e).unwrap(), 0, "twice changes nothing");
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(
            text.starts_with("model = \"gpt-5.1-codex\" # mine\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("trusted_hash = \"{}\"", e[0].hash)),
            "{text}"
        );
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(
            parsed["hooks"]["state"][&e[0].key]["trusted_hash"].as_str(),
            Some(e[0].hash.as_str())
        );
        assert_eq!(untrust(&config, &e).unwrap(), 1);
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(!text.contains("trusted_hash"), "{text}");
        assert!(text.contains("# mine"));
    }
}
