//! Retention: prune a channel by age and count (protocol v1 defaults, env
//! overrides, throttle stamp), and sweep temp files left by crashed writers.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::fsio::{Dir, Kind};
use crate::lock::{lock_name, with_lock};
use crate::registry::channel_policy;
use crate::{Bus, Error, Result};

/// The throttle stamp's file name in each channel folder.
pub const STAMP: &str = ".interband-prune.stamp";

/// A temp file older than this is a crashed writer's leftover.
pub const STALE_TEMP: Duration = Duration::from_secs(60);

/// What a prune removed.
#[derive(Debug, Default, Clone)]
pub struct PruneReport {
    /// Messages removed (too old, or over the count).
    pub removed: Vec<PathBuf>,
    /// Crashed writers' temp files removed.
    pub temp_removed: Vec<PathBuf>,
    /// True when the throttle stamp said it was too soon and nothing was done.
    pub throttled: bool,
}

/// The shortest retention a setting may give: a minute. A shorter one (`0`,
/// a negative number) would remove values as soon as they are written, a
/// session's checkpoint before anything acts on it; it is refused (the
/// channel's own retention is used) and said by [`problems`].
pub const MIN_RETENTION_SECS: u64 = 60;

/// A session is live while its pressure (`interpulse/pressure/<session>`)
/// is younger than this: a day. Its values in every channel are kept,
/// whatever their age or the channel's count.
pub const LIVE: Duration = Duration::from_secs(86_400);

/// Retention and count for a channel after environment overrides, as v1:
/// `INTERBAND_RETENTION_<NS>_<CH>_SECS`, then `INTERBAND_RETENTION_SECS`;
/// `INTERBAND_MAX_FILES_<NS>_<CH>`, then `INTERBAND_MAX_FILES`.
/// A retention under [`MIN_RETENTION_SECS`] is refused (the next setting
/// down, else the channel's own, is used); a count ≤ 0 means no count limit.
///
/// ```
/// let (secs, max) = interband::retention::limits("clavain", "dispatch", |_| None);
/// assert_eq!((secs, max), (6 * 3600, Some(128)));
/// let (secs, max) = interband::retention::limits("clavain", "dispatch", |k| match k {
///     "INTERBAND_RETENTION_CLAVAIN_DISPATCH_SECS" => Some("60".into()),
///     "INTERBAND_MAX_FILES" => Some("0".into()),
///     _ => None,
/// });
/// assert_eq!((secs, max), (60, None));
/// let (secs, _) = interband::retention::limits("intermem", "note", |k| {
///     (k == "INTERBAND_RETENTION_SECS").then(|| "0".into())
/// });
/// assert_eq!(secs, 7 * 24 * 3600, "0 would remove every note as it is written");
/// ```
pub fn limits(
    namespace: &str,
    channel: &str,
    env: impl Fn(&str) -> Option<String>,
) -> (u64, Option<usize>) {
    let int = |name: &str| env(name).and_then(|v| v.trim().parse::<i64>().ok());
    let secs = |name: &str| int(name).filter(|v| *v >= MIN_RETENTION_SECS as i64);
    let tag = format!("{}_{}", env_safe(namespace), env_safe(channel));
    let policy = channel_policy(namespace, channel);
    let secs = secs(&format!("INTERBAND_RETENTION_{tag}_SECS"))
        .or_else(|| secs("INTERBAND_RETENTION_SECS"))
        .map_or(policy.retention_secs, |v| v as u64);
    let max = int(&format!("INTERBAND_MAX_FILES_{tag}"))
        .or_else(|| int("INTERBAND_MAX_FILES"))
        .map_or(Some(policy.max_files), |v| (v > 0).then_some(v as usize));
    (secs, max)
}

/// The retention settings [`limits`] refuses, each said in one line: the
/// global one and those of the channels interband knows.
///
/// ```
/// let said = interband::retention::problems(|k| {
///     (k == "INTERBAND_RETENTION_SECS").then(|| "0".into())
/// });
/// assert!(said[0].contains("INTERBAND_RETENTION_SECS=0"), "{said:?}");
/// assert!(interband::retention::problems(|_| None).is_empty());
/// ```
pub fn problems(env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let known = crate::registry::CHANNELS
        .iter()
        .map(|(n, c, _)| (*n, *c))
        .chain([("interpulse", "pressure")]);
    std::iter::once("INTERBAND_RETENTION_SECS".to_owned())
        .chain(known.map(|(n, c)| {
            format!("INTERBAND_RETENTION_{}_{}_SECS", env_safe(n), env_safe(c))
        }))
        .filter_map(|name| {
            let v = env(&name)?;
            let n = v.trim().parse::<i64>().ok()?;
            (n < MIN_RETENTION_SECS as i64).then(|| {
                format!(
                    "{name}={v}: a retention under {MIN_RETENTION_SECS} s would remove values as \
                     soon as they are written (a session's checkpoint and note with them); refused, \
                     the channel's own retention is used"
                )
            })
        })
        .collect()
}

/// Upper-cases and turns everything outside `A-Z0-9` into `_`, as v1 does for env names.
pub fn env_safe(raw: &str) -> String {
    raw.to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The prune throttle: `INTERBAND_PRUNE_INTERVAL_SECS`, default 300.
pub fn prune_interval(env: impl Fn(&str) -> Option<String>) -> Duration {
    let secs = env("INTERBAND_PRUNE_INTERVAL_SECS")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(300);
    Duration::from_secs(secs.max(0) as u64)
}

/// Prunes one channel. Unless `force`, does nothing when the channel was
/// pruned less than [`prune_interval`] ago. Each removal happens under the
/// key's lock, so a value being published at that moment is never removed.
pub fn prune_channel(
    bus: &Bus,
    namespace: &str,
    channel: &str,
    force: bool,
) -> Result<PruneReport> {
    prune_with(bus, namespace, channel, force, &|k| std::env::var(k).ok())
}

/// [`prune_channel`] with the environment given as a function.
pub fn prune_with(
    bus: &Bus,
    namespace: &str,
    channel: &str,
    force: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PruneReport> {
    match bus.channel(namespace, channel, false) {
        Ok(dir) => prune_live(bus, &dir, namespace, channel, force, env),
        Err(Error::NotFound { .. }) => Ok(PruneReport::default()),
        Err(e) => Err(e),
    }
}

/// [`prune_dir_keeping`] a bus channel's folder, keeping the live sessions'
/// values (looked up only when the throttle lets the prune run).
pub(crate) fn prune_live(
    bus: &Bus,
    dir: &Dir,
    namespace: &str,
    channel: &str,
    force: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PruneReport> {
    let live = std::cell::OnceCell::new();
    let is_live = |key: &str| live.get_or_init(|| live_sessions(bus)).contains(key);
    prune_dir_keeping(dir, namespace, channel, force, env, &is_live)
}

/// [`prune_with`] on an open folder holding the values of `namespace/channel`
/// (the channel's own, or a copy of another machine's values kept apart):
/// the channel's retention and count apply.
///
/// ```
/// # let tmp = tempfile::tempdir().unwrap();
/// let bus = interband::Bus::new(tmp.path());
/// let copy = bus.dir(&[".copies", "interpulse", "pressure"], true).unwrap();
/// let r = interband::retention::prune_dir(&copy, "interpulse", "pressure", true, &|_| None).unwrap();
/// assert!(r.removed.is_empty());
/// ```
pub fn prune_dir(
    dir: &Dir,
    namespace: &str,
    channel: &str,
    force: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PruneReport> {
    prune_dir_keeping(dir, namespace, channel, force, env, &|_| false)
}

/// [`prune_dir`], keeping every value whose key `live` says is a live
/// session's (see [`live_sessions`]).
pub fn prune_dir_keeping(
    dir: &Dir,
    namespace: &str,
    channel: &str,
    force: bool,
    env: &dyn Fn(&str) -> Option<String>,
    live: &dyn Fn(&str) -> bool,
) -> Result<PruneReport> {
    let mut report = PruneReport::default();
    let now = SystemTime::now();
    let stamp = dir.stat(STAMP)?;
    if !force && stamp.is_some_and(|m| recent(&m, now, prune_interval(env))) {
        report.throttled = true;
        return Ok(report);
    }
    let _ = dir.touch(STAMP);

    let (retention, max_files) = limits(namespace, channel, env);
    let retention = Duration::from_secs(retention);
    report.temp_removed = dir.sweep_temps(STALE_TEMP);
    let mut kept = Vec::new();
    for entry in dir.entries()? {
        let Some(name) = entry.name_str() else {
            continue;
        };
        let Ok(Some(meta)) = dir.stat(name) else {
            continue;
        };
        if let Some(key_file) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".lock")) {
            // A lock whose message is gone and that nobody used for a retention period.
            if meta.kind == Kind::File && meta.age(now) > retention && !dir.exists(key_file) {
                let _ = with_lock(dir, name, Duration::ZERO, |_| dir.remove(name));
            }
        } else if meta.kind == Kind::File && name.ends_with(".json") {
            // Every `*.json` file counts, as for both v1 pruners: a v1
            // writer's `.hidden.json` too (none of the bus's own files here
            // ends in `.json`). A live session's value is never removed,
            // nor counted: asked only of a value that would go.
            let key = name.trim_end_matches(".json");
            if meta.age(now) <= retention {
                kept.push((meta.age(now), meta.mtime, name.to_owned()));
            } else if !live(key) && remove_if(dir, name, |m| m.age(now) > retention) {
                report.removed.push(dir.join(name));
            }
        }
    }
    if max_files.is_some_and(|max| kept.len() > max) {
        kept.retain(|(_, _, name)| !live(name.trim_end_matches(".json")));
    }
    if let Some(max) = max_files.filter(|max| kept.len() > *max) {
        // Newest first; ties by name, descending, as v1.
        kept.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| b.2.cmp(&a.2)));
        report.removed.extend(remove_listed(dir, kept.drain(max..)));
    }
    Ok(report)
}

/// Whether a throttle stamp was touched less than `interval` ago. One dated
/// ahead of the clock (a clock stepped back, a restored snapshot, a planted
/// stamp) is not recent: it cannot switch the prune or the sweep off.
fn recent(stamp: &crate::fsio::Meta, now: SystemTime, interval: Duration) -> bool {
    now.duration_since(stamp.mtime).is_ok_and(|a| a < interval)
}

/// The sessions live now: those whose pressure was published less than
/// [`LIVE`] ago (by its file's [age](crate::fsio::Meta::age)), by key.
pub fn live_sessions(bus: &Bus) -> std::collections::HashSet<String> {
    let now = SystemTime::now();
    let Ok(dir) = bus.channel("interpulse", "pressure", false) else {
        return Default::default();
    };
    dir.entries()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.kind == Kind::File)
        .filter_map(|e| e.name.into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
        .filter(|k| {
            dir.stat(&format!("{k}.json"))
                .ok()
                .flatten()
                .is_some_and(|m| m.age(now) < LIVE)
        })
        .collect()
}

/// Removes each listed message that is still the value listed (same mtime)
/// under its key's lock: one republished since the listing is the newest now.
fn remove_listed(
    dir: &Dir,
    listed: impl Iterator<Item = (Duration, SystemTime, String)>,
) -> Vec<PathBuf> {
    listed
        .filter(|(_, mtime, name)| remove_if(dir, name, |m| m.mtime == *mtime))
        .map(|(_, _, name)| dir.join(&name))
        .collect()
}

/// Removes a message under its key's lock if `still(mtime)` holds then, and
/// the lock file with it (while holding it: a waiter on the removed lock
/// file sees that it no longer has the name and takes the new one), so no
/// lock is left behind for a message that is gone.
fn remove_if(dir: &Dir, name: &str, still: impl Fn(&crate::fsio::Meta) -> bool) -> bool {
    let lock = lock_name(name);
    if lock.len() > 255 {
        // A v1 writer's key too long to have a lock beside it (no interband
        // writer uses it): removed as v1 removes it, without one.
        let now = dir.stat(name).ok().flatten();
        return now.as_ref().is_some_and(&still) && dir.remove(name).unwrap_or(false);
    }
    with_lock(dir, &lock, Duration::from_millis(50), |_| {
        let now = dir.stat(name)?;
        let removed = now.as_ref().is_some_and(&still) && dir.remove(name)?;
        if removed {
            dir.remove(&lock)?;
        }
        Ok(removed)
    })
    .unwrap_or(false)
}

/// Prunes every channel under the root (forced), and sweeps crashed writers'
/// temp files from every internal folder. Channels are the second-level folders.
pub fn prune_all(bus: &Bus) -> Result<PruneReport> {
    let mut total = PruneReport::default();
    for (ns, ch) in channels(bus)? {
        let r = prune_channel(bus, &ns, &ch, true)?;
        total.removed.extend(r.removed);
        total.temp_removed.extend(r.temp_removed);
    }
    total.temp_removed.extend(sweep_internal(bus, true));
    Ok(total)
}

/// The folder depth the internal sweep goes down to: `.journal/<s>/tmp`,
/// `intermem/notes/<project>/<session>`.
const SWEEP_DEPTH: usize = 4;

/// How often [`sweep_internal`] runs unless forced: once a day.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(86_400);

/// The sweep's throttle stamp, in the root.
pub const SWEEP_STAMP: &str = ".interband-sweep.stamp";

/// Removes crashed writers' temp files (older than [`STALE_TEMP`]) from every
/// folder under the root: channel folders, and the internal ones (`.state`,
/// `.journal`, `.consumers`, notes); and the journals of sessions idle for
/// longer than notes are kept ([`crate::journal::prune_idle`]). Unless
/// `force`, at most once per [`SWEEP_INTERVAL`]. Never through a link; never
/// fails.
pub fn sweep_internal(bus: &Bus, force: bool) -> Vec<PathBuf> {
    let Ok(root) = bus.root_dir(false) else {
        return Vec::new();
    };
    if !force
        && root
            .stat(SWEEP_STAMP)
            .ok()
            .flatten()
            .is_some_and(|m| recent(&m, SystemTime::now(), SWEEP_INTERVAL))
    {
        return Vec::new();
    }
    let _ = root.touch(SWEEP_STAMP);
    drop(root);
    let mut removed = Vec::new();
    // Folders waiting to be swept, by name: a handle is open only while its
    // folder is swept, however many folders there are.
    let mut stack: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(names) = stack.pop() {
        let parts: Vec<&str> = names.iter().map(String::as_str).collect();
        let Ok(dir) = bus.dir(&parts, false) else {
            continue;
        };
        removed.extend(dir.sweep_temps(STALE_TEMP));
        if names.len() >= SWEEP_DEPTH {
            continue;
        }
        for e in dir.entries().unwrap_or_default() {
            if let (Kind::Dir, Some(name)) = (e.kind, e.name_str()) {
                let mut sub = names.clone();
                sub.push(name.to_owned());
                stack.push(sub);
            }
        }
    }
    // A session's journal lasts as long as the notes it feeds.
    let (notes, _) = limits("intermem", "note", |k| std::env::var(k).ok());
    removed.extend(crate::journal::prune_idle(bus, Duration::from_secs(notes)));
    removed
}

/// Every `(namespace, channel)` folder under the root, sorted (links are not folders).
pub fn channels(bus: &Bus) -> Result<Vec<(String, String)>> {
    let root = match bus.root_dir(false) {
        Ok(root) => root,
        Err(Error::NotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let dirs = |dir: &Dir| -> Result<Vec<String>> {
        Ok(dir
            .entries()?
            .into_iter()
            .filter(|e| e.kind == Kind::Dir)
            .filter_map(|e| e.name.into_string().ok())
            .filter(|n| crate::paths::check_segment("channel", n).is_ok())
            .collect())
    };
    let mut out = Vec::new();
    for ns in dirs(&root)? {
        let Ok(nsdir) = root.sub(&ns, false) else {
            continue;
        };
        for ch in dirs(&nsdir)? {
            out.push((ns.clone(), ch));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set_mtime(path: &std::path::Path, ago: Duration) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - ago).unwrap();
    }

    #[test]
    fn prunes_by_age_then_count_and_sweeps_stale_temps() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        for i in 0..5 {
            let p = bus
                .publish("clavain", "x", &format!("k{i}"), "t", "", json!({}))
                .unwrap();
            set_mtime(&p.path, Duration::from_secs(10 * (5 - i)));
        }
        let old = bus
            .publish("clavain", "x", "old", "t", "", json!({}))
            .unwrap();
        set_mtime(&old.path, Duration::from_secs(3 * 86400));
        let chan = bus.channel_dir("clavain", "x").unwrap();
        let stale = chan.join(".interband-tmp.crashed");
        let fresh = chan.join(".interband-tmp.inflight");
        std::fs::write(&stale, b"{").unwrap();
        std::fs::write(&fresh, b"{").unwrap();
        set_mtime(&stale, Duration::from_secs(600));

        // Throttled right after the publishes above. (The environment
        // given, not the developer's own INTERBAND_* variables.)
        let none = |_: &str| None;
        assert!(
            prune_with(&bus, "clavain", "x", false, &none)
                .unwrap()
                .throttled
        );
        let r = prune_with(&bus, "clavain", "x", true, &none).unwrap();
        assert_eq!(r.removed, vec![old.path.clone()]);
        assert_eq!(r.temp_removed, vec![stale]);
        assert!(fresh.exists());

        // Count: keep the newest 2 (k4, k3).
        let (_, max) = limits("clavain", "x", |_| None);
        assert_eq!(max, Some(256));
        let env = |k: &str| (k == "INTERBAND_MAX_FILES_CLAVAIN_X").then(|| "2".to_owned());
        let r = prune_with(&bus, "clavain", "x", true, &env).unwrap();
        assert_eq!(r.removed.len(), 3);
        let mut left: Vec<_> = std::fs::read_dir(&chan)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect();
        left.sort();
        assert_eq!(left, ["k3.json", "k4.json"]);
    }

    #[test]
    fn a_value_republished_after_the_listing_is_not_the_one_removed() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let p = bus.publish("n", "c", "k", "t", "", json!({})).unwrap();
        set_mtime(&p.path, Duration::from_secs(20));
        let listed = std::fs::metadata(&p.path).unwrap().modified().unwrap();
        bus.publish("n", "c", "k", "t", "", json!({"v": 2}))
            .unwrap(); // between the listing and the removal
        let dir = bus.channel("n", "c", false).unwrap();
        assert_eq!(
            remove_listed(
                &dir,
                [(Duration::ZERO, listed, "k.json".to_owned())].into_iter()
            ),
            Vec::<PathBuf>::new()
        );
        assert_eq!(bus.read("n", "c", "k").unwrap().envelope.seq, 2);
        let now = std::fs::metadata(&p.path).unwrap().modified().unwrap();
        let removed = remove_listed(
            &dir,
            [(Duration::ZERO, now, "k.json".to_owned())].into_iter(),
        );
        assert_eq!(removed, vec![p.path]);
    }

    #[test]
    fn env_names_match_v1() {
        assert_eq!(env_safe("inter-line.x"), "INTER_LINE_X");
        let (secs, _) = limits("intercheck", "pressure", |k| {
            (k == "INTERBAND_RETENTION_SECS").then(|| "-5".into())
        });
        assert_eq!(secs, 3600, "refused: the channel's own");
        assert_eq!(limits("intercheck", "pressure", |_| None), (3600, Some(64)));
    }
}
