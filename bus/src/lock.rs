//! Locks for read-modify-write of small files.
//!
//! A lock is an advisory `flock` on a separate, hidden `.<name>.lock` file
//! beside the file it protects. The lock file is never renamed; if it is
//! removed (retention removes the locks of pruned keys, while holding them),
//! a waiter notices that its handle no longer names the file and retries.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::fsio::{MAX_MESSAGE_BYTES, read_capped, write_atomic};
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
    path.with_file_name(format!(".{name}.lock"))
}

/// Runs `f` while holding the exclusive lock on `lock_path` (created 0600 if
/// missing), waiting at most `wait` for it. `f` gets the lock file itself,
/// which may hold a few bytes of state of its own.
pub fn with_lock<T>(
    lock_path: &Path,
    wait: Duration,
    f: impl FnOnce(&mut File) -> Result<T>,
) -> Result<T> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(lock_path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => Error::Symlink {
                    path: lock_path.into(),
                },
                _ => Error::io(lock_path, e),
            })?;
        let mut lock = fd_lock::RwLock::new(file);
        match lock.try_write() {
            Ok(mut guard) => {
                // Still the file at that path? (It may have been removed while we waited.)
                let held = guard.metadata().map_err(|e| Error::io(lock_path, e))?;
                let same = std::fs::symlink_metadata(lock_path)
                    .is_ok_and(|now| now.ino() == held.ino() && now.dev() == held.dev());
                if same {
                    return f(&mut guard);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(Error::io(lock_path, e)),
        }
        if start.elapsed() >= wait {
            return Err(Error::LockTimeout {
                path: lock_path.into(),
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

/// Locked read-modify-write of a small JSON state file.
///
/// Reads `path` (a missing, corrupt, oversized or symlinked file reads as
/// `T::default()`), lets `f` change the value, then writes it back atomically
/// (replacing a planted symlink rather than writing through it), all under the
/// file's lock. Returns what `f` returned.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let state = dir.path().join("count.json");
/// for _ in 0..3 {
///     interband::lock::update_json(&state, interband::lock::DEFAULT_WAIT, |n: &mut u32| *n += 1).unwrap();
/// }
/// assert_eq!(std::fs::read_to_string(&state).unwrap(), "3");
/// ```
pub fn update_json<T, R>(path: &Path, wait: Duration, f: impl FnOnce(&mut T) -> R) -> Result<R>
where
    T: Serialize + DeserializeOwned + Default,
{
    with_lock(&lock_path_for(path), wait, |_| {
        let mut value: T = read_json_or_default(path);
        let out = f(&mut value);
        let bytes = serde_json::to_vec(&value).map_err(|e| Error::Json {
            path: path.into(),
            source: e,
        })?;
        write_atomic(path, &bytes, false)?;
        Ok(out)
    })
}

/// Reads a small JSON file; anything unreadable reads as the default.
pub fn read_json_or_default<T: DeserializeOwned + Default>(path: &Path) -> T {
    read_capped(path, MAX_MESSAGE_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_times_out_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let lp = dir.path().join(".x.lock");
        with_lock(&lp, DEFAULT_WAIT, |_| {
            let err = with_lock(&lp, Duration::from_millis(30), |_| Ok(())).unwrap_err();
            assert!(matches!(err, Error::LockTimeout { .. }));
            assert!(err.to_string().contains(".x.lock"));
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn threads_never_lose_an_update() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("n.json");
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        update_json(&state, Duration::from_secs(20), |n: &mut u64| *n += 1)
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(read_json_or_default::<u64>(&state), 400);
    }

    #[test]
    fn corrupt_or_symlinked_state_starts_over_without_touching_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s.json");
        std::fs::write(&state, b"{not json").unwrap();
        update_json(&state, DEFAULT_WAIT, |n: &mut u64| *n += 1).unwrap();
        assert_eq!(read_json_or_default::<u64>(&state), 1);

        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"41").unwrap();
        std::fs::remove_file(&state).unwrap();
        std::os::unix::fs::symlink(&outside, &state).unwrap();
        update_json(&state, DEFAULT_WAIT, |n: &mut u64| *n += 1).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"41");
        assert_eq!(read_json_or_default::<u64>(&state), 1);
    }
}
