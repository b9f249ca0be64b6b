//! The plug-in point: a [`Consumer`] names the keys it wants and handles each
//! new value; a runner feeds it, once per `(key, seq)`.
//!
//! Two modes share one cursor per consumer (`<root>/.consumers/<name>.json`):
//! [`drain`] is one shot (every value newer than the cursor, for hooks), and
//! [`watch`] is long-running. A value is offered under the consumer's lock and
//! the cursor is advanced before the lock is released, so a drain and a watch
//! running at the same time never both handle it. The value is marked
//! *pending* before the handler runs: if the process is killed mid-way, the
//! next run offers it again with `redelivered` set, and a handler whose effect
//! is keyed by the message's identity (e.g. a file named after key and seq)
//! makes that effect exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

use globset::GlobSet;
use serde::{Deserialize, Serialize};

use crate::fsio::Dir;
use crate::lock::{DEFAULT_WAIT, lock_name, with_lock};
use crate::paths::check_segment;
use crate::watch::{WatchOptions, candidate_files, compile_patterns};
use crate::{Bus, Envelope, Error, Message, Result, Subscription};

/// A handler's error: anything printable.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// Attempts before a failing value is given up on (and the cursor moves past it).
pub const MAX_ATTEMPTS: u32 = 3;

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// The value's seq (0 for v1 writers).
    pub seq: u64,
    /// The value's timestamp.
    pub timestamp: String,
}

impl Cursor {
    /// The cursor position of an envelope.
    pub fn of<P>(e: &Envelope<P>) -> Self {
        Cursor {
            seq: e.seq,
            timestamp: e.timestamp.clone(),
        }
    }

    /// True when this value comes after `before`. Between two values of
    /// ours a higher seq is newer, and so is a later timestamp (one seq has
    /// one timestamp: a later one means the key's seq restarted). When a v1
    /// writer (no seq) is on either side, the timestamp decides and the seq
    /// breaks a tie, so a stale value of ours offered late never passes for
    /// the v1 value that replaced it. (Two v1 writes in the same second look
    /// like one value: v1 timestamps have one-second resolution.)
    ///
    /// ```
    /// use interband::consumer::Cursor;
    /// let c = |seq, ts: &str| Cursor { seq, timestamp: ts.into() };
    /// let (t1, t2) = ("2026-11-30T00:00:01Z", "2026-11-30T00:00:02Z");
    /// assert!(c(5, t1).is_newer_than(&c(4, t1)));
    /// assert!(!c(4, t1).is_newer_than(&c(4, t1)));
    /// assert!(c(1, t2).is_newer_than(&c(9, t1)), "the seq restarted");
    /// assert!(c(1, t2).is_newer_than(&c(1, t1)), "restarted at the same seq");
    /// assert!(c(0, t2).is_newer_than(&c(5, t1)), "a v1 writer came after");
    /// assert!(!c(5, t1).is_newer_than(&c(0, t2)), "a stale value after the v1 one");
    /// assert!(c(6, t2).is_newer_than(&c(0, t2)), "ours again, same second");
    /// ```
    pub fn is_newer_than(&self, before: &Cursor) -> bool {
        if self.seq > 0 && before.seq > 0 {
            self.seq > before.seq || self.timestamp > before.timestamp
        } else {
            (self.timestamp.as_str(), self.seq) > (before.timestamp.as_str(), before.seq)
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(flatten)]
    done: Cursor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<Cursor>,
    #[serde(default, skip_serializing_if = "is_zero")]
    attempts: u32,
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
    /// Handler failures (the value is retried up to [`MAX_ATTEMPTS`] times).
    pub errors: Vec<Error>,
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
        let value = Cursor::of(&message.envelope);
        let entry = cursors.entry(addr.clone()).or_default();
        if !value.is_newer_than(&entry.done) {
            return Ok(false);
        }
        let redelivered = entry.pending.as_ref() == Some(&value);
        if !redelivered {
            entry.attempts = 0;
        }
        let name = consumer.name().to_owned();
        let failure = |reason: String| Error::Consumer {
            consumer: name.clone(),
            path: message.path.clone(),
            reason,
        };
        // Every attempt is counted before the handler runs, so one that
        // kills the process (a panic, a host's timeout) is counted too.
        if entry.attempts >= MAX_ATTEMPTS {
            *entry = Entry {
                done: value,
                pending: None,
                attempts: 0,
            };
            save(&cursors)?;
            report.errors.push(failure(format!(
                "given up after {MAX_ATTEMPTS} interrupted attempts"
            )));
            return Ok(false);
        }
        entry.attempts += 1;
        entry.pending = Some(value.clone());
        save(&cursors)?;

        let outcome = consumer.handle(bus, message, redelivered);
        let entry = cursors.get_mut(&addr).expect("entry inserted above");
        match outcome {
            Ok(()) => {
                *entry = Entry {
                    done: value,
                    pending: None,
                    attempts: 0,
                };
                report.handled += 1;
                report.redelivered += usize::from(redelivered);
            }
            Err(e) => {
                if entry.attempts >= MAX_ATTEMPTS {
                    *entry = Entry {
                        done: value,
                        pending: None,
                        attempts: 0,
                    };
                }
                report.errors.push(failure(e.to_string()));
            }
        }
        save(&cursors)?;
        Ok(true)
    })
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
    // when the bus is idle, within the runner's attempt limit.
    let mut retry = vec![false; consumers.len()];
    while keep_going(&report) {
        let Some(msg) = sub.next(tick)? else {
            for (c, again) in consumers.iter_mut().zip(&mut retry) {
                if std::mem::take(again) {
                    // Again only while handlers fail (the attempt limit ends
                    // that); a drain that cannot run at all waits for the
                    // next value instead of spinning.
                    match drain(bus, c.as_mut()) {
                        Ok(r) => {
                            *again = !r.errors.is_empty();
                            report.handled += r.handled;
                            report.redelivered += r.redelivered;
                            report.errors.extend(r.errors);
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
