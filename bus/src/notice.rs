//! What a session's agent is to be told once, at the session's next hook
//! call that can speak: a memory note that could not be written, say. Kept
//! at `<root>/.state/notices/<session>.json`, at most [`MAX_NOTICES`], each
//! cut to [`MAX_NOTICE_CHARS`].
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! let bus = interband::Bus::new(dir.path());
//! interband::notice::add(&bus, "s1", "a memory note could not be written: disk full").unwrap();
//! assert_eq!(interband::notice::take(&bus, "s1").unwrap().len(), 1);
//! assert!(interband::notice::take(&bus, "s1").unwrap().is_empty(), "said once");
//! ```

use crate::lock::{DEFAULT_WAIT, update_json};
use crate::paths::safe_key;
use crate::{Bus, Error, Result};

/// The most notices kept for one session (the oldest go first).
pub const MAX_NOTICES: usize = 16;

/// The longest notice kept, characters.
pub const MAX_NOTICE_CHARS: usize = 500;

fn file(session: &str) -> String {
    format!("{}.json", safe_key(session))
}

/// Queues `text` for `session`'s next hook call.
pub fn add(bus: &Bus, session: &str, text: &str) -> Result<()> {
    let dir = bus.dir(&[".state", "notices"], true)?;
    let text: String = text.chars().take(MAX_NOTICE_CHARS).collect();
    update_json(&dir, &file(session), DEFAULT_WAIT, |v: &mut Vec<String>| {
        if !v.contains(&text) {
            v.push(text);
        }
        let over = v.len().saturating_sub(MAX_NOTICES);
        v.drain(..over);
    })
}

/// Takes `session`'s queued notices (none, cheaply, when there are none).
pub fn take(bus: &Bus, session: &str) -> Result<Vec<String>> {
    let dir = match bus.dir(&[".state", "notices"], false) {
        Ok(d) => d,
        Err(Error::NotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let name = file(session);
    if !matches!(dir.stat(&name), Ok(Some(_))) {
        return Ok(Vec::new());
    }
    let taken = update_json(&dir, &name, DEFAULT_WAIT, std::mem::take::<Vec<String>>)?;
    if taken.is_empty() {
        let _ = dir.remove(&name);
    }
    Ok(taken)
}
