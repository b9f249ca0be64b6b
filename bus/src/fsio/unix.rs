//! The file layer's Unix calls (Linux, macOS): `openat` and its family on
//! folder handles, through rustix.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{Entry, Fail, Kind, Meta};

/// An open folder.
pub(super) type Handle = OwnedFd;

fn io_err(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// What a failed call means to the layer above.
pub(super) fn fail(e: &io::Error) -> Fail {
    match e.raw_os_error() {
        Some(libc::ELOOP) => Fail::Link,
        Some(libc::ENOENT) => Fail::Missing,
        Some(libc::ENOTDIR | libc::EISDIR | libc::ENXIO) => Fail::WrongKind,
        Some(libc::EEXIST) => Fail::Exists,
        _ => Fail::Other,
    }
}

/// The effective user id (asked once per process).
pub(super) fn my_uid() -> u32 {
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    *UID.get_or_init(|| unsafe { libc::geteuid() })
}

/// How to make a folder the user's alone: `chmod go-w`.
pub(super) fn fix_hint(path: &Path) -> String {
    format!("run `chmod go-w {}`", path.display())
}

// The stat fields' types differ between targets: the casts are for the others.
#[allow(clippy::unnecessary_cast)]
fn meta_of(st: &rustix::fs::Stat) -> Meta {
    let kind = match FileType::from_raw_mode(st.st_mode as _) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    };
    let time = |secs: i64, nanos: i64| {
        let nanos = nanos.clamp(0, 999_999_999) as u32;
        if secs >= 0 {
            SystemTime::UNIX_EPOCH + Duration::new(secs as u64, nanos)
        } else {
            SystemTime::UNIX_EPOCH
        }
    };
    Meta {
        kind,
        uid: st.st_uid,
        mode: st.st_mode as u32 & 0o7777,
        len: st.st_size as u64,
        mtime: time(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime: time(st.st_ctime as i64, st.st_ctime_nsec as i64),
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    }
}

/// What the handle's file or folder is.
pub(super) fn fstat(fd: impl std::os::fd::AsFd) -> io::Result<Meta> {
    rustix::fs::fstat(fd).map(|st| meta_of(&st)).map_err(io_err)
}

/// What `name` in the folder is, never following a link; `None` when missing.
pub(super) fn stat_at(dir: &Handle, name: &str) -> io::Result<Option<Meta>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(meta_of(&st))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(io_err(e)),
    }
}

/// The device and inode at `path` (links followed).
pub(super) fn identity(path: &Path) -> io::Result<(u64, u64)> {
    stat_path(path, true).map(|m| (m.dev, m.ino))
}

/// False when the handle's folder was removed.
pub(super) fn linked(dir: &Handle) -> bool {
    rustix::fs::fstat(dir).is_ok_and(|st| st.st_nlink > 0)
}

/// Opens the folder at `path` (links followed: the user chose it).
pub(super) fn open_top(path: &Path) -> io::Result<Handle> {
    rustix::fs::openat(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io_err)
}

/// Creates the folder `path` and its missing parents, 0700 (`private` is
/// the same here: the mode makes it so).
pub(super) fn create_top(path: &Path, _private: bool) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// Opens the folder `name`, never through a link.
pub(super) fn open_dir_at(dir: &Handle, name: &str) -> io::Result<Handle> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io_err)
}

/// Creates the folder `name`, 0700.
pub(super) fn mkdir_at(dir: &Handle, name: &str) -> io::Result<()> {
    rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700)).map_err(io_err)
}

/// Opens the file `name` for reading: never through a link, never blocking.
pub(super) fn open_read_at(dir: &Handle, name: &str) -> io::Result<File> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(io_err)
}

/// Opens (creating 0600) the file `name` for reading and writing.
pub(super) fn open_rw_at(dir: &Handle, name: &str) -> io::Result<File> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map(File::from)
    .map_err(io_err)
}

/// Creates the new file `name` (0600), failing when it exists.
pub(super) fn create_new_at(dir: &Handle, name: &str) -> io::Result<File> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map(File::from)
    .map_err(io_err)
}

/// Whether replacing a file in the folder is cheaper by a swap than by a
/// rename: everywhere but in memory (tmpfs), where a rename writes nothing
/// out and the swap's two extra calls are pure cost.
pub(super) fn swap_pays(dir: &Handle) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    // (`f_type`'s width differs between platforms.)
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::fstatfs(dir).map_or(true, |s| s.f_type as i64 != TMPFS_MAGIC)
}

/// Swaps the names `a` and `b` (Linux `renameat2(RENAME_EXCHANGE)`); false
/// where the system cannot.
pub(super) fn exchange_at(dir: &Handle, a: &str, b: &str) -> bool {
    rustix::fs::renameat_with(dir, a, dir, b, RenameFlags::EXCHANGE).is_ok()
}

/// Renames `name` to `to_name` in `to`, replacing a file there.
pub(super) fn rename_at(dir: &Handle, name: &str, to: &Handle, to_name: &str) -> io::Result<()> {
    rustix::fs::renameat(dir, name, to, to_name).map_err(io_err)
}

/// Renames `name` to `to_name` in `to` when nothing is there; false when
/// something is.
pub(super) fn rename_new_at(
    dir: &Handle,
    name: &str,
    to: &Handle,
    to_name: &str,
) -> io::Result<bool> {
    match rustix::fs::renameat_with(dir, name, to, to_name, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        // No RENAME_NOREPLACE here (NFS, some FUSE file systems, old
        // kernels): a hard link fails just the same when the name exists;
        // the caller removes the temp name.
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
            match rustix::fs::linkat(dir, name, to, to_name, AtFlags::empty()) {
                Ok(()) => {
                    let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
                    Ok(true)
                }
                Err(Errno::EXIST) => Ok(false),
                Err(e) => Err(io_err(e)),
            }
        }
        Err(e) => Err(io_err(e)),
    }
}

/// Removes the file (or link) `name`.
pub(super) fn unlink_at(dir: &Handle, name: &str) -> io::Result<()> {
    rustix::fs::unlinkat(dir, name, AtFlags::empty()).map_err(io_err)
}

/// Removes the empty folder `name`.
pub(super) fn rmdir_at(dir: &Handle, name: &str) -> io::Result<()> {
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).map_err(io_err)
}

/// Every entry of the folder but `.` and `..`, unsorted; `Unknown` kinds
/// asked of `stat`.
pub(super) fn entries(dir: &Handle, _path: &Path) -> io::Result<Vec<Entry>> {
    let mut listing = rustix::fs::Dir::read_from(dir).map_err(io_err)?;
    let mut out = Vec::new();
    while let Some(entry) = listing.read() {
        let entry = entry.map_err(io_err)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = OsString::from_vec(name.to_vec());
        let kind = match entry.file_type() {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Unknown => match name.to_str().map(|n| stat_at(dir, n)) {
                Some(Ok(Some(m))) => m.kind,
                _ => Kind::Other,
            },
            _ => Kind::Other,
        };
        out.push(Entry { name, kind });
    }
    Ok(out)
}

/// Fsyncs the folder, so a rename or a new entry in it is durable.
pub(super) fn sync_dir(dir: &Handle) -> io::Result<()> {
    rustix::fs::fsync(dir).map_err(io_err)
}

/// Opens a file outside the root for reading: non-blocking, never a
/// controlling terminal, a link at the path refused unless `follow`.
pub(super) fn open_outside(path: &Path, follow: bool) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

/// What `stat` says of `path`; a link at its last component followed or not.
pub(super) fn stat_path(path: &Path, follow: bool) -> io::Result<Meta> {
    let st = if follow {
        rustix::fs::stat(path)
    } else {
        rustix::fs::lstat(path)
    };
    st.map(|st| meta_of(&st)).map_err(io_err)
}
