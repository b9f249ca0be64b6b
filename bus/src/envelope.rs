//! The v1 envelope every message is wrapped in, and the v1 rules for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version this library writes. Readers accept any `1.x`; `1.1` adds `seq`.
pub const WRITE_VERSION: &str = "1.1.0";

/// One message: who wrote what, when, and the payload.
///
/// Readers are tolerant: unknown fields are ignored and a missing `seq`
/// (a file written by a v1 shell or Go writer) reads as 0.
///
/// ```
/// use interband::Envelope;
/// let text = r#"{"version":"1.0.0","namespace":"n","type":"t","session_id":"","timestamp":"2026-11-30T00:00:00Z","payload":{"x":1},"extra":true}"#;
/// let env: Envelope = serde_json::from_str(text).unwrap();
/// assert_eq!(env.seq, 0);
/// assert_eq!(env.payload["x"], 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "interband envelope (protocol v1)")]
pub struct Envelope<P = Value> {
    /// Protocol version; readers accept anything starting with `1.`.
    #[schemars(extend("pattern" = r"^1\."))]
    pub version: String,
    /// The writer's namespace, e.g. `interpulse`.
    #[schemars(extend("pattern" = r"\S"))]
    pub namespace: String,
    /// The message type, e.g. `context_pressure`.
    #[serde(rename = "type")]
    #[schemars(extend("pattern" = r"\S"))]
    pub msg_type: String,
    /// The agent session this is about; may be empty.
    pub session_id: String,
    /// When it was written, RFC 3339 UTC (`YYYY-MM-DDTHH:MM:SSZ`).
    #[schemars(extend("pattern" = r"\S"))]
    pub timestamp: String,
    /// Per-key sequence number, 1, 2, 3... assigned under the key's lock;
    /// 0 when the writer did not set one (v1 writers).
    #[serde(default)]
    pub seq: u64,
    /// The payload; its shape depends on `namespace` and `type`.
    pub payload: P,
}

/// The current time as a v1 timestamp: RFC 3339, UTC, whole seconds.
///
/// ```
/// let ts = interband::envelope::now_timestamp();
/// assert_eq!(ts.len(), "2026-11-30T01:02:03Z".len());
/// assert!(ts.ends_with('Z'));
/// ```
pub fn now_timestamp() -> String {
    format_timestamp(time::OffsetDateTime::now_utc())
}

/// The highest `seq` a real key reaches: 2^53, the largest count a JSON
/// reader using doubles keeps exact (a key written a million times a second
/// gets there in 285 years). A higher one was planted or corrupted.
pub const MAX_PLAUSIBLE_SEQ: u64 = 1 << 53;

/// How far ahead of this machine's clock a timestamp may be before it is
/// implausible (a day: clocks disagree, machines share a bus through the bridge).
pub const MAX_CLOCK_SKEW: time::Duration = time::Duration::DAY;

/// Why an envelope's ordering fields cannot be believed, if they cannot: a
/// `seq` past [`MAX_PLAUSIBLE_SEQ`], or a timestamp more than
/// [`MAX_CLOCK_SKEW`] ahead of now. Readers accept such a message and flag it;
/// nothing orders values by it (see [`crate::consumer::Cursor::is_newer_than`]).
///
/// ```
/// use interband::envelope::implausible;
/// assert!(implausible(u64::MAX, "2026-11-30T00:00:00Z").is_some());
/// assert!(implausible(7, "9999-12-31T23:59:59Z").is_some());
/// assert!(implausible(7, &interband::envelope::now_timestamp()).is_none());
/// ```
pub fn implausible(seq: u64, timestamp: &str) -> Option<String> {
    let limit = format_timestamp(time::OffsetDateTime::now_utc() + MAX_CLOCK_SKEW);
    let reasons: Vec<String> = [
        (seq > MAX_PLAUSIBLE_SEQ)
            .then(|| format!("seq {seq} is past any real count (at most 2^53)")),
        // Same format, so the strings order as the times do.
        (timestamp.len() == limit.len() && timestamp > limit.as_str())
            .then(|| format!("timestamp {timestamp} is more than a day ahead of this clock")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

pub(crate) fn format_timestamp(t: time::OffsetDateTime) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.to_offset(time::UtcOffset::UTC)
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// Checks a parsed JSON value against the v1 envelope rules (those of the
/// shell and the Go readers together), and `seq` when present.
/// The payload is only checked to be an object here; see
/// [`crate::registry::check_payload`] for the known contracts.
pub fn check_envelope(v: &Value) -> Result<(), String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("envelope must be a JSON object, not {}", kind(v)))?;
    let text = |field: &str| -> Result<&str, String> {
        match obj.get(field) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!("{field} must be a string, not {}", kind(other))),
            None => Err(format!("{field} is missing")),
        }
    };
    let version = text("version")?;
    if !version.starts_with("1.") {
        return Err(format!("unsupported version {version:?} (want 1.x)"));
    }
    for field in ["namespace", "type", "timestamp"] {
        if text(field)?.trim().is_empty() {
            return Err(format!("{field} must not be empty"));
        }
    }
    text("session_id")?;
    match obj.get("seq") {
        None => {}
        Some(s) if s.as_u64().is_some() => {}
        Some(other) => return Err(format!("seq must be a non-negative integer, not {other}")),
    }
    match obj.get("payload") {
        Some(Value::Object(_)) => Ok(()),
        Some(other) => Err(format!("payload must be an object, not {}", kind(other))),
        None => Err("payload is missing".to_owned()),
    }
}

/// A short name for a JSON value's kind, for error messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({"version":"1.0.0","namespace":"n","type":"t","session_id":"s",
               "timestamp":"2026-11-30T00:00:00Z","payload":{}})
    }

    #[test]
    fn accepts_v1_and_extra_fields() {
        check_envelope(&good()).unwrap();
        let mut v = good();
        v["version"] = json!("1.9");
        v["seq"] = json!(4);
        v["other"] = json!([1]);
        v["session_id"] = json!("");
        check_envelope(&v).unwrap();
    }

    #[test]
    fn rejects_each_broken_rule() {
        let cases: &[(&str, Value)] = &[
            ("version", json!("2.0.0")),
            ("version", json!(1.0)),
            ("namespace", json!(" ")),
            ("type", json!("")),
            ("session_id", Value::Null),
            ("timestamp", json!("")),
            ("payload", json!([])),
            ("payload", Value::Null),
            ("seq", json!(-1)),
            ("seq", json!("3")),
        ];
        for (field, value) in cases {
            let mut v = good();
            v[*field] = value.clone();
            let err = check_envelope(&v).unwrap_err();
            assert!(err.contains(field), "{field}={value}: {err}");
        }
        for field in [
            "version",
            "namespace",
            "type",
            "session_id",
            "timestamp",
            "payload",
        ] {
            let mut v = good();
            v.as_object_mut().unwrap().remove(field);
            assert!(check_envelope(&v).unwrap_err().contains(field));
        }
        assert!(check_envelope(&json!([])).is_err());
    }

    #[test]
    fn timestamps_are_v1_shaped() {
        let t = time::macros::datetime!(2026-11-30 01:02:03.5 UTC);
        assert_eq!(format_timestamp(t), "2026-11-30T01:02:03Z");
    }
}
