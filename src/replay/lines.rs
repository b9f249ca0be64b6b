//! Lines of any length read one at a time, never more than a cap held.

use std::io::BufRead;

/// One line read by [`read_line`].
#[derive(Debug)]
pub enum ReadLine {
    /// The line's bytes (with its `\n`, when it has one).
    Held(Vec<u8>),
    /// Longer than the cap: read past without being held.
    TooLong,
}

/// Reads the next line into `line`, holding at most `cap` bytes of it: a
/// longer one is read past and left as [`ReadLine::TooLong`]. Returns the bytes
/// consumed, `None` at the end.
pub fn read_line(
    reader: &mut impl BufRead,
    line: &mut ReadLine,
    cap: u64,
) -> std::io::Result<Option<u64>> {
    let mut buf = match std::mem::replace(line, ReadLine::TooLong) {
        ReadLine::Held(mut b) => {
            b.clear();
            b
        }
        ReadLine::TooLong => Vec::new(),
    };
    let n = std::io::Read::take(&mut *reader, cap + 1).read_until(b'\n', &mut buf)? as u64;
    if n == 0 {
        *line = ReadLine::Held(buf);
        return Ok(None);
    }
    if n <= cap || buf.last() == Some(&b'\n') {
        *line = ReadLine::Held(buf);
        return Ok(Some(n));
    }
    let mut skipped = n;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(Some(skipped));
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        reader.consume(used);
        skipped += used as u64;
        if done {
            return Ok(Some(skipped));
        }
    }
}
