//! intermem, the externalizer: writes a memory note of what a session knows —
//! its task, todo list, changed files, commands, errors, last words and
//! wind-down journal — before the context is summarized away.
//!
//! Notes live under the root at `intermem/notes/<project slug>/<session>/`,
//! one file per note plus a stable `latest.md`, and optionally as a Claude
//! Code auto-memory file. Each note is announced on `intermem/note/<session>`.

use std::path::{Path, PathBuf};

use interband::consumer::{Consumer, HandlerError, Transient};
use interband::context::pct_text;
use interband::fsio::Dir;
use interband::journal::{Journal, Record};
use interband::lock::{DEFAULT_WAIT, lock_name, with_lock};
use interband::paths::safe_key;
use interband::payloads::{MemoryNote, Pressure};
use interband::{Bus, Message};
use interband_hosts::Host;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::digest::{self, Digest, Limits};
use crate::framing::{code, first_line, inline, quote};
use crate::{Error, now_secs, truncate};

/// intermem's settings (`[intermem]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Write notes at all.
    pub enabled: bool,
    /// The most a note may hold, bytes (from [`MIN_NOTE_BYTES`] to [`MAX_NOTE_SIZE`]).
    pub max_bytes: usize,
    /// Also write the note as a Claude Code auto-memory file under `~/.claude/projects/<slug>/memory/`.
    pub claude_memory: bool,
    /// The most of a note injected after a compaction, bytes (at most [`MAX_INJECT_BYTES`]).
    pub inject_max_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            max_bytes: 16384,
            claude_memory: false,
            inject_max_bytes: 16384,
        }
    }
}

impl Default for SessionInfo {
    fn default() -> Self {
        SessionInfo {
            session: String::new(),
            host: Host::Claude,
            transcript: None,
            cwd: None,
        }
    }
}

/// Where a session's things are.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The session id.
    pub session: String,
    /// Its host (how to read its transcript, its compaction command).
    pub host: Host,
    /// Its transcript.
    pub transcript: Option<PathBuf>,
    /// Its project folder.
    pub cwd: Option<PathBuf>,
}

impl SessionInfo {
    /// Fills what the caller does not know (watch mode has no hook input) from
    /// what the producer recorded: the session's `interpulse/pressure` payload.
    /// `transcript` and `cwd` are the host's (a hook input); what the bus
    /// says is untrusted, so a transcript from it is taken only when it can
    /// be that session's own (see [`own_transcript`]).
    pub fn resolve(
        bus: &Bus,
        session: &str,
        transcript: Option<String>,
        cwd: Option<String>,
    ) -> Self {
        let given = |v: Option<String>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
        let (mut transcript, mut cwd) = (given(transcript), given(cwd));
        if transcript.is_none() || cwd.is_none() {
            let recorded = bus.read_typed::<Pressure>(session).ok().map(|e| e.payload);
            if let Some(p) = recorded {
                transcript = transcript.or_else(|| {
                    p.transcript_path
                        .as_deref()
                        .and_then(|t| own_transcript(session, t))
                });
                cwd = cwd.or_else(|| given(p.cwd));
            }
        }
        let host = transcript
            .as_deref()
            .and_then(|t| Host::of_transcript(&t.to_string_lossy()))
            .unwrap_or(Host::Claude);
        SessionInfo {
            session: session.to_owned(),
            host,
            transcript,
            cwd,
        }
    }
}

/// A transcript a bus message names, when it can be that session's own:
/// its file name carries the session id (Claude Code's `<session>.jsonl`,
/// Codex's `rollout-<time>-<session>.jsonl`) or, for Gemini, the id's first
/// eight characters (`session-<time>-<id8>.jsonl`). Any other file — another
/// session's or project's transcript, a secret — is not read on a message's word.
///
/// ```
/// use interband_consumers::intermem::own_transcript;
/// let s = "d6d5a7f1-e821-4196-b0bd-c3da854c1920";
/// assert!(own_transcript(s, "/h/.claude/projects/-p/d6d5a7f1-e821-4196-b0bd-c3da854c1920.jsonl").is_some());
/// assert!(own_transcript(s, "/h/.gemini/tmp/p/chats/session-2026-11-30T07-24-d6d5a7f1.jsonl").is_some());
/// assert!(own_transcript(s, "/h/.claude/projects/-other/0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d.jsonl").is_none());
/// assert!(own_transcript(s, "/h/.copilot/session-state/d6d5a7f1-e821-4196-b0bd-c3da854c1920/events.jsonl").is_some());
/// assert!(own_transcript(s, "/h/.copilot/session-state/0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d/events.jsonl").is_none());
/// assert!(own_transcript(s, "/h/.aws/credentials").is_none());
/// ```
pub fn own_transcript(session: &str, path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    let name = p.file_name()?.to_str()?;
    let session = session.trim();
    // Plain characters only: the id lands in a file name, front matter and
    // an index that Claude Code loads into every later session.
    let short = safe_key(&session.chars().take(8).collect::<String>());
    let json = name.ends_with(".jsonl") || name.ends_with(".json");
    // (Copilot CLI names the folder: `session-state/<session>/events.jsonl`.)
    let folder = p
        .parent()
        .and_then(Path::file_name)
        .and_then(|f| f.to_str());
    let named = (session.len() >= 8 && name.contains(session))
        || (short.len() == 8 && name.contains(&format!("-{short}.")))
        || (session.len() >= 8 && folder == Some(session));
    (json && named && p.is_absolute()).then(|| p.to_owned())
}

/// Claude Code's project slug: every character of the path that is not a letter or digit becomes `-`.
///
/// ```
/// assert_eq!(interband_consumers::intermem::slug(std::path::Path::new("/home/dev/my_work")), "-home-dev-my-work");
/// ```
pub fn slug(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Where notes live under the root: `intermem/notes/`.
pub const NOTES: [&str; 2] = ["intermem", "notes"];

/// The folder names of a session's notes under [`NOTES`]: the project's slug
/// (shortened with a hash when it would be too long a file name) and the session.
fn note_folders(info: &SessionInfo) -> (String, String) {
    let mut project = info
        .cwd
        .as_deref()
        .map_or_else(|| "unknown-project".to_owned(), slug);
    if project.len() > 200 {
        let digest = interband::trust::digest(project.as_bytes());
        project = format!("{}-{}", &project[..160], &digest[7..23]);
    }
    (project, safe_key(&info.session))
}

/// The folder of a session's notes (its path; see [`open_notes`]).
pub fn notes_dir(bus: &Bus, info: &SessionInfo) -> PathBuf {
    let (project, session) = note_folders(info);
    bus.root()
        .join(NOTES[0])
        .join(NOTES[1])
        .join(project)
        .join(session)
}

/// The folder of a session's notes as a verified handle.
pub fn open_notes(bus: &Bus, info: &SessionInfo, create: bool) -> Result<Dir, interband::Error> {
    let (project, session) = note_folders(info);
    bus.dir(&[NOTES[0], NOTES[1], &project, &session], create)
}

/// Why a note is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    /// `orange_pressure`, `red_pressure`, `pre_compact_auto`, `session_end`, `compaction`...
    pub name: String,
    /// Usable context left, percent, when known.
    pub context_usable: Option<f64>,
    /// The session's context figure in words ([`interband::context::describe`]),
    /// when known: [`write_note`] takes it from the session's pressure.
    pub figure: Option<String>,
    /// A name for this trigger's note that a retry reuses (e.g. `checkpoint-cp7-1a2b3c4d` for checkpoint seq 7).
    pub id: Option<String>,
    /// An earlier attempt for this trigger ran (and may have written the note).
    pub again: bool,
}

/// The session's context figure in words, from its published pressure,
/// when that has the figures.
fn figure(bus: &Bus, session: &str) -> Option<String> {
    let p = bus.read_typed::<Pressure>(session).ok()?.payload;
    Some(interband::context::describe(
        p.used_tokens?,
        p.window?,
        p.compact_at?,
    ))
}

/// A note that was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The note's file.
    pub path: PathBuf,
    /// Its size.
    pub bytes: usize,
    /// The copy into Claude Code's memory could not be made (the note itself
    /// is written and announced all the same).
    pub claude_memory_error: Option<String>,
    /// What the note was written from: the transcript's digest (`None` when
    /// the note was one written earlier for the same checkpoint).
    pub digest: Option<Digest>,
}

/// The git branch: the transcript's, else `.git/HEAD` in the project folder.
/// That file comes with the project, so it is read only as a git HEAD: a
/// regular file, not a link, at most 512 bytes, read without blocking, and
/// used only when it is `ref: refs/heads/<branch>` or a commit hash — never
/// whatever else a planted file holds.
fn branch(d: &Digest, cwd: Option<&Path>) -> Option<String> {
    // `HEAD` is what a host records outside a repository (or detached):
    // no branch. A detached checkout's `.git/HEAD` names its commit.
    d.git_branch
        .clone()
        .filter(|b| !b.is_empty() && b != "HEAD")
        .or_else(|| {
            let head =
                interband::fsio::read_capped(&interband::paths::under(cwd?, ".git/HEAD"), 512)
                    .ok()?;
            git_head(std::str::from_utf8(&head).ok()?)
        })
}

/// The branch (or commit) a `.git/HEAD` names, when it is one.
///
/// ```
/// use interband_consumers::intermem::git_head;
/// assert_eq!(git_head("ref: refs/heads/feature/x\n").as_deref(), Some("feature/x"));
/// assert_eq!(git_head(&"a1".repeat(20)).as_deref(), Some("a1".repeat(20).as_str()));
/// assert_eq!(git_head("[default]\naws_secret_access_key = x"), None);
/// ```
pub fn git_head(text: &str) -> Option<String> {
    let text = text.trim();
    if let Some(name) = text.strip_prefix("ref: refs/heads/") {
        let plain = !name.is_empty()
            && name.len() <= 200
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/-+@".contains(c));
        return plain.then(|| name.to_owned());
    }
    let hash = matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit());
    hash.then(|| text.to_owned())
}

/// Writes a note for the session, claims the wind-down journal into it, and
/// announces it.
///
/// A trigger with an id names its note (`<id>-<trigger>.md`): when it is
/// tried `again` and that note exists (an earlier attempt wrote it and was
/// killed), it is
/// not written again; its journal claim is settled and it is made the
/// latest and announced, which an interrupted attempt may not have done.
/// Each journal record lands in exactly one note, even across kills.
pub fn write_note(
    bus: &Bus,
    info: &SessionInfo,
    trigger: &Trigger,
    settings: &Settings,
    home: Option<&Path>,
) -> Result<Written, Error> {
    let dir = open_notes(bus, info, true)?;
    let now = now_secs();
    let figured;
    let trigger = match trigger.figure {
        Some(_) => trigger,
        None => {
            figured = Trigger {
                figure: figure(bus, &info.session),
                ..trigger.clone()
            };
            &figured
        }
    };
    let (written, text) = with_lock(&dir, ".note.lock", DEFAULT_WAIT, |_| {
        let name = match &trigger.id {
            Some(id) => format!("{}-{}.md", safe_key(id), safe_key(&trigger.name)),
            None => format!("{}-{}.md", compact_stamp(), safe_key(&trigger.name)),
        };
        let path = dir.join(&name);
        let journal = Journal::new(bus, &info.session);
        let made = |n: &str| dir.exists(n);
        let earlier = match trigger.id {
            Some(_) if trigger.again && dir.exists(&name) => {
                journal.recover(&made)?;
                Some(String::from_utf8_lossy(&dir.read(&name, MAX_NOTE_BYTES)?).into_owned())
            }
            _ => None,
        };
        let mut made_from = None;
        let text = match earlier {
            Some(text) => text,
            None => {
                let digest = info
                    .transcript
                    .as_deref()
                    .and_then(|t| digest::digest_file_as(t, &Limits::default(), info.host).ok())
                    .unwrap_or_default();
                let text = journal.with_claimed_for(Some(&name), &made, |records| {
                    let text = render(info, trigger, &digest, records, settings.max_bytes);
                    dir.write(&name, text.as_bytes(), true)?;
                    Ok(text)
                })?;
                made_from = Some(digest);
                text
            }
        };
        dir.write("latest.md", text.as_bytes(), true)?;
        // Announced under the lock, so the channel names the newest note
        // even when a watch and a hook write one at the same moment.
        let note = MemoryNote {
            path: path.to_string_lossy().into_owned(),
            trigger: trigger.name.clone(),
            bytes: text.len() as u64,
            context_usable: trigger.context_usable,
            ts: now,
        };
        bus.publish_typed(&info.session, &info.session, &note)?;
        Ok((
            Written {
                path,
                bytes: text.len(),
                claude_memory_error: None,
                digest: made_from,
            },
            text,
        ))
    })?;
    let mut written = written;
    if let (true, Some(home), Some(cwd)) = (settings.claude_memory, home, info.cwd.as_deref()) {
        written.claude_memory_error = claude_memory(home, cwd, &info.session, &text)
            .err()
            .map(|e| e.to_string());
    }
    Ok(written)
}

fn compact_stamp() -> String {
    // 2026-11-30T01:02:03Z → 20261130T010203Z, plus nanoseconds for uniqueness.
    let ts = interband::envelope::now_timestamp().replace(['-', ':'], "");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos:09}", ts.trim_end_matches('Z'))
}

/// The smallest note size honoured: the header and a little of each section.
pub const MIN_NOTE_BYTES: usize = 1024;

/// The largest note size honoured: 256 KiB.
pub const MAX_NOTE_SIZE: usize = 256 << 10;

/// The most of a note brought back into a fresh context: 64 KiB.
pub const MAX_INJECT_BYTES: usize = 64 << 10;

/// The note's markdown, at most `max_bytes` (at least [`MIN_NOTE_BYTES`]),
/// with visible marks where cut. Each section gets a fair share of the room,
/// so a long todo list cannot push the changed files and commands out.
pub fn render(
    info: &SessionInfo,
    trigger: &Trigger,
    d: &Digest,
    journal: &[Record],
    max_bytes: usize,
) -> String {
    let max_bytes = max_bytes.clamp(MIN_NOTE_BYTES, MAX_NOTE_SIZE);
    let cwd = info.cwd.as_deref();
    let project = cwd
        .and_then(|c| c.file_name())
        .map_or("unknown project".into(), |n| {
            n.to_string_lossy().into_owned()
        });
    // Every piece of session text goes in through `framing`: it can never
    // become a heading, a fence, a tag or the end of the re-injected block.
    let mut s = format!("# Memory note: {}\n\n", inline(&project));
    s += &format!("- session: {}\n", code(&info.session));
    if let Some(c) = cwd {
        s += &format!("- project: {}\n", code(&c.to_string_lossy()));
    }
    if let Some(b) = branch(d, cwd) {
        s += &format!("- branch: {}\n", code(&b));
    }
    let usable = match (&trigger.figure, trigger.context_usable) {
        (Some(f), _) => format!(", {}", inline(f)),
        (None, Some(u)) => format!(", {} of the usable room left", pct_text(u)),
        (None, None) => String::new(),
    };
    s += &format!(
        "- written: {} (trigger: {}{usable})\n",
        interband::envelope::now_timestamp(),
        inline(&trigger.name)
    );
    if let Some(t) = &info.transcript {
        s += &format!("- transcript: {}\n", code(&t.to_string_lossy()));
    }

    let mut sections: Vec<(String, String)> = Vec::new();
    // The first and the latest prompt: two sections, so each keeps a share.
    sections.push((
        "Task".into(),
        d.first_prompt
            .as_deref()
            .map(|p| format!("First prompt:\n{}\n", quote(p)))
            .unwrap_or_default(),
    ));
    sections.push((
        "Latest prompt".into(),
        d.latest_prompt
            .as_ref()
            .filter(|p| Some(*p) != d.first_prompt.as_ref())
            .map(|p| quote(p))
            .unwrap_or_default(),
    ));
    // The other requests of the context, newest first (a request is what
    // a compaction's summary loses most often after the commands).
    let others: String = d
        .prompts
        .iter()
        .rev()
        .filter(|p| Some(*p) != d.first_prompt.as_ref() && Some(*p) != d.latest_prompt.as_ref())
        .map(|p| format!("- {}\n", inline(&truncate(p, 300))))
        .collect();
    sections.push(("Earlier requests (newest first)".into(), others));
    let todos: String = d
        .todos
        .iter()
        .map(|t| {
            let mark = match t.status.as_str() {
                "completed" => "[x]",
                "in_progress" => "[~]",
                _ => "[ ]",
            };
            format!("- {mark} {}\n", inline(&t.content))
        })
        .collect();
    sections.push(("Todo list".into(), todos));
    sections.push((
        "Files changed (most recent first)".into(),
        d.files_changed
            .iter()
            .map(|f| format!("- {}\n", code(f)))
            .collect(),
    ));
    sections.push((
        "Commands run (each once, at its latest run)".into(),
        d.commands
            .iter()
            .map(|c| {
                format!(
                    "- {}{}{}\n",
                    code(&truncate(&first_line(&c.command), 200)),
                    if c.runs > 1 {
                        format!(" (×{})", c.runs)
                    } else {
                        String::new()
                    },
                    if c.failed { " — FAILED" } else { "" }
                )
            })
            .collect(),
    ));
    sections.push((
        "Recent tool errors".into(),
        d.tool_errors
            .iter()
            .map(|e| {
                format!(
                    "- {}: {}\n",
                    inline(&e.tool),
                    inline(&first_line(&e.message))
                )
            })
            .collect(),
    ));
    sections.push((
        "Wind-down journal (calls at red)".into(),
        journal_lines(journal),
    ));
    sections.push((
        "Last assistant message".into(),
        d.last_assistant.as_deref().map(quote).unwrap_or_default(),
    ));
    sections.push((
        "Summary from the previous compaction".into(),
        d.compaction_summary
            .as_deref()
            .map(|t| quote(&truncate(&summary_body(t), 1500)))
            .unwrap_or_default(),
    ));

    sections.retain(|(_, body)| !body.trim().is_empty());
    // "\n## {title}\n\n" before a body and "\n" after it.
    let framing: usize = sections.iter().map(|(t, _)| t.len() + 7).sum();
    let room = max_bytes.saturating_sub(s.len() + framing);
    let sizes: Vec<usize> = sections.iter().map(|(_, b)| b.trim_end().len()).collect();
    for ((title, body), share) in sections.iter().zip(fair_shares(&sizes, room)) {
        s += &format!("\n## {title}\n\n{}\n", cut(body.trim_end(), share));
    }
    bound(s, max_bytes)
}

/// Splits `room` bytes between sections of `sizes`: a section smaller than
/// an equal share keeps its size, and what it leaves goes to the others.
pub(crate) fn fair_shares(sizes: &[usize], room: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut shares = vec![0; sizes.len()];
    let mut left = room;
    for (n, &i) in order.iter().enumerate() {
        let give = sizes[i].min(left / (sizes.len() - n));
        shares[i] = give;
        left -= give;
    }
    shares
}

/// `body` cut to at most `max` bytes, with a mark saying how much was left
/// out: on a line boundary when one is near the end of the room, else within
/// the line (a long prompt keeps its beginning).
fn cut(body: &str, max: usize) -> String {
    if body.len() <= max {
        return body.to_owned();
    }
    let mark = |n: usize| format!(" [... {n} more bytes]");
    let mut end = max.saturating_sub(mark(body.len()).len() + 1);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let end = match body[..end].rfind('\n') {
        Some(i) if i + 1 >= end / 2 => i + 1,
        _ => end,
    };
    let kept = &body[..end];
    let sep = if kept.ends_with('\n') || kept.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{kept}{sep}{}", mark(body.len() - end).trim_start())
}

/// The summary itself, without the host's framing: its preamble, reminders,
/// and the closing instructions meant for the model right after that compaction
/// (which would mislead if they came back later).
fn summary_body(text: &str) -> String {
    let body = text.split_once("Summary:").map_or(text, |(_, b)| b);
    let end = [
        "\nIf you need specific details",
        "\nContinue the conversation from where",
    ]
    .iter()
    .filter_map(|m| body.find(m))
    .min()
    .unwrap_or(body.len());
    let mut out = String::new();
    let mut in_reminder = false;
    for line in body[..end].lines() {
        if line.trim_start().starts_with("<system-reminder>") {
            in_reminder = true;
        }
        if !in_reminder {
            out.push_str(line);
            out.push('\n');
        }
        if line.contains("</system-reminder>") {
            in_reminder = false;
        }
    }
    out.trim().to_owned()
}

/// The session's wind-down journal recorded after `since` (Unix seconds)
/// that the note at `note_path` does not hold, as the note's lines.
pub fn journal_not_in(
    bus: &Bus,
    session: &str,
    note_path: &str,
    since: f64,
) -> Result<String, interband::Error> {
    let journal = Journal::new(bus, session);
    let name = Path::new(note_path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let held = journal.claimed_by(&name)?;
    // Only the records made since are read: a session's journal holds
    // every call made at red in all its compactions.
    let records: Vec<Record> = journal
        .since(since)?
        .into_iter()
        .filter(|r| r.value["ts"].as_f64().unwrap_or(0.0) > since)
        .filter(|r| held.binary_search(&r.name).is_err())
        .collect();
    Ok(journal_lines(&records))
}

fn journal_lines(records: &[Record]) -> String {
    records
        .iter()
        .map(|r| {
            let v = &r.value;
            // The figure in the statusline's words; a record from before
            // 0.2 has only the share of the usable room.
            let usable = match (v["context"].as_str(), v["context_usable"].as_f64()) {
                (Some(said), _) => format!(" ({})", inline(said)),
                (None, Some(u)) => format!(" ({} usable left)", pct_text(u)),
                _ => String::new(),
            };
            let failed = if v["error"].as_bool() == Some(true) {
                " — FAILED"
            } else {
                ""
            };
            format!(
                "- {} {}{failed}{usable}\n",
                inline(v["tool"].as_str().unwrap_or("?")),
                code(v["summary"].as_str().unwrap_or("")),
            )
        })
        .collect()
}

/// Cuts `s` to at most `max` bytes on a line boundary, with a visible mark.
fn bound(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mark = format!(
        "\n\n[... note truncated: {} bytes over the {max}-byte limit]\n",
        s.len() - max
    );
    let mut end = max.saturating_sub(mark.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = s[..end].rfind('\n').unwrap_or(end);
    format!("{}{mark}", &s[..cut])
}

/// Writes the note as a Claude Code auto-memory file and indexes it in `MEMORY.md`.
pub fn claude_memory(
    home: &Path,
    project: &Path,
    session: &str,
    note: &str,
) -> Result<PathBuf, Error> {
    let dir = Dir::outside(
        &interband::paths::under(home, ".claude/projects")
            .join(slug(project))
            .join("memory"),
        true,
    )?;
    // Plain characters only: the id lands in a file name, front matter and
    // an index that Claude Code loads into every later session.
    let short = safe_key(&session.chars().take(8).collect::<String>());
    let name = format!("interband-note-{}.md", safe_key(&short));
    let description =
        format!("Context checkpoint of session {short}: task, todos, changed files and commands");
    let body = format!(
        "---\nname: interband-note-{short}\ndescription: {description}\ntype: project\n---\n\n{note}"
    );
    dir.write(&name, body.as_bytes(), true)?;
    // The index is shared by every session of the project (and by Claude Code):
    // update it under a lock, and never rewrite what could not be read whole.
    let index = "MEMORY.md";
    let line = format!("- [interband note {short}]({name}) — {description}");
    with_lock(&dir, &lock_name(index), DEFAULT_WAIT, |_| {
        let old = match dir.read(index, MAX_INDEX_BYTES) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|e| interband::Error::Io {
                path: dir.join(index),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?,
            Err(interband::Error::NotFound { .. }) => String::new(),
            Err(e) => return Err(e),
        };
        let mut lines: Vec<&str> = old
            .lines()
            .filter(|l| !l.contains(&format!("]({name})")))
            .collect();
        lines.push(&line);
        dir.write(index, (lines.join("\n") + "\n").as_bytes(), true)
    })?;
    Ok(dir.join(&name))
}

/// The most of a `MEMORY.md` index this will read and rewrite.
const MAX_INDEX_BYTES: u64 = 1 << 20;

/// The latest note of a session, if any (via its `intermem/note` message).
/// The message is not trusted: the file it names is read only when it is a
/// note of that very session, under `<root>/intermem/notes/<project>/<session>/`
/// (see [`read_note`]).
pub fn latest_note(bus: &Bus, session: &str) -> Option<(MemoryNote, String)> {
    let note = bus.read_typed::<MemoryNote>(session).ok()?.payload;
    let text = read_note(bus, session, &note.path).ok()?;
    Some((note, text))
}

/// The most of a note read back.
const MAX_NOTE_BYTES: u64 = 1 << 20;

/// Reads the note file `path` names, if it is a note of `session`: exactly
/// `<root>/intermem/notes/<project>/<session>/<name>.md`, through verified
/// folders, never through a link, a regular file owned by the user, bounded.
/// Anything else — another session's note, a path outside the notes, a
/// `..` — is refused.
pub fn read_note(bus: &Bus, session: &str, path: &str) -> Result<String, interband::Error> {
    use std::path::Component;
    let refuse = |why: &str| interband::Error::NotOurs {
        path: PathBuf::from(path),
        reason: format!("not a note of session {session:?}: {why}"),
    };
    let notes = bus.root().join(NOTES[0]).join(NOTES[1]);
    let path_buf;
    let rel = match Path::new(path).strip_prefix(&notes) {
        Ok(rel) => rel,
        // Written by a process that spells the root another way (through a
        // link to it): compare the real folders. The file is still read
        // only through the verified handles below.
        Err(_) => {
            let real = |p: &Path| dunce::canonicalize(p).ok();
            let p = Path::new(path);
            let (Some(dir), Some(name), Some(notes)) =
                (p.parent().and_then(real), p.file_name(), real(&notes))
            else {
                return Err(refuse("outside the notes folder"));
            };
            path_buf = dir
                .strip_prefix(&notes)
                .map_err(|_| refuse("outside the notes folder"))?
                .join(name);
            &path_buf
        }
    };
    let parts: Option<Vec<&str>> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let parts = parts.ok_or_else(|| refuse("not a plain path"))?;
    let [project, folder, name] = parts[..] else {
        return Err(refuse("not <project>/<session>/<note>.md"));
    };
    if folder != safe_key(session) || !name.ends_with(".md") {
        return Err(refuse("another session's folder, or not a .md file"));
    }
    let dir = bus.dir(&[NOTES[0], NOTES[1], project, folder], false)?;
    let bytes = dir.read(name, MAX_NOTE_BYTES)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// At `SessionEnd`: a final note, then the session's whole journal as
/// `session-summary.json` (an envelope, so `interband validate` accepts it)
/// and `session-summary.md`.
pub fn finalize(
    bus: &Bus,
    info: &SessionInfo,
    settings: &Settings,
    home: Option<&Path>,
) -> Result<Written, Error> {
    // The session's last figure, as a checkpoint's note has its own.
    let usable = bus
        .read_typed::<Pressure>(&info.session)
        .ok()
        .and_then(|p| p.payload.context_usable);
    let trigger = Trigger {
        name: "session_end".into(),
        context_usable: usable,
        figure: None,
        id: None,
        again: false,
    };
    let note = write_note(bus, info, &trigger, settings, home)?;
    let dir = open_notes(bus, info, true)?;
    let records = Journal::new(bus, &info.session).all()?;
    let errors = records
        .iter()
        .filter(|r| r.value["error"].as_bool() == Some(true))
        .count();
    let summary = json!({
        "version": interband::envelope::WRITE_VERSION, "namespace": "intermem", "type": "session_summary",
        "session_id": info.session, "timestamp": interband::envelope::now_timestamp(),
        "payload": {"session": info.session, "cwd": info.cwd, "transcript": info.transcript,
                    "last_note": note.path, "journal_calls": records.len(), "journal_errors": errors,
                    "journal": records.iter().map(|r| &r.value).collect::<Vec<_>>()},
    });
    dir.write("session-summary.json", summary.to_string().as_bytes(), true)?;
    let md = format!(
        "# Session summary: {}\n\n- last note: {}\n- calls journaled at red: {} ({} failed)\n\n{}",
        code(&info.session),
        code(&note.path.to_string_lossy()),
        records.len(),
        errors,
        journal_lines(&records)
    );
    dir.write("session-summary.md", md.as_bytes(), true)?;
    Ok(note)
}

/// The consumer: a note for every new `checkpoint_needed`, on the interpulse
/// channel and the legacy intercheck one.
///
/// In a hook (`session` set: the session the host named) it handles only
/// that session's checkpoints, and takes the transcript and the project
/// folder from the host, never from the message. In `interband watch`
/// (`session` unset) it handles every session's, with a transcript from a
/// message only when it can be that session's own ([`own_transcript`]), and
/// never writes into Claude Code's memory (the project folder would be the
/// message's word).
#[derive(Debug, Clone, Default)]
pub struct Intermem {
    /// Settings.
    pub settings: Settings,
    /// The home folder, for the optional Claude Code memory file.
    pub home: Option<PathBuf>,
    /// The hook's own session, with the host's paths; `None` in watch mode.
    pub session: Option<SessionInfo>,
}

/// The consumer's name (its cursor file, its watch claim).
pub const NAME: &str = "intermem";

impl Consumer for Intermem {
    fn name(&self) -> &str {
        NAME
    }
    fn patterns(&self) -> Vec<String> {
        let key = match &self.session {
            Some(info) => safe_key(&info.session),
            None => "*".to_owned(),
        };
        vec![
            format!("interpulse/checkpoint/{key}"),
            format!("intercheck/checkpoint/{key}"),
        ]
    }
    fn handle(&mut self, bus: &Bus, m: &Message, redelivered: bool) -> Result<(), HandlerError> {
        if !self.settings.enabled {
            return Ok(());
        }
        let home = match &self.session {
            Some(_) => self.home.as_deref(),
            None => None,
        };
        // The key names the session; a message whose session_id says another
        // one cannot make a note for that other session.
        let key = m.address.as_ref().map_or("default", |a| a.key.as_str());
        let session = if safe_key(&m.envelope.session_id) == key {
            m.envelope.session_id.as_str()
        } else {
            key
        };
        let p = &m.envelope.payload;
        let info = match &self.session {
            Some(own) if safe_key(&own.session) == key => own.clone(),
            // (Not this hook's session: the patterns keep it from coming here.)
            Some(_) => return Ok(()),
            None => SessionInfo::resolve(
                bus,
                session,
                p["transcript_path"]
                    .as_str()
                    .and_then(|t| own_transcript(session, t))
                    .map(|t| t.to_string_lossy().into_owned()),
                p["cwd"].as_str().map(str::to_owned),
            ),
        };
        let channel = m
            .address
            .as_ref()
            .map_or("checkpoint", |a| a.namespace.as_str());
        let trigger = Trigger {
            name: p["trigger"].as_str().unwrap_or("checkpoint").to_owned(),
            context_usable: p["context_usable"].as_f64(),
            figure: None,
            // The seq names the note; the content tells apart values a v1
            // writer (seq 0) or a restarted key gave the same seq.
            id: Some(format!(
                "{channel}-cp{}-{}",
                m.envelope.seq,
                interband::consumer::Cursor::of_message(m)
                    .content
                    .unwrap_or_default()
                    .get(..8)
                    .unwrap_or_default()
            )),
            again: redelivered,
        };
        match write_note(bus, &info, &trigger, &self.settings, home) {
            Ok(_) => Ok(()),
            Err(e) if e.is_transient() => Err(Box::new(Transient(Box::new(e)))),
            Err(e) => Err(Box::new(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_outside_a_repository_is_no_branch() {
        let d = |b: &str| Digest {
            git_branch: Some(b.into()),
            ..Default::default()
        };
        let nowhere = tempfile::tempdir().unwrap();
        assert_eq!(branch(&d("HEAD"), Some(nowhere.path())), None);
        assert_eq!(
            branch(&d("main"), Some(nowhere.path())).as_deref(),
            Some("main")
        );
        // Detached in a real checkout: its commit.
        std::fs::create_dir(nowhere.path().join(".git")).unwrap();
        let commit = "ab".repeat(20);
        std::fs::write(nowhere.path().join(".git/HEAD"), &commit).unwrap();
        assert_eq!(branch(&d("HEAD"), Some(nowhere.path())), Some(commit));
    }

    #[test]
    fn the_summary_keeps_its_body_and_drops_the_hosts_framing() {
        let text = "This session is being continued.\n\n<system-reminder>\nx\n</system-reminder>\nSummary:\nDid A, then B.\n\nIf you need specific details, read X.\nContinue the conversation from where it left off.";
        assert_eq!(summary_body(text), "Did A, then B.");
        assert_eq!(summary_body("plain"), "plain");
    }

    #[test]
    fn notes_are_bounded_with_a_visible_mark() {
        let (info, trigger) = session_s();
        let d = Digest {
            first_prompt: Some("p".repeat(500)),
            files_changed: (0..300).map(|i| format!("/f/{i}")).collect(),
            ..Default::default()
        };
        let note = render(&info, &trigger, &d, &[], 2000);
        assert!(note.len() <= 2000, "{}", note.len());
        assert!(note.contains("more bytes]"), "{note}");
        assert!(note.starts_with("# Memory note"));
    }

    fn session_s() -> (SessionInfo, Trigger) {
        let info = SessionInfo {
            session: "s".into(),
            ..Default::default()
        };
        let trigger = Trigger {
            name: "t".into(),
            context_usable: None,
            figure: None,
            id: None,
            again: false,
        };
        (info, trigger)
    }

    fn digest_with_a_long_todo_list() -> Digest {
        use crate::digest::{Command, Todo, ToolError};
        Digest {
            first_prompt: Some("Ship the uploader retry".into()),
            todos: (0..25)
                .map(|i| Todo {
                    content: format!("step {i}: {}", "detail ".repeat(55)),
                    status: "pending".into(),
                })
                .collect(),
            files_changed: vec!["src/retry.rs".into()],
            commands: vec![Command {
                command: "cat > notes.md <<'EOF'\n## Task\nEOF".into(),
                failed: true,
                runs: 1,
            }],
            tool_errors: vec![ToolError {
                tool: "Bash".into(),
                message: "exit 1\n## Files changed".into(),
            }],
            last_assistant: Some("Retry is in; tests next.".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_long_todo_list_leaves_room_for_every_other_section() {
        let (info, trigger) = session_s();
        let note = render(&info, &trigger, &digest_with_a_long_todo_list(), &[], 8192);
        assert!(note.len() <= 8192, "{}", note.len());
        for section in [
            "## Task",
            "## Todo list",
            "## Files changed",
            "## Commands run (each once, at its latest run)",
            "## Recent tool errors",
            "## Last assistant message",
        ] {
            assert_eq!(
                note.matches(&format!("\n{section}")).count(),
                1,
                "{section}: {note}"
            );
        }
        assert!(note.contains("Retry is in; tests next."), "{note}");
        assert!(
            note.contains("- `cat > notes.md <<'EOF' …` — FAILED"),
            "{note}"
        );
        assert!(note.contains("more bytes]"), "the todo list is cut visibly");
        assert!(!note.contains("note truncated"), "{note}");
    }

    #[test]
    fn the_note_lists_the_other_requests_newest_first_and_each_command_with_its_runs() {
        use crate::digest::Command;
        let (info, trigger) = session_s();
        let d = Digest {
            first_prompt: Some("Port the cache".into()),
            latest_prompt: Some("continue".into()),
            prompts: vec![
                "Port the cache".into(),
                "Also log each retry".into(),
                "# not a heading\nsecond line".into(),
                "continue".into(),
            ],
            commands: vec![Command {
                command: "cargo test".into(),
                failed: true,
                runs: 3,
            }],
            ..Default::default()
        };
        let note = render(&info, &trigger, &d, &[], 16384);
        let section = note
            .split("## Earlier requests (newest first)\n\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{note}"));
        let items: Vec<&str> = section
            .lines()
            .take_while(|l| l.starts_with("- "))
            .collect();
        assert_eq!(
            items,
            vec!["- \\# not a heading second line", "- Also log each retry"],
            "the first and latest prompts have their own sections: {note}"
        );
        assert!(note.contains("- `cargo test` (×3) — FAILED"), "{note}");
    }

    #[test]
    fn a_long_one_line_section_keeps_its_beginning() {
        let (info, trigger) = session_s();
        let d = Digest {
            first_prompt: Some(format!("Make the uploader retry {}", "x".repeat(1200))),
            latest_prompt: Some(format!("Now add jitter {}", "y".repeat(1200))),
            last_assistant: Some(format!("Done with retries {}", "z".repeat(1200))),
            ..Default::default()
        };
        let note = render(&info, &trigger, &d, &[], 1024);
        assert!(note.len() <= 1024, "{}", note.len());
        for start in [
            "> Make the uploader retry",
            "> Now add jitter",
            "> Done with retries",
        ] {
            assert!(note.contains(start), "{start}: {note}");
        }
        assert!(note.len() > 900, "the room is used: {} bytes", note.len());
    }

    #[test]
    fn a_tiny_limit_still_gives_a_note_with_its_header() {
        let (info, trigger) = session_s();
        let note = render(&info, &trigger, &digest_with_a_long_todo_list(), &[], 40);
        assert!(note.len() <= MIN_NOTE_BYTES, "{}", note.len());
        assert!(
            note.starts_with("# Memory note") && note.contains("- session: `s`"),
            "{note}"
        );
    }

    #[test]
    fn code_spans_survive_backticks_and_lines() {
        assert_eq!(fair_shares(&[10, 1000, 1000], 610), [10, 300, 300]);
        assert_eq!(fair_shares(&[10, 20], 1000), [10, 20]);
    }

    proptest::proptest! {
        #[test]
        fn a_note_never_exceeds_its_limit(
            max in 0usize..12_000,
            todos in 0usize..60,
            len in 0usize..900,
            files in 0usize..200,
        ) {
            use crate::digest::Todo;
            let d = Digest {
                first_prompt: Some("é".repeat(len)),
                todos: (0..todos).map(|i| Todo { content: format!("{i} {}", "ü".repeat(len / 2)), status: "pending".into() }).collect(),
                files_changed: (0..files).map(|i| format!("/src/{i}.rs")).collect(),
                last_assistant: Some("ok".repeat(len)),
                ..Default::default()
            };
            let (info, trigger) = session_s();
            let note = render(&info, &trigger, &d, &[], max);
            proptest::prop_assert!(note.len() <= max.max(MIN_NOTE_BYTES), "{} > {}", note.len(), max);
            proptest::prop_assert!(note.starts_with("# Memory note"));
        }
    }

    fn memory_index(home: &Path, project: &Path) -> PathBuf {
        home.join(".claude/projects")
            .join(slug(project))
            .join("memory/MEMORY.md")
    }

    #[test]
    fn eight_sessions_of_one_project_each_keep_their_index_line() {
        let home = tempfile::tempdir().unwrap();
        let project = Path::new("/work/app");
        let index = memory_index(home.path(), project);
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        std::fs::write(&index, "- [user's own](own.md) — kept\n").unwrap();
        std::thread::scope(|s| {
            for i in 0..8 {
                let home = home.path();
                s.spawn(move || {
                    for round in 0..5 {
                        let session = format!("{i:08}-session");
                        claude_memory(home, project, &session, &format!("note {round}")).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&index).unwrap();
        assert_eq!(text.lines().count(), 9, "{text}");
        assert!(
            text.starts_with("- [user's own](own.md) — kept\n"),
            "{text}"
        );
        for i in 0..8 {
            assert!(
                text.contains(&format!("(interband-note-{i:08}.md)")),
                "{text}"
            );
        }
    }

    #[test]
    fn an_index_that_cannot_be_read_whole_is_never_rewritten() {
        let home = tempfile::tempdir().unwrap();
        let project = Path::new("/work/app");
        let index = memory_index(home.path(), project);
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        let elsewhere = home.path().join("elsewhere.md");
        std::fs::write(&elsewhere, "theirs\n").unwrap();
        type Plant<'a> = Box<dyn Fn() + 'a>;
        let cases: Vec<(&str, Plant)> = vec![
            (
                "not UTF-8",
                Box::new(|| std::fs::write(&index, b"ok\n\xff\xfe\n").unwrap()),
            ),
            (
                "over the cap",
                Box::new(|| {
                    std::fs::write(&index, vec![b'x'; MAX_INDEX_BYTES as usize + 1]).unwrap()
                }),
            ),
        ];
        // (Windows: a link needs a right of its own, and Wine cannot show
        // one; the bus's link tests cover the refusal there.)
        #[cfg(unix)]
        let cases = {
            let mut cases = cases;
            cases.push((
                "a symlink",
                Box::new(|| std::os::unix::fs::symlink(&elsewhere, &index).unwrap()) as Plant,
            ));
            cases
        };
        for (what, plant) in cases {
            let _ = std::fs::remove_file(&index);
            plant();
            let before = std::fs::symlink_metadata(&index).unwrap();
            let bytes = std::fs::read(&index).unwrap();
            let err = claude_memory(home.path(), project, "abcdef12-x", "note").unwrap_err();
            assert!(err.to_string().contains("MEMORY.md"), "{what}: {err}");
            let after = std::fs::symlink_metadata(&index).unwrap();
            assert_eq!(before.file_type(), after.file_type(), "{what}");
            assert_eq!(std::fs::read(&index).unwrap(), bytes, "{what}");
        }
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs\n");
    }
}
