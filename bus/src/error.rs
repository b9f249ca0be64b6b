//! The one error type of the bus. Every variant names the file, folder or channel it is about.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong, and where.
///
/// [`Error::is_invalid_data`] separates bad data (a corrupt, oversized or
/// non-conforming message) from usage and I/O trouble, so a command line can
/// map them to different exit codes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system call on `path` failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder the call was about.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// There is no file at `path` (a message, a settings file, a note).
    #[error("{}: no such file", path.display())]
    NotFound {
        /// Where the message was expected.
        path: PathBuf,
    },
    /// `path` is a symbolic link; the bus never reads or writes through one.
    #[error("{}: is a symbolic link; refusing to follow it", path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// `path` is not the user's: a folder owned by someone else or writable
    /// by group or others, or a file owned by someone else. The bus refuses
    /// it as ssh's `StrictModes` does.
    #[error("{}: refusing to use it: {reason}", path.display())]
    NotOurs {
        /// The folder or file.
        path: PathBuf,
        /// Who owns it or who may write it.
        reason: String,
    },
    /// `path` should be a folder and is something else (a file, a device...).
    #[error("{}: not a folder", path.display())]
    NotAFolder {
        /// The offending path.
        path: PathBuf,
    },
    /// `path` is not a regular file (a folder, a device, a socket...).
    #[error("{}: not a regular file", path.display())]
    NotAFile {
        /// The offending path.
        path: PathBuf,
    },
    /// The file at `path` (or a message about to be written there) exceeds the size cap.
    #[error("{}: {size} bytes is over the {limit}-byte limit", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size, or at least this many bytes.
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// The file at `path` is not JSON (empty, truncated or corrupt).
    #[error("{}: not valid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The file at `path` is JSON but not a valid v1 envelope or payload.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which rule it breaks.
        reason: String,
    },
    /// A payload offered for publishing on `channel` breaks its contract.
    #[error("{channel}: invalid payload: {reason}")]
    InvalidPayload {
        /// `namespace/channel/key` of the publish.
        channel: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A valid message at `path` does not decode into the requested Rust type.
    #[error("{}: payload does not match the expected type: {source}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A namespace, channel, key or pattern is unusable.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidName {
        /// "namespace", "channel", "key", "pattern"...
        what: &'static str,
        /// The offending value.
        value: String,
        /// Why.
        reason: String,
    },
    /// The lock at `path` was still held by someone else after waiting `waited`.
    #[error("{}: lock still held by another process after {waited:?}", path.display())]
    LockTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// No root folder: `INTERBAND_ROOT` is unset and the home folder is
    /// unknown (`HOME`; on Windows `USERPROFILE`, else `HOME`).
    #[cfg_attr(
        not(windows),
        error("cannot find the interband root: INTERBAND_ROOT is unset and HOME is not set")
    )]
    #[cfg_attr(
        windows,
        error(
            "cannot find the interband root: INTERBAND_ROOT is unset and neither USERPROFILE nor HOME is set"
        )
    )]
    NoRoot,
    /// A consumer's handler failed on the message at `path`.
    #[error("consumer {consumer}: {}: {reason}", path.display())]
    Consumer {
        /// The consumer's name.
        consumer: String,
        /// The message it was handling.
        path: PathBuf,
        /// What the handler said.
        reason: String,
    },
}

impl Error {
    /// True when the error is about the data itself (corrupt, oversized or
    /// non-conforming), false for usage, I/O, lock and watch trouble.
    pub fn is_invalid_data(&self) -> bool {
        matches!(
            self,
            Error::TooLarge { .. }
                | Error::Json { .. }
                | Error::Invalid { .. }
                | Error::InvalidPayload { .. }
                | Error::Decode { .. }
        )
    }

    /// True for a failure that passes by itself: a full disk or quota, a
    /// file-size limit, no descriptors or memory left, a lock held too long,
    /// an interrupted or would-block call. Worth trying again later, never
    /// a reason to give up.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::LockTimeout { .. } => true,
            Error::Io { source, .. } => is_transient_io(source),
            _ => false,
        }
    }

    /// The error as an `std::io::Error` of the matching kind (`NotFound`
    /// stays `NotFound`), for callers that speak `std::io`.
    pub fn into_io(self) -> std::io::Error {
        use std::io::ErrorKind;
        match self {
            Error::Io { source, .. } => source,
            Error::NotFound { .. } => std::io::Error::new(ErrorKind::NotFound, self),
            Error::TooLarge { .. } => std::io::Error::new(ErrorKind::FileTooLarge, self),
            Error::NotAFolder { .. } => std::io::Error::new(ErrorKind::NotADirectory, self),
            Error::NotAFile { .. } | Error::Symlink { .. } => {
                std::io::Error::new(ErrorKind::InvalidInput, self)
            }
            Error::NotOurs { .. } => std::io::Error::new(ErrorKind::PermissionDenied, self),
            other => std::io::Error::other(other),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// [`Error::is_transient`] for an `std::io::Error`.
pub fn is_transient_io(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::Interrupted
            | ErrorKind::WouldBlock
            | ErrorKind::TimedOut
            | ErrorKind::OutOfMemory
            | ErrorKind::StorageFull
            | ErrorKind::QuotaExceeded
            | ErrorKind::FileTooLarge
            | ErrorKind::ResourceBusy
    ) || e.raw_os_error().is_some_and(|n| TRANSIENT.contains(&n))
}

/// The system's error numbers for a full disk or quota, too many open
/// files, no memory, or a file busy for now.
#[cfg(unix)]
const TRANSIENT: &[i32] = &[
    libc::ENOSPC,
    libc::EDQUOT,
    libc::EFBIG,
    libc::EMFILE,
    libc::ENFILE,
    libc::ENOMEM,
    libc::EBUSY,
    libc::EAGAIN,
];
/// Windows' error numbers for a full disk, too many open files, no memory
/// or quota, a file another process holds, a locked region.
#[cfg(windows)]
const TRANSIENT: &[i32] = &[112, 39, 4, 8, 14, 32, 33, 1816];

/// The bus's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
