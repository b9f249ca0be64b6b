//! `interband`: the front door. Parses arguments, calls a library, maps errors to exit codes:
//! 0 ok, 1 invalid data, 2 usage or I/O.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `println!` of one line for people: control characters (newlines and
/// tabs too) and bidirectional controls from any source written as visible
/// escapes, so no value can forge a line or drive the terminal.
macro_rules! say {
    () => {
        println!()
    };
    ($($t:tt)*) => {
        println!("{}", interband::text::terminal(&format!($($t)*)))
    };
}

/// A block of lines for people (a report this binary laid out): as [`say!`]
/// but its newlines and tabs stay, and without a final newline. Values from
/// outside put into it must be escaped with `interband::text::terminal` first.
macro_rules! say_part {
    ($($t:tt)*) => {
        print!("{}", interband::text::terminal_block(&format!($($t)*)))
    };
}

/// [`say!`] on stderr.
macro_rules! tell {
    ($($t:tt)*) => {
        eprintln!("{}", interband::text::terminal(&format!($($t)*)))
    };
}

/// One serialized JSON value on a line, terminal-safe and still valid JSON.
macro_rules! say_json {
    ($v:expr) => {
        println!("{}", interband::text::json(&$v.to_string()))
    };
}

mod commands;
mod dispatch;
mod platform;
mod replay;

/// `interband --version`: the release and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("INTERBAND_COMMIT"),
    ")"
);

/// A typed, file-based message bus for AI coding-agent hooks (interband protocol v1).
#[derive(Parser)]
#[command(name = "interband", version = VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play a realistic coding session through the whole loop, in a private temp root and home.
    Demo(commands::demo::Demo),
    /// Register interband's hooks and statusline in a host's settings (merging, with a backup).
    Install(commands::install::Install),
    /// Remove what `interband install` added, restoring the settings as they were.
    Uninstall(commands::install::Uninstall),
    /// Replay a transcript offline: where levels change and what would have fired.
    Replay(commands::replay::Replay),
    /// Check message files or folders (recursively) against protocol v1 and the known contracts.
    Validate(commands::bus::Validate),
    /// Write the JSON Schemas, or check that a folder of them is up to date.
    Schema(commands::bus::Schema),
    /// Publish a payload on NAMESPACE/CHANNEL/KEY.
    Publish(commands::bus::Publish),
    /// Print the message at NAMESPACE/CHANNEL/KEY (or a file path).
    Read(commands::bus::Read),
    /// List messages whose NAMESPACE/CHANNEL/KEY matches a glob.
    Ls(commands::bus::Ls),
    /// Remove expired messages and crashed writers' temp files now.
    Prune(commands::bus::Prune),
    /// Print (or hand to a command) each new value of the keys matching the globs.
    Watch(commands::bus::Watch),
    /// Handle one host hook call: the event as JSON on stdin (always exits 0).
    Hook(commands::hook::Hook),
    /// The statusline: reads the host's statusLine input, publishes the context window, prints one line.
    Statusline(commands::hook::Statusline),
    /// Print the effective settings and where each value came from.
    Config(commands::config::ShowConfig),
    /// Trust a project's settings file as it is now (or --list, --revoke).
    Trust(commands::config::Trust),
    /// Start a fresh session of the same agent in the same folder, its memory note as the first prompt (prints the command; --run runs it).
    Handoff(commands::handoff::Handoff),
    /// Print the thresholds in force, as JSON (--markdown: as a table).
    Thresholds(commands::pulse::Thresholds),
    /// Show each session's context level, usable context, tokens and calls.
    Pressure(commands::pulse::Pressure),
    /// A live view of every session, most urgent first (--once, --json: one snapshot).
    Top(commands::top::Top),
    /// Share chosen channels with other machines through a NATS JetStream bucket.
    Bridge(commands::bridge::Bridge),
    /// Check each host's install (hooks, statusline, the binary they run, duplicates, Codex trust),
    /// the root and the settings, with the fix for each problem (exit 1 when there is one).
    Doctor(commands::install::doctor::Doctor),
    /// Print a shell's completion script (e.g. `interband completions bash > ~/.local/share/bash-completion/completions/interband`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; e.g. `interband man | man -l -`).
    Man,
}

/// Exit codes.
pub mod exit {
    /// Everything was fine.
    pub const OK: u8 = 0;
    /// Some data was invalid.
    pub const INVALID: u8 = 1;
    /// Usage or I/O trouble.
    pub const TROUBLE: u8 = 2;
}

/// `interband hook [--host KEY]` and `interband statusline [--host KEY]` run
/// once per tool call or redraw, at the process-spawn floor: they skip
/// building the whole argument parser.
fn fast_path() -> Option<Command> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).take(4).collect();
    let args: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    match args[..] {
        ["hook"] => Some(Command::Hook(commands::hook::Hook::default())),
        ["hook", "--host", key] => Some(Command::Hook(commands::hook::Hook {
            host: Some(key.to_owned()),
            ..Default::default()
        })),
        ["statusline"] => Some(Command::Statusline(commands::hook::Statusline::default())),
        ["statusline", "--host", key] => Some(Command::Statusline(commands::hook::Statusline {
            host: Some(key.to_owned()),
            ..Default::default()
        })),
        _ => None,
    }
}

/// A host runs `interband hook` and `interband statusline` with the
/// arguments an install wrote, perhaps in a repository a teammate's newer or
/// older binary shares: those two never refuse their arguments (a refusal is
/// exit 2, which Claude Code takes for a blocking error). What they do not
/// know is logged and ignored, and the event is handled. Help is still help.
fn lenient(e: &clap::Error) -> Option<Command> {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return None;
    }
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (command, rest) = args.split_first()?;
    let mut host = None;
    let mut ignored = Vec::new();
    let mut timings = false;
    let mut wrap = None;
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--host" => host = rest.next().cloned(),
            a if a.starts_with("--host=") => host = Some(a["--host=".len()..].to_owned()),
            "--timings" if command == "statusline" => timings = true,
            "--wrap" if command == "statusline" => {
                wrap = Some(rest.by_ref().cloned().collect::<Vec<_>>());
            }
            other => ignored.push(other.to_owned()),
        }
    }
    match command.as_str() {
        "hook" => Some(Command::Hook(commands::hook::Hook { host, ignored })),
        "statusline" => Some(Command::Statusline(commands::hook::Statusline {
            host,
            timings,
            wrap: wrap.filter(|w| !w.is_empty()),
            ignored,
        })),
        _ => None,
    }
}

fn main() -> ExitCode {
    platform::at_start();
    let cli = match fast_path() {
        Some(command) => Cli { command },
        None => match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => match lenient(&e) {
                Some(command) => Cli { command },
                None => e.exit(),
            },
        },
    };
    if !matches!(
        cli.command,
        Command::Hook(_) | Command::Statusline(_) | Command::Demo(_)
    ) {
        // Like other Unix tools, stop quietly when the reader of our output goes away
        // (a hook must exit 0 instead, so it keeps the default of ignoring it, and
        // the demo stops on the error so it can remove its temporary folder).
        platform::die_on_closed_pipe();
        exit_cleanly_when_stdout_fails();
    }
    let result = match cli.command {
        Command::Demo(a) => a.run(),
        Command::Install(a) => a.run(),
        Command::Uninstall(a) => a.run(),
        Command::Replay(a) => a.run(),
        Command::Validate(a) => a.run(),
        Command::Schema(a) => a.run(),
        Command::Publish(a) => a.run(),
        Command::Read(a) => a.run(),
        Command::Ls(a) => a.run(),
        Command::Prune(a) => a.run(),
        Command::Watch(a) => a.run(),
        Command::Hook(a) => a.run(),
        Command::Statusline(a) => a.run(),
        Command::Config(a) => a.run(),
        Command::Trust(a) => a.run(),
        Command::Thresholds(a) => a.run(),
        Command::Handoff(a) => a.run(),
        Command::Pressure(a) => a.run(),
        Command::Top(a) => a.run(),
        Command::Bridge(a) => a.run(),
        Command::Doctor(a) => a.run(),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "interband", &mut std::io::stdout());
            Ok(exit::OK)
        }
        Command::Man => {
            let page = clap_mangen::Man::new(<Cli as clap::CommandFactory>::command());
            page.render(&mut std::io::stdout())
                .map(|()| exit::OK)
                .map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("interband: {}", interband::text::terminal(&one_line(&e)));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The error and its causes on one line, each cause once: a library error
/// that names its source already is not followed by that source again.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line
}

/// `println!` panics when stdout cannot be written (a full disk, a closed
/// file): say so in one line and exit 2, like any other I/O error.
fn exit_cleanly_when_stdout_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(reason) = msg.strip_prefix("failed printing to stdout: ") {
            eprintln!("interband: cannot write to standard output: {reason}");
            std::process::exit(2);
        }
        default(info);
    }));
}

/// 1 when the root cause is bad data, else 2.
fn exit_code(e: &anyhow::Error) -> u8 {
    let invalid = e.chain().any(|c| {
        c.downcast_ref::<interband::Error>()
            .is_some_and(interband::Error::is_invalid_data)
            || c.downcast_ref::<serde_json::Error>().is_some()
    });
    if invalid {
        exit::INVALID
    } else {
        exit::TROUBLE
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
