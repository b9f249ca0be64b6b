//! # interpulse — the producer
//!
//! Tracks each session's context pressure and real context usage from
//! PostToolUse-style hook calls, warns the agent through the host's
//! additional-context channel, and publishes pressure and checkpoint requests
//! on the interband bus.
#![deny(missing_docs)]

pub mod config;
pub use interband::context;
pub mod dashboard;
pub mod engine;
pub mod hook;
pub mod messages;
pub mod subagent;

/// What can stop a producer call. Hooks log it and fail open.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The hook input is unusable (names the field).
    #[error("hook input: {0}")]
    Input(String),
    /// The bus failed (names the file or channel).
    #[error(transparent)]
    Bus(#[from] interband::Error),
}
pub mod synthetic;
