//! The channel registry: every known contract and channel, with its retention
//! and durability.

use serde_json::{Map, Value};

use crate::payloads::*;

/// A known payload contract: which `(namespace, type)` it is, where it is
/// written, and how to check and describe it.
#[derive(Debug, Clone, Copy)]
pub struct Contract {
    /// The envelope's `namespace`.
    pub namespace: &'static str,
    /// The channel folder it is written to.
    pub channel: &'static str,
    /// The envelope's `type`.
    pub msg_type: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// Checks a raw payload.
    pub check: fn(&Map<String, Value>) -> Result<(), String>,
    /// The payload's JSON Schema.
    pub schema: fn() -> schemars::Schema,
}

const fn contract<P: Payload>() -> Contract {
    Contract {
        namespace: P::NAMESPACE,
        channel: P::CHANNEL,
        msg_type: P::TYPE,
        about: P::ABOUT,
        check: P::check,
        schema: || schemars::schema_for!(P),
    }
}

/// Every known contract.
pub const CONTRACTS: &[Contract] = &[
    contract::<BeadPhase>(),
    contract::<Dispatch>(),
    contract::<CoordinationSignal>(),
    contract::<LegacyPressure>(),
    contract::<LegacyCheckpoint>(),
    contract::<BudgetAlert>(),
    contract::<Pressure>(),
    contract::<Checkpoint>(),
    contract::<ContextWindow>(),
    contract::<MemoryNote>(),
    contract::<CompactionRequested>(),
    contract::<CompactionRecord>(),
    contract::<SubagentContext>(),
];

/// The contract for a `(namespace, type)` pair, if it is a known one.
pub fn contract_for(namespace: &str, msg_type: &str) -> Option<&'static Contract> {
    CONTRACTS
        .iter()
        .find(|c| c.namespace == namespace && c.msg_type == msg_type)
}

/// Checks a payload: a known contract's rules, or just "an object" for unknown types.
///
/// ```
/// use interband::registry::check_payload;
/// use serde_json::json;
/// assert!(check_payload("intercheck", "checkpoint_needed", &json!({"trigger":"orange_pressure","ts":1})).is_ok());
/// assert!(check_payload("intercheck", "checkpoint_needed", &json!({"trigger":"","ts":1})).is_err());
/// assert!(check_payload("someone", "anything", &json!({"free": "form"})).is_ok());
/// assert!(check_payload("someone", "anything", &json!([1])).is_err());
/// ```
pub fn check_payload(namespace: &str, msg_type: &str, payload: &Value) -> Result<(), String> {
    let Value::Object(map) = payload else {
        return Err(format!(
            "payload must be an object, not {}",
            crate::envelope::kind(payload)
        ));
    };
    match contract_for(namespace, msg_type) {
        Some(c) => (c.check)(map).map_err(|e| format!("{namespace}/{msg_type}: {e}")),
        None => Ok(()),
    }
}

/// Per-channel storage policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelPolicy {
    /// Files older than this many seconds are pruned.
    pub retention_secs: u64,
    /// At most this many files are kept (newest first).
    pub max_files: usize,
    /// Fsync the file and its folder on every write: for channels whose loss
    /// matters. Latest-value channels rewritten every few seconds skip it.
    pub durable: bool,
}

const fn policy(retention_secs: u64, max_files: usize, durable: bool) -> ChannelPolicy {
    ChannelPolicy {
        retention_secs,
        max_files,
        durable,
    }
}

const HOUR: u64 = 3600;

/// Channels with a policy other than the default (24 h, 256 files, not durable).
/// The first six are the protocol v1 defaults.
pub const CHANNELS: &[(&str, &str, ChannelPolicy)] = &[
    ("interphase", "bead", policy(24 * HOUR, 256, false)),
    ("clavain", "dispatch", policy(6 * HOUR, 128, false)),
    ("interlock", "coordination", policy(12 * HOUR, 256, false)),
    ("intercheck", "pressure", policy(HOUR, 64, false)),
    ("intercheck", "checkpoint", policy(HOUR, 32, false)),
    ("interstat", "budget", policy(6 * HOUR, 64, false)),
    ("interpulse", "checkpoint", policy(24 * HOUR, 256, true)),
    ("intermem", "note", policy(7 * 24 * HOUR, 256, true)),
];

/// The default policy for channels not listed in [`CHANNELS`].
pub const DEFAULT_POLICY: ChannelPolicy = policy(24 * HOUR, 256, false);

/// The built-in policy of a channel (before environment overrides).
///
/// ```
/// let p = interband::registry::channel_policy("intermem", "note");
/// assert!(p.durable);
/// assert!(!interband::registry::channel_policy("interpulse", "pressure").durable);
/// assert_eq!(interband::registry::channel_policy("clavain", "dispatch").max_files, 128);
/// ```
pub fn channel_policy(namespace: &str, channel: &str) -> ChannelPolicy {
    CHANNELS
        .iter()
        .find(|(n, c, _)| *n == namespace && *c == channel)
        .map_or(DEFAULT_POLICY, |(_, _, p)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contracts_are_unique_and_named_like_their_channels() {
        for (i, a) in CONTRACTS.iter().enumerate() {
            for b in &CONTRACTS[i + 1..] {
                assert!(
                    (a.namespace, a.msg_type) != (b.namespace, b.msg_type),
                    "{}/{} twice",
                    a.namespace,
                    a.msg_type
                );
            }
            crate::paths::check_segment("namespace", a.namespace).unwrap();
            crate::paths::check_segment("channel", a.channel).unwrap();
        }
    }
}
