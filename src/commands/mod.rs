//! One module per group of subcommands.

pub mod bridge;
pub mod bus;
pub mod codex_trust;
pub mod config;
pub mod demo;
pub mod handoff;
pub mod hook;
pub mod install;
pub mod pulse;
pub mod replay;
pub mod top;

/// A flag set by SIGINT, SIGTERM or SIGHUP (Ctrl-C, a closed terminal, a
/// kill; on Windows Ctrl-C, Ctrl-Break and a closed console): a command
/// that keeps private files checks it between steps and ends, removing
/// them, instead of dying with them left behind.
pub fn stop_flag(what: &str) -> anyhow::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    use anyhow::Context as _;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for &signal in crate::platform::stop_signals() {
        signal_hook::flag::register(signal, stop.clone())
            .with_context(|| format!("cannot watch for the signals that stop {what}"))?;
    }
    #[cfg(windows)]
    crate::platform::stop_on_console_close(stop.clone());
    Ok(stop)
}
