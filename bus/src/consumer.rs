//! The plug-in point: a [`Consumer`] names the keys it wants and handles each
//! new value; a runner feeds it, once per `(key, seq)`.
//!
//! Two modes share one cursor per consumer (`<root>/.consumers/<name>.json`):
//! [`drain`] is one shot (every value newer than the cursor, for hooks), and
//! [`watch`] is long-running. A value is offered under the consumer's lock and
//! the cursor is advanced before the lock is released, so a drain and a watch
//! running at the same time never both handle it. The value is marked
//! *running* before the handler runs: if the process is killed mid-way, the
//! next run offers it again with `redelivered` set, and a handler whose effect
//! is keyed by the message's identity (e.g. a file named after key and seq)
//! makes that effect exactly once.
//!
//! Nothing is given up silently. A value is offered again until it is
//! handled, except when the failure is permanent: the handler failed
//! [`MAX_ATTEMPTS`] times with an error that does not pass by itself, or the
//! process died in it [`MAX_INTERRUPTIONS`] times in a row (a value that
//! kills its handler). A transient failure ([`Transient`], a full disk, a
//! lock held too long) is retried for as long as it lasts. A value given up
//! on is reported in [`Report::given_up`], with its cause, for the caller to
//! say so.

use std::collections::BTreeMap;
use std::time::Duration;

use globset::GlobSet;
use serde::{Deserialize, Serialize};

use crate::fsio::Dir;
use crate::lock::{DEFAULT_WAIT, lock_name, with_lock};
use crate::paths::check_segment;
use crate::watch::{WatchOptions, candidate_files, compile_patterns};
use crate::{Bus, Envelope, Error, FileId, Message, Result, Subscription};

/// A handler's error: anything printable.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// Failed attempts (a handler error that is not transient) before a value
/// is given up on (and the cursor moves past it).
pub const MAX_ATTEMPTS: u32 = 3;

/// Attempts in a row that never finished (the process died in the handler)
/// before a value is given up on: a value that kills its handler every time.
pub const MAX_INTERRUPTIONS: u32 = 20;

/// A handler's error that passes by itself (a full disk, a busy resource):
/// the value is offered again later, for as long as it takes.
#[derive(Debug)]
pub struct Transient(pub HandlerError);

impl std::fmt::Display for Transient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Transient {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Whether a handler's error passes by itself: a [`Transient`], an
/// [`Error`] that [is transient](Error::is_transient), or an I/O error of
/// such a kind anywhere in its chain.
pub fn is_transient(e: &HandlerError) -> bool {
    if e.downcast_ref::<Transient>().is_some() {
        return true;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e.as_ref());
    while let Some(c) = cause {
        if let Some(e) = c.downcast_ref::<Error>() {
            if e.is_transient() {
                return true;
            }
        } else if let Some(io) = c.downcast_ref::<std::io::Error>()
            && crate::is_transient_io(io)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Something that acts on bus messages.
pub trait Consumer {
    /// A unique, plain name (`A-Za-z0-9._-`); it names the cursor file.
    fn name(&self) -> &str;
    /// `namespace/channel/key` glob patterns it wants, e.g. `interpulse/checkpoint/*`.
    fn patterns(&self) -> Vec<String>;
    /// Acts on one new value. `redelivered` is true when an earlier attempt
    /// was interrupted or failed, so the effect may already exist.
    fn handle(
        &mut self,
        bus: &Bus,
        message: &Message,
        redelivered: bool,
    ) -> Result<(), HandlerError>;
}

/// The position of one key in a consumer's stream: the last value acted on.
///
/// A value is told from the next by its `seq` when interband wrote both; when
/// a v1 writer (no `seq`, whole-second timestamps) wrote either, by its
/// timestamp when the seconds differ, and within one second by what changed
/// in the file: a new file (a rewrite renames one into place), another size
/// or modification time, or other content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The value's seq (0 for v1 writers).
    pub seq: u64,
    /// The value's timestamp.
    pub timestamp: String,
    /// The file the value was read from (absent in cursors saved before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileId>,
    /// A digest of the value's content (the first 16 hex digits of the
    /// SHA-256 of its envelope as read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl Cursor {
    /// The cursor position of an envelope alone (no file, no content).
    pub fn of<P>(e: &Envelope<P>) -> Self {
        Cursor {
            seq: e.seq,
            timestamp: e.timestamp.clone(),
            file: None,
            content: None,
        }
    }

    /// The cursor position of a message read from a file: its envelope, the
    /// file it came from and a digest of its content.
    pub fn of_message(m: &Message) -> Self {
        use sha2::{Digest, Sha256};
        let bytes = serde_json::to_vec(&m.envelope).unwrap_or_default();
        let digest = Sha256::digest(&bytes);
        Cursor {
            file: m.file,
            content: Some(digest[..8].iter().map(|b| format!("{b:02x}")).collect()),
            ..Cursor::of(&m.envelope)
        }
    }

    /// True when this value comes after `before`, the last one acted on.
    ///
    /// Both read from files (the cursors interband keeps): a value is new
    /// when its file or its content differs. Nothing a writer puts in a
    /// message can stop a cursor: every write renames a new file into place,
    /// and a reader only offers the file that is at the key's path now (a
    /// value read before a newer one landed is dropped as superseded), so
    /// another file there is a later write, whatever its `seq` or timestamp
    /// claim (the same value written again is a new value, as in v1).
    ///
    /// Either without content (a cursor saved by an older interband, or one
    /// made with [`Cursor::of`]): between two values of ours a higher seq is
    /// newer, and so is a later timestamp (one seq has one timestamp: a later
    /// one means the key's seq restarted); with a v1 writer on either side, a
    /// later timestamp is newer and an earlier one is stale. A `before` whose
    /// seq or timestamp is [implausible](crate::envelope::implausible) orders
    /// nothing: any other value is newer.
    ///
    /// ```
    /// use interband::consumer::Cursor;
    /// let c = |seq, ts: &str| Cursor { seq, timestamp: ts.into(), ..Cursor::default() };
    /// let (t1, t2) = ("2026-11-30T00:00:01Z", "2026-11-30T00:00:02Z");
    /// assert!(c(5, t1).is_newer_than(&c(4, t1)));
    /// assert!(!c(4, t1).is_newer_than(&c(4, t1)));
    /// assert!(c(1, t2).is_newer_than(&c(9, t1)), "the seq restarted");
    /// assert!(c(0, t2).is_newer_than(&c(5, t1)), "a v1 writer came after");
    /// assert!(!c(5, t1).is_newer_than(&c(0, t2)), "a stale value after the v1 one");
    /// // A planted year-9999 value or a seq at its limit holds nothing back.
    /// assert!(c(5, t1).is_newer_than(&c(0, "9999-12-31T23:59:59Z")));
    /// assert!(c(1, t1).is_newer_than(&c(u64::MAX, t1)));
    /// // Read from files: told apart by their file and content alone.
    /// let v = |seq, ts, hash: &str| Cursor { content: Some(hash.into()), ..c(seq, ts) };
    /// assert!(v(0, t1, "b").is_newer_than(&v(0, t1, "a")));
    /// assert!(v(3, t1, "b").is_newer_than(&v(0, "9999-12-31T23:59:59Z", "a")));
    /// assert!(!v(0, t1, "a").is_newer_than(&v(0, t1, "a")));
    /// ```
    pub fn is_newer_than(&self, before: &Cursor) -> bool {
        if self.content.is_some() && before.content.is_some() {
            return self.file != before.file || self.content != before.content;
        }
        if self == before {
            return false;
        }
        if crate::envelope::implausible(before.seq, &before.timestamp).is_some() {
            return true;
        }
        if self.seq > 0 && before.seq > 0 {
            return self.seq > before.seq || self.timestamp > before.timestamp;
        }
        if self.timestamp != before.timestamp {
            return self.timestamp > before.timestamp;
        }
        if before.file.is_none() && before.content.is_none() {
            return self.seq > before.seq;
        }
        self.file != before.file || self.content != before.content
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(flatten)]
    done: Cursor,
    /// The value being handled, until it is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<Cursor>,
    /// Attempts on it that failed with a lasting error.
    #[serde(default, skip_serializing_if = "is_zero")]
    attempts: u32,
    /// Attempts on it in a row that never finished.
    #[serde(default, skip_serializing_if = "is_zero")]
    interrupted: u32,
    /// An attempt is under way (or died).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    running: bool,
    /// Some attempt on it already ran (its effect may exist).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    tried: bool,
}

impl Entry {
    fn done(value: Cursor) -> Self {
        Entry {
            done: value,
            ..Entry::default()
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

type Cursors = BTreeMap<String, Entry>;

/// What one run did.
#[derive(Debug, Default)]
pub struct Report {
    /// Values handled successfully.
    pub handled: usize,
    /// Values handled again after an interrupted or failed attempt.
    pub redelivered: usize,
    /// Handler failures; the values are offered again.
    pub errors: Vec<Error>,
    /// Values given up on (a permanent failure), each with its cause.
    pub given_up: Vec<Error>,
}

/// The most of a cursor file this reads (about 80 000 keys).
const MAX_CURSOR_BYTES: u64 = 8 << 20;

/// A consumer's cursors. A missing file is a consumer that has handled
/// nothing; any other failure is an error, never "nothing handled", which
/// would handle every value again.
fn load_cursors(dir: &Dir, file: &str) -> Result<Cursors> {
    match dir.read(file, MAX_CURSOR_BYTES) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::Json {
            path: dir.join(file),
            source: e,
        }),
        Err(Error::NotFound { .. }) => Ok(Cursors::default()),
        Err(e) => Err(e),
    }
}

/// The folder of the consumers' cursors, under the root.
pub const CURSORS: &str = ".consumers";

/// The cursors' folder and the consumer's cursor file name.
fn cursor_file(bus: &Bus, name: &str) -> Result<(Dir, String)> {
    check_segment("consumer name", name)?;
    Ok((bus.dir(&[CURSORS], true)?, format!("{name}.json")))
}

fn save_cursors(dir: &Dir, file: &str, c: &Cursors) -> Result<()> {
    let bytes = serde_json::to_vec(c).expect("cursors serialize");
    dir.write(file, &bytes, false)
}

/// A running watch's claim on a consumer's work: an exclusive lock on
/// `<root>/.consumers/<name>.watch`, held while this value lives (and gone
/// with the process). A hook that sees it leaves that work to the watch.
#[derive(Debug)]
pub struct WatchClaim {
    _file: std::fs::File,
}

/// Claims `name`'s work for this watch; `None` when another watch holds it.
pub fn claim_watch(bus: &Bus, name: &str) -> Result<Option<WatchClaim>> {
    check_segment("consumer name", name)?;
    let dir = bus.dir(&[CURSORS], true)?;
    let file = dir.open_rw(&format!("{name}.watch"))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(WatchClaim { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Io {
            path: dir.join(&format!("{name}.watch")),
            source: e,
        }),
    }
}

/// Whether a running watch has claimed `name`'s work (see [`claim_watch`]).
pub fn watched(bus: &Bus, name: &str) -> bool {
    let Ok(dir) = bus.dir(&[CURSORS], false) else {
        return false;
    };
    let watch = format!("{name}.watch");
    if !dir.exists(&watch) {
        return false;
    }
    let Ok(file) = dir.open_rw(&watch) else {
        return false;
    };
    // Held exclusively by a watch: a shared lock cannot be had.
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// Offers one message to a consumer, under its lock, if the consumer has not
/// handled that value yet. Returns whether the handler ran.
pub fn offer(
    bus: &Bus,
    consumer: &mut dyn Consumer,
    message: &Message,
    report: &mut Report,
) -> Result<bool> {
    let Some(addr) = message.address.as_ref().map(ToString::to_string) else {
        return Ok(false);
    };
    let (dir, file) = cursor_file(bus, consumer.name())?;
    let save = |c: &Cursors| save_cursors(&dir, &file, c);
    with_lock(&dir, &lock_name(&file), DEFAULT_WAIT, |_| {
        let mut cursors = load_cursors(&dir, &file)?;
        let value = Cursor::of_message(message);
        let entry = cursors.entry(addr.clone()).or_default();
        if !value.is_newer_than(&entry.done) || superseded(bus, message) {
            return Ok(false);
        }
        if entry.pending.as_ref() != Some(&value) {
            *entry = Entry {
                done: entry.done.clone(),
                pending: Some(value.clone()),
                ..Entry::default()
            };
        } else if entry.running {
            // The last attempt never reported back: the process died in it.
            entry.interrupted += 1;
        }
        let redelivered = entry.tried;
        let name = consumer.name().to_owned();
        let failure = |reason: String| Error::Consumer {
            consumer: name.clone(),
            path: message.path.clone(),
            reason,
        };
        if entry.interrupted >= MAX_INTERRUPTIONS {
            *entry = Entry::done(value);
            save(&cursors)?;
            report.given_up.push(failure(format!(
                "given up: the process died in the handler {MAX_INTERRUPTIONS} times in a row"
            )));
            return Ok(false);
        }
        // Marked before the handler runs, so an attempt that kills the
        // process (a panic, a host's timeout) is known at the next run.
        entry.running = true;
        entry.tried = true;
        save(&cursors)?;

        let outcome = consumer.handle(bus, message, redelivered);
        let entry = cursors.get_mut(&addr).expect("entry inserted above");
        entry.running = false;
        entry.interrupted = 0;
        match outcome {
            Ok(()) => {
                *entry = Entry::done(value);
                report.handled += 1;
                report.redelivered += usize::from(redelivered);
            }
            Err(e) if is_transient(&e) => {
                report.errors.push(failure(e.to_string()));
            }
            Err(e) => {
                entry.attempts += 1;
                if entry.attempts >= MAX_ATTEMPTS {
                    *entry = Entry::done(value);
                    report.given_up.push(failure(format!(
                        "given up after {MAX_ATTEMPTS} attempts: {e}"
                    )));
                } else {
                    report.errors.push(failure(e.to_string()));
                }
            }
        }
        save(&cursors)?;
        Ok(true)
    })
}

/// Whether the file a message was read from holds another value now (or is
/// gone): that value, not this one, is the key's latest, and is offered on
/// its own. Offering only the current value keeps a stale one, read before
/// a newer one was handled, from passing for new.
fn superseded(bus: &Bus, message: &Message) -> bool {
    let (Some(was), Some(a)) = (message.file, message.address.as_ref()) else {
        return false;
    };
    let now = bus
        .channel(&a.namespace, &a.channel, false)
        .and_then(|d| d.stat(&format!("{}.json", a.key)));
    match now {
        Ok(Some(meta)) => FileId::of(&meta) != was,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// One shot: offers every matching value newer than the consumer's cursor.
/// Unreadable files are skipped (treated as absent).
pub fn drain(bus: &Bus, consumer: &mut dyn Consumer) -> Result<Report> {
    let patterns = consumer.patterns();
    let set = compile_patterns(&patterns)?;
    let mut report = Report::default();
    for file in candidate_files(bus, &patterns) {
        let Some(addr) = bus.address_of(&file) else {
            continue;
        };
        if !set.is_match(addr.to_string()) {
            continue;
        }
        let Ok(msg) = bus.read_file(&file) else {
            continue;
        };
        offer(bus, consumer, &msg, &mut report)?;
    }
    forget_gone(bus, consumer.name(), &set)?;
    Ok(report)
}

/// Drops the cursors of keys that retention removed, so a cursor file stays
/// as small as the channel (and a key that comes back starts afresh). Whether
/// a key is gone is decided under the consumer's lock, at that moment.
fn forget_gone(bus: &Bus, name: &str, set: &GlobSet) -> Result<()> {
    let (dir, file) = cursor_file(bus, name)?;
    let exists = |k: &str| {
        let mut parts = k.splitn(3, '/');
        match (parts.next(), parts.next(), parts.next()) {
            // Gone only when the folder or the file is known to be missing:
            // an error (a folder refused, no descriptors left) is not "gone".
            (Some(ns), Some(ch), Some(key)) => match bus.channel(ns, ch, false) {
                Ok(d) => !matches!(d.stat(&format!("{key}.json")), Ok(None)),
                Err(Error::NotFound { .. }) => false,
                Err(_) => true,
            },
            _ => true,
        }
    };
    let gone = |k: &str, e: &Entry| set.is_match(k) && e.pending.is_none() && !exists(k);
    if !load_cursors(&dir, &file)?.iter().any(|(k, e)| gone(k, e)) {
        return Ok(());
    }
    with_lock(&dir, &lock_name(&file), DEFAULT_WAIT, |_| {
        let mut cursors = load_cursors(&dir, &file)?;
        cursors.retain(|k, e| !gone(k, e));
        save_cursors(&dir, &file, &cursors)
    })
}

/// Long-running: watches the root for every consumer's patterns and offers
/// each new value to the consumers that want it, until `keep_going` returns
/// false (checked at least every `tick`). Existing values newer than each
/// cursor are offered at start.
pub fn watch(
    bus: &Bus,
    consumers: &mut [Box<dyn Consumer>],
    opts: WatchOptions,
    tick: Duration,
    mut keep_going: impl FnMut(&Report) -> bool,
) -> Result<Report> {
    let sets: Vec<GlobSet> = consumers
        .iter()
        .map(|c| compile_patterns(&c.patterns()))
        .collect::<Result<_>>()?;
    let all: Vec<String> = consumers.iter().flat_map(|c| c.patterns()).collect();
    let mut sub = Subscription::new(
        bus,
        &all,
        WatchOptions {
            initial: true,
            ..opts
        },
    )?;
    let mut report = Report::default();
    // Consumers with a value that failed (handler error, lock timeout): the
    // subscription will not offer that value again, so a drain retries it
    // when the bus is idle, at most every ten ticks (a full disk can last).
    let mut retry = vec![false; consumers.len()];
    let mut last_retry = std::time::Instant::now();
    while keep_going(&report) {
        let Some(msg) = sub.next(tick)? else {
            if last_retry.elapsed() < tick * 10 {
                continue;
            }
            last_retry = std::time::Instant::now();
            for (c, again) in consumers.iter_mut().zip(&mut retry) {
                if std::mem::take(again) {
                    // Again only while handlers fail; a drain that cannot
                    // run at all waits for the next value instead.
                    match drain(bus, c.as_mut()) {
                        Ok(r) => {
                            *again = !r.errors.is_empty();
                            report.handled += r.handled;
                            report.redelivered += r.redelivered;
                            report.errors.extend(r.errors);
                            report.given_up.extend(r.given_up);
                        }
                        Err(e) => report.errors.push(e),
                    }
                }
            }
            continue;
        };
        let Some(addr) = msg.address.as_ref().map(ToString::to_string) else {
            continue;
        };
        for ((c, set), again) in consumers.iter_mut().zip(&sets).zip(&mut retry) {
            if set.is_match(&addr) {
                let before = report.errors.len();
                if let Err(e) = offer(bus, c.as_mut(), &msg, &mut report) {
                    report.errors.push(e);
                }
                *again |= report.errors.len() > before;
            }
        }
    }
    Ok(report)
}
