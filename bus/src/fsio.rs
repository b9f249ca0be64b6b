//! Bounded reads that never follow a symlink, and atomic writes.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::paths::TEMP_PREFIX;
use crate::{Error, Result};

/// The largest message file the bus reads or writes: 1 MiB.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 20;

/// Opens `path` for reading without following a symlink at its last component.
fn open_nofollow(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::Symlink { path: path.into() },
            _ if e.kind() == std::io::ErrorKind::NotFound => Error::NotFound { path: path.into() },
            _ => Error::io(path, e),
        })
}

/// Reads a whole regular file of at most `limit` bytes, never through a symlink.
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let file = open_nofollow(path)?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::NotAFile { path: path.into() });
    }
    if meta.len() > limit {
        return Err(Error::TooLarge {
            path: path.into(),
            size: meta.len(),
            limit,
        });
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    // Read one byte past the cap in case the file grew since the stat.
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(Error::TooLarge {
            path: path.into(),
            size: buf.len() as u64,
            limit,
        });
    }
    Ok(buf)
}

/// Writes `bytes` to `target` atomically: a private temp file named
/// `.interband-tmp.*` in the same folder, then a rename over the target.
/// Readers see the old file or the new one, never a mix. With `durable`, the
/// file and its folder are fsynced so the write survives a power loss.
pub fn write_atomic(target: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .rand_bytes(8)
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    if durable {
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(tmp.path(), e))?;
    }
    // On failure the temp file is removed when `tmp` drops.
    let tmp = tmp.into_temp_path();
    if exchange(&tmp, target) {
        // The old file now sits at the temp name; dropping `tmp` removes it.
        drop(tmp);
    } else {
        tmp.persist(target)
            .map_err(|e| Error::io(target, e.error))?;
    }
    if durable {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Swaps `tmp` and `target` atomically when `target` is an existing regular
/// file (Linux `renameat2(RENAME_EXCHANGE)`). Readers see the same atomic
/// switch as with a rename, but ext4 does not force the new file's blocks to be
/// allocated at once as it does for a rename over an existing file
/// (`auto_da_alloc`), which makes a replace about three times cheaper. Returns
/// false where it does not apply, and the caller renames.
fn exchange(tmp: &Path, target: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let regular = std::fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_file());
        let (Ok(from), Ok(to)) = (
            CString::new(tmp.as_os_str().as_bytes()),
            CString::new(target.as_os_str().as_bytes()),
        ) else {
            return false;
        };
        // SAFETY: both are valid NUL-terminated paths; the call only renames.
        regular
            && unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    from.as_ptr(),
                    libc::AT_FDCWD,
                    to.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            } == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tmp, target);
        false
    }
}

/// Fsyncs a folder so a rename or a new entry in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_refuse_symlinks_big_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(read_capped(&link, 10), Err(Error::Symlink { .. })));
        assert_eq!(read_capped(&real, 10).unwrap(), b"{}");
        assert!(matches!(
            read_capped(&real, 1),
            Err(Error::TooLarge { size: 2, .. })
        ));
        assert!(matches!(
            read_capped(dir.path(), 10),
            Err(Error::NotAFile { .. })
        ));
        assert!(matches!(
            read_capped(&dir.path().join("none"), 10),
            Err(Error::NotFound { .. })
        ));
    }

    #[test]
    fn replacing_an_existing_file_leaves_only_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        for i in 0..5 {
            write_atomic(&target, format!("v{i}").as_bytes(), i % 2 == 0).unwrap();
            assert_eq!(std::fs::read(&target).unwrap(), format!("v{i}").as_bytes());
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp or old file left"
        );
        // A folder in the way is an error, and stays a folder.
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        assert!(write_atomic(&d, b"x", false).is_err());
        assert!(d.is_dir());
    }

    #[test]
    fn atomic_write_replaces_a_symlink_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        let target = dir.path().join("t.json");
        std::os::unix::fs::symlink(&outside, &target).unwrap();
        write_atomic(&target, b"new", true).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert!(
            !std::fs::symlink_metadata(&target)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
