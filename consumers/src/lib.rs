//! # interband consumers
//!
//! The parts that act on what the producer publishes: intermem writes memory
//! notes, interline bridges the host's statusline, the compaction trigger
//! gets a compaction started, and the latest note comes back after it.
#![deny(missing_docs)]

pub mod compact;
pub mod digest;
pub mod framing;
mod group;
pub mod handoff;
pub mod hooks;
pub mod interline;
pub mod intermem;
pub mod notify;
#[cfg(test)]
mod stand_in;
pub mod summary;

/// What can stop a consumer. Hooks log it and fail open.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bus or a file failed (names the file or channel).
    #[error(transparent)]
    Bus(#[from] interband::Error),
    /// A command the consumer runs failed (names it).
    #[error("{command}: {reason}")]
    Command {
        /// The program.
        command: String,
        /// What happened.
        reason: String,
    },
}

impl Error {
    /// True for a failure that passes by itself (a full disk, a lock held
    /// too long): worth trying again, never a reason to give up.
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Bus(e) if e.is_transient())
    }
}

/// Unix time now, seconds.
pub fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
