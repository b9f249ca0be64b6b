//! What the two v1 readers accept, modelled rule by rule: the shell library
//! (`lib/interband.sh`, `interband_read_payload`: jq checks) and the Go
//! library (`interband.go`, `ReadEnvelope`: `encoding/json` into typed
//! fields, then its checks).
//!
//! interband's own rules ([`crate::envelope::check_envelope`],
//! [`crate::registry::check_payload`]) are stricter than either reader on a
//! few inputs (a blank string, a `seq` that is not a count, a `reason` that is
//! `false`, the contracts the Go reader never checks). A reader of the bus
//! accepts what either v1 reader accepts, and flags it; `interband validate`
//! and every publish keep the strict rules. `tests/fixtures/v1/README.md`
//! lists, per fixture, what each model says, and `tests/v1_readers.rs` runs
//! the real libraries against the models when jq and Go are installed.
//!
//! Not modelled: Go's case-insensitive field names and its replacement of
//! invalid UTF-8 (the file is not JSON to interband), and jq's `$` matching
//! before a final newline.

use serde_json::{Map, Value};

/// Whether the v1 shell reader (`interband_read_payload`) accepts a message.
///
/// ```
/// use serde_json::json;
/// let m = json!({"version":"1.0.0","namespace":" ","type":"t","session_id":"",
///                "timestamp":"x","payload":{}});
/// assert!(interband::v1::shell_accepts(&m), "jq's length counts blanks");
/// assert!(!interband::v1::go_accepts(&m), "Go trims them");
/// ```
pub fn shell_accepts(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    let text = |f: &str| str_of(o, f).is_some_and(|s| !s.is_empty());
    let envelope = str_of(o, "version").is_some_and(|s| s.starts_with("1."))
        && text("namespace")
        && text("type")
        && str_of(o, "session_id").is_some()
        && text("timestamp")
        && o.get("payload").is_some_and(Value::is_object);
    if !envelope {
        return false;
    }
    let p = o["payload"].as_object().expect("checked above");
    let ns = str_of(o, "namespace").unwrap_or_default();
    let ty = str_of(o, "type").unwrap_or_default();
    let s = |f: &str| str_of(p, f).is_some_and(|s| !s.is_empty());
    let num = |f: &str| p.get(f).is_some_and(Value::is_number);
    let non_neg = |f: &str| p.get(f).and_then(Value::as_f64).is_some_and(|n| n >= 0.0);
    match (ns, ty) {
        ("interphase", "bead_phase") => {
            s("id")
                && str_of(p, "phase").is_some_and(|ph| crate::payloads::PHASES.contains(&ph))
                // `(.reason // "") | type == "string"`: false and null fall back to "".
                && match p.get("reason") {
                    None | Some(Value::Null) | Some(Value::Bool(false)) => true,
                    Some(r) => r.is_string(),
                }
                && num("ts")
        }
        ("clavain", "dispatch") => {
            ["name", "workdir", "activity"].iter().all(|f| s(f))
                && ["started", "turns", "commands", "messages"]
                    .iter()
                    .all(|f| non_neg(f))
        }
        ("interlock", "coordination_signal") => {
            ["layer", "icon", "text", "ts"].iter().all(|f| s(f)) && non_neg("priority")
        }
        ("intercheck", "context_pressure") => {
            str_of(p, "level").is_some_and(|l| crate::payloads::LEVELS.contains(&l))
                && non_neg("pressure")
                && non_neg("est_tokens")
                && num("ts")
        }
        ("interstat", "budget_alert") => {
            p.get("pct_consumed")
                .and_then(Value::as_f64)
                .is_some_and(|n| (0.0..=100.0).contains(&n))
                && non_neg("total_tokens")
                && s("session_id")
                && num("ts")
        }
        ("intercheck", "checkpoint_needed") => s("trigger") && num("ts"),
        _ => true,
    }
}

/// Whether the v1 Go reader (`ReadEnvelope`) accepts a message.
///
/// ```
/// use serde_json::json;
/// let m = json!({"version":"1.0.0","namespace":"n","type":"t","session_id":null,
///                "timestamp":"x","payload":{}});
/// assert!(interband::v1::go_accepts(&m), "null leaves a Go string empty");
/// assert!(!interband::v1::shell_accepts(&m));
/// ```
pub fn go_accepts(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        // `null` decodes to an empty envelope, which fails the version check.
        return false;
    };
    // Decoding into `string` fields: a string or null (left empty), else an error.
    let field = |f: &str| -> Option<&str> {
        match o.get(f) {
            None | Some(Value::Null) => Some(""),
            Some(Value::String(s)) => Some(s),
            Some(_) => None,
        }
    };
    let (Some(version), Some(ns), Some(ty), Some(_session), Some(ts)) = (
        field("version"),
        field("namespace"),
        field("type"),
        field("session_id"),
        field("timestamp"),
    ) else {
        return false;
    };
    let Some(p) = o.get("payload").and_then(Value::as_object) else {
        // An array or a scalar fails decoding; null or missing is a nil map.
        return false;
    };
    if !version.starts_with("1.") || blank(ns) || blank(ty) || blank(ts) {
        return false;
    }
    let s = |f: &str| str_of(p, f).is_some_and(|s| !blank(s));
    let non_neg = |f: &str| p.get(f).and_then(Value::as_f64).is_some_and(|n| n >= 0.0);
    match (ns, ty) {
        ("interphase", "bead_phase") => {
            s("id")
                && str_of(p, "phase").is_some_and(|ph| crate::payloads::PHASES.contains(&ph))
                && matches!(p.get("reason"), None | Some(Value::Null | Value::String(_)))
                && p.get("ts").is_some_and(Value::is_number)
        }
        ("clavain", "dispatch") => {
            ["name", "workdir", "activity"].iter().all(|f| s(f))
                && ["started", "turns", "commands", "messages"]
                    .iter()
                    .all(|f| non_neg(f))
        }
        ("interlock", "coordination_signal") => {
            ["layer", "icon", "text", "ts"].iter().all(|f| s(f)) && non_neg("priority")
        }
        // The Go library checks no other contract.
        _ => true,
    }
}

/// Whether either v1 reader accepts a message.
pub fn accepts(v: &Value) -> bool {
    shell_accepts(v) || go_accepts(v)
}

fn str_of<'a>(o: &'a Map<String, Value>, f: &str) -> Option<&'a str> {
    o.get(f).and_then(Value::as_str)
}

/// Go's `strings.TrimSpace(s) == ""`: only Unicode white space.
fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({"version":"1.0.0","namespace":"interphase","type":"bead_phase","session_id":"s",
               "timestamp":"2026-11-30T00:00:00Z","payload":{"id":"b","phase":"done","ts":1}})
    }

    #[test]
    fn both_accept_a_good_message_and_reject_a_wrong_version() {
        assert!(shell_accepts(&good()) && go_accepts(&good()));
        let mut v = good();
        v["version"] = json!("2.0");
        assert!(!accepts(&v));
    }

    #[test]
    fn each_reader_has_its_own_leniency() {
        let mut v = good();
        v["payload"]["reason"] = json!(false);
        assert!(shell_accepts(&v) && !go_accepts(&v));
        let mut v = good();
        v["seq"] = json!("5");
        assert!(
            shell_accepts(&v) && go_accepts(&v),
            "seq is unknown to both"
        );
        let mut v = good();
        v["payload"]["id"] = json!("  ");
        assert!(shell_accepts(&v) && !go_accepts(&v));
        let mut v = good();
        v["namespace"] = json!("intercheck");
        v["type"] = json!("checkpoint_needed");
        v["payload"] = json!({"trigger": ""});
        assert!(
            !shell_accepts(&v) && go_accepts(&v),
            "Go checks three contracts"
        );
        let mut v = good();
        v.as_object_mut().unwrap().remove("session_id");
        assert!(!shell_accepts(&v) && go_accepts(&v));
        let mut v = good();
        v["payload"] = json!([]);
        assert!(!accepts(&v));
    }
}
