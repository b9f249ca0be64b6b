//! A command started with everything it starts held together, so that a
//! timeout takes all of it down: a Unix process group of its own; on
//! Windows a job object (and a new console process group, so the host's
//! Ctrl-C is not the command's). Leaving the [`Group`] kills nothing: what
//! the command left running lives on unless [`Group::kill`] is called.

use std::process::{Child, Command};

/// What [`spawn`] started: the command and, through it, what it starts.
pub(crate) struct Group {
    /// The job the command runs in; `None` where Windows refused one (a
    /// job that allows no nesting): then only the command itself is killed.
    #[cfg(windows)]
    job: Option<std::os::windows::io::OwnedHandle>,
}

/// Starts `cmd` in a group of its own.
pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<(Child, Group)> {
    #[cfg(unix)]
    {
        std::os::unix::process::CommandExt::process_group(cmd, 0);
        Ok((cmd.spawn()?, Group {}))
    }
    #[cfg(windows)]
    windows::spawn(cmd)
}

impl Group {
    /// Kills `child` and everything in its group.
    pub(crate) fn kill(&self, child: &mut Child) {
        #[cfg(unix)]
        // SAFETY: kill(2) on the child's own process group (made by
        // `spawn`); no memory is involved.
        unsafe {
            libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
        }
        #[cfg(windows)]
        windows::kill(self.job.as_ref(), child);
    }
}

#[cfg(windows)]
mod windows {
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
    use std::os::windows::process::CommandExt;
    use std::process::{Child, Command};

    use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, TerminateJobObject,
    };
    use windows_sys::Win32::System::Threading::{
        CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED, OpenThread, ResumeThread, THREAD_SUSPEND_RESUME,
    };

    use super::Group;

    /// Starts the command suspended, puts it in a new job before it runs a
    /// single instruction (so nothing it starts escapes the job), then lets
    /// it go.
    pub(super) fn spawn(cmd: &mut Command) -> std::io::Result<(Child, Group)> {
        cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED);
        let mut child = cmd.spawn()?;
        // SAFETY: a new unnamed job with default security; the handle is
        // owned below.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        let job = (!raw.is_null()).then(|| {
            // SAFETY: `raw` is a handle CreateJobObjectW just returned, ours alone.
            unsafe { OwnedHandle::from_raw_handle(raw) }
        });
        // SAFETY: both handles are open: the job's just made, the child's
        // held by `child`.
        let job = job.filter(|job| unsafe {
            AssignProcessToJobObject(job.as_raw_handle(), child.as_raw_handle()) != 0
        });
        if let Err(e) = resume(child.id()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok((child, Group { job }))
    }

    /// Resumes the threads of a process started suspended (its first one).
    fn resume(pid: u32) -> std::io::Result<()> {
        // SAFETY: a snapshot of every thread; the handle is owned below.
        let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
        if snap == INVALID_HANDLE_VALUE {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a handle just returned, valid, ours alone.
        let snap = unsafe { OwnedHandle::from_raw_handle(snap) };
        // SAFETY: THREADENTRY32 is plain data; all zeroes is a valid value.
        let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
        entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
        let mut resumed = 0;
        // SAFETY: `entry` is a THREADENTRY32 with its size set, as both
        // calls require; the snapshot handle is open.
        let mut more = unsafe { Thread32First(snap.as_raw_handle(), &mut entry) } != 0;
        while more {
            if entry.th32OwnerProcessID == pid {
                // SAFETY: a thread id from the snapshot; the handle is closed
                // right after use.
                unsafe {
                    let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                    if !thread.is_null() {
                        if ResumeThread(thread) != u32::MAX {
                            resumed += 1;
                        }
                        CloseHandle(thread);
                    }
                }
            }
            // SAFETY: as for Thread32First.
            more = unsafe { Thread32Next(snap.as_raw_handle(), &mut entry) } != 0;
        }
        if resumed == 0 {
            return Err(std::io::Error::other(format!(
                "process {pid} started suspended and could not be resumed"
            )));
        }
        Ok(())
    }

    pub(super) fn kill(job: Option<&OwnedHandle>, child: &mut Child) {
        match job {
            // SAFETY: the job's handle is open (owned by the group).
            Some(job) if unsafe { TerminateJobObject(job.as_raw_handle(), 1) } != 0 => {}
            _ => {
                let _ = child.kill();
            }
        }
    }
}
