//! Reads a session's current context usage from the end of its transcript,
//! whatever the host: the backward line scanner.
//!
//! A transcript is JSONL (one JSON object a line) that only grows, to hundreds
//! of MB, with lines of up to hundreds of KB. The figure that matters is near
//! the end, so [`read_tail`] reads backwards from the end in chunks of
//! [`CHUNK`] bytes, never more than `scan_cap` bytes, and stops as soon as
//! older lines can no longer change the answer. Its cost depends on how far
//! back the answer lies, not on the file's size. Each host's reader says
//! what a line means ([`crate::claude`], [`crate::codex`], [`crate::gemini`]);
//! the rule that makes a figure of them is [`crate::usage`]'s, the same one
//! a forward reading uses. Any line that is not valid JSON is skipped (the
//! last line may be half written).

use std::io;
use std::path::Path;

use crate::Host;
use crate::usage::{Backward, Reading};
pub use crate::usage::{TailUsage, UsageKind};

/// What one tail read found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The context figure, if one was found within the scan cap.
    pub usage: Option<TailUsage>,
    /// The mark of the latest compaction, when no response came after it
    /// (Claude Code's boundary uuid; where Codex's `compacted` or Gemini's
    /// rewrite is): a new context, with `usage` its own figure or `None`.
    pub latest_boundary: Option<String>,
    /// The file's length when read.
    pub len: u64,
    /// Just past the file's last whole line (its `\n`), as far as the read
    /// saw: where a later read may start ([`read_tail_from`]).
    pub lines_to: u64,
}

impl Tail {
    fn of(reading: Reading, len: u64) -> Self {
        Tail {
            usage: reading.usage,
            latest_boundary: reading.latest_boundary,
            len,
            lines_to: 0,
        }
    }
}

/// At most the last `most` bytes of a transcript of the user's, whole
/// lines or not (its first line may be cut): a quick look at its latest
/// lines. `None` where it cannot be read.
pub(crate) fn last_bytes(path: &Path, most: u64) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut file, len) = crate::open_transcript(path).ok()?;
    file.seek(SeekFrom::Start(len.saturating_sub(most))).ok()?;
    let mut bytes = Vec::new();
    file.take(most).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// How far back from a file's end a subagent's own lines are looked for
/// (its last usage, a call it named): 1 MiB.
pub(crate) const SUBAGENT_SCAN: u64 = 1 << 20;

/// The figure the transcript at `path` gives now (its last
/// [`DEFAULT_SCAN_CAP`] bytes read by `host`'s reader): a subagent's own.
pub(crate) fn figure_of(path: &Path, host: Host) -> Option<crate::usage::TailUsage> {
    read_tail(path, DEFAULT_SCAN_CAP, host).ok()?.usage
}

/// Default cap on bytes scanned from the end: 8 MiB.
///
/// `interband replay` frees its copy of a transcript beyond the furthest any
/// hook reads back (this cap, or a memory note's tail window): a hook that
/// read further back would have to raise that reach too.
pub const DEFAULT_SCAN_CAP: u64 = 8 << 20;

/// Bytes read from the file at a time.
const CHUNK: usize = 64 << 10;

/// Reads the tail of the transcript at `path`. A missing or unreadable file is an io::Error;
/// a file with no usable line within `scan_cap` bytes from the end gives `usage: None`.
///
/// At most `scan_cap` bytes are read, the last `scan_cap` bytes of the file. A
/// line is considered only if it lies wholly in them (a line that starts
/// before them is cut and skipped), so a qualifying line whose end is more
/// than `scan_cap` bytes from the end of the file gives `usage: None`.
///
/// The length is taken when the file is opened; bytes appended while reading
/// are not looked at. A file that shrinks while it is read gives an
/// [`io::ErrorKind::UnexpectedEof`] error.
pub fn read_tail(path: &Path, scan_cap: u64, host: Host) -> io::Result<Tail> {
    read_tail_counting(path, scan_cap, host).map(|(tail, _)| tail)
}

/// [`read_tail`] that looks at nothing before `floor`, a line's start below
/// which the transcript is known to say nothing (an earlier read found no
/// figure and no compaction there: [`Tail::lines_to`]); a transcript laid
/// out as one document is read whole as [`read_tail`] does. So a session
/// whose transcript states no figure costs each call the bytes written
/// since the last, not the whole cap.
pub fn read_tail_from(path: &Path, scan_cap: u64, host: Host, floor: u64) -> io::Result<Tail> {
    let (file, len) = crate::open_transcript(path)?;
    let read = |at: u64, buf: &mut [u8]| interband::fsio::read_exact_at(&file, buf, at);
    match host.layout(path) {
        Layout::Lines => scan(len, scan_cap, floor.min(len), CHUNK, host, read).map(|(t, _)| t),
        Layout::Document => scan_document(len, scan_cap, CHUNK, host, read).map(|(t, _)| t),
    }
}

/// The context as the transcript showed it when it ended at `end` (a line's
/// start): what a read of the end found then, the lines before it alone.
pub fn read_tail_until(path: &Path, end: u64, scan_cap: u64, host: Host) -> io::Result<Tail> {
    let (file, len) = crate::open_transcript(path)?;
    let read = |at: u64, buf: &mut [u8]| interband::fsio::read_exact_at(&file, buf, at);
    scan(end.min(len), scan_cap, 0, CHUNK, host, read).map(|(t, _)| t)
}

/// The same on bytes already in memory (the whole "file"); used by read_tail's tests and by callers with a buffer.
///
/// The result equals `read_tail(path, DEFAULT_SCAN_CAP)` on a file holding
/// `bytes`: only the last [`DEFAULT_SCAN_CAP`] bytes are scanned.
pub fn tail_of(bytes: &[u8], host: Host) -> Tail {
    tail_of_with(bytes, DEFAULT_SCAN_CAP, CHUNK, host)
}

/// [`tail_of`] with any cap, chunk size and reader.
pub(crate) fn tail_of_with(bytes: &[u8], scan_cap: u64, chunk: usize, host: Host) -> Tail {
    let len = bytes.len() as u64;
    match scan(len, scan_cap, 0, chunk, host, slice_reader(bytes)) {
        Ok((tail, _)) => tail,
        // Unreachable: the slice never shrinks.
        Err(_) => Tail {
            len,
            ..Tail::default()
        },
    }
}

/// Reads ranges of bytes in memory as a scan reads a file's (it asks only
/// for ranges inside them; one outside is an unexpected end).
fn slice_reader(bytes: &[u8]) -> impl FnMut(u64, &mut [u8]) -> io::Result<()> + '_ {
    move |at, buf| {
        let start = usize::try_from(at).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| bytes.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// [`read_tail`], also returning how many bytes it read from the file.
pub(crate) fn read_tail_counting(
    path: &Path,
    scan_cap: u64,
    host: Host,
) -> io::Result<(Tail, u64)> {
    let (file, len) = crate::open_transcript(path)?;
    let read = |at: u64, buf: &mut [u8]| interband::fsio::read_exact_at(&file, buf, at);
    match host.layout(path) {
        Layout::Lines => scan(len, scan_cap, 0, CHUNK, host, read),
        Layout::Document => scan_document(len, scan_cap, CHUNK, host, read),
    }
}

/// How a host lays its records out in a transcript file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One JSON record a line (JSONL).
    Lines,
    /// One JSON document, an object whose records are the objects of its
    /// one array (Gemini CLI before 0.39: `{sessionId, ..., messages: [...]}`),
    /// pretty-printed or on one line.
    Document,
}

/// [`tail_of`] for a transcript laid out as one JSON document.
pub fn document_tail_of(bytes: &[u8], host: Host) -> Tail {
    document_tail_of_with(bytes, DEFAULT_SCAN_CAP, CHUNK, host)
}

/// [`document_tail_of`] with any cap, and a first window of `chunk` bytes.
pub fn document_tail_of_with(bytes: &[u8], scan_cap: u64, chunk: usize, host: Host) -> Tail {
    let len = bytes.len() as u64;
    scan_document(len, scan_cap, chunk, host, slice_reader(bytes))
        .map(|(tail, _)| tail)
        .unwrap_or(Tail {
            len,
            ..Tail::default()
        })
}

/// Scans a JSON document's records backwards from its end: the objects two
/// levels deep (the root object's array's elements), each judged by the
/// host's reader as a line would be, until the answer is decided. Bytes are
/// read in a window that starts at `chunk` bytes from the end and doubles as
/// needed, never past the last `scan_cap` bytes: the cost depends on how far
/// back the answer lies, not on the file's size.
///
/// In valid JSON a quote preceded by an even number of backslashes is a
/// string's edge wherever it is, so the strings (and the braces outside
/// them) are known going backwards from the end, which is outside them all.
/// A document whose end is not its root's closing brace (being rewritten,
/// torn) gives no records.
fn scan_document<R>(
    len: u64,
    scan_cap: u64,
    chunk: usize,
    host: Host,
    mut read: R,
) -> io::Result<(Tail, u64)>
where
    R: FnMut(u64, &mut [u8]) -> io::Result<()>,
{
    let reader = host.reader();
    let mut back = Backward::new(host.states_window());
    let floor = len.saturating_sub(scan_cap);
    let mut start = len.saturating_sub(chunk.max(1) as u64).max(floor);
    let mut buf = vec![0u8; (len - start) as usize];
    read(start, &mut buf)?;
    let mut bytes_read = len - start;
    // Grows the window towards `floor`, twice as large; false at the floor.
    let mut grow = |start: &mut u64, buf: &mut Vec<u8>| -> io::Result<bool> {
        if *start == floor {
            return Ok(false);
        }
        let new_start = len.saturating_sub(2 * (len - *start)).max(floor);
        let mut more = vec![0u8; (*start - new_start) as usize];
        read(new_start, &mut more)?;
        bytes_read += *start - new_start;
        more.extend_from_slice(buf);
        *buf = more;
        *start = new_start;
        Ok(true)
    };
    let closed = buf.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
    let (mut p, mut in_string, mut depth) = (len, false, 0u32);
    let mut record_end = None;
    if !closed {
        return Ok((Tail::of(back.reading(), len), bytes_read));
    }
    loop {
        let hay = &buf[..(p - start) as usize];
        let found = if in_string {
            memchr::memrchr(b'"', hay)
        } else {
            memchr::memrchr3(b'"', b'{', b'}', hay)
        };
        let Some(i) = found else {
            p = start;
            if !grow(&mut start, &mut buf)? {
                break;
            }
            continue;
        };
        match hay[i] {
            b'"' => {
                let run = hay[..i].iter().rev().take_while(|&&b| b == b'\\').count();
                if run == i && start > floor {
                    // The backslashes may go on before the window.
                    grow(&mut start, &mut buf)?;
                    continue;
                }
                if run % 2 == 0 {
                    in_string = !in_string;
                }
            }
            b'}' => {
                depth += 1;
                if depth == 2 {
                    record_end = Some(start + i as u64 + 1);
                }
            }
            _ => {
                if depth == 2
                    && let Some(end) = record_end.take()
                {
                    let record = &buf[i..(end - start) as usize];
                    if let Some(fact) = reader(record, end)
                        && back.take(fact, end)
                    {
                        return Ok((Tail::of(back.reading(), len), bytes_read));
                    }
                }
                match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => break,
                }
            }
        }
        p = start + i as u64;
    }
    Ok((Tail::of(back.reading(), len), bytes_read))
}

/// Scans the last `scan_cap` bytes of a `len`-byte source backwards, none
/// before `floor` (a line's start), `chunk` bytes at a time, with
/// `read(at, buf)` filling `buf` from offset `at`. Returns the tail and the
/// number of bytes read.
fn scan<R>(
    len: u64,
    scan_cap: u64,
    floor: u64,
    chunk: usize,
    host: Host,
    mut read: R,
) -> io::Result<(Tail, u64)>
where
    R: FnMut(u64, &mut [u8]) -> io::Result<()>,
{
    let reader = host.reader();
    let mut back = Backward::new(host.states_window());
    let mut judge = |line: &[u8], offset: u64| match reader(line, offset) {
        Some(fact) => back.take(fact, offset),
        None => false,
    };
    let window_start = len.saturating_sub(scan_cap).max(floor);
    let chunk = chunk.max(1) as u64;
    // Just past the last `\n`, once found.
    let mut lines_to = None;
    let mut bytes_read = 0u64;
    // Everything from `pos` to the end of the window is read.
    let mut pos = len;
    // End (exclusive) of the line being assembled: the offset of its `\n`, or
    // `len` for the last line.
    let mut line_end = len;
    // The bytes of that line read so far, [pos, line_end), one piece per
    // chunk, latest piece first.
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    let mut joined = Vec::new();
    let mut buf = Vec::new();

    while pos > window_start {
        let n = chunk.min(pos - window_start);
        let start = pos - n;
        // n <= chunk, which came from a usize.
        buf.resize(n as usize, 0);
        read(start, &mut buf)?;
        bytes_read += n;

        let mut end = buf.len();
        while let Some(nl) = memchr::memrchr(b'\n', &buf[..end]) {
            lines_to.get_or_insert(start + nl as u64 + 1);
            let offset = offset_past(line_end, len);
            let decided = if pieces.is_empty() {
                judge(&buf[nl + 1..end], offset)
            } else {
                join(&buf[nl + 1..end], &mut pieces, &mut joined);
                judge(&joined, offset)
            };
            if decided {
                let mut tail = Tail::of(back.reading(), len);
                tail.lines_to = lines_to.unwrap_or(floor);
                return Ok((tail, bytes_read));
            }
            end = nl;
            line_end = start + nl as u64;
        }
        if end > 0 {
            buf.truncate(end);
            pieces.push(std::mem::take(&mut buf));
        }
        pos = start;
    }

    // The first line of the file (or after the floor), if the window reaches
    // it. A line cut by the window's start is not judged.
    if window_start == floor && line_end > floor {
        join(&[], &mut pieces, &mut joined);
        judge(&joined, offset_past(line_end, len));
    }
    let mut tail = Tail::of(back.reading(), len);
    tail.lines_to = lines_to.unwrap_or(floor);
    Ok((tail, bytes_read))
}

/// The offset just past a line ending at `line_end` (its `\n`, or `len`).
fn offset_past(line_end: u64, len: u64) -> u64 {
    if line_end < len { line_end + 1 } else { len }
}

/// Puts `head` followed by `pieces` in file order into `out`; empties `pieces`.
fn join(head: &[u8], pieces: &mut Vec<Vec<u8>>, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(head);
    for piece in pieces.iter().rev() {
        out.extend_from_slice(piece);
    }
    pieces.clear();
}

/// Whether `needle` (not empty) occurs in `haystack`.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// A line as a reader sees it: without a `\r` before its `\n` (a file
/// written with CRLF) or a UTF-8 byte-order mark before it (a file's first
/// line, as some editors and tools write it).
pub(crate) fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::io::{Seek, SeekFrom, Write};

    // These tests read Claude Code's format.
    fn tail_of(bytes: &[u8]) -> Tail {
        super::tail_of(bytes, Host::Claude)
    }
    fn read_tail(path: &Path, cap: u64) -> io::Result<Tail> {
        super::read_tail(path, cap, Host::Claude)
    }
    fn tail_of_with(bytes: &[u8], cap: u64, chunk: usize) -> Tail {
        super::tail_of_with(bytes, cap, chunk, Host::Claude)
    }
    fn read_tail_counting(path: &Path, cap: u64) -> io::Result<(Tail, u64)> {
        super::read_tail_counting(path, cap, Host::Claude)
    }

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl"
    );
    const FIXTURE_BOUNDARY_UUID: &str = "eb8b7c4c-c0bb-42f1-9495-7ed7cf7e9f38";

    fn fixture() -> Vec<u8> {
        std::fs::read(FIXTURE).expect("fixture transcript")
    }

    /// An assistant line with the given usage numbers.
    fn assistant(id: &str, model: &str, input: u64, creation: u64, read: u64) -> String {
        serde_json::json!({
            "parentUuid": "p",
            "isSidechain": false,
            "message": {
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "hi"}],
                "usage": {
                    "input_tokens": input,
                    "cache_creation_input_tokens": creation,
                    "cache_read_input_tokens": read,
                    "output_tokens": 7
                }
            },
            "type": "assistant",
            "uuid": format!("u-{id}")
        })
        .to_string()
    }

    fn sidechain(input: u64) -> String {
        let mut v: Value =
            serde_json::from_str(&assistant("side", "claude-x", input, 0, 0)).unwrap();
        v["isSidechain"] = Value::Bool(true);
        v.to_string()
    }

    fn user(text: &str) -> String {
        serde_json::json!({
            "type": "user",
            "isSidechain": false,
            "message": {"role": "user", "content": text},
            "uuid": "user-uuid"
        })
        .to_string()
    }

    fn boundary(uuid: &str, post: u64) -> String {
        serde_json::json!({
            "parentUuid": null,
            "isSidechain": false,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "uuid": uuid,
            "compactMetadata": {"trigger": "auto", "preTokens": post * 10, "postTokens": post}
        })
        .to_string()
    }

    /// Lines joined with `\n`, each ended by `\n`.
    fn file(lines: &[String]) -> Vec<u8> {
        let mut out = Vec::new();
        for line in lines {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out
    }

    fn used(tail: &Tail) -> Option<(u64, UsageKind)> {
        tail.usage.as_ref().map(|u| (u.used_tokens, u.kind))
    }

    fn temp_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f.flush().unwrap();
        f
    }

    #[test]
    fn a_floor_reads_only_what_was_written_since_and_finds_the_same() {
        // A transcript with no figure: the read says where its whole lines end.
        let quiet = file(&[user("a"), user("b")]);
        let f = temp_with(&quiet);
        let first = read_tail(f.path(), DEFAULT_SCAN_CAP).unwrap();
        assert_eq!(
            (first.usage.as_ref(), first.lines_to),
            (None, quiet.len() as u64)
        );
        // Lines written since: from the floor, the same answer as the whole.
        let mut more = quiet.clone();
        more.extend(file(&[assistant("m", "claude-x", 10, 0, 990), user("c")]));
        let f = temp_with(&more);
        let whole = read_tail(f.path(), DEFAULT_SCAN_CAP).unwrap();
        let since =
            read_tail_from(f.path(), DEFAULT_SCAN_CAP, Host::Claude, first.lines_to).unwrap();
        assert_eq!(since, whole);
        assert_eq!(used(&since), Some((1000, UsageKind::Assistant)));
        // Nothing below the floor is looked at (a figure there is not found).
        let below = read_tail_from(
            f.path(),
            DEFAULT_SCAN_CAP,
            Host::Claude,
            more.len() as u64 - 20,
        )
        .unwrap();
        assert_eq!(below.usage, None);
        // A half-written last line: the whole lines end before it.
        let mut torn = more.clone();
        torn.extend_from_slice(br#"{"type":"assis"#);
        let f = temp_with(&torn);
        assert_eq!(
            read_tail(f.path(), DEFAULT_SCAN_CAP).unwrap().lines_to,
            more.len() as u64
        );
    }

    #[test]
    fn fixture_ends_with_compact_boundary() {
        let bytes = fixture();
        let tail = tail_of(&bytes);
        // Its `postTokens` (2613) is the summary's size alone: no figure of
        // the context until the next answer.
        assert_eq!(tail.usage, None);
        assert_eq!(tail.latest_boundary.as_deref(), Some(FIXTURE_BOUNDARY_UUID));
        assert_eq!(tail.len, bytes.len() as u64);
        assert_eq!(tail.lines_to, tail.len, "the file ends with a whole line");
        // The context before the boundary, read back from it.
        let start = find(&bytes, b"\"subtype\":\"compact_boundary\"");
        let line_start = bytes[..start].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        let f = temp_with(&bytes);
        let before =
            read_tail_until(f.path(), line_start as u64, DEFAULT_SCAN_CAP, Host::Claude).unwrap();
        assert_eq!(before.usage.map(|u| u.kind), Some(UsageKind::Assistant));
        // The file on disk reads the same.
        assert_eq!(
            read_tail(Path::new(FIXTURE), DEFAULT_SCAN_CAP).unwrap(),
            tail
        );
    }

    #[test]
    fn fixture_cut_before_boundary_gives_last_assistant() {
        let bytes = fixture();
        let boundary_at = find(&bytes, b"\"subtype\":\"compact_boundary\"");
        let cut = bytes[..boundary_at]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        let tail = tail_of(&bytes[..cut]);
        let usage = tail.usage.as_ref().expect("usage");
        assert_eq!(usage.kind, UsageKind::Assistant);
        assert_eq!(usage.used_tokens, 1200 + 500 + 30000);
        assert_eq!(usage.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(tail.latest_boundary, None);
        // The offset is just past the last assistant line.
        let last_assistant = rfind(&bytes[..cut], b"\"type\":\"assistant\"");
        let line_end = last_assistant
            + bytes[last_assistant..]
                .iter()
                .position(|&b| b == b'\n')
                .unwrap();
        assert_eq!(usage.offset, line_end as u64 + 1);
        assert!(usage.offset < cut as u64);
    }

    fn find(hay: &[u8], needle: &[u8]) -> usize {
        hay.windows(needle.len()).position(|w| w == needle).unwrap()
    }

    fn rfind(hay: &[u8], needle: &[u8]) -> usize {
        hay.windows(needle.len())
            .rposition(|w| w == needle)
            .unwrap()
    }

    #[test]
    fn sidechain_and_synthetic_after_real_are_ignored() {
        let bytes = file(&[
            assistant("m1", "claude-opus-5-5", 10, 20, 30),
            sidechain(99999),
            assistant("m2", "<synthetic>", 0, 0, 0),
            user("ok"),
        ]);
        let tail = tail_of(&bytes);
        assert_eq!(used(&tail), Some((60, UsageKind::Assistant)));
        assert_eq!(
            tail.usage.unwrap().model.as_deref(),
            Some("claude-opus-5-5")
        );
    }

    #[test]
    fn same_message_id_lines_are_not_summed() {
        let line = assistant("msg_same", "claude-opus-5-5", 100, 200, 300);
        let bytes = file(&[line.clone(), line.clone(), line]);
        assert_eq!(used(&tail_of(&bytes)), Some((600, UsageKind::Assistant)));
    }

    #[test]
    fn later_assistant_line_wins_over_earlier_ones_and_boundaries() {
        let bytes = file(&[
            assistant("a", "m", 1, 1, 1),
            boundary("b-1", 50),
            assistant("c", "m2", 5, 0, 0),
        ]);
        let tail = tail_of(&bytes);
        assert_eq!(used(&tail), Some((5, UsageKind::Assistant)));
        assert_eq!(tail.usage.unwrap().model.as_deref(), Some("m2"));
        // The boundary lies before the answer: not looked for.
        assert_eq!(tail.latest_boundary, None);
    }

    #[test]
    fn latest_of_several_boundaries_is_the_answer() {
        let bytes = file(&[
            assistant("a", "m", 1, 1, 1),
            boundary("b-1", 50),
            user("x"),
            boundary("b-2", 70),
            user("y"),
        ]);
        let tail = tail_of(&bytes);
        assert_eq!(
            used(&tail),
            None,
            "a boundary's own figure is no figure of the context"
        );
        assert_eq!(tail.latest_boundary.as_deref(), Some("b-2"));
    }

    #[test]
    fn sidechain_boundary_is_ignored() {
        let mut v: Value = serde_json::from_str(&boundary("side-b", 10)).unwrap();
        v["isSidechain"] = Value::Bool(true);
        let bytes = file(&[assistant("a", "m", 1, 1, 1), v.to_string()]);
        let tail = tail_of(&bytes);
        assert_eq!(used(&tail), Some((3, UsageKind::Assistant)));
        assert_eq!(tail.latest_boundary, None);
    }

    #[test]
    fn boundary_without_post_tokens_gives_no_figure() {
        let no_post = r#"{"type":"system","subtype":"compact_boundary","uuid":"old","compactMetadata":{"trigger":"auto","preTokens":5000}}"#;
        let bytes = file(&[assistant("a", "m", 1, 1, 1), no_post.to_string()]);
        let tail = tail_of(&bytes);
        assert_eq!(tail.usage, None);
        assert_eq!(tail.latest_boundary.as_deref(), Some("old"));
    }

    #[test]
    fn missing_numbers_count_as_zero_and_lines_without_usage_are_skipped() {
        let partial = r#"{"type":"assistant","message":{"id":"x","model":"m","usage":{"cache_read_input_tokens":42,"input_tokens":null}}}"#;
        let no_usage = r#"{"type":"assistant","message":{"id":"y","model":"m"}}"#;
        let bytes = file(&[partial.to_string(), no_usage.to_string()]);
        assert_eq!(used(&tail_of(&bytes)), Some((42, UsageKind::Assistant)));
    }

    #[test]
    fn truncated_last_line_is_skipped() {
        let late = assistant("late", "m", 7, 7, 7);
        let mut bytes = file(&[assistant("a", "m", 1, 2, 3)]);
        bytes.extend_from_slice(&late.as_bytes()[..late.len() / 2]);
        let tail = tail_of(&bytes);
        assert_eq!(used(&tail), Some((6, UsageKind::Assistant)));
        // A complete last line without its newline yet counts, ending at the file's end.
        let mut bytes = file(&[assistant("a", "m", 1, 2, 3)]);
        bytes.extend_from_slice(late.as_bytes());
        let tail = tail_of(&bytes);
        assert_eq!(used(&tail), Some((21, UsageKind::Assistant)));
        assert_eq!(tail.usage.unwrap().offset, bytes.len() as u64);
    }

    #[test]
    fn garbage_only_gives_none() {
        let bytes =
            b"\x00\xff{\"type\":\"assistant\"\n\"assistant\" compact_boundary }}{{\n\n\r\n[1,2]\n";
        let tail = tail_of(bytes);
        assert_eq!(tail.usage, None);
        assert_eq!(tail.latest_boundary, None);
        assert_eq!(tail.len, bytes.len() as u64);
        assert_eq!(tail_of(b""), Tail::default());
    }

    #[test]
    fn crlf_line_endings() {
        let bytes = format!("{}\r\n{}\r\n", assistant("a", "m", 3, 4, 5), user("after"));
        let tail = tail_of(bytes.as_bytes());
        assert_eq!(used(&tail), Some((12, UsageKind::Assistant)));
        let first_line_end = bytes.find('\n').unwrap() as u64 + 1;
        assert_eq!(tail.usage.unwrap().offset, first_line_end);
    }

    #[test]
    fn huge_user_line_after_assistant_is_crossed() {
        // The text mentions "assistant" so the line is parsed, and spans chunks.
        let text = "\"assistant\" ".repeat(100 * 1024 / 12);
        let huge = user(&text);
        assert!(huge.len() > 100 * 1024);
        let bytes = file(&[assistant("a", "m", 1000, 0, 1), huge, user("tail")]);
        assert_eq!(used(&tail_of(&bytes)), Some((1001, UsageKind::Assistant)));
    }

    #[test]
    fn assistant_line_bigger_than_a_chunk_is_found() {
        let big_text = "x".repeat(3 * CHUNK + 17);
        let mut v: Value = serde_json::from_str(&assistant("big", "m", 1, 2, 3)).unwrap();
        v["message"]["content"][0]["text"] = Value::String(big_text);
        let big = v.to_string();
        assert!(big.len() > 3 * CHUNK);
        // Alone in the file (first line), and after other lines.
        assert_eq!(
            used(&tail_of(big.as_bytes())),
            Some((6, UsageKind::Assistant))
        );
        let bytes = file(&[user("before"), big, user("after")]);
        assert_eq!(used(&tail_of(&bytes)), Some((6, UsageKind::Assistant)));
    }

    #[test]
    fn read_tail_equals_tail_of() {
        let cases = [
            fixture(),
            file(&[assistant("a", "m", 1, 2, 3), user(&"y".repeat(200_000))]),
            b"garbage only".to_vec(),
            Vec::new(),
        ];
        for bytes in cases {
            let f = temp_with(&bytes);
            assert_eq!(
                read_tail(f.path(), DEFAULT_SCAN_CAP).unwrap(),
                tail_of(&bytes)
            );
        }
    }

    #[test]
    fn scan_cap_bounds_the_search() {
        let mut lines = vec![assistant("a", "m", 1, 2, 3)];
        lines.extend((0..50).map(|i| user(&format!("filler {i}"))));
        let bytes = file(&lines);
        let after = (bytes.len() - lines[0].len() - 1) as u64;
        let f = temp_with(&bytes);
        // The other lines alone are more than the cap: nothing found.
        let tail = read_tail(f.path(), after - 1).unwrap();
        assert_eq!(tail.usage, None);
        assert_eq!(tail.len, bytes.len() as u64);
        // The assistant line is cut by the window: still nothing.
        assert_eq!(read_tail(f.path(), after + 10).unwrap().usage, None);
        // The whole line (and the newline before it, here the file start) fits.
        let whole = read_tail(f.path(), bytes.len() as u64).unwrap();
        assert_eq!(used(&whole), Some((6, UsageKind::Assistant)));
        assert_eq!(tail_of_with(&bytes, after, 7).usage, None);
        assert_eq!(read_tail(f.path(), 0).unwrap().usage, None);
    }

    #[test]
    fn missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_tail(&dir.path().join("nope.jsonl"), DEFAULT_SCAN_CAP).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    /// A 50 MB file: a sparse prefix of zeros, then real lines.
    fn big_sparse_file(lines: &[String]) -> (tempfile::NamedTempFile, u64) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let prefix = 50 << 20;
        f.as_file().set_len(prefix).unwrap();
        f.seek(SeekFrom::End(0)).unwrap();
        f.write_all(b"\n").unwrap();
        f.write_all(&file(lines)).unwrap();
        f.flush().unwrap();
        let len = f.as_file().metadata().unwrap().len();
        assert!(len > prefix);
        (f, len)
    }

    #[test]
    fn cost_does_not_depend_on_file_size() {
        let (f, len) = big_sparse_file(&[
            user("start"),
            assistant("a", "claude-opus-5-5", 100, 0, 23),
            user(&"z".repeat(20_000)),
            r#"{"type":"last-prompt","lastPrompt":"hi"}"#.to_string(),
        ]);
        let (tail, bytes_read) = read_tail_counting(f.path(), DEFAULT_SCAN_CAP).unwrap();
        assert_eq!(used(&tail), Some((123, UsageKind::Assistant)));
        assert_eq!(tail.len, len);
        // At most two chunks, and small in absolute terms whatever CHUNK is.
        assert!(bytes_read <= 2 * CHUNK as u64, "read {bytes_read} bytes");
        assert!(bytes_read <= 1 << 20, "read {bytes_read} bytes");
    }

    #[test]
    fn cost_is_capped_when_nothing_is_found() {
        let (f, len) = big_sparse_file(&[user("nothing here")]);
        let (tail, bytes_read) = read_tail_counting(f.path(), DEFAULT_SCAN_CAP).unwrap();
        assert_eq!(tail.usage, None);
        assert_eq!(tail.len, len);
        assert_eq!(bytes_read, DEFAULT_SCAN_CAP);
        let (_, bytes_read) = read_tail_counting(f.path(), 100_000).unwrap();
        assert_eq!(bytes_read, 100_000);
    }

    #[test]
    fn contains_finds_needles() {
        assert!(contains(b"xx\"assistant\"yy", b"\"assistant\""));
        assert!(contains(b"\"assistant\"", b"\"assistant\""));
        assert!(contains(b"\"\"assistant\"", b"\"assistant\""));
        assert!(!contains(b"\"assistant", b"\"assistant\""));
        assert!(!contains(b"", b"compact_boundary"));
        assert!(contains(b"abc", b""));
    }

    /// Lines of many kinds, qualifying or not, valid or not.
    fn any_line() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..1000, 0u64..1000, 0u64..1000).prop_map(|(a, b, c)| assistant(
                "gen",
                "claude-gen",
                a,
                b,
                c
            )),
            (0u64..1000).prop_map(sidechain),
            (0u64..1000).prop_map(|p| boundary("gen-b", p)),
            ".{0,40}".prop_map(|s| user(&s)),
            "[^\n]{0,40}",
            Just("\"assistant\" compact_boundary".to_string()),
            Just(String::new()),
        ]
    }

    /// Lines that must not change the answer when they follow a qualifying line.
    fn unrelated_line() -> impl Strategy<Value = String> {
        prop_oneof![
            ".{0,60}".prop_map(|s| user(&s)),
            ".{0,30}".prop_map(|s| user(&format!("\"assistant\" {s} compact_boundary"))),
            (0u64..100_000).prop_map(sidechain),
            (0u64..1000).prop_map(|t| assistant("syn", "<synthetic>", t, t, t)),
            Just(r#"{"type":"attachment","attachment":{"type":"date"}}"#.to_string()),
            Just(r#"{"type":"queue-operation","operation":"enqueue"}"#.to_string()),
            Just(r#"{"type":"system","subtype":"stop_hook_summary"}"#.to_string()),
            Just(r#"{"type":"assistant","message":{"id":"nousage"}}"#.to_string()),
            Just(r#"{"type":"cost-state","modelUsage":{"x":{"inputTokens":5}}}"#.to_string()),
            "[^\n]{0,40}".prop_filter("not a boundary", |s| !s.contains("compact_boundary")),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096),
                                        chunk in 1usize..300, cap in 0u64..5000) {
            let tail = tail_of(&bytes);
            prop_assert_eq!(tail.len, bytes.len() as u64);
            let _ = tail_of_with(&bytes, cap, chunk);
        }

        #[test]
        fn chunk_size_does_not_change_the_result(
            lines in proptest::collection::vec(any_line(), 0..12),
            cut in any::<prop::sample::Index>(),
            crlf in any::<bool>(),
            chunk in 1usize..200,
            cap in 0u64..3000,
        ) {
            let sep = if crlf { "\r\n" } else { "\n" };
            let text = lines.join(sep);
            // Cut anywhere, as a host mid-write would.
            let bytes = &text.as_bytes()[..cut.index(text.len() + 1)];
            prop_assert_eq!(tail_of_with(bytes, cap, chunk), tail_of_with(bytes, cap, CHUNK));
            prop_assert_eq!(tail_of_with(bytes, u64::MAX, chunk), tail_of(bytes));
        }

        #[test]
        fn unrelated_lines_after_do_not_change_tokens(
            before in proptest::collection::vec(any_line(), 0..5),
            tokens in (0u64..1_000_000, 0u64..1_000_000, 0u64..1_000_000),
            after in proptest::collection::vec(unrelated_line(), 0..12),
            truncated in proptest::option::of((0u64..1000, any::<prop::sample::Index>())),
            chunk in 1usize..200,
        ) {
            let (a, b, c) = tokens;
            let mut lines = before;
            lines.push(assistant("real", "claude-real", a, b, c));
            lines.extend(after);
            let mut bytes = file(&lines);
            if let Some((t, at)) = truncated {
                // A half-written qualifying line at the end.
                let late = assistant("late", "claude-late", t, t, t);
                let keep = at.index(late.len() - 1); // never the closing brace
                bytes.extend_from_slice(&late.as_bytes()[..keep]);
            }
            let tail = tail_of_with(&bytes, u64::MAX, chunk);
            let usage = tail.usage.expect("usage");
            prop_assert_eq!(usage.used_tokens, a + b + c);
            prop_assert_eq!(usage.kind, UsageKind::Assistant);
            prop_assert_eq!(usage.model.as_deref(), Some("claude-real"));
        }
    }
}
