//! The file layer's Windows calls: names opened relative to a folder
//! handle (`NtCreateFile` with a root directory, as `openat` does), reparse
//! points (symbolic links, junctions) opened as themselves and refused as
//! Unix refuses a link, renames and removals by handle with POSIX semantics
//! where the system has them, and the owner and the access list read where
//! Unix reads the uid and the mode.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use std::time::{Duration, SystemTime};

use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::Storage::FileSystem::{
    FILE_CREATE, FILE_DIRECTORY_FILE, FILE_OPEN, FILE_OPEN_IF, FILE_OPEN_REPARSE_POINT,
    FILE_RENAME_INFORMATION, FILE_SYNCHRONOUS_IO_NONALERT, FileDispositionInformation,
    FileDispositionInformationEx, FileRenameInformation, FileRenameInformationEx, NtCreateFile,
    NtSetInformationFile,
};
use windows_sys::Win32::Foundation::{
    HANDLE, LocalFree, OBJ_CASE_INSENSITIVE, RtlNtStatusToDosError, UNICODE_STRING,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, GetSecurityInfo,
    SDDL_REVISION_1, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACL, DACL_SECURITY_INFORMATION, GetAce, GetLengthSid, GetTokenInformation,
    OWNER_SECURITY_INFORMATION, PSID, SECURITY_ATTRIBUTES, TOKEN_GROUPS, TOKEN_QUERY, TOKEN_USER,
    TokenGroups, TokenUser,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, CreateDirectoryW, DELETE, FILE_ATTRIBUTE_DIRECTORY,
    FILE_ATTRIBUTE_NORMAL, FILE_ATTRIBUTE_REPARSE_POINT, FILE_ATTRIBUTE_TAG_INFO, FILE_BASIC_INFO,
    FILE_DISPOSITION_FLAG_DELETE, FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE,
    FILE_DISPOSITION_FLAG_POSIX_SEMANTICS, FILE_DISPOSITION_INFO, FILE_DISPOSITION_INFO_EX,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_GENERIC_READ,
    FILE_GENERIC_WRITE, FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE,
    FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_STANDARD_INFO, FILE_TRAVERSE, FILE_TYPE_DISK,
    FileAttributeTagInfo, FileBasicInfo, FileStandardInfo, GetFileInformationByHandle,
    GetFileInformationByHandleEx, GetFileType, READ_CONTROL, SYNCHRONIZE,
};
use windows_sys::Win32::System::IO::IO_STATUS_BLOCK;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::{Entry, Fail, Kind, Meta};

/// An open folder.
pub(super) type Handle = OwnedHandle;

// Win32 errors this layer tells apart.
const ERROR_FILE_NOT_FOUND: i32 = 2;
const ERROR_PATH_NOT_FOUND: i32 = 3;
const ERROR_ACCESS_DENIED: i32 = 5;
const ERROR_INVALID_FUNCTION: i32 = 1;
const ERROR_FILE_EXISTS: i32 = 80;
const ERROR_INVALID_PARAMETER: i32 = 87;
const ERROR_NOT_SUPPORTED: i32 = 50;
const ERROR_SHARING_VIOLATION: i32 = 32;
const ERROR_ALREADY_EXISTS: i32 = 183;
const ERROR_DIRECTORY: i32 = 267;
const ERROR_STOPPED_ON_SYMLINK: i32 = 681;
const ERROR_CANT_RESOLVE_FILENAME: i32 = 1921;
// NT statuses mapped here rather than by RtlNtStatusToDosError, which
// calls "is a folder" access denied.
const STATUS_NOT_A_DIRECTORY: i32 = 0xC000_0103_u32 as i32;
const STATUS_FILE_IS_A_DIRECTORY: i32 = 0xC000_00BA_u32 as i32;
// FILE_RENAME_INFO's flags (winbase.h; windows-sys has them elsewhere).
const FILE_RENAME_FLAG_REPLACE_IF_EXISTS: u32 = 1;
const FILE_RENAME_FLAG_POSIX_SEMANTICS: u32 = 2;
/// A reparse tag with this bit names another file (a link, a junction);
/// other reparse points (cloud placeholders, deduplicated files) are files.
const NAME_SURROGATE: u32 = 0x2000_0000;

// Well-known SIDs, as bytes (revision, count, authority, sub-authorities).
const SYSTEM: &[u8] = &[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0];
const ADMINISTRATORS: &[u8] = &[1, 2, 0, 0, 0, 0, 0, 5, 32, 0, 0, 0, 0x20, 2, 0, 0];
const CREATOR_OWNER: &[u8] = &[1, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0];
const OWNER_RIGHTS: &[u8] = &[1, 1, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0];

/// The number [`Meta::uid`] gives the user's own files (never 0, the
/// system's).
const ME: u32 = 1;

/// What a failed call means to the layer above.
pub(super) fn fail(e: &io::Error) -> Fail {
    match e.raw_os_error() {
        Some(ERROR_STOPPED_ON_SYMLINK | ERROR_CANT_RESOLVE_FILENAME) => Fail::Link,
        Some(ERROR_FILE_NOT_FOUND | ERROR_PATH_NOT_FOUND) => Fail::Missing,
        Some(ERROR_DIRECTORY) => Fail::WrongKind,
        Some(ERROR_ALREADY_EXISTS | ERROR_FILE_EXISTS) => Fail::Exists,
        _ => Fail::Other,
    }
}

/// The number [`Meta::uid`] gives the user's own files.
pub(super) fn my_uid() -> u32 {
    ME
}

/// How to make a folder the user's alone.
pub(super) fn fix_hint(path: &Path) -> String {
    format!(
        "give write access to no one else (`icacls \"{}\" /inheritance:r /grant:r \"%USERNAME%:(OI)(CI)F\"`)",
        path.display()
    )
}

/// The process token's information of one class, as bytes (8-aligned).
fn token_info(class: i32) -> Option<Vec<u64>> {
    // SAFETY: the token handle is checked and closed; the buffer is sized
    // by the first call and aligned for the structures read from it.
    unsafe {
        let mut token: HANDLE = std::ptr::null_mut();
        if OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) == 0 {
            return None;
        }
        let token = OwnedHandle::from_raw_handle(token);
        let mut len = 0u32;
        GetTokenInformation(
            token.as_raw_handle(),
            class,
            std::ptr::null_mut(),
            0,
            &mut len,
        );
        let mut buf = vec![0u64; (len as usize).div_ceil(8).max(1)];
        (GetTokenInformation(
            token.as_raw_handle(),
            class,
            buf.as_mut_ptr().cast(),
            len,
            &mut len,
        ) != 0)
            .then_some(buf)
    }
}

/// The bytes of the SID at `sid`.
///
/// # Safety
/// `sid` must point to a valid SID.
unsafe fn sid_bytes<'a>(sid: PSID) -> &'a [u8] {
    // SAFETY: a valid SID is GetLengthSid bytes long.
    unsafe { std::slice::from_raw_parts(sid.cast::<u8>(), GetLengthSid(sid) as usize) }
}

/// The user's SID, and whether the Administrators group is in the user's
/// token (enabled or only for denial: an elevated run's files are owned by
/// the group, and a later plain run is the same person).
struct Me {
    sid: Vec<u8>,
    admin: bool,
}

fn me() -> &'static Me {
    static ME: std::sync::OnceLock<Me> = std::sync::OnceLock::new();
    ME.get_or_init(|| {
        // SAFETY: the buffers hold what GetTokenInformation wrote for the
        // class asked; the SIDs they point to live inside them.
        unsafe {
            let sid = token_info(TokenUser)
                .map(|buf| sid_bytes((*buf.as_ptr().cast::<TOKEN_USER>()).User.Sid).to_vec())
                .unwrap_or_default();
            let admin = token_info(TokenGroups).is_some_and(|buf| {
                let groups = &*buf.as_ptr().cast::<TOKEN_GROUPS>();
                let all =
                    std::slice::from_raw_parts(groups.Groups.as_ptr(), groups.GroupCount as usize);
                all.iter().any(|g| sid_bytes(g.Sid) == ADMINISTRATORS)
            });
            Me { sid, admin }
        }
    })
}

/// Frees what the system allocated for a security descriptor.
struct Local(*mut core::ffi::c_void);

impl Drop for Local {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: allocated by the system with LocalAlloc.
            unsafe { LocalFree(self.0) };
        }
    }
}

/// The owner as [`Meta::uid`] says it, and whether the access list lets
/// anyone but the user, the system and the Administrators write.
fn security(handle: HANDLE) -> io::Result<(u32, bool)> {
    let mut owner: PSID = std::ptr::null_mut();
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut sd = std::ptr::null_mut();
    // SAFETY: out-pointers to locals; the descriptor is freed by `Local`,
    // and the owner and the list point into it.
    unsafe {
        let rc = GetSecurityInfo(
            handle,
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut sd,
        );
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc as i32));
        }
        let _sd = Local(sd);
        let me = me();
        let uid = if owner.is_null() {
            u32::MAX
        } else {
            match sid_bytes(owner) {
                o if o == me.sid.as_slice() => ME,
                o if o == ADMINISTRATORS && me.admin => ME,
                o if o == SYSTEM || o == ADMINISTRATORS => 0,
                _ => u32::MAX,
            }
        };
        // No list at all lets everyone in.
        let mut open = dacl.is_null();
        if !open {
            const WRITE: u32 =
                0x2 | 0x4 | 0x40 | 0x1_0000 | 0x4_0000 | 0x8_0000 | 0x1000_0000 | 0x4000_0000;
            const INHERIT_ONLY: u8 = 0x08;
            for i in 0..u32::from((*dacl).AceCount) {
                let mut ace = std::ptr::null_mut();
                if GetAce(dacl, i, &mut ace) == 0 {
                    continue;
                }
                let ace = &*ace.cast::<ACCESS_ALLOWED_ACE>();
                // Allowed (type 0), applying to this object, granting a write.
                if ace.Header.AceType != 0
                    || ace.Header.AceFlags & INHERIT_ONLY != 0
                    || ace.Mask & WRITE == 0
                {
                    continue;
                }
                let sid = sid_bytes(std::ptr::addr_of!(ace.SidStart).cast_mut().cast());
                let trusted = sid == me.sid.as_slice()
                    || [SYSTEM, ADMINISTRATORS, CREATOR_OWNER, OWNER_RIGHTS].contains(&sid);
                if !trusted {
                    open = true;
                    break;
                }
            }
        }
        Ok((uid, open))
    }
}

/// A FILETIME-like count of 100 ns since 1601 as a time (before 1970: the epoch).
fn time(ticks: i64) -> SystemTime {
    const UNIX_EPOCH_TICKS: i64 = 116_444_736_000_000_000;
    let since = ticks.saturating_sub(UNIX_EPOCH_TICKS).max(0) as u64;
    SystemTime::UNIX_EPOCH + Duration::new(since / 10_000_000, (since % 10_000_000) as u32 * 100)
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// What the handle's file or folder is.
pub(super) fn fstat(h: impl AsHandle) -> io::Result<Meta> {
    let raw = h.as_handle().as_raw_handle();
    // SAFETY: a valid open handle and out-structures of the classes asked.
    unsafe {
        let mut info: BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
        if GetFileInformationByHandle(raw, &mut info) == 0 {
            return Err(last_error());
        }
        let mut basic: FILE_BASIC_INFO = std::mem::zeroed();
        let changed = if GetFileInformationByHandleEx(
            raw,
            FileBasicInfo,
            (&raw mut basic).cast(),
            size_of::<FILE_BASIC_INFO>() as u32,
        ) != 0
        {
            basic.ChangeTime
        } else {
            0
        };
        let written = (i64::from(info.ftLastWriteTime.dwHighDateTime) << 32)
            | i64::from(info.ftLastWriteTime.dwLowDateTime);
        let attrs = info.dwFileAttributes;
        let link = attrs & FILE_ATTRIBUTE_REPARSE_POINT != 0 && {
            let mut tag: FILE_ATTRIBUTE_TAG_INFO = std::mem::zeroed();
            GetFileInformationByHandleEx(
                raw,
                FileAttributeTagInfo,
                (&raw mut tag).cast(),
                size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
            ) == 0
                || tag.ReparseTag & NAME_SURROGATE != 0
        };
        let kind = if GetFileType(raw) != FILE_TYPE_DISK {
            Kind::Other
        } else if link {
            Kind::Symlink
        } else if attrs & FILE_ATTRIBUTE_DIRECTORY != 0 {
            Kind::Dir
        } else {
            Kind::File
        };
        let (uid, open) = security(raw)?;
        let base = if kind == Kind::Dir { 0o700 } else { 0o600 };
        Ok(Meta {
            kind,
            uid,
            mode: base | if open { 0o022 } else { 0 },
            len: (u64::from(info.nFileSizeHigh) << 32) | u64::from(info.nFileSizeLow),
            mtime: time(written),
            ctime: if changed > 0 {
                time(changed)
            } else {
                time(written)
            },
            dev: u64::from(info.dwVolumeSerialNumber),
            ino: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        })
    }
}

/// Opens `name` relative to the folder `dir` (never through a reparse
/// point: one is opened as itself), as `openat` does.
fn open_at(
    dir: &Handle,
    name: &str,
    access: u32,
    disposition: u32,
    options: u32,
) -> io::Result<OwnedHandle> {
    let wide: Vec<u16> = name.encode_utf16().collect();
    let bytes = u16::try_from(wide.len() * 2)
        .map_err(|_| io::Error::from_raw_os_error(ERROR_INVALID_PARAMETER))?;
    let name = UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: wide.as_ptr().cast_mut(),
    };
    let attributes = OBJECT_ATTRIBUTES {
        Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: dir.as_raw_handle(),
        ObjectName: &name,
        Attributes: OBJ_CASE_INSENSITIVE,
        SecurityDescriptor: std::ptr::null(),
        SecurityQualityOfService: std::ptr::null(),
    };
    let mut handle: HANDLE = std::ptr::null_mut();
    // SAFETY: every pointer is to a local that outlives the call.
    let status = unsafe {
        let mut io_status: IO_STATUS_BLOCK = std::mem::zeroed();
        NtCreateFile(
            &mut handle,
            access | SYNCHRONIZE,
            &attributes,
            &mut io_status,
            std::ptr::null(),
            FILE_ATTRIBUTE_NORMAL,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            disposition,
            options | FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_REPARSE_POINT,
            std::ptr::null(),
            0,
        )
    };
    status_result(status)?;
    // SAFETY: NtCreateFile succeeded: the handle is open and ours.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// An NT status as a result, its error as Win32's number.
fn status_result(status: i32) -> io::Result<()> {
    if status >= 0 {
        return Ok(());
    }
    let code = match status {
        STATUS_NOT_A_DIRECTORY | STATUS_FILE_IS_A_DIRECTORY => ERROR_DIRECTORY,
        // SAFETY: a pure mapping.
        s => (unsafe { RtlNtStatusToDosError(s) }) as i32,
    };
    Err(io::Error::from_raw_os_error(code))
}

/// Sets the information of class `class` on the open file (the calls
/// kernel32's SetFileInformationByHandle makes, which Wine does not make
/// for every class).
///
/// # Safety
/// `info` must point to `len` bytes holding a structure of that class.
unsafe fn set_information(
    file: &OwnedHandle,
    class: i32,
    info: *const core::ffi::c_void,
    len: usize,
) -> io::Result<()> {
    // SAFETY: as the caller promises; the status block is a local.
    let status = unsafe {
        let mut io_status: IO_STATUS_BLOCK = std::mem::zeroed();
        NtSetInformationFile(
            file.as_raw_handle(),
            &mut io_status,
            info,
            len as u32,
            class,
        )
    };
    status_result(status)
}

/// Whether `e` says the system does not know the call (an older Windows,
/// Wine): the caller falls back to the older one.
fn unknown_call(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(ERROR_INVALID_PARAMETER | ERROR_NOT_SUPPORTED | ERROR_INVALID_FUNCTION)
    )
}

const DIR_ACCESS: u32 = FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | READ_CONTROL;

/// What `name` in the folder is, never following a link; `None` when missing.
pub(super) fn stat_at(dir: &Handle, name: &str) -> io::Result<Option<Meta>> {
    match open_at(dir, name, FILE_READ_ATTRIBUTES | READ_CONTROL, FILE_OPEN, 0) {
        Ok(h) => fstat(&h).map(Some),
        Err(e) if fail(&e) == Fail::Missing => Ok(None),
        Err(e) => Err(e),
    }
}

/// The volume and file index at `path` (links followed).
pub(super) fn identity(path: &Path) -> io::Result<(u64, u64)> {
    stat_path(path, true).map(|m| (m.dev, m.ino))
}

/// False when the handle's folder was removed (or is about to be).
pub(super) fn linked(dir: &Handle) -> bool {
    // SAFETY: a valid handle and an out-structure of the class asked.
    unsafe {
        let mut info: FILE_STANDARD_INFO = std::mem::zeroed();
        GetFileInformationByHandleEx(
            dir.as_raw_handle(),
            FileStandardInfo,
            (&raw mut info).cast(),
            size_of::<FILE_STANDARD_INFO>() as u32,
        ) != 0
            && !info.DeletePending
            && info.NumberOfLinks > 0
    }
}

/// Opens the folder at `path` (links followed: the user chose it).
pub(super) fn open_top(path: &Path) -> io::Result<Handle> {
    let file = std::fs::OpenOptions::new()
        .access_mode(DIR_ACCESS)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    if fstat(&file)?.kind != Kind::Dir {
        return Err(io::Error::from_raw_os_error(ERROR_DIRECTORY));
    }
    Ok(file.into())
}

/// Creates the folder `path` and its missing parents; with `private`, the
/// last one with an access list of its own that lets in only the user, the
/// system and the Administrators (inherited by everything made in it), as
/// Unix's mode 0700 does.
pub(super) fn create_top(path: &Path, private: bool) -> io::Result<()> {
    if !private {
        return std::fs::create_dir_all(path);
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // SAFETY: the SID is the token's; every string is NUL-terminated and
    // freed by `Local`; the descriptor outlives CreateDirectoryW.
    unsafe {
        let mut sid_text = std::ptr::null_mut();
        if ConvertSidToStringSidW(me().sid.as_ptr().cast_mut().cast(), &mut sid_text) == 0 {
            return Err(last_error());
        }
        let _sid_text = Local(sid_text.cast());
        let len = (0..).take_while(|&i| *sid_text.add(i) != 0).count();
        let sid = String::from_utf16_lossy(std::slice::from_raw_parts(sid_text, len));
        let sddl: Vec<u16> = format!("D:P(A;OICI;FA;;;{sid})(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)")
            .encode_utf16()
            .chain([0])
            .collect();
        let mut sd = std::ptr::null_mut();
        if ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            std::ptr::null_mut(),
        ) == 0
        {
            return Err(last_error());
        }
        let _sd = Local(sd);
        let attributes = SECURITY_ATTRIBUTES {
            nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: sd,
            bInheritHandle: 0,
        };
        let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
        if CreateDirectoryW(wide.as_ptr(), &attributes) == 0 {
            let e = last_error();
            if e.raw_os_error() != Some(ERROR_ALREADY_EXISTS) {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Opens the folder `name`, never through a link (a junction is opened as
/// itself and refused by the caller, which sees its kind).
pub(super) fn open_dir_at(dir: &Handle, name: &str) -> io::Result<Handle> {
    open_at(dir, name, DIR_ACCESS, FILE_OPEN, FILE_DIRECTORY_FILE)
}

/// Creates the folder `name` (its access list inherited from the folder).
pub(super) fn mkdir_at(dir: &Handle, name: &str) -> io::Result<()> {
    open_at(dir, name, DIR_ACCESS, FILE_CREATE, FILE_DIRECTORY_FILE).map(drop)
}

/// Opens the file `name` for reading: a link is opened as itself (refused
/// by the caller), and nothing on a disk blocks.
pub(super) fn open_read_at(dir: &Handle, name: &str) -> io::Result<File> {
    open_at(dir, name, FILE_GENERIC_READ, FILE_OPEN, 0).map(File::from)
}

/// Opens (creating) the file `name` for reading and writing.
pub(super) fn open_rw_at(dir: &Handle, name: &str) -> io::Result<File> {
    open_at(
        dir,
        name,
        FILE_GENERIC_READ | FILE_GENERIC_WRITE,
        FILE_OPEN_IF,
        0,
    )
    .map(File::from)
}

/// Creates the new file `name`, failing when it exists.
pub(super) fn create_new_at(dir: &Handle, name: &str) -> io::Result<File> {
    open_at(
        dir,
        name,
        FILE_GENERIC_WRITE | FILE_READ_ATTRIBUTES,
        FILE_CREATE,
        0,
    )
    .map(File::from)
}

/// A swap is a Linux call: never here.
pub(super) fn swap_pays(_dir: &Handle) -> bool {
    false
}

/// A swap is a Linux call: never here.
pub(super) fn exchange_at(_dir: &Handle, _a: &str, _b: &str) -> bool {
    false
}

/// Tries `op` again while another process holds the file in a way that
/// refuses it (a scanner or an indexer opening it without delete sharing;
/// under Wine, any open reader): for about an eighth of a second.
fn patiently<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut wait = Duration::from_millis(1);
    loop {
        match op() {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(ERROR_ACCESS_DENIED | ERROR_SHARING_VIOLATION)
                ) && wait <= Duration::from_millis(64) =>
            {
                std::thread::sleep(wait);
                wait *= 2;
            }
            other => return other,
        }
    }
}

/// Renames the open `file` to `to_name` in `to`; `replace` replaces a file
/// there (with POSIX semantics where the system has them: readers of the
/// old file keep it, and the name changes at once).
fn rename_handle(file: &OwnedHandle, to: &Handle, to_name: &str, replace: bool) -> io::Result<()> {
    let wide: Vec<u16> = to_name.encode_utf16().collect();
    let header = std::mem::offset_of!(FILE_RENAME_INFORMATION, FileName);
    let size = (header + wide.len() * 2).max(size_of::<FILE_RENAME_INFORMATION>());
    let mut buf = vec![0u64; size.div_ceil(8)];
    let info = buf.as_mut_ptr().cast::<FILE_RENAME_INFORMATION>();
    let set = |class, flags: u32| {
        // SAFETY: `buf` is 8-aligned and large enough for the structure and
        // the name after it.
        unsafe {
            (*info).Anonymous.Flags = flags;
            (*info).RootDirectory = to.as_raw_handle();
            (*info).FileNameLength = (wide.len() * 2) as u32;
            std::ptr::copy_nonoverlapping(
                wide.as_ptr(),
                std::ptr::addr_of_mut!((*info).FileName).cast::<u16>(),
                wide.len(),
            );
            set_information(file, class, info.cast(), size)
        }
    };
    let flags = if replace {
        FILE_RENAME_FLAG_REPLACE_IF_EXISTS | FILE_RENAME_FLAG_POSIX_SEMANTICS
    } else {
        0
    };
    match set(FileRenameInformationEx, flags) {
        // Before Windows 10 1607, and under Wine: the plain class, whose
        // first field is the one boolean.
        Err(e) if unknown_call(&e) => set(FileRenameInformation, u32::from(replace)),
        other => other,
    }
}

/// Renames `name` to `to_name` in `to`, replacing a file there.
pub(super) fn rename_at(dir: &Handle, name: &str, to: &Handle, to_name: &str) -> io::Result<()> {
    let file = open_at(dir, name, DELETE | FILE_READ_ATTRIBUTES, FILE_OPEN, 0)?;
    patiently(|| rename_handle(&file, to, to_name, true))
}

/// Renames `name` to `to_name` in `to` when nothing is there; false when
/// something is.
pub(super) fn rename_new_at(
    dir: &Handle,
    name: &str,
    to: &Handle,
    to_name: &str,
) -> io::Result<bool> {
    let file = open_at(dir, name, DELETE | FILE_READ_ATTRIBUTES, FILE_OPEN, 0)?;
    match rename_handle(&file, to, to_name, false) {
        Ok(()) => Ok(true),
        Err(e) if fail(&e) == Fail::Exists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Marks the open `file` deleted: with POSIX semantics where the system has
/// them (the name is gone at once, even while others hold it open), else
/// when its last handle closes.
fn delete_handle(file: &OwnedHandle) -> io::Result<()> {
    let ex = FILE_DISPOSITION_INFO_EX {
        Flags: FILE_DISPOSITION_FLAG_DELETE
            | FILE_DISPOSITION_FLAG_POSIX_SEMANTICS
            | FILE_DISPOSITION_FLAG_IGNORE_READONLY_ATTRIBUTE,
    };
    // SAFETY: structures of the classes named, of their own size.
    match unsafe {
        set_information(
            file,
            FileDispositionInformationEx,
            (&raw const ex).cast(),
            size_of::<FILE_DISPOSITION_INFO_EX>(),
        )
    } {
        Err(e) if unknown_call(&e) => {
            let plain = FILE_DISPOSITION_INFO { DeleteFile: true };
            // SAFETY: as above.
            unsafe {
                set_information(
                    file,
                    FileDispositionInformation,
                    (&raw const plain).cast(),
                    size_of::<FILE_DISPOSITION_INFO>(),
                )
            }
        }
        other => other,
    }
}

/// Removes the file (or link) `name`; a folder is refused, as `unlink` does.
pub(super) fn unlink_at(dir: &Handle, name: &str) -> io::Result<()> {
    let file = open_at(
        dir,
        name,
        DELETE | FILE_READ_ATTRIBUTES | READ_CONTROL,
        FILE_OPEN,
        0,
    )?;
    if fstat(&file)?.kind == Kind::Dir {
        return Err(io::Error::from_raw_os_error(ERROR_ACCESS_DENIED));
    }
    patiently(|| delete_handle(&file))
}

/// Removes the empty folder `name` (a link to one is refused, as `rmdir` does).
pub(super) fn rmdir_at(dir: &Handle, name: &str) -> io::Result<()> {
    let folder = open_at(
        dir,
        name,
        DELETE | FILE_READ_ATTRIBUTES | READ_CONTROL,
        FILE_OPEN,
        FILE_DIRECTORY_FILE,
    )?;
    if fstat(&folder)?.kind != Kind::Dir {
        return Err(io::Error::from_raw_os_error(ERROR_DIRECTORY));
    }
    patiently(|| delete_handle(&folder))
}

/// Every entry of the folder, unsorted (listed by its path: each name is
/// then opened relative to the handle and checked).
pub(super) fn entries(_dir: &Handle, path: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let name: OsString = entry.file_name();
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => Kind::Symlink,
            Ok(t) if t.is_dir() => Kind::Dir,
            Ok(t) if t.is_file() => Kind::File,
            _ => Kind::Other,
        };
        out.push(Entry { name, kind });
    }
    Ok(out)
}

/// Nothing to do: NTFS journals a folder's entries itself, and a folder
/// handle cannot be flushed without write access to it.
pub(super) fn sync_dir(_dir: &Handle) -> io::Result<()> {
    Ok(())
}

/// Opens a file outside the root for reading; a link at the path is opened
/// as itself (and refused by the caller) unless `follow`.
pub(super) fn open_outside(path: &Path, follow: bool) -> io::Result<File> {
    let flags = if follow {
        0
    } else {
        FILE_FLAG_OPEN_REPARSE_POINT
    };
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

/// What `path` is; a link at its last component followed or opened as itself.
pub(super) fn stat_path(path: &Path, follow: bool) -> io::Result<Meta> {
    let link = if follow {
        0
    } else {
        FILE_FLAG_OPEN_REPARSE_POINT
    };
    let file = std::fs::OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES | READ_CONTROL)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | link)
        .open(path)?;
    fstat(&file)
}
