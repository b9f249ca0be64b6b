//! The one file-access layer.
//!
//! Everything under the root is reached through a [`Dir`]: a handle on a
//! folder that was opened without following a link and checked to be the
//! user's (owned by the effective user, not writable by group or others).
//! Files are opened relative to such a handle, never through a link, and only
//! when they are regular files; reads are bounded; a write goes to a private
//! temp file in the same folder and is renamed into place; renames only move
//! between handles this layer opened. No other module opens a path under the
//! root by string.
//!
//! Files from outside the root (transcripts, `.git/HEAD`, directives, settings
//! files) are opened with [`open_regular`]: non-blocking, regular files only,
//! so a FIFO or a device can never hang or flood a hook.
//!
//! Two backends give the same promises: `unix.rs` (`openat` and its family
//! on folder handles) and `windows.rs` (`NtCreateFile` relative to a folder
//! handle, reparse points refused as Unix refuses links, the owner and the
//! access list checked where Unix checks the uid and the mode).
//!
//! ```
//! use interband::fsio::Dir;
//! # let tmp = tempfile::tempdir().unwrap();
//! let root = Dir::root(&tmp.path().join("root"), true).unwrap();
//! let state = root.walk(&[".state", "demo"], true).unwrap();
//! state.write("a.json", b"{}", false).unwrap();
//! assert_eq!(state.read("a.json", 10).unwrap(), b"{}");
//! # #[cfg(unix)] {
//! std::os::unix::fs::symlink("/etc/passwd", state.join("b.json")).unwrap();
//! assert!(matches!(state.read("b.json", 1 << 20), Err(interband::Error::Symlink { .. })));
//! # }
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::paths::TEMP_PREFIX;
use crate::{Error, Result};

#[cfg(unix)]
#[path = "unix.rs"]
mod sys;
#[cfg(windows)]
#[path = "windows.rs"]
mod sys;

/// What a failed call means to the layer above (each backend says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    /// A link where none may be followed.
    Link,
    /// No such name.
    Missing,
    /// Not the kind asked for (a file for a folder, a device...).
    WrongKind,
    /// The name is taken.
    Exists,
    /// Anything else.
    Other,
}

/// The largest message file the bus reads or writes: 1 MiB.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 20;

/// What kind of thing a name is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// What `stat` says of a name (never following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Its kind.
    pub kind: Kind,
    /// The owner's user id. On Windows, the owner as this layer sees it:
    /// [`my_uid`] for the user (or the Administrators group when the user is
    /// one of them), 0 for the system, `u32::MAX` for anyone else.
    pub uid: u32,
    /// The permission bits. On Windows, what the access list amounts to:
    /// 0o600 for a file and 0o700 for a folder, with 0o022 added when it
    /// lets anyone but the user, the system and the Administrators write.
    pub mode: u32,
    /// Its size in bytes.
    pub len: u64,
    /// When its content last changed (as it says: anyone may set it).
    pub mtime: SystemTime,
    /// When its inode last changed (set by the kernel only: a rename into
    /// place, a write, a `touch`).
    pub ctime: SystemTime,
    /// The device it is on (on Windows, the volume's serial number).
    pub dev: u64,
    /// Its inode (on Windows, the file index).
    pub ino: u64,
}

impl Meta {
    /// How long ago the file was written, by its modification time; one in
    /// the future (a clock stepped back, a restored snapshot, a planted
    /// `touch -d 2099`) is aged by when its inode changed instead, and one
    /// whose both times are ahead counts as written now. So no file can
    /// claim to be younger than it is for longer than the clock is wrong.
    pub fn age(&self, now: SystemTime) -> Duration {
        now.duration_since(self.mtime)
            .or_else(|_| now.duration_since(self.ctime))
            .unwrap_or_default()
    }
}

/// One entry of a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name, as the file system has it.
    pub name: OsString,
    /// Its kind (never following a link).
    pub kind: Kind,
}

impl Entry {
    /// The name, when it is UTF-8.
    pub fn name_str(&self) -> Option<&str> {
        self.name.to_str()
    }
}

/// The effective user id (asked once per process); on Windows, the
/// number [`Meta::uid`] gives the user's own files.
pub fn my_uid() -> u32 {
    sys::my_uid()
}

/// A verified folder under the root (or the root itself).
#[derive(Debug, Clone)]
pub struct Dir {
    /// Shared: a second handle on the folder costs no system call.
    fd: std::sync::Arc<sys::Handle>,
    path: PathBuf,
    /// Whether a replace swaps the old file out (see [`Dir::replace`]):
    /// not on tmpfs, where nothing is written out and a plain rename is
    /// cheaper. Found at the first replace under the top folder (a process
    /// that only reads never asks); sub-folders share it.
    swap: std::sync::Arc<std::sync::OnceLock<bool>>,
}

/// A single plain name: not empty, not `.` or `..`, no `/` and no NUL (on
/// Windows, no `\\` and no `:` either: a stream name).
fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains('/')
        || name.contains('\0')
        || (cfg!(windows) && (name.contains('\\') || name.contains(':')));
    if bad {
        return Err(Error::InvalidName {
            what: "file name",
            value: name.to_owned(),
            reason: "must be one plain name (not empty, `.`, `..`, nor containing `/`)".into(),
        });
    }
    Ok(())
}

/// Refuses a file or folder owned by someone else.
fn check_owner(fd: &sys::Handle, path: &Path) -> Result<Meta> {
    let meta = sys::fstat(fd).map_err(|e| Error::io(path, e))?;
    let me = my_uid();
    if meta.uid != me {
        return Err(Error::NotOurs {
            path: path.into(),
            reason: format!("owned by uid {}, not by you (uid {me})", meta.uid),
        });
    }
    Ok(meta)
}

/// Refuses a folder that is not the user's: owned by someone else, or
/// writable by group or others (as ssh's `StrictModes` does).
fn verify_dir(fd: &sys::Handle, path: &Path) -> Result<()> {
    let meta = check_owner(fd, path)?;
    if meta.kind == Kind::Symlink {
        return Err(Error::Symlink { path: path.into() });
    }
    if meta.mode & 0o022 != 0 {
        return Err(Error::NotOurs {
            path: path.into(),
            reason: format!(
                "writable by group or others (mode {:o}); {}",
                meta.mode,
                sys::fix_hint(path)
            ),
        });
    }
    Ok(())
}

impl Dir {
    /// Opens the root folder, creating it (and its parents) with mode 0700
    /// when `create` and it is missing. The root itself may be a link: the
    /// user chose it. Refused with [`Error::NotOurs`] when it is not the user's.
    pub fn root(path: &Path, create: bool) -> Result<Dir> {
        Self::top(path, create, true)
    }

    /// Opens a folder outside the root that must be the user's (such as
    /// `~/.claude/projects/<project>/memory`): links in its path are followed
    /// (the user's own layout), it is created 0700 when `create` and missing,
    /// and it must be owned by the user.
    pub fn outside(path: &Path, create: bool) -> Result<Dir> {
        Self::top(path, create, false)
    }

    fn top(path: &Path, create: bool, private: bool) -> Result<Dir> {
        /// The nearest existing folder above `path`, when it is not a folder
        /// at all: why `path` cannot be.
        fn file_in_the_way(path: &Path) -> Option<PathBuf> {
            path.ancestors()
                .skip(1)
                .find(|a| std::fs::metadata(a).is_ok())
                .filter(|a| !a.is_dir())
                .map(Path::to_path_buf)
        }
        let fd = match sys::open_top(path) {
            Ok(fd) => fd,
            Err(e) if create && sys::fail(&e) == Fail::Missing => {
                sys::create_top(path, private).map_err(|e| Error::io(path, e))?;
                sys::open_top(path).map_err(|e| Error::io(path, e))?
            }
            Err(e) => {
                return Err(match sys::fail(&e) {
                    // Windows says "not found" where Unix says "not a folder".
                    Fail::Missing => match file_in_the_way(path) {
                        Some(file) => Error::NotAFolder { path: file },
                        None => Error::NotFound { path: path.into() },
                    },
                    Fail::WrongKind => Error::NotAFolder { path: path.into() },
                    _ => Error::io(path, e),
                });
            }
        };
        if private {
            verify_dir(&fd, path)?;
        } else {
            check_owner(&fd, path)?;
        }
        Ok(Dir {
            fd: fd.into(),
            path: path.to_owned(),
            swap: Default::default(),
        })
    }

    /// The folder's path, for messages and for callers that show it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in this folder (for messages; open it through the handle).
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The sub-folder `name`, never through a link, created 0700 when
    /// `create` and missing, and refused when it is not the user's.
    pub fn sub(&self, name: &str, create: bool) -> Result<Dir> {
        check_name(name)?;
        let path = self.path.join(name);
        let open = || sys::open_dir_at(&self.fd, name);
        let fd = match open() {
            Ok(fd) => fd,
            Err(e) if create && sys::fail(&e) == Fail::Missing => {
                match sys::mkdir_at(&self.fd, name) {
                    Ok(()) => {}
                    Err(e) if sys::fail(&e) == Fail::Exists => {}
                    Err(e) => return Err(Error::io(&path, e)),
                }
                open().map_err(|e| self.classify_dir(name, e))?
            }
            Err(e) => return Err(self.classify_dir(name, e)),
        };
        verify_dir(&fd, &path)?;
        Ok(Dir {
            fd: fd.into(),
            path,
            swap: self.swap.clone(),
        })
    }

    /// Walks down `names`, one [`Dir::sub`] each.
    pub fn walk(&self, names: &[&str], create: bool) -> Result<Dir> {
        let mut names = names.iter();
        let Some(first) = names.next() else {
            return self.try_clone();
        };
        let mut dir = self.sub(first, create)?;
        for name in names {
            dir = dir.sub(name, create)?;
        }
        Ok(dir)
    }

    /// True when this folder is still the user's (owned by them, not
    /// writable by group or others) and still the folder `path` names: not
    /// removed, moved away or replaced since it was opened.
    pub fn still_at(&self, path: &Path) -> bool {
        let Ok(meta) = sys::fstat(&*self.fd) else {
            return false;
        };
        let ours = sys::linked(&self.fd) && meta.uid == my_uid() && meta.mode & 0o022 == 0;
        ours && sys::identity(path).is_ok_and(|now| now == (meta.dev, meta.ino))
    }

    /// A second handle on the same folder.
    pub fn try_clone(&self) -> Result<Dir> {
        Ok(Dir {
            fd: self.fd.clone(),
            path: self.path.clone(),
            swap: self.swap.clone(),
        })
    }

    /// The error for a failed open of `name`: a link, not a file, missing...
    fn classify(&self, name: &str, e: std::io::Error) -> Error {
        let path = self.path.join(name);
        match sys::fail(&e) {
            Fail::Link => Error::Symlink { path },
            Fail::Missing => Error::NotFound { path },
            Fail::WrongKind => match self.stat(name) {
                Ok(Some(m)) if m.kind == Kind::Symlink => Error::Symlink { path },
                _ => Error::NotAFile { path },
            },
            _ => Error::io(path, e),
        }
    }

    /// The error for a failed open of the folder `name`.
    fn classify_dir(&self, name: &str, e: std::io::Error) -> Error {
        match self.classify(name, e) {
            Error::NotAFile { path } => Error::NotAFolder { path },
            other => other,
        }
    }

    /// What `name` is, without following a link; `None` when it is missing.
    pub fn stat(&self, name: &str) -> Result<Option<Meta>> {
        check_name(name)?;
        sys::stat_at(&self.fd, name).map_err(|e| Error::io(self.path.join(name), e))
    }

    /// True when `name` exists (as anything).
    pub fn exists(&self, name: &str) -> bool {
        self.stat(name).is_ok_and(|m| m.is_some())
    }

    /// Opens the regular file `name` for reading: never through a link,
    /// never blocking (a FIFO is refused, not waited on), owned by the user.
    pub fn open(&self, name: &str) -> Result<File> {
        self.open_meta(name).map(|(file, _)| file)
    }

    /// [`Dir::open`], with what `stat` said of the file opened.
    pub fn open_meta(&self, name: &str) -> Result<(File, Meta)> {
        check_name(name)?;
        // (Not looked at before the open, unlike a file outside the root: no
        // one but root can make a device node in the user's private folder,
        // and a FIFO opened without blocking does nothing.)
        let file = sys::open_read_at(&self.fd, name).map_err(|e| self.classify(name, e))?;
        let meta = check_regular(&file, &self.path.join(name), true)?;
        Ok((file, meta))
    }

    /// Reads the whole regular file `name`, at most `limit` bytes (see [`Dir::open`]).
    pub fn read(&self, name: &str, limit: u64) -> Result<Vec<u8>> {
        self.read_meta(name, limit).map(|(bytes, _)| bytes)
    }

    /// [`Dir::read`], with what `stat` said of the file it read.
    pub fn read_meta(&self, name: &str, limit: u64) -> Result<(Vec<u8>, Meta)> {
        let (file, meta) = self.open_meta(name)?;
        let bytes = read_bounded(file, meta.len, limit, &self.path.join(name))?;
        Ok((bytes, meta))
    }

    /// Writes `bytes` to `name` atomically: a private temp file named
    /// `.interband-tmp.*` in this folder, then a rename over `name` (a link
    /// there is replaced, never written through). Readers see the old file or
    /// the new one, never a mix. With `durable`, the file and the folder are
    /// fsynced so the write survives a power loss.
    pub fn write(&self, name: &str, bytes: &[u8], durable: bool) -> Result<()> {
        check_name(name)?;
        let target = self.path.join(name);
        let (tmp, mut file) = self.create_temp()?;
        let guard = Unlink {
            dir: self,
            name: Some(tmp),
        };
        let tmp_path = self.path.join(guard.name());
        file.write_all(bytes).map_err(|e| Error::io(&tmp_path, e))?;
        if durable {
            file.sync_all().map_err(|e| Error::io(&tmp_path, e))?;
        }
        drop(file);
        self.replace(guard, name)
            .map_err(|e| Error::io(&target, e))?;
        if durable {
            self.sync()?;
        }
        Ok(())
    }

    /// Moves the temp file named by `guard` to `name`. Where `name` is an
    /// existing regular file, the two are swapped (Linux
    /// `renameat2(RENAME_EXCHANGE)`) and the old one, now at the temp name, is
    /// removed: readers see the same atomic switch as with a rename, but ext4
    /// does not force the new file's blocks out at once as it does for a
    /// rename over an existing file (`auto_da_alloc`), which makes a replace
    /// about three times cheaper. In memory (tmpfs) nothing is written out,
    /// and a plain rename saves the swap's look at the old file and its
    /// removal.
    fn replace(&self, mut guard: Unlink, name: &str) -> std::io::Result<()> {
        let tmp = guard.name().to_owned();
        let swap = *self.swap.get_or_init(|| sys::swap_pays(&self.fd));
        let regular = swap && matches!(self.stat(name), Ok(Some(m)) if m.kind == Kind::File);
        if regular && sys::exchange_at(&self.fd, &tmp, name) {
            // The old file is at the temp name now: the guard removes it.
            return Ok(());
        }
        sys::rename_at(&self.fd, &tmp, &self.fd, name)?;
        guard.name = None;
        Ok(())
    }

    /// Creates a new private temp file (`.interband-tmp.*`, mode 0600).
    fn create_temp(&self) -> Result<(String, File)> {
        for _ in 0..16 {
            let name = format!("{TEMP_PREFIX}{:016x}", random64());
            match sys::create_new_at(&self.fd, &name) {
                Ok(file) => return Ok((name, file)),
                Err(e) if sys::fail(&e) == Fail::Exists => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            }
        }
        Err(Error::io(
            &self.path,
            std::io::Error::other("no free temp file name"),
        ))
    }

    /// Writes `bytes` to a new file `name` that must not exist yet, durably
    /// (through a temp file, so nobody sees it half written). Returns false
    /// when `name` already exists.
    pub fn write_new(&self, name: &str, bytes: &[u8]) -> Result<bool> {
        check_name(name)?;
        let (tmp, mut file) = self.create_temp()?;
        let guard = Unlink {
            dir: self,
            name: Some(tmp),
        };
        let tmp_path = self.path.join(guard.name());
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&tmp_path, e))?;
        drop(file);
        self.move_new(guard, self, name)
    }

    /// Renames the temp file of `guard` to `to/name` without replacing anything.
    fn move_new(&self, mut guard: Unlink, to: &Dir, name: &str) -> Result<bool> {
        match sys::rename_new_at(&self.fd, guard.name(), &to.fd, name) {
            Ok(true) => {
                guard.name = None;
                to.sync()?;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => Err(Error::io(to.path.join(name), e)),
        }
    }

    /// Writes `bytes` durably to a temp file here, then moves it to the new
    /// name `name` in `to` (maildir delivery: `tmp/` to `new/`).
    pub fn deliver(&self, to: &Dir, name: &str, bytes: &[u8]) -> Result<bool> {
        check_name(name)?;
        let (tmp, mut file) = self.create_temp()?;
        let guard = Unlink {
            dir: self,
            name: Some(tmp),
        };
        let tmp_path = self.path.join(guard.name());
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&tmp_path, e))?;
        drop(file);
        self.move_new(guard, to, name)
    }

    /// Removes the file `name` (a link is removed, not followed). Returns
    /// whether there was one.
    pub fn remove(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        match sys::unlink_at(&self.fd, name) {
            Ok(()) => Ok(true),
            Err(e) if sys::fail(&e) == Fail::Missing => Ok(false),
            Err(e) => Err(Error::io(self.path.join(name), e)),
        }
    }

    /// Removes the empty folder `name` (never through a link). Returns
    /// whether there was one.
    pub fn remove_dir(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        match sys::rmdir_at(&self.fd, name) {
            Ok(()) => Ok(true),
            Err(e) if sys::fail(&e) == Fail::Missing => Ok(false),
            Err(e) => Err(Error::io(self.path.join(name), e)),
        }
    }

    /// Renames `name` here to `to_name` in `to`, replacing a file there.
    /// Returns false when `name` was gone (another process moved it first).
    pub fn rename(&self, name: &str, to: &Dir, to_name: &str) -> Result<bool> {
        check_name(name)?;
        check_name(to_name)?;
        match sys::rename_at(&self.fd, name, &to.fd, to_name) {
            Ok(()) => Ok(true),
            Err(e) if sys::fail(&e) == Fail::Missing => Ok(false),
            Err(e) => Err(Error::io(self.path.join(name), e)),
        }
    }

    /// Every entry of the folder (not `.` and `..`), sorted by name.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let mut out = sys::entries(&self.fd, &self.path).map_err(|e| Error::io(&self.path, e))?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The UTF-8 names of the regular files here whose name ends with
    /// `suffix` and does not start with `.`, sorted.
    pub fn file_names(&self, suffix: &str) -> Result<Vec<String>> {
        Ok(self
            .entries()?
            .into_iter()
            .filter(|e| e.kind == Kind::File)
            .filter_map(|e| e.name.into_string().ok())
            .filter(|n| n.ends_with(suffix) && !n.starts_with('.'))
            .collect())
    }

    /// Opens (creating 0600 when missing) the file `name` for reading and
    /// writing in place: a lock file or a stamp. Never through a link, never
    /// anything but a regular file.
    pub fn open_rw(&self, name: &str) -> Result<File> {
        self.open_rw_meta(name).map(|(file, _)| file)
    }

    /// [`Dir::open_rw`], with what `stat` said of the file opened.
    pub fn open_rw_meta(&self, name: &str) -> Result<(File, Meta)> {
        check_name(name)?;
        let file = sys::open_rw_at(&self.fd, name).map_err(|e| self.classify(name, e))?;
        let meta = check_regular(&file, &self.path.join(name), true)?;
        Ok((file, meta))
    }

    /// Sets the modification time of `name` to now, creating it when missing.
    pub fn touch(&self, name: &str) -> Result<()> {
        let file = self.open_rw(name)?;
        file.set_modified(SystemTime::now())
            .map_err(|e| Error::io(self.path.join(name), e))
    }

    /// Fsyncs the folder, so a rename or a new entry in it is durable.
    pub fn sync(&self) -> Result<()> {
        sys::sync_dir(&self.fd).map_err(|e| Error::io(&self.path, e))
    }

    /// Removes this folder's temp files older than `age` (crashed writers'
    /// leftovers). Returns their paths.
    pub fn sweep_temps(&self, age: Duration) -> Vec<PathBuf> {
        let now = SystemTime::now();
        let Ok(entries) = self.entries() else {
            return Vec::new();
        };
        entries
            .into_iter()
            .filter(|e| e.kind == Kind::File)
            .filter_map(|e| e.name.into_string().ok())
            .filter(|n| n.starts_with(TEMP_PREFIX))
            .filter(|n| {
                self.stat(n)
                    .ok()
                    .flatten()
                    .is_some_and(|m| now.duration_since(m.mtime).unwrap_or_default() > age)
            })
            .filter(|n| self.remove(n).unwrap_or(false))
            .map(|n| self.path.join(n))
            .collect()
    }
}

/// Removes a temp file when dropped, unless it was moved away.
struct Unlink<'a> {
    dir: &'a Dir,
    name: Option<String>,
}

impl Unlink<'_> {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }
}

impl Drop for Unlink<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = sys::unlink_at(&self.dir.fd, &name);
        }
    }
}

/// A 64-bit random number for temp file names (the name is created with
/// `O_EXCL`, so a collision only costs a retry).
pub(crate) fn random64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    // RandomState's keys are random per process: with a counter and the
    // time, unique across processes without asking for the pid each time.
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}

fn check_regular(file: &File, path: &Path, ours: bool) -> Result<Meta> {
    let meta = sys::fstat(file).map_err(|e| Error::io(path, e))?;
    if meta.kind == Kind::Symlink {
        // (Windows opens a reparse point itself, to look at it.)
        return Err(Error::Symlink { path: path.into() });
    }
    if meta.kind != Kind::File {
        return Err(Error::NotAFile { path: path.into() });
    }
    if ours && meta.uid != my_uid() {
        return Err(Error::NotOurs {
            path: path.into(),
            reason: format!("owned by uid {}, not by you (uid {})", meta.uid, my_uid()),
        });
    }
    Ok(meta)
}

/// Reads at most `limit` bytes of `file` (`len` bytes long when opened);
/// more is [`Error::TooLarge`].
fn read_bounded(file: File, len: u64, limit: u64, path: &Path) -> Result<Vec<u8>> {
    if len > limit {
        return Err(Error::TooLarge {
            path: path.into(),
            size: len,
            limit,
        });
    }
    let mut buf = Vec::with_capacity(len as usize);
    // The bytes the stat saw, no more (a file that grew since is read as it
    // was; one that shrank, as far as it goes): no read to confirm the end.
    let mut file = file.take(len);
    while buf.len() < len as usize {
        let at = buf.len();
        buf.resize(len as usize, 0);
        match std::io::Read::read(&mut file, &mut buf[at..]) {
            Ok(0) => {
                buf.truncate(at);
                break;
            }
            Ok(n) => buf.truncate(at + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(at),
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(buf)
}

/// How [`open_regular`] treats a link at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Follow it (a transcript or a settings file may be one).
    Follow,
    /// Refuse it with [`Error::Symlink`].
    Refuse,
}

/// Opens a file from outside the root for reading: non-blocking (a FIFO is
/// refused, never waited on), regular files only (not a device such as
/// `/dev/zero`), following a link or not. Read it within a bound.
pub fn open_regular(path: &Path, links: Links) -> Result<File> {
    open_regular_meta(path, links).map(|(file, _)| file)
}

/// [`open_regular`], with what `stat` said of the file opened.
pub fn open_regular_meta(path: &Path, links: Links) -> Result<(File, Meta)> {
    // Looked at before it is opened: opening a device can have effects of
    // its own (a serial port resets what is on it). Checked again once open.
    let seen = match links {
        Links::Follow => std::fs::metadata(path),
        Links::Refuse => std::fs::symlink_metadata(path),
    };
    match seen {
        Ok(m) if m.file_type().is_symlink() => return Err(Error::Symlink { path: path.into() }),
        Ok(m) if !m.is_file() => return Err(Error::NotAFile { path: path.into() }),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotFound { path: path.into() });
        }
        Err(e) => return Err(Error::io(path, e)),
    }
    let file =
        sys::open_outside(path, links == Links::Follow).map_err(|e| match sys::fail(&e) {
            Fail::Link if links == Links::Refuse => Error::Symlink { path: path.into() },
            Fail::Missing => Error::NotFound { path: path.into() },
            _ => Error::io(path, e),
        })?;
    let meta = check_regular(&file, path, false)?;
    Ok((file, meta))
}

/// Reads a whole regular file from outside the root, at most `limit` bytes,
/// never through a link at its last component, never blocking.
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (file, meta) = open_regular_meta(path, Links::Refuse)?;
    read_bounded(file, meta.len, limit, path)
}

/// [`read_capped`], following a link (a settings file kept in a dotfiles repository).
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (file, meta) = open_regular_meta(path, Links::Follow)?;
    read_bounded(file, meta.len, limit, path)
}

/// Reads the file `rel` of the folder `base` (a project's directive file):
/// `rel` must be relative with no `..`, and the file must resolve inside
/// `base` (no link leading out), be a regular file, and hold at most `limit`
/// bytes. Never blocks.
///
/// ```
/// # let tmp = tempfile::tempdir().unwrap();
/// # let project = tmp.path();
/// std::fs::write(project.join("notes.md"), "be brief").unwrap();
/// assert_eq!(interband::fsio::read_inside(project, "notes.md", 100).unwrap(), b"be brief");
/// assert!(interband::fsio::read_inside(project, "../x", 100).is_err());
/// assert!(interband::fsio::read_inside(project, "/etc/passwd", 100).is_err());
/// # #[cfg(unix)] {
/// std::os::unix::fs::symlink("/etc/passwd", project.join("out.md")).unwrap();
/// assert!(interband::fsio::read_inside(project, "out.md", 1 << 20).is_err());
/// # }
/// ```
pub fn read_inside(base: &Path, rel: &str, limit: u64) -> Result<Vec<u8>> {
    use std::path::Component;
    let relative = Path::new(rel);
    let plain = !rel.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(Error::InvalidName {
            what: "file",
            value: rel.to_owned(),
            reason: "must be a path inside the project (relative, without `..`)".into(),
        });
    }
    let full = base.join(relative);
    // The usual case, at the cost of one call: there is no such file.
    if std::fs::symlink_metadata(&full).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Err(Error::NotFound { path: full });
    }
    let resolved = dunce::canonicalize(&full).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { path: full.clone() },
        _ => Error::io(&full, e),
    })?;
    let base = dunce::canonicalize(base).map_err(|e| Error::io(base, e))?;
    if !resolved.starts_with(&base) {
        return Err(Error::NotOurs {
            path: full,
            reason: format!("leads out of the project, to {}", resolved.display()),
        });
    }
    read_capped(&resolved, limit)
}

/// What `stat` says of `path` outside the root (a folder whose owner and
/// access are asked, a lock file's identity), following a link at its last
/// component or not.
pub fn metadata(path: &Path, links: Links) -> Result<Meta> {
    sys::stat_path(path, links == Links::Follow).map_err(|e| match sys::fail(&e) {
        Fail::Missing => Error::NotFound { path: path.into() },
        _ => Error::io(path, e),
    })
}

/// The device and inode of `file`, opened at `path` (on Windows, its
/// volume and file index): to tell whether the name still leads to it.
pub fn identity_of(file: &File, path: &Path) -> Result<(u64, u64)> {
    sys::fstat(file)
        .map(|m| (m.dev, m.ino))
        .map_err(|e| Error::io(path, e))
}

/// Creates the folder `path` and its missing parents, the last one the
/// user's alone (mode 0700; on Windows, an access list of its own for the
/// user, the system and the Administrators).
pub fn create_dir_private(path: &Path) -> Result<()> {
    sys::create_top(path, true).map_err(|e| Error::io(path, e))
}

/// Reads exactly `buf.len()` bytes of `file` at `offset` (on Windows the
/// file's position moves; nothing here depends on it).
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Writes all of `bytes` into `file` at `offset` (see [`read_exact_at`]).
pub fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < bytes.len() {
            match std::os::windows::fs::FileExt::seek_write(
                file,
                &bytes[done..],
                offset + done as u64,
            )? {
                0 => return Err(std::io::ErrorKind::WriteZero.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Writes `bytes` to `target` outside the root (a settings file the user
/// named), atomically: a private temp file in the same folder, then a rename
/// over the target (a link there is replaced, not written through).
pub fn write_atomic(target: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidName {
            what: "file name",
            value: target.display().to_string(),
            reason: "must be a UTF-8 file name".into(),
        })?;
    folder_of(target)?.write(name, bytes, durable)
}

/// Removes the temp files older than `age` that crashed writers (a killed
/// `install`) left beside `target`, in a folder outside the root. Returns
/// their paths (none when the folder cannot be opened).
pub fn sweep_temps_beside(target: &Path, age: Duration) -> Vec<PathBuf> {
    folder_of(target).map_or_else(|_| Vec::new(), |d| d.sweep_temps(age))
}

/// The folder `target` is in, opened as it is (a file outside the root).
fn folder_of(target: &Path) -> Result<Dir> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fd = sys::open_top(dir).map_err(|e| Error::io(dir, e))?;
    Ok(Dir {
        fd: fd.into(),
        path: dir.to_owned(),
        swap: Default::default(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A link to `target` at `at` (on Windows a file or folder link, which
    /// needs the right to make one: Developer Mode or an administrator).
    pub(crate) fn link(target: &Path, at: &Path) {
        #[cfg(unix)]
        std::os::unix::fs::symlink(target, at).unwrap();
        #[cfg(windows)]
        if target.is_dir() {
            std::os::windows::fs::symlink_dir(target, at).unwrap();
        } else {
            std::os::windows::fs::symlink_file(target, at).unwrap();
        }
    }

    fn root() -> (tempfile::TempDir, Dir) {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::root(&t.path().join("r"), true).unwrap();
        (t, d)
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 shows a link as what it names, never as a link (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn reads_refuse_links() {
        let (_t, d) = root();
        d.write("real.json", b"{}", false).unwrap();
        link(&d.join("real.json"), &d.join("link.json"));
        assert!(matches!(
            d.read("link.json", 10),
            Err(Error::Symlink { .. })
        ));
        assert!(matches!(d.open_rw("link.json"), Err(Error::Symlink { .. })));
        d.write("link.json", b"[]", false).unwrap();
        assert_eq!(
            d.read("real.json", 10).unwrap(),
            b"{}",
            "replaced, not written through"
        );
    }

    #[test]
    fn reads_refuse_fifos_devices_folders_and_big_files() {
        let (t, d) = root();
        d.write("real.json", b"{}", false).unwrap();
        assert_eq!(d.read("real.json", 10).unwrap(), b"{}");
        assert!(matches!(
            d.read("real.json", 1),
            Err(Error::TooLarge { size: 2, .. })
        ));
        d.sub("folder", true).unwrap();
        assert!(matches!(d.read("folder", 10), Err(Error::NotAFile { .. })));
        assert!(matches!(d.read("none", 10), Err(Error::NotFound { .. })));
        for bad in ["", ".", "..", "a/b"] {
            assert!(matches!(d.read(bad, 10), Err(Error::InvalidName { .. })));
        }
        #[cfg(windows)]
        for bad in ["a\\b", "a:b", "a.json:stream"] {
            assert!(matches!(d.read(bad, 10), Err(Error::InvalidName { .. })));
        }
        #[cfg(unix)]
        fifo_and_device(&d);
        // The folder's handle first: Windows removes a folder someone
        // holds only when they let go.
        drop(d);
        drop(t);
    }

    #[cfg(unix)]
    fn fifo_and_device(d: &Dir) {
        let fifo =
            std::ffi::CString::new(d.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(matches!(d.read("fifo", 10), Err(Error::NotAFile { .. })));
        assert!(matches!(d.open_rw("fifo"), Err(Error::NotAFile { .. })));
        std::os::unix::fs::symlink("/dev/zero", d.join("zero")).unwrap();
        assert!(matches!(d.read("zero", 10), Err(Error::Symlink { .. })));
        assert!(matches!(
            read_regular(&d.join("zero"), 10),
            Err(Error::NotAFile { .. })
        ));
        assert!(matches!(
            read_regular(&d.join("fifo"), 10),
            Err(Error::NotAFile { .. })
        ));
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 shows a link as what it names, never as a link (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn sub_folders_are_never_links_and_must_be_private() {
        let (t, d) = root();
        let outside = t.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        link(&outside, &d.join("linked"));
        assert!(matches!(d.sub("linked", true), Err(Error::Symlink { .. })));
        assert!(matches!(
            d.walk(&["linked", "x"], true),
            Err(Error::Symlink { .. })
        ));
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        d.write("file", b"x", false).unwrap();
        assert!(matches!(d.sub("file", true), Err(Error::NotAFolder { .. })));
        #[cfg(unix)]
        open_folders(&t, &d);
    }

    #[cfg(unix)]
    fn open_folders(t: &tempfile::TempDir, d: &Dir) {
        let open = d.sub("open", true).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(d.sub("open", false), Err(Error::NotOurs { .. })));
        std::fs::set_permissions(t.path().join("r"), std::fs::Permissions::from_mode(0o770))
            .unwrap();
        let err = Dir::root(&t.path().join("r"), false).unwrap_err();
        assert!(err.to_string().contains("chmod go-w"), "{err}");
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 shows a link as what it names, never as a link (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn writes_replace_a_link_instead_of_writing_through_it_and_leave_no_temp() {
        let (t, d) = root();
        replaces_a_link_and_leaves_no_temp(&t, &d);
        // In memory (tmpfs) a replace is a plain rename: the same outcome.
        if let Ok(t) = tempfile::tempdir_in("/dev/shm")
            && let Ok(d) = Dir::root(&t.path().join("r"), true)
            && !sys::swap_pays(&d.fd)
        {
            replaces_a_link_and_leaves_no_temp(&t, &d);
            assert_eq!(d.swap.get(), Some(&false), "found at the first replace");
        }
    }

    fn replaces_a_link_and_leaves_no_temp(t: &tempfile::TempDir, d: &Dir) {
        let outside = t.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        link(&outside, &d.join("t.json"));
        for i in 0..4 {
            d.write("t.json", format!("v{i}").as_bytes(), i % 2 == 0)
                .unwrap();
            assert_eq!(d.read("t.json", 10).unwrap(), format!("v{i}").as_bytes());
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        let names: Vec<_> = d.entries().unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["t.json"], "no temp or old file left");
        assert_eq!(d.stat("t.json").unwrap().unwrap().mode & 0o777, 0o600);
        d.sub("dir", true).unwrap();
        assert!(d.write("dir", b"x", false).is_err());
        assert!(d.join("dir").is_dir());
        assert_eq!(d.entries().unwrap().len(), 2, "the failed temp is gone");
    }

    #[test]
    fn removals_take_the_name_away_at_once() {
        let (_t, d) = root();
        let sub = d.sub("s", true).unwrap();
        sub.write("f", b"x", false).unwrap();
        assert!(d.remove_dir("s").is_err(), "not empty");
        assert!(d.remove("s").is_err(), "a folder is not a file");
        assert!(sub.remove("f").unwrap());
        assert!(!sub.remove("f").unwrap(), "gone");
        drop(sub);
        assert!(d.remove_dir("s").unwrap());
        assert!(!d.exists("s"));
        assert!(!d.join("s").exists());
        assert!(!d.remove_dir("s").unwrap());
        d.write("f", b"x", false).unwrap();
        assert!(d.remove_dir("f").is_err(), "a file is not a folder");
        assert!(d.remove("f").unwrap());
        assert!(d.entries().unwrap().is_empty());
    }

    #[test]
    fn delivery_and_renames_stay_between_the_handles() {
        let (_t, d) = root();
        let tmp = d.sub("tmp", true).unwrap();
        let new = d.sub("new", true).unwrap();
        assert!(tmp.deliver(&new, "a.json", b"1").unwrap());
        assert!(
            !tmp.deliver(&new, "a.json", b"2").unwrap(),
            "never replaces"
        );
        assert_eq!(new.read("a.json", 10).unwrap(), b"1");
        assert!(tmp.entries().unwrap().is_empty());
        let cur = d.sub("cur", true).unwrap();
        assert!(new.rename("a.json", &cur, "a.json").unwrap());
        assert!(!new.rename("a.json", &cur, "a.json").unwrap(), "gone");
        assert!(d.write_new("n", b"x").unwrap());
        assert!(!d.write_new("n", b"y").unwrap());
        assert_eq!(d.read("n", 10).unwrap(), b"x");
    }
}
