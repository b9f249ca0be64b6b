//! Locks for read-modify-write of small files.
//!
//! A lock is an advisory `flock` on a separate, hidden `.<name>.lock` file
//! beside the file it protects. The lock file is never renamed; if it is
//! removed (retention removes the locks of pruned keys, while holding them),
//! a waiter notices that its handle no longer names the file and retries.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::fsio::{Dir, MAX_MESSAGE_BYTES};
use crate::{Error, Result};

/// How long a lock is waited for by default before giving up with [`Error::LockTimeout`].
pub const DEFAULT_WAIT: Duration = Duration::from_secs(2);

/// The lock file that guards `path`: `.<file name>.lock` in the same folder.
///
/// ```
/// use std::path::Path;
/// assert_eq!(interband::lock::lock_path_for(Path::new("/r/a/b/k.json")), Path::new("/r/a/b/.k.json.lock"));
/// ```
pub fn lock_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(lock_name(&name))
}

/// The name of the lock file that guards the file `name`: `.<name>.lock`.
pub fn lock_name(name: &str) -> String {
    format!(".{name}.lock")
}

/// Runs `f` while holding the exclusive lock on the file `name` in `dir`
/// (created 0600 if missing, never through a link), waiting at most `wait`
/// for it. `f` gets the lock file itself, which may hold a few bytes of state
/// of its own.
pub fn with_lock<T>(
    dir: &Dir,
    name: &str,
    wait: Duration,
    f: impl FnOnce(&mut File) -> Result<T>,
) -> Result<T> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        let (file, held) = dir.open_rw_meta(name)?;
        let mut lock = fd_lock::RwLock::new(file);
        match lock.try_write() {
            Ok(mut guard) => {
                // Still the file at that name? (It may have been removed while we waited.)
                let same = dir
                    .stat(name)?
                    .is_some_and(|now| now.ino == held.ino && now.dev == held.dev);
                if same {
                    return f(&mut guard);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(Error::io(dir.join(name), e)),
        }
        if start.elapsed() >= wait {
            return Err(Error::LockTimeout {
                path: dir.join(name),
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

/// Locked read-modify-write of a small JSON state file `name` in `dir`.
///
/// Reads the file (a missing, corrupt, oversized or linked file reads as
/// `T::default()`), lets `f` change the value, then writes it back atomically
/// (replacing a planted link rather than writing through it), all under the
/// file's lock. Returns what `f` returned.
///
/// ```
/// # let tmp = tempfile::tempdir().unwrap();
/// let dir = interband::fsio::Dir::root(tmp.path(), false).unwrap();
/// for _ in 0..3 {
///     interband::lock::update_json(&dir, "count.json", interband::lock::DEFAULT_WAIT, |n: &mut u32| *n += 1).unwrap();
/// }
/// assert_eq!(std::fs::read_to_string(tmp.path().join("count.json")).unwrap(), "3");
/// ```
pub fn update_json<T, R>(
    dir: &Dir,
    name: &str,
    wait: Duration,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R>
where
    T: Serialize + DeserializeOwned + Default,
{
    with_lock(dir, &lock_name(name), wait, |_| {
        let mut value: T = read_json_or_default(dir, name);
        let out = f(&mut value);
        let bytes = serde_json::to_vec(&value).map_err(|e| Error::Json {
            path: dir.join(name),
            source: e,
        })?;
        dir.write(name, &bytes, false)?;
        Ok(out)
    })
}

/// Reads a small JSON file in `dir`; anything unreadable reads as the default.
pub fn read_json_or_default<T: DeserializeOwned + Default>(dir: &Dir, name: &str) -> T {
    dir.read(name, MAX_MESSAGE_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_times_out_with_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::root(tmp.path(), false).unwrap();
        with_lock(&dir, ".x.lock", DEFAULT_WAIT, |_| {
            let err =
                with_lock(&dir, ".x.lock", Duration::from_millis(30), |_| Ok(())).unwrap_err();
            assert!(matches!(err, Error::LockTimeout { .. }));
            assert!(err.to_string().contains(".x.lock"));
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn threads_never_lose_an_update() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::root(tmp.path(), false).unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        update_json(&dir, "n.json", Duration::from_secs(20), |n: &mut u64| {
                            *n += 1
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(read_json_or_default::<u64>(&dir, "n.json"), 400);
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 shows a link as what it names, never as a link (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn corrupt_or_symlinked_state_starts_over_without_touching_the_target() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::root(&tmp.path().join("r"), true).unwrap();
        let state = dir.join("s.json");
        std::fs::write(&state, b"{not json").unwrap();
        update_json(&dir, "s.json", DEFAULT_WAIT, |n: &mut u64| *n += 1).unwrap();
        assert_eq!(read_json_or_default::<u64>(&dir, "s.json"), 1);

        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"41").unwrap();
        std::fs::remove_file(&state).unwrap();
        crate::fsio::tests::link(&outside, &state);
        update_json(&dir, "s.json", DEFAULT_WAIT, |n: &mut u64| *n += 1).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"41");
        assert_eq!(read_json_or_default::<u64>(&dir, "s.json"), 1);
        // A link planted at the lock file itself is refused, not followed.
        assert!(dir.exists(".s.json.lock"));
        std::fs::remove_file(dir.join(".s.json.lock")).unwrap();
        crate::fsio::tests::link(&outside, &dir.join(".s.json.lock"));
        assert!(matches!(
            update_json(&dir, "s.json", DEFAULT_WAIT, |n: &mut u64| *n += 1),
            Err(Error::Symlink { .. })
        ));
        assert_eq!(std::fs::read(&outside).unwrap(), b"41");
    }
}
