//! Reading a transcript's head and tail windows, bounded, a chunk at a time, a long window as two halves side by side.

use super::*;

/// Where a window's bytes come from: read at any offset, from two threads
/// at once (a window is scanned in two halves side by side).
pub(crate) trait Source: Sync {
    /// Reads into `buf` from offset `at`; 0 at the end.
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize>;
}

impl Source for std::fs::File {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_at(self, buf, at)
        }
        // (Positional on a handle opened for synchronous reads, from any
        // thread: the file's own position moves, and nothing reads it.)
        #[cfg(windows)]
        {
            std::os::windows::fs::FileExt::seek_read(self, buf, at)
        }
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
pub(crate) struct Reading {
    /// Bytes read at a time: a window is megabytes, read through a buffer
    /// this size that stays in the processor's cache, where a window read
    /// whole into memory (fresh pages, each faulted in and zeroed) would not.
    pub(crate) chunk: usize,
    /// A window at least this long is scanned as two halves at once, on two
    /// threads (parsing its lines is most of a note's cost).
    pub(crate) split: u64,
}

impl Reading {
    pub(crate) const DEFAULT: Reading = Reading {
        chunk: 256 << 10,
        split: 1 << 20,
    };
}

/// How far past a window's middle a line's end is looked for, to cut it in
/// two there; a window with no line end that near is scanned whole.
pub(crate) const PROBE: usize = 64 << 10;

/// [`digest_file`] on any source of `len` bytes.
pub(crate) fn digest_source<S: Source + ?Sized>(
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
pub(crate) fn scan_window<'a, S: Source + ?Sized>(
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
pub(crate) fn scan_part<'a, S: Source + ?Sized>(
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
pub(crate) fn line_end_after<S: Source + ?Sized>(
    src: &S,
    from: u64,
    to: u64,
) -> io::Result<Option<u64>> {
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
pub(crate) fn stream_lines<S: Source + ?Sized>(
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
pub(crate) fn merge(mut head: Scan, mut tail: Scan) -> Digest {
    if tail.cwd.is_none() {
        tail.cwd = head.cwd.take();
    }
    if tail.git_branch.is_none() {
        tail.git_branch = head.git_branch.take();
    }
    tail.finish(head.first_prompt)
}
