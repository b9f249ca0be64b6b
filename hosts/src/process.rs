//! The host process that runs a hook, seen from the hook: its command line
//! and whether its standard input is a terminal, read from `/proc` (Linux),
//! or from the process's own information (Windows: its parent and command
//! line; a terminal there is not told). Where it cannot be read (another
//! system, a process gone), every answer is `None`: nothing is told from it.
//!
//! A host runs a hook's command directly or through a shell, so the host is
//! this process's parent or the parent's parent: never looked for further,
//! so that a command run by hand inside an agent's session never takes that
//! session's traits.

#[cfg(not(windows))]
use std::io::Read;

/// A file of `/proc/<pid>/`, at most `limit` bytes (its size is not told).
#[cfg(not(windows))]
fn proc_file(pid: u32, name: &str, limit: u64) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(format!("/proc/{pid}/{name}"))
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// A process's arguments (`None` where they cannot be read).
#[cfg(not(windows))]
pub fn args(pid: u32) -> Option<Vec<String>> {
    let bytes = proc_file(pid, "cmdline", 64 << 10)?;
    Some(
        bytes
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// A process's parent (`None` where it cannot be read, or it is init).
#[cfg(not(windows))]
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = proc_file(pid, "stat", 4096)?;
    // `pid (comm) state ppid ...`: the name may hold spaces and parentheses.
    let after = &stat[memchr::memrchr(b')', &stat)? + 1..];
    let parent: u32 = std::str::from_utf8(after)
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    (parent > 1).then_some(parent)
}

/// Whether a process's standard input is a terminal (`None` where its file
/// descriptors cannot be read).
#[cfg(not(windows))]
pub fn stdin_is_terminal(pid: u32) -> Option<bool> {
    let target = std::fs::read_link(format!("/proc/{pid}/fd/0")).ok()?;
    let target = target.to_string_lossy();
    Some(target.starts_with("/dev/pts/") || target.starts_with("/dev/tty"))
}

/// The nearest of this process's parent and grandparent for which `is_host`
/// holds (given its pid and arguments), with its pid and arguments.
pub fn host_ancestor(is_host: impl Fn(&[String]) -> bool) -> Option<(u32, Vec<String>)> {
    #[cfg(unix)]
    let parent = std::os::unix::process::parent_id();
    #[cfg(windows)]
    let parent = parent_of(std::process::id())?;
    if parent <= 1 {
        return None;
    }
    [Some(parent), parent_of(parent)]
        .into_iter()
        .flatten()
        .find_map(|pid| {
            let args = args(pid)?;
            is_host(&args).then_some((pid, args))
        })
}

#[cfg(windows)]
pub use windows::{args, parent_of, stdin_is_terminal};

/// Windows: a process's parent and command line from its own information
/// (`NtQueryInformationProcess`, as Task Manager reads them).
#[cfg(windows)]
mod windows {
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

    use windows_sys::Wdk::System::Threading::{
        NtQueryInformationProcess, ProcessBasicInformation, ProcessCommandLineInformation,
    };
    use windows_sys::Win32::Foundation::UNICODE_STRING;
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};

    fn open(pid: u32) -> Option<OwnedHandle> {
        // SAFETY: a plain call; a non-null result is an open handle we own.
        let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
        // SAFETY: as above.
        (!h.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(h) })
    }

    /// A process's arguments (`None` where they cannot be read).
    pub fn args(pid: u32) -> Option<Vec<String>> {
        let process = open(pid)?;
        let mut buf = vec![0u64; 4096];
        let mut len = 0u32;
        // SAFETY: the buffer is 8-aligned and its size is given; on success
        // it holds a UNICODE_STRING whose text lies inside it.
        let text = unsafe {
            if NtQueryInformationProcess(
                process.as_raw_handle(),
                ProcessCommandLineInformation,
                buf.as_mut_ptr().cast(),
                (buf.len() * 8) as u32,
                &mut len,
            ) < 0
            {
                return None;
            }
            let line = &*buf.as_ptr().cast::<UNICODE_STRING>();
            String::from_utf16_lossy(std::slice::from_raw_parts(
                line.Buffer,
                usize::from(line.Length) / 2,
            ))
        };
        Some(split(&text))
    }

    /// A process's parent (`None` where it cannot be read).
    pub fn parent_of(pid: u32) -> Option<u32> {
        /// PROCESS_BASIC_INFORMATION's layout.
        #[repr(C)]
        struct Basic {
            exit_status: i32,
            peb: usize,
            affinity: usize,
            priority: i32,
            pid: usize,
            parent: usize,
        }
        let process = open(pid)?;
        // SAFETY: a zeroed plain structure of the class's size.
        let mut basic: Basic = unsafe { std::mem::zeroed() };
        let mut len = 0u32;
        // SAFETY: as above.
        let status = unsafe {
            NtQueryInformationProcess(
                process.as_raw_handle(),
                ProcessBasicInformation,
                (&raw mut basic).cast(),
                size_of::<Basic>() as u32,
                &mut len,
            )
        };
        let parent = u32::try_from(basic.parent).ok()?;
        (status >= 0 && parent > 0).then_some(parent)
    }

    /// Not told on Windows: another process's console cannot be asked.
    pub fn stdin_is_terminal(_pid: u32) -> Option<bool> {
        None
    }

    /// Splits a command line as Windows programs' C runtime does: spaces
    /// and tabs separate, double quotes group, `2n` backslashes before a
    /// quote are `n` backslashes and the quote groups, `2n+1` are `n` and
    /// a literal quote; other backslashes are themselves.
    pub(super) fn split(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut arg = String::new();
        let (mut quoted, mut any, mut slashes) = (false, false, 0usize);
        for c in line.chars() {
            match c {
                '\\' => slashes += 1,
                '"' => {
                    arg.extend(std::iter::repeat_n('\\', slashes / 2));
                    if slashes % 2 == 1 {
                        arg.push('"');
                    } else {
                        quoted = !quoted;
                        any = true;
                    }
                    slashes = 0;
                }
                ' ' | '\t' if !quoted => {
                    arg.extend(std::iter::repeat_n('\\', slashes));
                    slashes = 0;
                    if any || !arg.is_empty() {
                        out.push(std::mem::take(&mut arg));
                    }
                    any = false;
                }
                c => {
                    arg.extend(std::iter::repeat_n('\\', slashes));
                    slashes = 0;
                    arg.push(c);
                }
            }
        }
        arg.extend(std::iter::repeat_n('\\', slashes));
        if any || !arg.is_empty() {
            out.push(arg);
        }
        out
    }
}

/// Whether `arg` names a program called `name` (`/usr/bin/name`, `name.exe`).
pub fn names(arg: &str, name: &str) -> bool {
    let file = std::path::Path::new(arg)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    file == name || file.strip_suffix(".exe") == Some(name)
}

/// The arguments after the program named `name` in a command line (its
/// own executable, or a Node script whose path holds `script`), when the
/// command line is that program's.
pub fn args_after<'a>(args: &'a [String], name: &str, script: &str) -> Option<&'a [String]> {
    let at = args.iter().take(8).position(|a| {
        names(a, name) || (a.contains(script) && (a.ends_with(".js") || a.ends_with(".mjs")))
    })?;
    Some(&args[at + 1..])
}

/// Why a host process whose arguments are `args` (after its program) runs
/// one prompt and exits: its `-p` or `--prompt` (before any `--`), said as
/// "its `NAME` process was started with `-p`".
///
/// ```
/// let args = |a: &str| a.split(' ').map(str::to_owned).collect::<Vec<_>>();
/// let said = interband_hosts::process::prompt_flag(&args("-m x --prompt=hi"), "gemini");
/// assert_eq!(said.as_deref(), Some("its `gemini` process was started with `--prompt`"));
/// assert_eq!(interband_hosts::process::prompt_flag(&args("-- -p"), "gemini"), None);
/// ```
pub fn prompt_flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .take_while(|a| *a != "--")
        .find(|a| *a == "-p" || *a == "--prompt" || a.starts_with("--prompt="))
        .map(|a| {
            format!(
                "its `{name}` process was started with `{}`",
                a.split('=').next().unwrap_or(a)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(windows)]
    #[test]
    fn windows_command_lines_split_as_the_c_runtime_does() {
        let split = super::windows::split;
        assert_eq!(
            split(r#"C:\Program Files\node.exe "C:\a b\cli.js" -p "say \"hi\"" x\\y"#),
            [
                "C:\\Program",
                "Files\\node.exe",
                "C:\\a b\\cli.js",
                "-p",
                "say \"hi\"",
                "x\\\\y"
            ]
        );
        assert_eq!(split(r#""" a\\"b c" "#), ["", "a\\b c"]);
    }

    #[cfg(windows)]
    #[test]
    #[cfg_attr(
        target_env = "gnu",
        ignore = "Wine 8 has no ProcessCommandLineInformation (Windows 8.1 on), and a test under Wine has a Unix parent (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn this_process_is_read_from_its_information() {
        let me = std::process::id();
        let mine = args(me).unwrap();
        assert!(mine[0].contains("interband_hosts"), "{mine:?}");
        assert!(parent_of(me).is_some());
        assert_eq!(args(u32::MAX - 3), None);
    }

    #[cfg(unix)]
    #[test]
    fn this_process_is_read_from_proc() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let me = std::process::id();
        assert!(args(me).is_some_and(|a| !a.is_empty()));
        assert_eq!(parent_of(me), {
            let p = std::os::unix::process::parent_id();
            (p > 1).then_some(p)
        });
        assert!(stdin_is_terminal(me).is_some());
        assert_eq!(args(u32::MAX), None);
    }

    #[test]
    fn program_names() {
        assert!(names("/usr/local/bin/gemini", "gemini"));
        assert!(names("gemini.exe", "gemini"));
        assert!(!names("/usr/bin/gemini-helper", "gemini"));
        assert!(!names("", "gemini"));
    }
}
