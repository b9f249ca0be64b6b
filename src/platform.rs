//! What the binary does differently on Unix and on Windows, in one place:
//! private files and folders, file modes, what counts as executable, the
//! signals a Unix process sets up. The bus's file layer (`interband::fsio`)
//! has the rest.

use std::fs::{Metadata, OpenOptions};
use std::path::Path;

/// How [`private_options`] opens a file beyond making it private.
#[derive(Debug, Clone, Copy, Default)]
pub struct Open {
    /// Refuse a link at the name (Unix `O_NOFOLLOW`; on Windows the link is
    /// opened as itself, and the caller's identity check refuses it).
    pub no_link: bool,
    /// Never wait on what the name is (a FIFO nobody reads; Unix only:
    /// Windows has no FIFO in a folder).
    #[cfg_attr(windows, allow(dead_code))]
    pub non_blocking: bool,
}

/// Options for a file only the user may open: mode 0600 on Unix (on
/// Windows the folder's access list is inherited), opened as `how` says.
pub fn private_options(opts: &mut OpenOptions, how: Open) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = if how.no_link { libc::O_NOFOLLOW } else { 0 }
            | if how.non_blocking {
                libc::O_NONBLOCK
            } else {
                0
            };
        opts.mode(0o600).custom_flags(flags)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        // FILE_FLAG_OPEN_REPARSE_POINT
        opts.custom_flags(if how.no_link { 0x0020_0000 } else { 0 })
    }
}

/// Creates `dir` and its missing parents, the last one the user's alone.
pub fn private_dirs(dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    interband::fsio::create_dir_private(dir).with_context(|| dir.display().to_string())
}

/// A file's permission bits: on Windows, 0o644 or, read-only, 0o444.
pub fn mode(meta: &Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o7777
    }
    #[cfg(windows)]
    {
        if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        }
    }
}

/// Gives `path` the permission bits `mode` (on Windows, only whether it is
/// read-only).
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(windows)]
    {
        let mut perms = std::fs::metadata(path)?.permissions();
        perms.set_readonly(mode & 0o200 == 0);
        std::fs::set_permissions(path, perms)
    }
}

/// Whether `meta` is a file a host could run: executable by someone on
/// Unix; on Windows any file (its extension decides, see [`program_names`]).
pub fn executable(meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(windows)]
    {
        meta.is_file()
    }
}

/// The file names a command `name` may be found as in a folder of the
/// PATH: itself, and on Windows with each extension of `PATHEXT` too.
pub fn program_names(name: &str) -> Vec<String> {
    let mut names = vec![name.to_owned()];
    if cfg!(windows) && Path::new(name).extension().is_none() {
        let exts = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".into());
        names.extend(
            exts.split(';')
                .filter(|e| !e.is_empty())
                .map(|e| format!("{name}{}", e.to_ascii_lowercase())),
        );
    }
    names
}

/// Where a shell looks for the command `name` on the PATH, in its order:
/// each folder of the PATH, each name [`program_names`] gives.
pub fn path_candidates(name: &str) -> impl Iterator<Item = std::path::PathBuf> {
    let names = program_names(name);
    let dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.into_iter()
        .flat_map(move |d| names.clone().into_iter().map(move |n| d.join(n)))
}

/// Whether a program path names a file rather than a command to look up.
pub fn is_path(program: &str) -> bool {
    program.contains('/') || (cfg!(windows) && program.contains('\\'))
}

/// `program` (a path or a name on PATH) as the first word of a hook or
/// statusline command, written so the shell a host runs it in reads it
/// back whole. On Unix, quoted for a POSIX shell. On Windows, where each
/// host has its own shell (Git Bash, PowerShell, cmd.exe), a word none of
/// them splits or expands: forward slashes, no quotes, and, for a path with
/// a space or a character a shell reads (`C:\Users\Jo Smith\...`), its
/// short (8.3) form; a path that has none is refused, with the way out.
pub fn program_word(program: &str) -> anyhow::Result<String> {
    #[cfg(unix)]
    {
        Ok(shell_words::quote(program).into_owned())
    }
    #[cfg(windows)]
    {
        let plain = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '~'))
        };
        let word = program.replace('\\', "/");
        if plain(&word) {
            return Ok(word);
        }
        if let Some(short) = short_path(program).map(|s| s.replace('\\', "/"))
            && plain(&short)
        {
            return Ok(short);
        }
        anyhow::bail!(
            "{program}: a path with a space or a character a shell reads, and no short (8.3) name: \
             pass --command PATH naming interband.exe in a folder whose path has neither (C:/tools/interband.exe)"
        )
    }
}

/// The short (8.3) form of an existing path, where the volume makes them.
#[cfg(windows)]
fn short_path(path: &str) -> Option<String> {
    use std::os::windows::ffi::OsStrExt;
    let wide: Vec<u16> = std::ffi::OsStr::new(path)
        .encode_wide()
        .chain(Some(0))
        .collect();
    let mut out = vec![0u16; 1024];
    // SAFETY: a NUL-terminated input and an output buffer of the length given.
    let n = unsafe {
        windows_sys::Win32::Storage::FileSystem::GetShortPathNameW(
            wide.as_ptr(),
            out.as_mut_ptr(),
            out.len() as u32,
        )
    } as usize;
    (n > 0 && n < out.len()).then(|| String::from_utf16_lossy(&out[..n]))
}

/// Whether `word` (a command's first word) names an interband binary:
/// `interband`, or on Windows `interband.exe` in any case.
pub fn names_interband(word: &str) -> bool {
    let name = Path::new(word).file_name().and_then(|n| n.to_str());
    name.is_some_and(|n| {
        n == "interband" || (cfg!(windows) && n.eq_ignore_ascii_case("interband.exe"))
    })
}

/// Signal dispositions a Unix process sets before anything else: a write
/// past `ulimit -f` fails with an error (which a hook logs and survives)
/// instead of killing the process. Nothing on Windows.
pub fn at_start() {
    // SAFETY: setting a signal disposition before any thread is started.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Like other Unix tools, stop quietly when the reader of our output goes
/// away. Nothing on Windows (a closed pipe is an error there).
pub fn die_on_closed_pipe() {
    // SAFETY: setting a signal disposition before any thread is started.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Runs `f` with a closed pipe an error rather than fatal (Unix's SIGPIPE
/// ignored meanwhile; single-threaded callers only).
pub fn with_closed_pipe_an_error<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(unix)]
    {
        // SAFETY: the caller is single-threaded; the disposition is restored at once.
        let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let out = f();
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGPIPE, old) };
        out
    }
    #[cfg(windows)]
    {
        f()
    }
}

/// Private files whatever the umask, for this process and its children
/// (Unix; on Windows the folders' access lists do it).
pub fn private_umask() {
    // SAFETY: umask(2) only sets this process's file creation mask.
    #[cfg(unix)]
    unsafe {
        libc::umask(0o077);
    }
}

/// The signals that ask a long-running command to stop.
pub fn stop_signals() -> &'static [i32] {
    #[cfg(unix)]
    {
        &[
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ]
    }
    #[cfg(windows)]
    {
        &[signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
    }
}

/// Sets `stop` also when the console the process runs in is closed, or
/// Ctrl-Break pressed (Windows; Unix's SIGHUP and SIGTERM): the system
/// ends the process once the handler returns, so it waits there, at most
/// 4 s of the 5 Windows gives, for the command to remove its private
/// files and end first. Ctrl-C is SIGINT's, through the C runtime.
#[cfg(windows)]
pub fn stop_on_console_close(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::Mutex;
    use std::sync::atomic::Ordering;
    use windows_sys::Win32::System::Console::{
        CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
        SetConsoleCtrlHandler,
    };
    static FLAGS: Mutex<Vec<std::sync::Arc<std::sync::atomic::AtomicBool>>> =
        Mutex::new(Vec::new());
    unsafe extern "system" fn handler(event: u32) -> i32 {
        if !matches!(
            event,
            CTRL_BREAK_EVENT | CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT
        ) {
            return 0;
        }
        if let Ok(flags) = FLAGS.lock() {
            flags.iter().for_each(|f| f.store(true, Ordering::SeqCst));
        }
        if event != CTRL_BREAK_EVENT {
            // The process ends when this returns: the command's own end
            // (its files removed) ends it sooner.
            std::thread::sleep(std::time::Duration::from_secs(4));
        }
        1
    }
    let Ok(mut flags) = FLAGS.lock() else {
        return;
    };
    if flags.is_empty() {
        // SAFETY: a handler with the signature the system calls.
        unsafe { SetConsoleCtrlHandler(Some(handler), 1) };
    }
    flags.push(stop);
}

/// `cmd.spawn()`, a start that Wine fails now and then under load with
/// `ERROR_INTERNAL_ERROR` (1359) before the program runs at all tried again,
/// at most five times (docs/hosts.md, Wine's gaps). Any other failure is
/// returned as it is; on Unix this is `spawn()`.
pub fn spawn(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    const WINE_START_FAILED: i32 = 1359;
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if cfg!(windows) && e.raw_os_error() == Some(WINE_START_FAILED) && tries < 5 => {
                tries += 1
            }
            r => return r,
        }
    }
}

/// The argv that runs the person's own statusline, which ours wraps
/// (`--wrap ARGV`): as given, except on Windows where install's `sh -c
/// COMMAND` finds no `sh` on the PATH (the host ran ours in PowerShell or
/// cmd.exe, not Git Bash): COMMAND then runs in the shell the host would
/// have run it in, `shell`.
pub fn wrapped_argv(argv: &[String], shell: &interband_hosts::WindowsShell) -> Vec<String> {
    let found = |program: &str| {
        if is_path(program) {
            Path::new(program).is_file()
        } else {
            path_candidates(program).any(|p| p.is_file())
        }
    };
    wrapped_argv_where(argv, shell, cfg!(windows), found)
}

fn wrapped_argv_where(
    argv: &[String],
    shell: &interband_hosts::WindowsShell,
    windows: bool,
    found: impl Fn(&str) -> bool,
) -> Vec<String> {
    match argv {
        [sh, c, command] if windows && sh == "sh" && c == "-c" && !found("sh") => {
            match shell.programs.iter().find(|p| found(p)) {
                Some(program) => std::iter::once(*program)
                    .chain(shell.args.iter().copied())
                    .map(str::to_owned)
                    .chain(Some(command.clone()))
                    .collect(),
                None => argv.to_vec(),
            }
        }
        _ => argv.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_wrapped_statusline_runs_in_the_hosts_windows_shell_where_no_sh_is_found() {
        let claude = &interband_hosts::CLAUDE.statusline_shell_windows;
        let theirs = words(&["sh", "-c", "node C:/x/status.js \"a b\""]);
        // Unix, or Windows with Git Bash's sh: as install wrote it.
        assert_eq!(
            wrapped_argv_where(&theirs, claude, false, |_| false),
            theirs
        );
        assert_eq!(wrapped_argv_where(&theirs, claude, true, |_| true), theirs);
        // Windows without sh: Claude Code's PowerShell, Windows PowerShell
        // when PowerShell 7 is not installed.
        let ps = |p: &str| p == "powershell";
        assert_eq!(
            wrapped_argv_where(&theirs, claude, true, ps),
            words(&[
                "powershell",
                "-NoProfile",
                "-NonInteractive",
                "-ExecutionPolicy",
                "Bypass",
                "-Command",
                "node C:/x/status.js \"a b\""
            ])
        );
        let pwsh7 = |p: &str| p.ends_with("/7/pwsh.exe") || p == "powershell";
        assert_eq!(
            wrapped_argv_where(&theirs, claude, true, pwsh7)[0],
            "C:/Program Files/PowerShell/7/pwsh.exe"
        );
        // Qwen Code's is cmd.exe.
        assert_eq!(
            wrapped_argv_where(
                &theirs,
                &interband_hosts::QWEN.statusline_shell_windows,
                true,
                |p| p == "cmd"
            ),
            words(&["cmd", "/d", "/s", "/c", "node C:/x/status.js \"a b\""])
        );
        // No shell at all: as written (its failure says why in the line);
        // an argv of the person's own is never rewritten.
        assert_eq!(wrapped_argv_where(&theirs, claude, true, |_| false), theirs);
        let own = words(&["my-status", "--short"]);
        assert_eq!(wrapped_argv_where(&own, claude, true, |_| true), own);
    }
}
