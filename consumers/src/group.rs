//! A command's own process group, so that a timeout takes down what it
//! started with it: a Unix process group, a new process group on Windows.

use std::process::{Child, Command};

/// Starts `cmd` in a process group of its own.
pub(crate) fn own_group(cmd: &mut Command) -> &mut Command {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    #[cfg(windows)]
    {
        // CREATE_NEW_PROCESS_GROUP: the host's Ctrl-C is not the command's.
        std::os::windows::process::CommandExt::creation_flags(cmd, 0x0000_0200);
    }
    cmd
}

/// Kills `child`'s whole process group (on Windows, the child: what it
/// started lives on until it ends).
pub(crate) fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    // SAFETY: kill(2) on the child's own process group (made by
    // `own_group`); no memory is involved.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    #[cfg(windows)]
    let _ = child.kill();
}
