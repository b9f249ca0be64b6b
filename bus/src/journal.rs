//! An append-only journal whose records are never lost or counted twice, in
//! the maildir manner: a record is written to `tmp/`, fsynced, and renamed into
//! `new/` under a unique name; a reader claims records by renaming them from
//! `new/` to `cur/` (only one claimer can win a rename) and, once what it made
//! of them is safely written, commits them by renaming them to `done/`.
//! Records left in `cur/` by a claimer that died are claimed again by the next
//! one (callers serialize claimers of one journal with a lock).
//!
//! Journals live at `<root>/.journal/<safe key>/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fsio::{MAX_MESSAGE_BYTES, read_capped, sync_dir, write_atomic};
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
        for sub in ["done", "cur", "new"] {
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
                        // Claimers are serialized by their caller (intermem holds a lock).
                        let mut all = claimed.lock().unwrap();
                        let got = j.claim().unwrap();
                        j.commit(&got).unwrap();
                        all.extend(got.into_iter().map(|r| r.name));
                    }
                });
            }
        });
        let j = Journal::new(&bus, "s");
        let rest = j.claim().unwrap();
        let mut names = claimed.into_inner().unwrap();
        names.extend(rest.iter().map(|r| r.name.clone()));
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(names.len(), 200, "each record claimed exactly once");
        assert_eq!(unique.len(), 200);
        assert_eq!(j.all().unwrap().len(), 200);
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
