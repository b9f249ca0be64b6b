//! The host process that runs a hook, seen from the hook: its command line
//! and whether its standard input is a terminal, read from `/proc` (Linux).
//! Where `/proc` cannot be read (another system, a process gone), every
//! answer is `None`: nothing is told from it.
//!
//! A host runs a hook's command directly or through a shell, so the host is
//! this process's parent or the parent's parent: never looked for further,
//! so that a command run by hand inside an agent's session never takes that
//! session's traits.

use std::io::Read;

/// A file of `/proc/<pid>/`, at most `limit` bytes (its size is not told).
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
pub fn stdin_is_terminal(pid: u32) -> Option<bool> {
    let target = std::fs::read_link(format!("/proc/{pid}/fd/0")).ok()?;
    let target = target.to_string_lossy();
    Some(target.starts_with("/dev/pts/") || target.starts_with("/dev/tty"))
}

/// The nearest of this process's parent and grandparent for which `is_host`
/// holds (given its pid and arguments), with its pid and arguments.
pub fn host_ancestor(is_host: impl Fn(&[String]) -> bool) -> Option<(u32, Vec<String>)> {
    let parent = std::os::unix::process::parent_id();
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
