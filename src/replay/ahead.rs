//! Reading the transcript ahead of the re-enactment, on a thread of its own, bounded, and giving back the pages it has passed.

use super::*;

/// A line read ahead: its length in the file, and its bytes and meaning
/// (`None` for a line too long to hold).
pub(super) struct Read {
    pub(super) len: u64,
    /// Where the line ends in the file.
    pub(super) offset: u64,
    pub(super) line: Option<(Vec<u8>, Seen)>,
}

/// The bytes of lines read ahead and not yet replayed: the reader waits
/// while they pass [`AHEAD_BYTES`] (a longer line goes alone), until the
/// replay stops taking lines.
#[derive(Default)]
pub(super) struct Ahead {
    pub(super) held: std::sync::Mutex<Held>,
    pub(super) freed: std::sync::Condvar,
}

#[derive(Default)]
pub(super) struct Held {
    /// Bytes read ahead and not yet replayed.
    pub(super) bytes: usize,
    /// The reader is waiting for room (only then is it woken: a wake-up is
    /// a system call).
    pub(super) waiting: bool,
    /// The replay stopped taking lines.
    pub(super) closed: bool,
}

impl Held {
    pub(super) fn room(&self, n: usize) -> bool {
        self.closed || self.bytes == 0 || self.bytes + n <= AHEAD_BYTES
    }
}

/// Closes an [`Ahead`] when dropped.
pub(super) struct Close<'a>(pub(super) &'a Ahead);

impl Drop for Close<'_> {
    fn drop(&mut self) {
        let mut held = self.0.held.lock().unwrap_or_else(|e| e.into_inner());
        held.closed = true;
        self.0.freed.notify_all();
    }
}

/// The most bytes of lines read ahead of the replay.
pub(super) const AHEAD_BYTES: usize = 8 << 20;

/// Lines go to the replay in batches of about this many bytes (or
/// [`BATCH_LINES`] lines): each hand-over between the threads is a system
/// call or two.
pub(super) const BATCH_BYTES: usize = 1 << 20;
pub(super) const BATCH_LINES: usize = 256;

impl Ahead {
    /// Whether `n` more bytes may be taken without waiting.
    pub(super) fn room(&self, n: usize) -> bool {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).room(n)
    }

    /// Waits for room for `n` more bytes, then counts them; false once the
    /// replay stopped taking lines.
    pub(super) fn take(&self, n: usize) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while !held.room(n) {
            held.waiting = true;
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.waiting = false;
        held.bytes += n;
        !held.closed
    }

    /// `n` bytes replayed.
    pub(super) fn done(&self, n: usize) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.bytes = held.bytes.saturating_sub(n);
        if held.waiting {
            self.freed.notify_one();
        }
    }
}

/// Reads `file` a line at a time, each through the host's forward reader,
/// and sends them on in batches until the end, an error or the receiver's
/// end.
pub(super) fn read_ahead(
    file: std::fs::File,
    host: Host,
    ahead: &Ahead,
    tx: &std::sync::mpsc::SyncSender<std::io::Result<Vec<Read>>>,
) {
    let mut reader = std::io::BufReader::with_capacity(256 << 10, file);
    let mut offset = 0u64;
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    // Sends the batch on; false once the replay stopped taking them.
    let send = |batch: &mut Vec<Read>, bytes: &mut usize| {
        *bytes = 0;
        tx.send(Ok(std::mem::take(batch))).is_ok()
    };
    loop {
        let mut buf = ReadLine::Held(Vec::new());
        let len = match read_line(&mut reader, &mut buf, MAX_LINE) {
            Ok(Some(len)) => len,
            Ok(None) => {
                send(&mut batch, &mut batch_bytes);
                return;
            }
            Err(e) => {
                // What was read before the error is replayed first.
                if send(&mut batch, &mut batch_bytes) {
                    let _ = tx.send(Err(e));
                }
                return;
            }
        };
        offset += len;
        let line = match buf {
            ReadLine::TooLong => None,
            ReadLine::Held(bytes) => {
                let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
                let seen = host.forward(body, offset);
                // The batch goes before waiting for room: the room is
                // made by replaying it.
                if !batch.is_empty()
                    && !ahead.room(bytes.len())
                    && !send(&mut batch, &mut batch_bytes)
                {
                    return;
                }
                if !ahead.take(bytes.len()) {
                    return;
                }
                batch_bytes += bytes.len();
                Some((bytes, seen))
            }
        };
        batch.push(Read { len, offset, line });
        if (batch_bytes >= BATCH_BYTES || batch.len() >= BATCH_LINES)
            && !send(&mut batch, &mut batch_bytes)
        {
            return;
        }
    }
}

/// The copy is given back in steps of this many bytes.
pub(super) const FREE_STEP: u64 = 1 << 20;
/// Kept beyond what the transcript's readers reach, to spare.
pub(super) const FREE_MARGIN: u64 = 1 << 20;

/// Frees `len` bytes of `file` from `offset` (they read as zeros after),
/// keeping its length; where the file system cannot, nothing happens.
pub(super) fn punch_hole(file: &std::fs::File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: fallocate on a descriptor this file owns, with plain integers.
        let _ = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset,
                len,
            )
        };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}
