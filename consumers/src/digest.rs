//! What a memory note needs from a session's transcript, read cheaply:
//! Claude Code's transcript, Codex CLI's rollout or Gemini CLI's chat
//! recording (each host's own lines; see [`Host`]).
//!
//! A memory note is written for a session just before its context is
//! compacted. The session's transcript is JSONL (one JSON object a line) and
//! can reach hundreds of megabytes, with single lines of hundreds of
//! kilobytes, so this module never reads it whole: it reads the HEAD (at most
//! [`Limits::head_cap`] bytes, for the first user prompt) and the TAIL (at
//! most [`Limits::tail_cap`] bytes from the end, for everything else). A file
//! no bigger than both caps together is read once, whole.
//!
//! The extraction is deterministic and never panics: lines that do not parse
//! are skipped (the last line may be half-written), the tail window's first
//! line is skipped unless the window starts at offset 0 (it is usually cut),
//! and the head window's last line is skipped unless it ends with a newline.
//! Lines with `isSidechain: true` belong to subagents and are ignored
//! everywhere.
//!
//! [`digest_file`] reads a file; [`digest`] does the same on bytes in memory,
//! with the same windows, so both give the same [`Digest`] for the same
//! content. A window of a megabyte or more is scanned as two halves on two
//! threads, cut after a line near its middle, and the two scans joined in
//! order: the same digest as one scan gives (Gemini's windows, whose reader
//! looks back at what it has seen, are scanned whole).

use crate::truncate;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use interband_hosts::Host;
use interband_hosts::digest::{Item, Reader};

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Todo {
    /// What is to be done (`content` of the TodoWrite item, truncated to
    /// [`Limits::text`] characters).
    pub content: String,
    /// `pending`, `in_progress` or `completed` as written by the agent (empty
    /// when the item has no string status).
    pub status: String,
}

/// One shell command the agent ran.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Command {
    /// The command line (`input.command` of a `Bash` tool call, truncated to
    /// [`Limits::text`] characters).
    pub command: String,
    /// Whether its latest run's tool result has `is_error: true`. A command
    /// whose result is not in the window read (or not written yet) counts as
    /// not failed.
    pub failed: bool,
    /// How many times it ran (the same command line, in the window read).
    pub runs: usize,
}

/// A tool call that failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolError {
    /// The tool's name, found through `tool_use_id`; `?` when the call is not
    /// in the window read.
    pub tool: String,
    /// The first non-empty line of the result's text (a `<tool_use_error>`
    /// wrapper removed), truncated to [`Limits::text`] characters.
    pub message: String,
}

/// What a memory note needs from a transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Digest {
    /// The first real user prompt, from the head of the file.
    pub first_prompt: Option<String>,
    /// The last real user prompt in the tail; failing one, the tail's last
    /// `last-prompt` record (the client's own note of the latest prompt).
    pub latest_prompt: Option<String>,
    /// The real user prompts since the last compaction (the requests the
    /// context being replaced holds), chronological, the last
    /// [`Limits::prompts`], each truncated to [`Limits::text`] characters.
    pub prompts: Vec<String>,
    /// The current todo list: the last TodoWrite call's `todos` (empty when
    /// there is none in the tail, or when it cleared the list).
    pub todos: Vec<Todo>,
    /// Files written by `Edit`, `Write`, `MultiEdit` and `NotebookEdit`: most
    /// recent first, each path once, at most [`Limits::files`].
    pub files_changed: Vec<String>,
    /// `Bash` commands: each command line once, at its latest run,
    /// chronological, the last [`Limits::commands`].
    pub commands: Vec<Command>,
    /// Tool results with `is_error: true`: chronological, the last
    /// [`Limits::errors`].
    pub tool_errors: Vec<ToolError>,
    /// The text of the last main-thread assistant message that has text
    /// (synthetic messages skipped).
    pub last_assistant: Option<String>,
    /// The text of the last compaction summary (`isCompactSummary: true`),
    /// whole: it is not truncated.
    pub compaction_summary: Option<String>,
    /// The working directory of the last line that has one (the tail's, else
    /// the head's).
    pub cwd: Option<String>,
    /// The git branch of the last line that has one (the tail's, else the
    /// head's).
    pub git_branch: Option<String>,
}

/// Caps on what is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes read from the start of the file, for the first prompt.
    pub head_cap: u64,
    /// Bytes read from the end of the file, for everything else.
    pub tail_cap: u64,
    /// Most files kept in [`Digest::files_changed`].
    pub files: usize,
    /// Most commands kept in [`Digest::commands`].
    pub commands: usize,
    /// Most prompts kept in [`Digest::prompts`].
    pub prompts: usize,
    /// Most errors kept in [`Digest::tool_errors`].
    pub errors: usize,
    /// Most characters kept of each prompt, assistant message, todo, command
    /// and error message; a truncated text gets `…` appended (so it is at
    /// most `text + 1` characters).
    pub text: usize,
}

impl Default for Limits {
    /// Head 256 KiB, tail 4 MiB, 20 files, 100 commands, 40 prompts, 8
    /// errors, 600 characters of text.
    fn default() -> Self {
        Limits {
            head_cap: 256 * 1024,
            tail_cap: 4 * 1024 * 1024,
            files: 20,
            commands: 100,
            prompts: 40,
            errors: 8,
            text: 600,
        }
    }
}

/// Reads the head and tail of the transcript at `path`.
///
/// Reads at most `head_cap + tail_cap` bytes: the whole file when it is no
/// bigger than that, else its first `head_cap` and last `tail_cap` bytes.
/// Errors only when the file cannot be opened or read; its content, whatever
/// it is, gives a [`Digest`] (an empty one for an empty or garbage file).
pub fn digest_file(path: &Path, limits: &Limits) -> io::Result<Digest> {
    let host = Host::of_transcript(&path.to_string_lossy()).unwrap_or(Host::Claude);
    digest_file_as(path, limits, host)
}

/// [`digest_file`] of a transcript in `host`'s format.
pub fn digest_file_as(path: &Path, limits: &Limits, host: Host) -> io::Result<Digest> {
    let (file, len) = interband_hosts::open_transcript(path)?;
    digest_source(&file, len, limits, host, Reading::DEFAULT)
}

/// The same on bytes in memory (the whole file).
///
/// Uses the same head and tail windows as [`digest_file`], so both give the
/// same result for the same content.
pub fn digest(bytes: &[u8], limits: &Limits) -> Digest {
    digest_as(bytes, limits, Host::Claude)
}

/// [`digest`] of a transcript in `host`'s format.
pub fn digest_as(bytes: &[u8], limits: &Limits, host: Host) -> Digest {
    // The very reading a file gets, from memory (which cannot fail).
    digest_source(bytes, bytes.len() as u64, limits, host, Reading::DEFAULT).unwrap_or_default()
}

/// Where a window's bytes come from: read at any offset, from two threads
/// at once (a window is scanned in two halves side by side).
trait Source: Sync {
    /// Reads into `buf` from offset `at`; 0 at the end.
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize>;
}

impl Source for std::fs::File {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, at)
    }
}

impl Source for [u8] {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let from = usize::try_from(at).map_or(self.len(), |a| a.min(self.len()));
        let n = buf.len().min(self.len() - from);
        buf[..n].copy_from_slice(&self[from..from + n]);
        Ok(n)
    }
}

/// How windows are read.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Bytes read at a time: a window is megabytes, read through a buffer
    /// this size that stays in the processor's cache, where a window read
    /// whole into memory (fresh pages, each faulted in and zeroed) would not.
    chunk: usize,
    /// A window at least this long is scanned as two halves at once, on two
    /// threads (parsing its lines is most of a note's cost).
    split: u64,
}

impl Reading {
    const DEFAULT: Reading = Reading {
        chunk: 256 << 10,
        split: 1 << 20,
    };
}

/// How far past a window's middle a line's end is looked for, to cut it in
/// two there; a window with no line end that near is scanned whole.
const PROBE: usize = 64 << 10;

/// [`digest_file`] on any source of `len` bytes.
fn digest_source<S: Source + ?Sized>(
    src: &S,
    len: u64,
    limits: &Limits,
    host: Host,
    reading: Reading,
) -> io::Result<Digest> {
    let both = limits.head_cap.saturating_add(limits.tail_cap);
    if len <= both {
        // Bounded even if the file grew since its length was taken.
        let mut whole = scan_window(src, (0, len), both, (false, false), reading, limits, host)?;
        let first_prompt = whole.first_prompt.take();
        return Ok(whole.finish(first_prompt));
    }
    let head = scan_window(
        src,
        (0, len),
        limits.head_cap,
        (false, true),
        reading,
        limits,
        host,
    )?;
    let from = len - limits.tail_cap;
    let tail = scan_window(
        src,
        (from, len),
        limits.tail_cap,
        (true, false),
        reading,
        limits,
        host,
    )?;
    Ok(merge(head, tail))
}

/// The [`Scan`] of the (at most) `cap` bytes from `offset` (`skip` as for
/// [`stream_lines`]) of a source `len` bytes long when it was looked at: in
/// two halves at once when the window is long, cut just after a line's end
/// near its middle, and the halves' scans joined in order.
fn scan_window<'a, S: Source + ?Sized>(
    src: &S,
    (offset, len): (u64, u64),
    cap: u64,
    skip: (bool, bool),
    reading: Reading,
    limits: &'a Limits,
    host: Host,
) -> io::Result<Scan<'a>> {
    let end = offset.saturating_add(cap);
    let part = |from: u64, to: u64, skip: (bool, bool)| {
        scan_part(src, (from, to), skip, reading.chunk, limits, host)
    };
    // A host that writes a record again is read in one order, whole (a
    // call written again counts once).
    let span = cap.min(len.saturating_sub(offset));
    if host.profile().rewrites_lines || span < reading.split.max(2) {
        return part(offset, end, skip);
    }
    let Some(cut) = line_end_after(src, offset + span / 2, end)? else {
        return part(offset, end, skip);
    };
    std::thread::scope(|s| {
        let first =
            std::thread::Builder::new().spawn_scoped(s, || part(offset, cut, (skip.0, false)));
        let second = part(cut, end, (false, skip.1));
        let first = match first {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: the first half here, after the second.
            Err(_) => part(offset, cut, (skip.0, false)),
        };
        Ok(first?.then(second?))
    })
}

/// The [`Scan`] of the bytes in `[from, to)`, `skip` as for [`stream_lines`].
fn scan_part<'a, S: Source + ?Sized>(
    src: &S,
    (from, to): (u64, u64),
    skip: (bool, bool),
    chunk: usize,
    limits: &'a Limits,
    host: Host,
) -> io::Result<Scan<'a>> {
    let mut scan = Scan::new(limits, host);
    stream_lines(src, from, to - from, skip, chunk, |l| scan.line(l))?;
    Ok(scan)
}

/// Just past the first line end in `[from, to)` within [`PROBE`] bytes of
/// `from`, if there is one.
fn line_end_after<S: Source + ?Sized>(src: &S, from: u64, to: u64) -> io::Result<Option<u64>> {
    let want = usize::try_from(to.saturating_sub(from)).map_or(PROBE, |n| n.min(PROBE));
    let mut buf = vec![0u8; want];
    let mut got = 0;
    while got < want {
        match src.read_at(&mut buf[got..], from + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(memchr::memchr(b'\n', &buf[..got]).map(|i| from + i as u64 + 1))
}

/// Gives `f` each non-empty line (without its `\r\n` / `\n`) of the (at
/// most) `cap` bytes from `offset`, reading `chunk` bytes at a time. With
/// `skip.0` the first line is dropped (a window starting mid-file), with
/// `skip.1` an unterminated last one (a window ending mid-file). Only a
/// line cut by a chunk's end is copied, to be joined.
fn stream_lines<S: Source + ?Sized>(
    src: &S,
    offset: u64,
    cap: u64,
    skip: (bool, bool),
    chunk: usize,
    mut f: impl FnMut(&[u8]),
) -> io::Result<()> {
    let (mut skipping, skip_unterminated) = skip;
    let mut give = |line: &[u8]| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            f(line);
        }
    };
    let mut buf = vec![0u8; chunk.max(1)];
    let mut at = offset;
    let end = offset.saturating_add(cap);
    // The start of a line cut by the end of the chunk before.
    let mut cut: Vec<u8> = Vec::new();
    while at < end {
        let room = usize::try_from(end - at).map_or(buf.len(), |r| r.min(buf.len()));
        let n = match src.read_at(&mut buf[..room], at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        at += n as u64;
        let mut rest = &buf[..n];
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let piece = &rest[..i];
            rest = &rest[i + 1..];
            if skipping {
                skipping = false;
            } else if cut.is_empty() {
                give(piece);
            } else {
                cut.extend_from_slice(piece);
                give(&cut);
            }
            cut.clear();
        }
        if !skipping {
            cut.extend_from_slice(rest);
        }
    }
    if !skipping && !skip_unterminated {
        give(&cut);
    }
    Ok(())
}

/// The digest of the tail window, with the first prompt (and, failing the
/// tail's own, the folder and branch) from the head window.
fn merge(mut head: Scan, mut tail: Scan) -> Digest {
    if tail.cwd.is_none() {
        tail.cwd = head.cwd.take();
    }
    if tail.git_branch.is_none() {
        tail.git_branch = head.git_branch.take();
    }
    tail.finish(head.first_prompt)
}

/// What one window yields, line by line.
struct Scan<'a> {
    limits: &'a Limits,
    /// The host's reader of a line.
    reader: Reader,
    /// Its items, one line's at a time (kept to reuse the room).
    items: Vec<Item>,
    /// Whether the host writes a record again as it grows.
    rewrites: bool,
    first_prompt: Option<String>,
    latest_prompt: Option<String>,
    last_prompt_record: Option<String>,
    /// Prompts since the last compaction summary this scan saw (all of
    /// them when it saw none), chronological.
    prompts: Vec<String>,
    /// Whether this scan saw a compaction summary.
    compacted: bool,
    todos: Option<Vec<Todo>>,
    /// Changed paths, chronological, repeats included.
    files: Vec<String>,
    /// `Bash` calls, chronological: tool_use id and command.
    commands: Vec<(Option<String>, String)>,
    /// Tool name by tool_use id.
    tool_names: HashMap<String, String>,
    /// tool_use ids whose result is an error.
    failed_ids: HashSet<String>,
    /// Error results, chronological: tool_use id and message.
    errors: Vec<(Option<String>, String)>,
    last_assistant: Option<String>,
    compaction_summary: Option<String>,
    cwd: Option<String>,
    git_branch: Option<String>,
}

impl<'a> Scan<'a> {
    fn new(limits: &'a Limits, host: Host) -> Self {
        Scan {
            limits,
            reader: host.profile().digest,
            items: Vec::new(),
            rewrites: host.profile().rewrites_lines,
            first_prompt: None,
            latest_prompt: None,
            last_prompt_record: None,
            prompts: Vec::new(),
            compacted: false,
            todos: None,
            files: Vec::new(),
            commands: Vec::new(),
            tool_names: HashMap::new(),
            failed_ids: HashSet::new(),
            errors: Vec::new(),
            last_assistant: None,
            compaction_summary: None,
            cwd: None,
            git_branch: None,
        }
    }

    /// Takes in one line, through its host's reader.
    fn line(&mut self, raw: &[u8]) {
        let mut items = std::mem::take(&mut self.items);
        (self.reader)(raw, &mut items);
        for item in items.drain(..) {
            self.take(item);
        }
        self.items = items;
    }

    /// Takes in one thing a line said.
    fn take(&mut self, item: Item) {
        match item {
            Item::Cwd(cwd) => self.cwd = Some(cwd),
            Item::Branch(branch) => self.git_branch = Some(branch),
            Item::Prompt(text) => self.prompt(&text),
            Item::PromptRecord(text) => self.last_prompt_record = Some(self.cut(&text)),
            Item::Reply(text) => self.last_assistant = Some(self.cut(&text)),
            Item::Summary(text) => {
                self.compaction_summary = Some(text);
                self.compacted();
            }
            Item::Failed { id, message } => {
                if let Some(id) = &id {
                    self.failed_ids.insert(id.clone());
                }
                let message = self.cut(&message);
                self.errors.push((id, message));
            }
            Item::Call(call) => {
                // A call written again counts once (where the host writes
                // records again: another host's repeated id is its own).
                if let Some(id) = &call.id {
                    if self.rewrites && self.tool_names.contains_key(id) {
                        return;
                    }
                    self.tool_names.insert(id.clone(), call.name);
                    if call.failed {
                        self.failed_ids.insert(id.clone());
                    }
                }
                if let Some(command) = call.command {
                    let command = self.cut(&command);
                    self.commands.push((call.id, command));
                }
                self.files.extend(call.files);
                if let Some(todos) = call.todos {
                    let todos = todos
                        .into_iter()
                        .map(|t| Todo {
                            content: self.cut(&t.content),
                            status: t.status,
                        })
                        .collect();
                    self.todos = Some(todos);
                }
            }
        }
    }

    /// This scan followed by `later`'s, of the lines right after: what one
    /// scan of both stretches in order gives (a later value wins, lists run
    /// on). Not for Gemini, whose reader looks back at what it has seen.
    fn then(mut self, later: Scan<'a>) -> Scan<'a> {
        // Every field named: a new one has to say how it joins.
        let Scan {
            limits: _,
            reader: _,
            items: _,
            rewrites: _,
            first_prompt,
            latest_prompt,
            last_prompt_record,
            prompts,
            compacted,
            todos,
            files,
            commands,
            tool_names,
            failed_ids,
            errors,
            last_assistant,
            compaction_summary,
            cwd,
            git_branch,
        } = later;
        self.first_prompt = self.first_prompt.or(first_prompt);
        self.latest_prompt = latest_prompt.or(self.latest_prompt);
        self.last_prompt_record = last_prompt_record.or(self.last_prompt_record);
        if compacted {
            self.prompts = prompts;
            self.compacted = true;
        } else {
            self.prompts.extend(prompts);
        }
        self.todos = todos.or(self.todos);
        self.files.extend(files);
        self.commands.extend(commands);
        self.tool_names.extend(tool_names);
        self.failed_ids.extend(failed_ids);
        self.errors.extend(errors);
        self.last_assistant = last_assistant.or(self.last_assistant);
        self.compaction_summary = compaction_summary.or(self.compaction_summary);
        self.cwd = cwd.or(self.cwd);
        self.git_branch = git_branch.or(self.git_branch);
        self
    }

    /// A real user prompt.
    fn prompt(&mut self, text: &str) {
        let prompt = self.cut(text);
        self.first_prompt.get_or_insert_with(|| prompt.clone());
        // (Bounded as it goes: only the last ones are kept.)
        if self.prompts.len() >= self.limits.prompts.max(1) * 2 {
            self.prompts.drain(..self.limits.prompts);
        }
        self.prompts.push(prompt.clone());
        self.latest_prompt = Some(prompt);
    }

    /// A compaction summary: the prompts before it are in it.
    fn compacted(&mut self) {
        self.prompts.clear();
        self.compacted = true;
    }

    /// `text` trimmed and truncated to the text limit.
    fn cut(&self, text: &str) -> String {
        truncate(text.trim(), self.limits.text)
    }

    /// The digest, with `first_prompt` from wherever the caller found it.
    fn finish(self, first_prompt: Option<String>) -> Digest {
        let limits = self.limits;

        let mut seen = HashSet::new();
        let files_changed = self
            .files
            .into_iter()
            .rev()
            .filter(|p| seen.insert(p.clone()))
            .take(limits.files)
            .collect();

        // Each command line once, where it last ran, with its count.
        let failed_ids = &self.failed_ids;
        let mut runs: HashMap<&str, (usize, usize, bool)> = HashMap::new();
        for (i, (id, command)) in self.commands.iter().enumerate() {
            let failed = id.as_ref().is_some_and(|id| failed_ids.contains(id));
            let e = runs.entry(command.as_str()).or_insert((i, 0, failed));
            *e = (i, e.1 + 1, failed);
        }
        let mut latest: Vec<(usize, usize, bool, &str)> = runs
            .into_iter()
            .map(|(c, (at, n, failed))| (at, n, failed, c))
            .collect();
        latest.sort_unstable();
        let skip = latest.len().saturating_sub(limits.commands);
        let commands = latest
            .into_iter()
            .skip(skip)
            .map(|(_, runs, failed, command)| Command {
                command: command.to_owned(),
                failed,
                runs,
            })
            .collect();

        let skip = self.errors.len().saturating_sub(limits.errors);
        let tool_names = &self.tool_names;
        let tool_errors = self
            .errors
            .into_iter()
            .skip(skip)
            .map(|(id, message)| ToolError {
                tool: id
                    .and_then(|id| tool_names.get(&id).cloned())
                    .unwrap_or_else(|| "?".to_owned()),
                message,
            })
            .collect();

        let skip = self.prompts.len().saturating_sub(limits.prompts);
        let prompts = self.prompts.into_iter().skip(skip).collect();

        Digest {
            first_prompt,
            prompts,
            latest_prompt: self.latest_prompt.or(self.last_prompt_record),
            todos: self.todos.unwrap_or_default(),
            files_changed,
            commands,
            tool_errors,
            last_assistant: self.last_assistant,
            compaction_summary: self.compaction_summary,
            cwd: self.cwd,
            git_branch: self.git_branch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use std::fs::File;
    use std::io::Write;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl"
    );

    /// Counts the bytes read through it.
    struct Counting<S> {
        inner: S,
        read: std::sync::atomic::AtomicU64,
    }

    impl<S: Source> Counting<S> {
        fn new(inner: S) -> Self {
            Counting {
                inner,
                read: 0.into(),
            }
        }

        fn read(&self) -> u64 {
            self.read.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl<S: Source> Source for Counting<S> {
        fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
            let n = self.inner.read_at(buf, at)?;
            self.read
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        }
    }

    /// Slices of memory as a source (a `&[u8]` is `Sized`).
    impl Source for &[u8] {
        fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
            (**self).read_at(buf, at)
        }
    }

    /// Fields every main-thread line carries.
    fn base(kind: &str) -> serde_json::Map<String, Value> {
        let Value::Object(map) = json!({
            "type": kind,
            "isSidechain": false,
            "cwd": "/repo",
            "gitBranch": "main",
            "sessionId": "s1",
            "timestamp": "2026-01-01T00:00:00Z",
        }) else {
            unreachable!()
        };
        map
    }

    fn user(content: Value) -> Value {
        let mut m = base("user");
        m.insert(
            "message".into(),
            json!({"role": "user", "content": content}),
        );
        Value::Object(m)
    }

    fn assistant(content: Value) -> Value {
        let mut m = base("assistant");
        m.insert(
            "message".into(),
            json!({"role": "assistant", "model": "claude-x", "content": content}),
        );
        Value::Object(m)
    }

    fn with(mut line: Value, key: &str, value: Value) -> Value {
        if let Value::Object(m) = &mut line {
            m.insert(key.into(), value);
        }
        line
    }

    fn tool_use(id: &str, name: &str, input: Value) -> Value {
        assistant(json!([{"type": "tool_use", "id": id, "name": name, "input": input}]))
    }

    fn tool_result(id: &str, is_error: bool, content: Value) -> Value {
        user(
            json!([{"type": "tool_result", "tool_use_id": id, "is_error": is_error, "content": content}]),
        )
    }

    fn jsonl(lines: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        for line in lines {
            out.extend_from_slice(line.to_string().as_bytes());
            out.push(b'\n');
        }
        out
    }

    fn todo_write(id: &str, todos: &[(&str, &str)]) -> Value {
        let todos: Vec<Value> = todos
            .iter()
            .map(|(c, s)| json!({"content": c, "status": s, "activeForm": format!("Doing {c}")}))
            .collect();
        tool_use(id, "TodoWrite", json!({ "todos": todos }))
    }

    #[test]
    fn real_fixture() {
        let d = digest_file(Path::new(FIXTURE), &Limits::default()).expect("fixture readable");
        assert_eq!(d.first_prompt.as_deref(), Some("say hi"));
        assert_eq!(d.latest_prompt.as_deref(), Some("say hi"));
        assert_eq!(
            d.commands,
            vec![Command {
                command: "echo hello".into(),
                failed: false,
                runs: 1,
            }]
        );
        let summary = d.compaction_summary.as_deref().expect("compaction summary");
        assert!(
            summary.contains("Mock summary: user asked to say hi"),
            "{summary}"
        );
        assert_eq!(d.cwd.as_deref(), Some("/home/dev/work"));
        assert_eq!(d.git_branch.as_deref(), Some("HEAD"));
        assert_eq!(
            d.last_assistant.as_deref(),
            Some("Done: the command printed hello.")
        );
        assert!(d.todos.is_empty());
        assert!(d.files_changed.is_empty());
        assert!(d.tool_errors.is_empty());
        // The in-memory entry point agrees.
        let bytes = std::fs::read(FIXTURE).unwrap();
        assert_eq!(digest(&bytes, &Limits::default()), d);
    }

    #[test]
    fn codex_and_gemini_transcripts_give_their_prompts_commands_and_replies() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");
        let codex = std::fs::read(format!(
            "{dir}/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl"
        ))
        .unwrap();
        let d = digest_as(&codex, &Limits::default(), Host::Codex);
        assert_eq!(d.first_prompt.as_deref(), Some("run echo please"), "{d:?}");
        assert_eq!(d.commands.len(), 1, "{d:?}");
        assert_eq!(d.commands[0].command, "echo hello-from-mock");
        assert_eq!(d.cwd.as_deref(), Some("/home/user/proj"));
        let gemini =
            std::fs::read(format!("{dir}/gemini-cli-0.61.0/transcript.session.jsonl")).unwrap();
        let d = digest_as(&gemini, &Limits::default(), Host::Gemini);
        assert_eq!(
            d.first_prompt.as_deref(),
            Some("List the files in this folder, then say done."),
            "{d:?}"
        );
        assert_eq!(
            d.last_assistant.as_deref(),
            Some("Mock done: saw 1 tool result(s).")
        );
        // Synthetic Codex lines: a failed command, a patch, a plan.
        let lines = [
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                "arguments": "{\"cmd\": \"cargo test\"}", "call_id": "c1"}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                "output": "Chunk ID: x\nProcess exited with code 101\nOutput:\nerror[E0308]: mismatched types"}}),
            json!({"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
                "input": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n*** End Patch"}}),
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "update_plan", "call_id": "c3",
                "arguments": "{\"plan\": [{\"step\": \"fix types\", \"status\": \"in_progress\"}]}"}}),
        ];
        let d = digest_as(&jsonl(&lines), &Limits::default(), Host::Codex);
        assert!(d.commands[0].failed, "{d:?}");
        assert_eq!(d.tool_errors[0].tool, "exec_command");
        assert_eq!(d.files_changed, ["src/lib.rs"]);
        assert_eq!(d.todos[0].content, "fix types");
    }

    #[test]
    fn a_window_cut_in_two_anywhere_gives_what_one_scan_gives() {
        // The real Claude Code and Codex transcripts, and the two again
        // with their lines reversed (a later value must still win): scanned
        // as two halves cut after every line and joined, against one scan.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");
        let codex = format!("{dir}/codex-0.171.0/rollout.at-PostToolUse.140k.jsonl");
        let limits = Limits::default();
        for (path, host) in [(FIXTURE.to_owned(), Host::Claude), (codex, Host::Codex)] {
            let bytes = std::fs::read(&path).unwrap();
            let reversed: Vec<u8> = bytes
                .split_inclusive(|&b| b == b'\n')
                .rev()
                .flat_map(|l| l.iter().copied())
                .collect();
            for bytes in [bytes, reversed] {
                let len = bytes.len() as u64;
                let scan = |from, to| {
                    scan_part(&bytes[..], (from, to), (false, false), 512, &limits, host)
                };
                let one = scan(0, len).unwrap().finish(None);
                assert_ne!(one, Digest::default(), "{path}");
                let mut cuts = 0;
                for (i, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
                    let cut = i as u64 + 1;
                    let halves = scan(0, cut).unwrap().then(scan(cut, len).unwrap());
                    assert_eq!(halves.finish(None), one, "{path}, cut at {cut}");
                    cuts += 1;
                }
                assert!(cuts >= 10, "{path}");
                // And through the window's own cutting (at its middle).
                let reading = Reading {
                    chunk: 512,
                    split: 2,
                };
                let d = digest_source(&bytes[..], len, &limits, host, reading).unwrap();
                assert_eq!(d, digest_as(&bytes, &limits, host));
            }
        }
    }

    #[test]
    fn two_halves_join_as_one_scan_of_every_kind_of_line() {
        // Each half has every kind of line a digest keeps, with its own
        // values; the joined scans must give what one scan of both gives,
        // whether the later half has each kind or not.
        let half = |x: &str| {
            vec![
                with(
                    with(
                        user(json!(format!("prompt {x}"))),
                        "cwd",
                        json!(format!("/{x}")),
                    ),
                    "gitBranch",
                    json!(format!("branch-{x}")),
                ),
                tool_use(
                    &format!("e{x}"),
                    "Edit",
                    json!({"file_path": format!("/{x}.rs")}),
                ),
                tool_use(
                    &format!("b{x}"),
                    "Bash",
                    json!({"command": format!("make {x}")}),
                ),
                tool_result(&format!("b{x}"), true, json!(format!("failed {x}"))),
                todo_write(&format!("t{x}"), &[(&format!("todo {x}"), "pending")]),
                assistant(json!([{"type": "text", "text": format!("reply {x}")}])),
                with(
                    user(json!(format!("summary {x}"))),
                    "isCompactSummary",
                    json!(true),
                ),
                json!({"type": "last-prompt", "lastPrompt": format!("record {x}")}),
            ]
        };
        let limits = Limits::default();
        // Without prompt lines too: the last-prompt records then tell.
        for skip in [0, 1] {
            let a: Vec<Value> = half("a").into_iter().skip(skip).collect();
            for keep in 0..=a.len() {
                // The later half: the first `keep` kinds of line only (so, for
                // each kind, once with it and once without).
                let b: Vec<Value> = half("b").into_iter().skip(skip).take(keep).collect();
                let (first, second) = (jsonl(&a), jsonl(&b));
                let both = [first.clone(), second.clone()].concat();
                let one = scan_part(
                    &both[..],
                    (0, both.len() as u64),
                    (false, false),
                    64,
                    &limits,
                    Host::Claude,
                )
                .unwrap()
                .finish(None);
                let scan = |bytes: &[u8]| {
                    scan_part(
                        bytes,
                        (0, bytes.len() as u64),
                        (false, false),
                        64,
                        &limits,
                        Host::Claude,
                    )
                    .unwrap()
                };
                let joined = scan(&first).then(scan(&second)).finish(None);
                assert_eq!(joined, one, "with {keep} kinds in the later half");
            }
        }
    }

    #[test]
    fn real_fixture_tail_only() {
        // A tail window that starts after the first prompt and the Bash call
        // still finds what lies within it; the prompt comes from the head.
        let bytes = std::fs::read(FIXTURE).unwrap();
        let limits = Limits {
            head_cap: 4096,
            tail_cap: 12 * 1024,
            ..Limits::default()
        };
        assert!(bytes.len() as u64 > limits.head_cap + limits.tail_cap);
        let d = digest(&bytes, &limits);
        assert_eq!(d.first_prompt.as_deref(), Some("say hi"));
        assert!(d.compaction_summary.is_some());
        assert_eq!(d.cwd.as_deref(), Some("/home/dev/work"));
        // The window holds no prompt line; the client's last-prompt record
        // stands in.
        assert_eq!(d.latest_prompt.as_deref(), Some("say hi"));
        let counting = Counting::new(&bytes[..]);
        let len = bytes.len() as u64;
        let from_source =
            digest_source(&counting, len, &limits, Host::Claude, Reading::DEFAULT).unwrap();
        assert_eq!(from_source, d);
        assert!(counting.read() <= limits.head_cap + limits.tail_cap);
    }

    fn synthetic() -> Vec<Value> {
        vec![
            json!({"type": "queue-operation", "operation": "enqueue"}),
            with(
                user(json!(
                    "<local-command-caveat>Caveat: local commands</local-command-caveat>"
                )),
                "isMeta",
                json!(true),
            ),
            user(json!(
                "<command-name>/model</command-name>\n<command-message>model</command-message>"
            )),
            user(json!(
                "<local-command-stdout>Set model</local-command-stdout>"
            )),
            user(json!("Fix the parser")),
            with(
                user(json!("meta text that is no prompt")),
                "isMeta",
                json!(true),
            ),
            todo_write(
                "t1",
                &[("Read code", "in_progress"), ("Old item", "pending")],
            ),
            tool_result("t1", false, json!("Todos have been modified")),
            tool_use(
                "e1",
                "Edit",
                json!({"file_path": "/repo/a.rs", "old_string": "x", "new_string": "y"}),
            ),
            tool_result("e1", false, json!("ok")),
            tool_use(
                "w1",
                "Write",
                json!({"file_path": "/repo/b.rs", "content": "fn main() {}"}),
            ),
            tool_result(
                "w1",
                true,
                json!(
                    "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
                ),
            ),
            tool_use(
                "b1",
                "Bash",
                json!({"command": "cargo build", "description": "build"}),
            ),
            tool_result("b1", false, json!("Finished")),
            tool_use("b2", "Bash", json!({"command": "cargo test"})),
            tool_result(
                "b2",
                true,
                json!([{"type": "text", "text": "Exit code 101\nthread 'x' panicked"}]),
            ),
            // Subagent lines: ignored everywhere.
            with(user(json!("sidechain prompt")), "isSidechain", json!(true)),
            with(
                tool_use("s1", "Edit", json!({"file_path": "/repo/side.rs"})),
                "isSidechain",
                json!(true),
            ),
            with(
                tool_use("s2", "Bash", json!({"command": "rm -rf side"})),
                "isSidechain",
                json!(true),
            ),
            with(
                tool_result("s2", true, json!("side failure")),
                "isSidechain",
                json!(true),
            ),
            with(
                assistant(json!([{"type": "text", "text": "sidechain says"}])),
                "isSidechain",
                json!(true),
            ),
            user(
                json!([{"type": "text", "text": "Now add tests"}, {"type": "text", "text": "<system-reminder>hidden</system-reminder>"}]),
            ),
            tool_use(
                "m1",
                "MultiEdit",
                json!({"file_path": "/repo/c.rs", "edits": []}),
            ),
            tool_result("m1", false, json!("ok")),
            tool_use(
                "n1",
                "NotebookEdit",
                json!({"notebook_path": "/repo/n.ipynb", "new_source": ""}),
            ),
            tool_result("n1", false, json!("ok")),
            tool_use("e2", "Edit", json!({"file_path": "/repo/a.rs"})),
            tool_result("e2", false, json!("ok")),
            tool_use("r1", "Read", json!({"file_path": "/repo/read-only.rs"})),
            tool_result("r1", true, json!("File does not exist.")),
            tool_result("gone", true, json!("\n  orphan failure\nmore")),
            todo_write(
                "t2",
                &[
                    ("Read code", "completed"),
                    ("Write tests", "in_progress"),
                    ("Ship", "pending"),
                ],
            ),
            tool_result("t2", false, json!("ok")),
            tool_use("b3", "Bash", json!({"command": "ls"})),
            assistant(json!([{"type": "text", "text": "All done: tests added."}])),
            user(json!([{"type": "text", "text": "[Request interrupted by user]"}])),
            {
                let mut m = base("assistant");
                m.insert(
                    "message".into(),
                    json!({"role": "assistant", "model": "<synthetic>", "content": [{"type": "text", "text": "No response requested."}]}),
                );
                Value::Object(m)
            },
            with(
                with(base_value("system"), "cwd", json!("/repo/sub")),
                "gitBranch",
                json!("feature"),
            ),
            json!({"type": "last-prompt", "lastPrompt": "Now add tests"}),
        ]
    }

    fn base_value(kind: &str) -> Value {
        Value::Object(base(kind))
    }

    #[test]
    fn synthetic_transcript() {
        let d = digest(&jsonl(&synthetic()), &Limits::default());
        assert_eq!(d.first_prompt.as_deref(), Some("Fix the parser"));
        assert_eq!(d.latest_prompt.as_deref(), Some("Now add tests"));
        assert_eq!(
            d.todos,
            vec![
                Todo {
                    content: "Read code".into(),
                    status: "completed".into()
                },
                Todo {
                    content: "Write tests".into(),
                    status: "in_progress".into()
                },
                Todo {
                    content: "Ship".into(),
                    status: "pending".into()
                },
            ]
        );
        assert_eq!(
            d.files_changed,
            vec!["/repo/a.rs", "/repo/n.ipynb", "/repo/c.rs", "/repo/b.rs"]
        );
        assert_eq!(
            d.commands,
            vec![
                Command {
                    command: "cargo build".into(),
                    failed: false,
                    runs: 1,
                },
                Command {
                    command: "cargo test".into(),
                    failed: true,
                    runs: 1,
                },
                Command {
                    command: "ls".into(),
                    failed: false,
                    runs: 1,
                },
            ]
        );
        assert_eq!(
            d.tool_errors,
            vec![
                ToolError {
                    tool: "Write".into(),
                    message: "File has not been read yet. Read it first before writing to it."
                        .into()
                },
                ToolError {
                    tool: "Bash".into(),
                    message: "Exit code 101".into()
                },
                ToolError {
                    tool: "Read".into(),
                    message: "File does not exist.".into()
                },
                ToolError {
                    tool: "?".into(),
                    message: "orphan failure".into()
                },
            ]
        );
        assert_eq!(d.last_assistant.as_deref(), Some("All done: tests added."));
        assert_eq!(d.compaction_summary, None);
        assert_eq!(d.cwd.as_deref(), Some("/repo/sub"));
        assert_eq!(d.git_branch.as_deref(), Some("feature"));
    }

    #[test]
    fn caps_keep_the_most_recent() {
        let limits = Limits {
            files: 2,
            commands: 2,
            errors: 1,
            ..Limits::default()
        };
        let d = digest(&jsonl(&synthetic()), &limits);
        assert_eq!(d.files_changed, vec!["/repo/a.rs", "/repo/n.ipynb"]);
        let commands: Vec<&str> = d.commands.iter().map(|c| c.command.as_str()).collect();
        assert_eq!(commands, vec!["cargo test", "ls"]);
        assert!(d.commands[0].failed);
        assert_eq!(d.tool_errors.len(), 1);
        assert_eq!(d.tool_errors[0].tool, "?");
    }

    #[test]
    fn compaction_summary_and_latest_prompt_after_it() {
        let lines = vec![
            user(json!("first ask")),
            with(
                user(json!(
                    "This session is being continued...\nSummary:\nearlier work"
                )),
                "isCompactSummary",
                json!(true),
            ),
            with(
                user(json!([{"type": "text", "text": "second summary"}])),
                "isCompactSummary",
                json!(true),
            ),
            user(
                json!([{"type": "text", "text": "after compaction"}, {"type": "image", "source": {}}]),
            ),
        ];
        let d = digest(&jsonl(&lines), &Limits::default());
        assert_eq!(d.compaction_summary.as_deref(), Some("second summary"));
        assert_eq!(d.first_prompt.as_deref(), Some("first ask"));
        assert_eq!(d.latest_prompt.as_deref(), Some("after compaction"));
    }

    #[test]
    fn the_requests_are_those_since_the_last_compaction_and_each_command_comes_once() {
        let bash = |id: &str, c: &str| tool_use(id, "Bash", json!({"command": c}));
        let lines = vec![
            user(json!("old ask")),
            with(user(json!("summary")), "isCompactSummary", json!(true)),
            user(json!("port the cache")),
            bash("t1", "cargo test"),
            tool_result("t1", true, json!("1 failed")),
            user(json!("also log each retry")),
            bash("t2", "cargo build"),
            bash("t3", "cargo test"),
            tool_result("t3", false, json!("ok")),
            user(json!("continue")),
        ];
        let bytes = jsonl(&lines);
        let d = digest(&bytes, &Limits::default());
        assert_eq!(
            d.prompts,
            vec!["port the cache", "also log each retry", "continue"]
        );
        assert_eq!(
            d.commands,
            vec![
                Command {
                    command: "cargo build".into(),
                    failed: false,
                    runs: 1,
                },
                Command {
                    command: "cargo test".into(),
                    failed: false,
                    runs: 2,
                },
            ],
            "at its latest run, which passed"
        );
        // Read in two halves side by side, the same (the summary in the first).
        let halves = digest_source(
            &bytes[..],
            bytes.len() as u64,
            &Limits::default(),
            Host::Claude,
            Reading { chunk: 7, split: 2 },
        )
        .unwrap();
        assert_eq!(halves, d);
        let few = Limits {
            prompts: 1,
            ..Limits::default()
        };
        assert_eq!(digest(&bytes, &few).prompts, vec!["continue"]);
    }

    #[test]
    fn bounded_reads_on_a_big_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        let mut file = std::io::BufWriter::new(File::create(&path).unwrap());
        file.write_all(&jsonl(&[user(json!("the very first prompt"))]))
            .unwrap();
        file.write_all(&jsonl(&[todo_write("old", &[("stale todo", "pending")])]))
            .unwrap();
        let filler = format!(
            "{}\n",
            json!({"type": "progress", "data": "x".repeat(1000), "cwd": "/filler"})
        );
        let mut written = 0;
        while written < 10 * 1024 * 1024 {
            file.write_all(filler.as_bytes()).unwrap();
            written += filler.len();
        }
        file.write_all(&jsonl(&[
            user(json!("the latest prompt")),
            todo_write("new", &[("fresh todo", "in_progress")]),
        ]))
        .unwrap();
        // A half-written last line.
        file.write_all(br#"{"type":"assistant","message":{"content":[{"type":"te"#)
            .unwrap();
        drop(file.into_inner().unwrap());

        let limits = Limits::default();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 10 * 1024 * 1024);

        let counting = Counting::new(File::open(&path).unwrap());
        let d = digest_source(&counting, len, &limits, Host::Claude, Reading::DEFAULT).unwrap();
        // (The tail window is scanned in halves: where to cut it is looked
        // for past its middle, at most PROBE bytes.)
        assert!(
            counting.read() <= limits.head_cap + limits.tail_cap + PROBE as u64,
            "read {} bytes",
            counting.read()
        );
        assert!(counting.read() > 0);
        assert_eq!(d.first_prompt.as_deref(), Some("the very first prompt"));
        assert_eq!(d.latest_prompt.as_deref(), Some("the latest prompt"));
        assert_eq!(
            d.todos,
            vec![Todo {
                content: "fresh todo".into(),
                status: "in_progress".into()
            }]
        );
        assert_eq!(d.cwd.as_deref(), Some("/repo"));
        assert_eq!(digest_file(&path, &limits).unwrap(), d);
        assert_eq!(digest(&std::fs::read(&path).unwrap(), &limits), d);
    }

    #[test]
    fn window_edges_are_skipped() {
        // A tail window starting exactly on a line start still skips that
        // line (it cannot know the line is whole), and a head window ending
        // mid-line skips the cut line.
        let mut bytes = jsonl(&[user(json!("first"))]);
        bytes.extend(std::iter::repeat_n(b'\n', 64));
        let last = jsonl(&[user(json!("last")), json!({"type": "mode"})]);
        bytes.extend_from_slice(&last);
        let limits = Limits {
            head_cap: 8,
            tail_cap: last.len() as u64,
            ..Limits::default()
        };
        let d = digest(&bytes, &limits);
        assert_eq!(d.latest_prompt, None);
        assert_eq!(d.first_prompt, None);

        // One byte more of tail: the cut line is skipped, nothing else.
        let limits = Limits {
            tail_cap: last.len() as u64 + 1,
            head_cap: bytes.len() as u64 - last.len() as u64 - 2,
            ..limits
        };
        let d = digest(&bytes, &limits);
        assert_eq!(d.latest_prompt.as_deref(), Some("last"));
        assert_eq!(d.first_prompt.as_deref(), Some("first"));
    }

    #[test]
    fn error_text_falls_back_to_tool_use_result() {
        let lines = vec![
            tool_use("g1", "Grep", json!({"pattern": "x"})),
            with(
                tool_result("g1", true, json!([])),
                "toolUseResult",
                json!("Error: bad pattern\ndetails"),
            ),
        ];
        let d = digest(&jsonl(&lines), &Limits::default());
        assert_eq!(
            d.tool_errors,
            vec![ToolError {
                tool: "Grep".into(),
                message: "Error: bad pattern".into()
            }]
        );
    }

    #[test]
    fn long_prompt_is_truncated() {
        let long = "é".repeat(100 * 1024 / 2);
        let d = digest(&jsonl(&[user(json!(long))]), &Limits::default());
        let prompt = d.first_prompt.unwrap();
        assert!(prompt.ends_with('…'));
        assert_eq!(prompt.chars().count(), 601);
        assert!(prompt.starts_with(&"é".repeat(600)));
        assert_eq!(d.latest_prompt.unwrap(), prompt);
    }

    #[test]
    fn truncate_on_char_boundaries() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc…");
        assert_eq!(truncate("日本語テキスト", 2), "日本…");
        assert_eq!(truncate("", 0), "");
        assert_eq!(truncate("x", 0), "…");
    }

    #[test]
    fn garbage_empty_and_missing() {
        let garbage = b"\xff\xfe\x00 not json\n{\"type\":\"user\",\n[1,2,3]\n\"str\"\n{}\n{\"type\":\"user\",\"message\":{\"content\":42}}\n";
        assert_eq!(digest(garbage, &Limits::default()), Digest::default());
        assert_eq!(digest(b"", &Limits::default()), Digest::default());

        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.jsonl");
        File::create(&empty).unwrap();
        assert_eq!(
            digest_file(&empty, &Limits::default()).unwrap(),
            Digest::default()
        );

        let junk = dir.path().join("junk.jsonl");
        std::fs::write(&junk, garbage).unwrap();
        assert_eq!(
            digest_file(&junk, &Limits::default()).unwrap(),
            Digest::default()
        );

        let err = digest_file(&dir.path().join("missing.jsonl"), &Limits::default()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn serializes() {
        let d = digest(&jsonl(&synthetic()), &Limits::default());
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["first_prompt"], "Fix the parser");
        assert_eq!(v["commands"][1]["failed"], true);
        assert_eq!(v["tool_errors"][0]["tool"], "Write");
    }

    fn small_limits() -> impl Strategy<Value = Limits> {
        (
            0u64..200,
            0u64..200,
            0usize..5,
            0usize..5,
            0usize..5,
            0usize..20,
        )
            .prop_map(
                |(head_cap, tail_cap, files, commands, errors, text)| Limits {
                    head_cap,
                    tail_cap,
                    files,
                    commands,
                    prompts: commands,
                    errors,
                    text,
                },
            )
    }

    fn check_invariants(d: &Digest, limits: &Limits) {
        assert!(d.files_changed.len() <= limits.files);
        assert!(d.commands.len() <= limits.commands);
        assert!(d.prompts.len() <= limits.prompts);
        let mut lines: Vec<&str> = d.commands.iter().map(|c| c.command.as_str()).collect();
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), d.commands.len(), "each command once");
        assert!(d.commands.iter().all(|c| c.runs >= 1));
        assert!(d.tool_errors.len() <= limits.errors);
        let unique: HashSet<&String> = d.files_changed.iter().collect();
        assert_eq!(unique.len(), d.files_changed.len());
        for text in d
            .first_prompt
            .iter()
            .chain(&d.latest_prompt)
            .chain(&d.last_assistant)
        {
            assert!(text.chars().count() <= limits.text + 1);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), limits in small_limits(), chunk in 1usize..64, split in 2u64..600) {
            let d = digest(&bytes, &limits);
            check_invariants(&d, &limits);
            let d = digest(&bytes, &Limits::default());
            check_invariants(&d, &Limits::default());
            let len = bytes.len() as u64;
            let counting = Counting::new(&bytes[..]);
            let from_source = digest_source(&counting, len, &limits, Host::Claude, Reading::DEFAULT).unwrap();
            prop_assert_eq!(from_source, digest(&bytes, &limits));
            prop_assert!(counting.read() <= limits.head_cap + limits.tail_cap);
            // A few bytes at a time, lines cut anywhere by a chunk's end, and
            // windows scanned in halves: the same digest as read in one piece.
            let by_chunks = digest_source(&bytes[..], len, &limits, Host::Claude, Reading { chunk, split }).unwrap();
            prop_assert_eq!(by_chunks, digest(&bytes, &limits));
        }

        #[test]
        fn shuffled_transcript_lines_never_panic(
            picks in proptest::collection::vec((0usize..40, any::<bool>(), 0usize..64), 0..60),
            limits in small_limits(),
            chunk in 1usize..400,
            split in 2u64..2000,
        ) {
            // Real-looking lines in any order, some cut at any byte.
            let mut pool = synthetic();
            // A second of each latest-wins kind, so that which one is last tells.
            pool.extend([
                assistant(json!([{"type": "text", "text": "Second reply."}])),
                json!({"type": "last-prompt", "lastPrompt": "Second last-prompt"}),
                with(user(json!("Second summary")), "isCompactSummary", json!(true)),
            ]);
            let pool: Vec<Vec<u8>> = pool.iter().map(|l| l.to_string().into_bytes()).collect();
            let mut bytes = Vec::new();
            for (i, cut, at) in picks {
                let line = &pool[i % pool.len()];
                if cut {
                    bytes.extend_from_slice(&line[..at.min(line.len())]);
                } else {
                    bytes.extend_from_slice(line);
                }
                bytes.push(b'\n');
            }
            let wide = Limits { head_cap: 1 << 20, tail_cap: 1 << 20, ..limits };
            check_invariants(&digest(&bytes, &wide), &wide);
            check_invariants(&digest(&bytes, &limits), &limits);
            // A few bytes at a time, lines cut anywhere by a chunk's end, and
            // windows scanned in halves: the same digest as read in one piece.
            let reading = Reading { chunk, split };
            for l in [&wide, &limits, &Limits { head_cap: 300, tail_cap: 900, ..limits }] {
                let read = digest_source(&bytes[..], bytes.len() as u64, l, Host::Claude, reading).unwrap();
                prop_assert_eq!(read, digest(&bytes, l));
            }
        }
    }
}
