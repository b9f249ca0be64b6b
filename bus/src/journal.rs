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

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fsio::{MAX_MESSAGE_BYTES, read_capped, sync_dir, write_atomic};
use crate::lock::{DEFAULT_WAIT, with_lock};
use crate::paths::{ensure_private_dir, safe_key};
use crate::{Bus, Error, Result};

/// One journal.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
}

/// A claimed record: its unique name and content.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Unique, and sorts in append order.
    pub name: String,
    /// What was appended.
    pub value: Value,
}

impl Journal {
    /// The journal for `key` (e.g. a session id) on `bus`.
    pub fn new(bus: &Bus, key: &str) -> Self {
        Journal {
            dir: bus.root().join(".journal").join(safe_key(key)),
        }
    }

    /// The journal's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn sub(&self, name: &str) -> PathBuf {
        self.dir.join(name)
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
        let (tmp, new) = (self.sub("tmp"), self.sub("new"));
        for d in [&tmp, &new] {
            if !d.is_dir() {
                ensure_private_dir(d)?;
            }
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let name = format!(
            "{:020}-{:010}-{:08x}.json",
            now.as_nanos(),
            std::process::id(),
            rand32()
        );
        let staged = tmp.join(&name);
        let bytes = serde_json::to_vec(value).map_err(|e| Error::Json {
            path: staged.clone(),
            source: e,
        })?;
        // A record no reader would take is refused here, not lost later.
        if bytes.len() as u64 > MAX_MESSAGE_BYTES {
            return Err(Error::TooLarge {
                path: staged,
                size: bytes.len() as u64,
                limit: MAX_MESSAGE_BYTES,
            });
        }
        write_atomic(&staged, &bytes, true)?;
        let target = new.join(&name);
        std::fs::rename(&staged, &target).map_err(|e| Error::io(&target, e))?;
        sync_dir(&new)?;
        Ok(name)
    }

    /// Claims every unclaimed record (and any a dead claimer left in `cur/`),
    /// in append order.
    pub fn claim(&self) -> Result<Vec<Record>> {
        let (new, cur) = (self.sub("new"), self.sub("cur"));
        if !new.is_dir() && !cur.is_dir() {
            return Ok(Vec::new());
        }
        ensure_private_dir(&cur)?;
        for name in names(&new)? {
            // Losing this race means another claimer has it: skip.
            let _ = std::fs::rename(new.join(&name), cur.join(&name));
        }
        read_all(&cur)
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
        if !self.dir.is_dir() {
            return f(&[]);
        }
        with_lock(&self.dir.join(".claim.lock"), DEFAULT_WAIT, |_| {
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
        let (cur, done) = (self.sub("cur"), self.sub("done"));
        ensure_private_dir(&done)?;
        for r in records {
            let from = cur.join(&r.name);
            match std::fs::rename(&from, done.join(&r.name)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(from, e)),
            }
        }
        sync_dir(&done)
    }

    /// Every record ever appended (done, claimed and new), in append order.
    pub fn all(&self) -> Result<Vec<Record>> {
        let mut out = Vec::new();
        // In the order records move (new → cur → done), so one moving on
        // while this reads is seen at least once; the names dedup it.
        for sub in ["new", "cur", "done"] {
            out.extend(read_all(&self.sub(sub))?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }
}

fn names(dir: &Path) -> Result<Vec<String>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .collect();
    v.sort();
    Ok(v)
}

fn read_all(dir: &Path) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for name in names(dir)? {
        let path = dir.join(&name);
        // A record that vanished (moved on by another claimer) or is unreadable is skipped.
        let Ok(bytes) = read_capped(&path, MAX_MESSAGE_BYTES) else {
            continue;
        };
        let Ok(value) = serde_json::from_slice(&bytes) else {
            continue;
        };
        out.push(Record { name, value });
    }
    Ok(out)
}

fn rand32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish() as u32
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
        assert_eq!(names(&j.sub("tmp")).unwrap(), Vec::<String>::new());
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
