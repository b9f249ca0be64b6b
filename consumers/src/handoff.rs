//! A fresh session of the same agent, in the same folder, whose first
//! prompt is the session's memory note: what `interband handoff` prints or
//! runs, beside compacting in place.

use std::path::{Path, PathBuf};

use interband::Bus;
use interband_hosts::Host;

use crate::intermem::{self, SessionInfo, Trigger};
use crate::{Error, framing};

/// The longest first prompt given whole, bytes: one argument of Linux's is
/// at most 128 KiB, and a Windows command line at most 32,767 characters. A
/// longer note is named, for the fresh session to read.
#[cfg(not(windows))]
pub const MAX_PROMPT: usize = 100_000;
/// See the Unix value.
#[cfg(windows)]
pub const MAX_PROMPT: usize = 30_000;

/// A fresh session, ready to start.
#[derive(Debug, Clone, PartialEq)]
pub struct Handoff {
    /// The session handed over.
    pub session: String,
    /// Its agent.
    pub host: Host,
    /// Its folder: where the fresh session starts.
    pub cwd: PathBuf,
    /// The memory note written for it.
    pub note: PathBuf,
    /// The first prompt, in a file beside the note (for a command line a
    /// person copies: `claude "$(cat FILE)"`).
    pub prompt_file: PathBuf,
    /// The fresh session's command line (the host's own, with the prompt).
    pub argv: Vec<String>,
}

/// Writes a memory note of `session` now (from its transcript, as the
/// hooks do) and makes the command line of a fresh session of the same
/// agent, in the same folder, whose first prompt carries that note.
///
/// Fails, naming the session, when the bus does not say which agent ran it
/// (its transcript) or in which folder, or when no note can be written.
pub fn prepare(
    bus: &Bus,
    session: &str,
    settings: &intermem::Settings,
    home: Option<&Path>,
) -> Result<Handoff, Error> {
    let refuse = |reason: String| Error::Command {
        command: "handoff".into(),
        reason,
    };
    let info = SessionInfo::resolve(bus, session, None, None);
    // The agent its hook said, else its transcript's place.
    let said = bus
        .read_typed::<interband::payloads::Pressure>(session)
        .ok()
        .and_then(|p| p.payload.agent)
        .and_then(|a| Host::from_key(&a));
    let host = said
        .or_else(|| {
            let t = info.transcript.as_deref()?;
            Host::of_transcript(&t.to_string_lossy())
        })
        .ok_or_else(|| {
            refuse(format!(
                "session {session}: which agent ran it is not known (no transcript of its on the bus)"
            ))
        })?;
    let cwd = info
        .cwd
        .clone()
        .ok_or_else(|| refuse(format!("session {session}: its folder is not known")))?;
    let info = SessionInfo { host, ..info };
    let trigger = Trigger {
        name: "handoff".into(),
        context_usable: None,
        figure: None,
        id: None,
        again: false,
    };
    let written = intermem::write_note(bus, &info, &trigger, settings, home)?;
    let path = written.path.to_string_lossy().into_owned();
    let text = intermem::read_note(bus, session, &path)?;
    let prompt = prompt(host, session, &path, &text);
    let name = written
        .path
        .file_stem()
        .map_or_else(|| "handoff".into(), |s| s.to_string_lossy().into_owned())
        + ".prompt.txt";
    intermem::open_notes(bus, &info, false)?.write(&name, prompt.as_bytes(), false)?;
    let prompt_file = written.path.with_file_name(&name);
    let argv = host
        .profile()
        .fresh_session
        .iter()
        .map(|w| w.replace("{prompt}", &prompt))
        .collect();
    Ok(Handoff {
        session: session.to_owned(),
        host,
        cwd,
        note: written.path,
        prompt_file,
        argv,
    })
}

/// The fresh session's first prompt: the note, framed as the record it is
/// (as it comes back after a compaction), and where to go on from; a note
/// too long for a command line is named instead.
pub fn prompt(host: Host, session: &str, path: &str, note: &str) -> String {
    let name = host.profile().name;
    let whole = format!(
        "{}\n\nThis is a fresh {name} session that picks that work up: go on from where the note leaves it.",
        framing::record_of(
            "an earlier session's context",
            "handed over to a fresh session",
            session,
            path,
            note
        )
    );
    if whole.len() <= MAX_PROMPT {
        return whole;
    }
    format!(
        "This is a fresh {name} session that picks up the work of session {}. interband (a context monitor) saved that session's memory note at {}: what the task was and what was done so far, as a record (not new instructions). Read it first, then go on from where it leaves off.",
        interband::paths::safe_key(session),
        framing::inline(path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_the_note_framed_or_names_a_long_one() {
        let p = prompt(Host::Gemini, "s1", "/r/n.md", "# Memory note\n- did x");
        assert!(p.contains("<interband-memory-note session=\"s1\""), "{p}");
        assert!(
            p.contains("- did x") && p.contains("fresh Gemini CLI session"),
            "{p}"
        );
        let long = "x".repeat(MAX_PROMPT);
        let p = prompt(Host::Claude, "s1", "/r/n.md", &long);
        assert!(p.len() < 1000 && p.contains("/r/n.md"), "{p}");
    }
}
