//! An append-only journal whose records are never lost or counted twice, in
//! the maildir manner: a record is written to `tmp/`, fsynced, and renamed into
//! `new/` under a unique name; a reader claims records by renaming them from
//! `new/` to `cur/` (only one claimer can win a rename) and, once what it made
//! of them is safely written, commits them by renaming them to `done/`.
//! Records left in `cur/` by a claimer that died are claimed again by the next
//! one. [`Journal::with_claimed`] holds the journal's own lock from the claim
//! to the commit, so two claimers never render the same records.
//!
//! Journals live at `<root>/.journal/<safe key>/`.

use std::path::PathBuf;

use serde_json::Value;

use crate::fsio::{Dir, MAX_MESSAGE_BYTES};
use crate::lock::{DEFAULT_WAIT, with_lock};
use crate::paths::safe_key;
use crate::{Bus, Error, Result};

/// One journal.
#[derive(Debug, Clone)]
pub struct Journal {
    bus: Bus,
    key: String,
}

/// A claimed record: its unique name and content.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Unique, and sorts in append order.
    pub name: String,
    /// What was appended.
    pub value: Value,
}

/// The folder of all journals, under the root.
pub const JOURNALS: &str = ".journal";

impl Journal {
    /// The journal for `key` (e.g. a session id) on `bus`.
    pub fn new(bus: &Bus, key: &str) -> Self {
        Journal {
            bus: bus.clone(),
            key: safe_key(key),
        }
    }

    /// The journal's folder.
    pub fn dir(&self) -> PathBuf {
        self.bus.root().join(JOURNALS).join(&self.key)
    }

    /// The journal's folder as a verified handle (`None` when it does not exist).
    fn open(&self, create: bool) -> Result<Option<Dir>> {
        match self.bus.dir(&[JOURNALS, &self.key], create) {
            Ok(d) => Ok(Some(d)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Appends a record durably under a unique name; returns the name.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let bus = interband::Bus::new(dir.path());
    /// let j = interband::journal::Journal::new(&bus, "sess");
    /// j.append(&serde_json::json!({"tool": "Bash"})).unwrap();
    /// let claimed = j.claim().unwrap();
    /// assert_eq!(claimed.len(), 1);
    /// j.commit(&claimed).unwrap();
    /// assert!(j.claim().unwrap().is_empty());
    /// assert_eq!(j.all().unwrap().len(), 1);
    /// ```
    pub fn append(&self, value: &Value) -> Result<String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let name = format!(
            "{:020}-{:010}-{:08x}.json",
            now.as_nanos(),
            std::process::id(),
            crate::fsio::random64() as u32
        );
        let bytes = serde_json::to_vec(value).map_err(|e| Error::Json {
            path: self.dir().join("tmp").join(&name),
            source: e,
        })?;
        // A record no reader would take is refused here, not lost later.
        if bytes.len() as u64 > MAX_MESSAGE_BYTES {
            return Err(Error::TooLarge {
                path: self.dir().join("tmp").join(&name),
                size: bytes.len() as u64,
                limit: MAX_MESSAGE_BYTES,
            });
        }
        let dir = self.open(true)?.expect("created");
        let (tmp, new) = (dir.sub("tmp", true)?, dir.sub("new", true)?);
        // Written and fsynced in tmp/, then moved into new/ under its unique name.
        if !tmp.deliver(&new, &name, &bytes)? {
            return Err(Error::io(
                new.join(&name),
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        Ok(name)
    }

    /// Claims every unclaimed record (and any a dead claimer left in `cur/`),
    /// in append order.
    pub fn claim(&self) -> Result<Vec<Record>> {
        let Some(dir) = self.open(false)? else {
            return Ok(Vec::new());
        };
        let new = sub(&dir, "new")?;
        let cur = dir.sub("cur", true)?;
        if let Some(new) = &new {
            for name in new.file_names(".json")? {
                // Losing this race means another claimer has it: skip.
                let _ = new.rename(&name, &cur, &name);
            }
        }
        read_all(Some(&cur))
    }

    /// Claims the unclaimed records under the journal's lock, gives them to
    /// `f`, and commits them if `f` succeeds (else they stay claimed, for the
    /// next claimer). The lock spans claim to commit, so concurrent claimers
    /// never both use a record.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let bus = interband::Bus::new(dir.path());
    /// let j = interband::journal::Journal::new(&bus, "sess");
    /// j.append(&serde_json::json!({"tool": "Edit"})).unwrap();
    /// assert_eq!(j.with_claimed(|r| Ok(r.len())).unwrap(), 1);
    /// assert_eq!(j.with_claimed(|r| Ok(r.len())).unwrap(), 0);
    /// ```
    pub fn with_claimed<R>(&self, f: impl FnOnce(&[Record]) -> Result<R>) -> Result<R> {
        let Some(dir) = self.open(false)? else {
            return f(&[]);
        };
        with_lock(&dir, ".claim.lock", DEFAULT_WAIT, |_| {
            let records = self.claim()?;
            let out = f(&records)?;
            self.commit(&records)?;
            Ok(out)
        })
    }

    /// Marks claimed records as done (after their content is safely used).
    pub fn commit(&self, records: &[Record]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let Some(dir) = self.open(false)? else {
            return Ok(());
        };
        let (cur, done) = (dir.sub("cur", true)?, dir.sub("done", true)?);
        for r in records {
            cur.rename(&r.name, &done, &r.name)?;
        }
        done.sync()
    }

    /// Every record ever appended (done, claimed and new), in append order.
    pub fn all(&self) -> Result<Vec<Record>> {
        let Some(dir) = self.open(false)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        // In the order records move (new → cur → done), so one moving on
        // while this reads is seen at least once; the names dedup it.
        for name in ["new", "cur", "done"] {
            out.extend(read_all(sub(&dir, name)?.as_ref())?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }
}

/// An existing sub-folder, `None` when missing.
fn sub(dir: &Dir, name: &str) -> Result<Option<Dir>> {
    match dir.sub(name, false) {
        Ok(d) => Ok(Some(d)),
        Err(Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn read_all(dir: Option<&Dir>) -> Result<Vec<Record>> {
    let Some(dir) = dir else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for name in dir.file_names(".json")? {
        // A record that vanished (moved on by another claimer) or is unreadable is skipped.
        let Ok(bytes) = dir.read(&name, MAX_MESSAGE_BYTES) else {
            continue;
        };
        let Ok(value) = serde_json::from_slice(&bytes) else {
            continue;
        };
        out.push(Record { name, value });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn concurrent_appends_and_claims_lose_nothing_and_count_nothing_twice() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let claimed = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..4 {
                let bus = &bus;
                s.spawn(move || {
                    let j = Journal::new(bus, "s");
                    for i in 0..50 {
                        j.append(&json!({"t": t, "i": i})).unwrap();
                    }
                });
            }
            for _ in 0..3 {
                let (bus, claimed) = (&bus, &claimed);
                s.spawn(move || {
                    let j = Journal::new(bus, "s");
                    for _ in 0..30 {
                        // Nothing serializes these claimers but the journal's own lock.
                        let got = j
                            .with_claimed(|r| Ok(r.iter().map(|r| r.name.clone()).collect()))
                            .unwrap();
                        claimed.lock().unwrap().extend::<Vec<_>>(got);
                    }
                });
            }
        });
        let j = Journal::new(&bus, "s");
        let rest: Vec<String> = j
            .with_claimed(|r| Ok(r.iter().map(|r| r.name.clone()).collect()))
            .unwrap();
        let mut names = claimed.into_inner().unwrap();
        names.extend(rest);
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(names.len(), 200, "each record claimed exactly once");
        assert_eq!(unique.len(), 200);
        assert_eq!(j.all().unwrap().len(), 200);
    }

    #[test]
    fn a_record_no_reader_would_take_is_refused_at_append() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let j = Journal::new(&bus, "s");
        let big = json!({"blob": "x".repeat(MAX_MESSAGE_BYTES as usize)});
        assert!(matches!(j.append(&big), Err(Error::TooLarge { .. })));
        j.append(&json!({"small": true})).unwrap();
        assert_eq!(j.with_claimed(|r| Ok(r.len())).unwrap(), 1);
        let tmp = bus.dir(&[JOURNALS, "s", "tmp"], false).unwrap();
        assert!(tmp.entries().unwrap().is_empty());
    }

    #[test]
    fn a_failed_use_leaves_the_records_claimed_for_the_next_claimer() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let j = Journal::new(&bus, "s");
        j.append(&json!({"i": 1})).unwrap();
        let failed = j.with_claimed(|_| -> Result<()> { Err(Error::NoRoot) });
        assert!(failed.is_err());
        assert_eq!(j.with_claimed(|r| Ok(r.len())).unwrap(), 1);
        assert_eq!(j.with_claimed(|r| Ok(r.len())).unwrap(), 0);
    }

    #[test]
    fn a_dead_claimers_records_are_claimed_again() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(&Bus::new(dir.path()), "s");
        j.append(&json!(1)).unwrap();
        let first = j.claim().unwrap();
        // The claimer dies before commit: the next claim gets the record again.
        let again = j.claim().unwrap();
        assert_eq!(first, again);
        j.commit(&again).unwrap();
        assert!(j.claim().unwrap().is_empty());
        assert!(
            Journal::new(&Bus::new(dir.path()), "none")
                .claim()
                .unwrap()
                .is_empty()
        );
    }
}
