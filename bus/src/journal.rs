//! An append-only journal whose records are never lost or counted twice, in
//! the maildir manner: a record is written to `tmp/`, fsynced, and renamed into
//! `new/` under a unique name; a reader claims records by renaming them from
//! `new/` to `cur/` (only one claimer can win a rename) and, once what it made
//! of them is safely written, commits them by renaming them to `done/`.
//! Records left in `cur/` by a claimer that died are claimed again by the next
//! one. [`Journal::with_claimed`] holds the journal's own lock from the claim
//! to the commit, so two claimers never render the same records.
//!
//! A claim names what it makes of the records (its *claimant*, e.g. the note
//! file it writes) in `claims/<claimant>.json` before using them. A claimer
//! killed after making it but before the commit leaves that manifest: the
//! next claimer sees the claimant was made and commits those records instead
//! of using them again, so a record lands in exactly one claimant even across
//! kills. The manifests stay, so [`Journal::claimed_by`] tells later which
//! records went where.
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
    /// Unique, and sorts in the order records were made: by the time given
    /// to [`Journal::append_at`], then by when they were appended. That
    /// order is what "append order" means in the methods of [`Journal`].
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
        self.append_at(value, now_secs())
    }

    /// [`Journal::append`] of a record made at `at` (Unix seconds; the
    /// caller's clock, virtual in a replay). The name starts with that time,
    /// then the wall clock's: names sort in the order records were made, and
    /// [`Journal::since`] finds the recent ones without reading the others.
    pub fn append_at(&self, value: &Value, at: f64) -> Result<String> {
        let name = format!(
            "{:020}-{:020}-{:010}-{:08x}.json",
            nanos(at),
            nanos(now_secs()),
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
    /// never both use a record. (A claim with no name: see
    /// [`Journal::with_claimed_for`] for one that survives a kill.)
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
        self.with_claimed_for(None, &|_| false, f)
    }

    /// [`Journal::with_claimed`] for `claimant`: what `f` makes of the
    /// records, which `made(claimant)` can tell afterwards (e.g. a file that
    /// exists). A claim whose claimer died after making its claimant is
    /// committed, not used again.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let bus = interband::Bus::new(dir.path());
    /// let j = interband::journal::Journal::new(&bus, "sess");
    /// j.append(&serde_json::json!({"tool": "Bash"})).unwrap();
    /// let names = j.with_claimed_for(Some("note-1.md"), &|_| false, |r| Ok(r.len())).unwrap();
    /// assert_eq!(names, 1);
    /// assert_eq!(j.claimed_by("note-1.md").unwrap().len(), 1);
    /// ```
    pub fn with_claimed_for<R>(
        &self,
        claimant: Option<&str>,
        made: &dyn Fn(&str) -> bool,
        f: impl FnOnce(&[Record]) -> Result<R>,
    ) -> Result<R> {
        let Some(dir) = self.open(false)? else {
            return f(&[]);
        };
        with_lock(&dir, ".claim.lock", DEFAULT_WAIT, |_| {
            self.settle(&dir, made)?;
            let records = self.claim()?;
            let claims = dir.sub("claims", true)?;
            let manifest = claimant.map(|c| format!("{}.json", safe_key(c)));
            let write = |done: bool| -> Result<()> {
                let Some(m) = &manifest else { return Ok(()) };
                let body = serde_json::json!({
                    "claimant": claimant,
                    "records": records.iter().map(|r| &r.name).collect::<Vec<_>>(),
                    "done": done,
                });
                claims.write(m, body.to_string().as_bytes(), true)
            };
            if !records.is_empty() {
                write(false)?;
            }
            let out = f(&records)?;
            self.commit(&records)?;
            if !records.is_empty() {
                write(true)?;
            }
            Ok(out)
        })
    }

    /// Under the lock: a claim left unfinished by a claimer that died is
    /// committed when its claimant was made, else dropped (its records, in
    /// `cur/`, go to the next claimer).
    ///
    /// Only a claimer that died leaves records in `cur/`: with none there,
    /// there is nothing to settle, and the manifests (one per note ever
    /// written) are not read. A manifest left unfinished by a claimer killed
    /// after its commit (its records all in `done/`) then stays so until a
    /// later settle; it names the same records either way.
    fn settle(&self, dir: &Dir, made: &dyn Fn(&str) -> bool) -> Result<()> {
        let pending = sub(dir, "cur")?.map_or(Ok(Vec::new()), |cur| cur.file_names(".json"))?;
        if pending.is_empty() {
            return Ok(());
        }
        let Some(claims) = sub(dir, "claims")? else {
            return Ok(());
        };
        for name in claims.file_names(".json")? {
            let Ok(bytes) = claims.read(&name, MAX_MESSAGE_BYTES) else {
                continue;
            };
            let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            if v["done"].as_bool() != Some(false) {
                continue;
            }
            let claimant = v["claimant"].as_str().unwrap_or("");
            if !claimant.is_empty() && made(claimant) {
                let cur = dir.sub("cur", true)?;
                let records: Vec<Record> = v["records"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .filter(|n| matches!(cur.stat(n), Ok(Some(_))))
                    .map(|n| Record {
                        name: n.to_owned(),
                        value: Value::Null,
                    })
                    .collect();
                self.commit(&records)?;
                let mut v = v;
                v["done"] = Value::Bool(true);
                claims.write(&name, v.to_string().as_bytes(), true)?;
            } else {
                claims.remove(&name)?;
            }
        }
        Ok(())
    }

    /// Settles a claim left unfinished (see [`Journal::with_claimed_for`])
    /// without claiming anything new.
    pub fn recover(&self, made: &dyn Fn(&str) -> bool) -> Result<()> {
        let Some(dir) = self.open(false)? else {
            return Ok(());
        };
        with_lock(&dir, ".claim.lock", DEFAULT_WAIT, |_| {
            self.settle(&dir, made)
        })
    }

    /// The names of the records `claimant` took, in append order.
    pub fn claimed_by(&self, claimant: &str) -> Result<Vec<String>> {
        let Some(dir) = self.open(false)? else {
            return Ok(Vec::new());
        };
        let Some(claims) = sub(&dir, "claims")? else {
            return Ok(Vec::new());
        };
        let bytes = match claims.read(&format!("{}.json", safe_key(claimant)), MAX_MESSAGE_BYTES) {
            Ok(b) => b,
            Err(Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let mut names: Vec<String> = v["records"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
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

    /// The records made after `after` (Unix seconds, the time given to
    /// [`Journal::append_at`]; done, claimed and new), in append order. Only
    /// those records are read: their names tell their time.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let bus = interband::Bus::new(dir.path());
    /// let j = interband::journal::Journal::new(&bus, "sess");
    /// j.append_at(&serde_json::json!({"n": 1}), 100.0).unwrap();
    /// j.append_at(&serde_json::json!({"n": 2}), 200.0).unwrap();
    /// let recent = j.since(150.0).unwrap();
    /// assert_eq!(recent.len(), 1);
    /// assert_eq!(recent[0].value["n"], 2);
    /// ```
    pub fn since(&self, after: f64) -> Result<Vec<Record>> {
        let after = nanos(after);
        self.gather(&|name| name_time(name).is_none_or(|t| t > after))
    }

    /// Every record ever appended (done, claimed and new), in append order.
    pub fn all(&self) -> Result<Vec<Record>> {
        self.gather(&|_| true)
    }

    /// The records whose names `wanted` takes, in append order.
    fn gather(&self, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<Record>> {
        let Some(dir) = self.open(false)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        // In the order records move (new → cur → done), so one moving on
        // while this reads is seen at least once; the names dedup it.
        for name in ["new", "cur", "done"] {
            out.extend(read_some(sub(&dir, name)?.as_ref(), wanted)?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        Ok(out)
    }
}

/// Removes the journals nothing has touched for `idle` (no record appended,
/// claimed or committed, no folder changed): a session gone that long has
/// had its notes and summary written, and its journal would otherwise stay
/// for the life of the root. Returns the journal folders removed. Never
/// follows a link; a journal it cannot read is left alone.
///
/// ```
/// # let tmp = tempfile::tempdir().unwrap();
/// let bus = interband::Bus::new(tmp.path());
/// interband::journal::Journal::new(&bus, "s").append(&serde_json::json!({})).unwrap();
/// let week = std::time::Duration::from_secs(7 * 86_400);
/// assert!(interband::journal::prune_idle(&bus, week).is_empty(), "just written");
/// ```
pub fn prune_idle(bus: &Bus, idle: std::time::Duration) -> Vec<PathBuf> {
    let Ok(all) = bus.dir(&[JOURNALS], false) else {
        return Vec::new();
    };
    let now = std::time::SystemTime::now();
    let quiet = |dir: &Dir, name: &str| matches!(dir.stat(name), Ok(Some(m)) if m.age(now) > idle);
    let live = crate::retention::live_sessions(bus);
    let mut removed = Vec::new();
    for name in names(&all) {
        if live.contains(&name) {
            continue;
        }
        let Ok(journal) = all.sub(&name, false) else {
            continue;
        };
        // Its folders (new, cur, done, claims, tmp) and their files, all quiet.
        let parts = names(&journal);
        let subs: Vec<Option<Dir>> = parts.iter().map(|p| journal.sub(p, false).ok()).collect();
        let idle_all = quiet(&all, &name)
            && parts.iter().zip(&subs).all(|(p, sub)| {
                quiet(&journal, p)
                    && sub
                        .as_ref()
                        .is_none_or(|d| names(d).iter().all(|f| quiet(d, f)))
            });
        if !idle_all {
            continue;
        }
        // Each folder's handle is let go before the folder is removed:
        // Windows without POSIX deletes (and Wine) keeps a folder someone
        // holds, and so its parent is not empty yet.
        for (p, sub) in parts.iter().zip(subs) {
            match sub {
                Some(d) => {
                    for f in names(&d) {
                        let _ = d.remove(&f);
                    }
                    drop(d);
                    let _ = journal.remove_dir(p);
                }
                None => {
                    let _ = journal.remove(p);
                }
            }
        }
        drop(journal);
        if all.remove_dir(&name).unwrap_or(false) {
            removed.push(all.join(&name));
        }
    }
    removed
}

/// The names in a folder (none when it cannot be listed).
fn names(dir: &Dir) -> Vec<String> {
    dir.entries()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.name.into_string().ok())
        .collect()
}

/// An existing sub-folder, `None` when missing.
fn sub(dir: &Dir, name: &str) -> Result<Option<Dir>> {
    match dir.sub(name, false) {
        Ok(d) => Ok(Some(d)),
        Err(Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Seconds since the Unix epoch, now.
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// A time in whole nanoseconds (0 before the epoch or not a number).
fn nanos(secs: f64) -> u64 {
    (secs * 1e9) as u64
}

/// The time a record's name starts with, in nanoseconds (`None` for a
/// name not made by [`Journal::append_at`]). Names made before it started
/// with the wall clock's time, which was the record's own.
fn name_time(name: &str) -> Option<u64> {
    name.get(..20)?.parse().ok()
}

fn read_all(dir: Option<&Dir>) -> Result<Vec<Record>> {
    read_some(dir, &|_| true)
}

fn read_some(dir: Option<&Dir>, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<Record>> {
    let Some(dir) = dir else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for name in dir.file_names(".json")?.into_iter().filter(|n| wanted(n)) {
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

    /// Sets the mtime of everything under `path` (and itself) to `ago` before now.
    fn age_all(path: &std::path::Path, ago: std::time::Duration) {
        let t = std::time::SystemTime::now() - ago;
        if path.is_dir() {
            for e in std::fs::read_dir(path).unwrap() {
                age_all(&e.unwrap().path(), ago);
            }
        }
        // (A folder's times too, which std cannot set on Windows.)
        filetime::set_file_mtime(path, filetime::FileTime::from_system_time(t)).unwrap();
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 says the idle journal's folder was removed and keeps its name (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn only_journals_idle_past_the_limit_are_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let week = std::time::Duration::from_secs(7 * 86_400);
        let eight_days = std::time::Duration::from_secs(8 * 86_400);
        for s in ["gone", "recent", "woken"] {
            let j = Journal::new(&bus, s);
            j.append(&json!({"tool": "Bash"})).unwrap();
            j.with_claimed_for(Some("note-1.md"), &|_| false, |r| Ok(r.len()))
                .unwrap();
            j.append(&json!({"tool": "Edit"})).unwrap();
            if s != "recent" {
                age_all(&j.dir(), eight_days);
            }
        }
        // One record of "woken" is new: the whole journal stays.
        Journal::new(&bus, "woken")
            .append(&json!({"tool": "Read"}))
            .unwrap();
        let removed = prune_idle(&bus, week);
        assert_eq!(removed, [Journal::new(&bus, "gone").dir()]);
        assert!(!Journal::new(&bus, "gone").dir().exists());
        assert_eq!(Journal::new(&bus, "recent").all().unwrap().len(), 2);
        assert_eq!(Journal::new(&bus, "woken").all().unwrap().len(), 3);
        assert!(prune_idle(&bus, week).is_empty());
    }

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
    fn a_claimer_killed_after_making_its_claimant_never_gives_its_records_twice() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("root"));
        let j = Journal::new(&bus, "s");
        let made = std::sync::Mutex::new(Vec::<String>::new());
        let is_made = |n: &str| made.lock().unwrap().iter().any(|m| m == n);
        for i in 0..3 {
            j.append(&json!({"i": i})).unwrap();
        }
        // Killed (a panic here) after the note is made, before the commit.
        let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            j.with_claimed_for(Some("note-1.md"), &is_made, |r| -> Result<()> {
                assert_eq!(r.len(), 3);
                made.lock().unwrap().push("note-1.md".into());
                panic!("killed");
            })
        }));
        assert!(killed.is_err());
        j.append(&json!({"i": 3})).unwrap();
        let next = j
            .with_claimed_for(Some("note-2.md"), &is_made, |r| Ok(r.to_vec()))
            .unwrap();
        assert_eq!(next.len(), 1, "only the new record: {next:?}");
        assert_eq!(next[0].value, json!({"i": 3}));
        assert_eq!(j.claimed_by("note-1.md").unwrap().len(), 3);
        assert_eq!(j.claimed_by("note-2.md").unwrap().len(), 1);
        // Killed before its note was made: the records go to the next claim.
        j.append(&json!({"i": 4})).unwrap();
        let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            j.with_claimed_for(Some("note-3.md"), &is_made, |_| -> Result<()> {
                panic!("killed")
            })
        }));
        assert!(killed.is_err());
        let last = j
            .with_claimed_for(Some("note-4.md"), &is_made, |r| Ok(r.len()))
            .unwrap();
        assert_eq!(last, 1);
        assert!(j.claimed_by("note-3.md").unwrap().is_empty());
        assert_eq!(j.all().unwrap().len(), 5);
    }

    #[test]
    fn since_gives_the_records_made_after_a_time_in_order_old_names_included() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let j = Journal::new(&bus, "s");
        // Made out of order (a replay's clock), claimed and committed or not.
        j.append_at(&json!({"t": 300}), 300.0).unwrap();
        j.append_at(&json!({"t": 100}), 100.0).unwrap();
        let claimed = j.claim().unwrap();
        j.commit(&claimed).unwrap();
        j.append_at(&json!({"t": 200}), 200.0).unwrap();
        // A record named as before append_at: wall-clock nanoseconds first.
        let done = bus.dir(&[JOURNALS, "s", "done"], true).unwrap();
        let old = format!("{:020}-{:010}-{:08x}.json", 250_000_000_000u64, 7, 1);
        done.write(&old, br#"{"t": 250}"#, false).unwrap();
        let times = |r: Vec<Record>| {
            r.iter()
                .map(|r| r.value["t"].as_u64().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(times(j.since(150.0).unwrap()), [200, 250, 300]);
        assert_eq!(times(j.since(0.0).unwrap()), [100, 200, 250, 300]);
        assert_eq!(times(j.all().unwrap()), [100, 200, 250, 300]);
        assert!(j.since(300.0).unwrap().is_empty());
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
