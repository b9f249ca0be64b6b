//! Retention: prune a channel by age and count (protocol v1 defaults, env
//! overrides, throttle stamp), and sweep temp files left by crashed writers.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::lock::{lock_path_for, with_lock};
use crate::paths::TEMP_PREFIX;
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

/// Retention and count for a channel after environment overrides, as v1:
/// `INTERBAND_RETENTION_<NS>_<CH>_SECS`, then `INTERBAND_RETENTION_SECS`;
/// `INTERBAND_MAX_FILES_<NS>_<CH>`, then `INTERBAND_MAX_FILES`.
/// A negative retention counts as 0; a count ≤ 0 means no count limit.
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
/// ```
pub fn limits(
    namespace: &str,
    channel: &str,
    env: impl Fn(&str) -> Option<String>,
) -> (u64, Option<usize>) {
    let int = |name: &str| env(name).and_then(|v| v.trim().parse::<i64>().ok());
    let tag = format!("{}_{}", env_safe(namespace), env_safe(channel));
    let policy = channel_policy(namespace, channel);
    let secs = int(&format!("INTERBAND_RETENTION_{tag}_SECS"))
        .or_else(|| int("INTERBAND_RETENTION_SECS"))
        .map_or(policy.retention_secs, |v| v.max(0) as u64);
    let max = int(&format!("INTERBAND_MAX_FILES_{tag}"))
        .or_else(|| int("INTERBAND_MAX_FILES"))
        .map_or(Some(policy.max_files), |v| (v > 0).then_some(v as usize));
    (secs, max)
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
    let dir = bus.channel_dir(namespace, channel)?;
    let mut report = PruneReport::default();
    if !dir.is_dir() {
        return Ok(report);
    }
    let now = SystemTime::now();
    let age = |t: SystemTime| now.duration_since(t).unwrap_or_default();
    let stamp = dir.join(STAMP);
    let modified = std::fs::metadata(&stamp).and_then(|m| m.modified());
    if !force && modified.is_ok_and(|m| age(m) < prune_interval(env)) {
        report.throttled = true;
        return Ok(report);
    }
    touch(&stamp);

    let (retention, max_files) = limits(namespace, channel, env);
    let retention = Duration::from_secs(retention);
    let mut kept = Vec::new();
    for entry in std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .flatten()
    {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata() else { continue };
        let Ok(mtime) = meta.modified() else { continue };
        if name.starts_with(TEMP_PREFIX) {
            if meta.is_file() && age(mtime) > STALE_TEMP && std::fs::remove_file(&path).is_ok() {
                report.temp_removed.push(path);
            }
        } else if let Some(key_file) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".lock"))
        {
            // A lock whose message is gone and that nobody used for a retention period.
            let message = dir.join(key_file);
            if age(mtime) > retention && !message.exists() {
                let _ = with_lock(&path, Duration::ZERO, |_| {
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))
                });
            }
        } else if meta.is_file() && name.ends_with(".json") && !name.starts_with('.') {
            if age(mtime) > retention {
                if remove_if(&path, |m| age(m) > retention) {
                    report.removed.push(path);
                }
            } else {
                kept.push((mtime, path));
            }
        }
    }
    if let Some(max) = max_files.filter(|max| kept.len() > *max) {
        kept.sort_by(|a, b| b.cmp(a)); // newest first; ties by path, descending, as v1
        report.removed.extend(remove_listed(kept.drain(max..)));
    }
    Ok(report)
}

/// Removes each listed message that is still the value listed (same mtime)
/// under its key's lock: one republished since the listing is the newest now.
fn remove_listed(listed: impl Iterator<Item = (SystemTime, PathBuf)>) -> Vec<PathBuf> {
    listed
        .filter(|(mtime, path)| remove_if(path, |m| m == *mtime))
        .map(|(_, path)| path)
        .collect()
}

/// Removes a message under its key's lock if `still(mtime)` holds then.
fn remove_if(path: &Path, still: impl Fn(SystemTime) -> bool) -> bool {
    with_lock(&lock_path_for(path), Duration::from_millis(50), |_| {
        let now = std::fs::symlink_metadata(path).and_then(|m| m.modified());
        Ok(now.is_ok_and(&still) && std::fs::remove_file(path).is_ok())
    })
    .unwrap_or(false)
}

fn touch(stamp: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(stamp);
}

/// Prunes every channel under the root (forced). Channels are the second-level folders.
pub fn prune_all(bus: &Bus) -> Result<PruneReport> {
    let mut total = PruneReport::default();
    for (ns, ch) in channels(bus)? {
        let r = prune_channel(bus, &ns, &ch, true)?;
        total.removed.extend(r.removed);
        total.temp_removed.extend(r.temp_removed);
    }
    Ok(total)
}

/// Every `(namespace, channel)` folder under the root, sorted.
pub fn channels(bus: &Bus) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let dirs = |dir: &Path| -> Result<Vec<String>> {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        Ok(rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| crate::paths::check_segment("channel", n).is_ok())
            .collect())
    };
    for ns in dirs(bus.root())? {
        for ch in dirs(&bus.root().join(&ns))? {
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

    fn set_mtime(path: &Path, ago: Duration) {
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

        // Throttled right after the publishes above.
        assert!(
            prune_channel(&bus, "clavain", "x", false)
                .unwrap()
                .throttled
        );
        let r = prune_channel(&bus, "clavain", "x", true).unwrap();
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
        assert_eq!(
            remove_listed([(listed, p.path.clone())].into_iter()),
            Vec::<PathBuf>::new()
        );
        assert_eq!(bus.read("n", "c", "k").unwrap().envelope.seq, 2);
        let now = std::fs::metadata(&p.path).unwrap().modified().unwrap();
        let removed = remove_listed([(now, p.path.clone())].into_iter());
        assert_eq!(removed, vec![p.path]);
    }

    #[test]
    fn env_names_match_v1() {
        assert_eq!(env_safe("inter-line.x"), "INTER_LINE_X");
        let (secs, _) = limits("intercheck", "pressure", |k| {
            (k == "INTERBAND_RETENTION_SECS").then(|| "-5".into())
        });
        assert_eq!(secs, 0);
        assert_eq!(limits("intercheck", "pressure", |_| None), (3600, Some(64)));
    }
}
