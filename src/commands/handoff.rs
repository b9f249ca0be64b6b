//! `interband handoff`: a fresh session of the same agent, in the same
//! folder, with the session's memory note as its first prompt (printed, or
//! run with `--run`).

use anyhow::{Context as _, Result};
use clap::Args;
use interband::Bus;
use interband::settings::{Files, ProcessEnv};
use interband_consumers::handoff;
use interband_consumers::hooks::AllSettings;

use crate::exit;

/// `interband handoff`
#[derive(Args)]
pub struct Handoff {
    /// The session to hand over (default: the latest in this folder, else
    /// the latest anywhere).
    #[arg(long)]
    session: Option<String>,
    /// Start the fresh session here and now (its exit code is this one's).
    #[arg(long, conflicts_with = "json")]
    run: bool,
    /// Print the session, its agent, folder, note and the command line as JSON.
    #[arg(long)]
    json: bool,
}

impl Handoff {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        let here = std::env::current_dir().ok();
        let session = match self.session {
            Some(s) => s,
            None => {
                let rows = interpulse::dashboard::rows(&bus, super::pulse::now());
                let in_here = rows.iter().find(|r| {
                    let cwd = r.pressure.cwd.as_deref().map(std::path::Path::new);
                    here.as_deref().is_some_and(|h| cwd == Some(h))
                });
                match in_here.or(rows.first()) {
                    Some(r) => r.session.clone(),
                    None => {
                        eprintln!(
                            "interband: no session to hand over yet ({})",
                            super::install::doctor::no_sessions_yet()
                        );
                        return Ok(exit::INVALID);
                    }
                }
            }
        };
        let files = Files::read(here.as_deref(), &ProcessEnv);
        let settings = AllSettings::load_from(&files, &ProcessEnv);
        let home = interband::paths::home(&ProcessEnv);
        let h = match handoff::prepare(&bus, &session, &settings.intermem.value, home.as_deref()) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("interband: {}", interband::text::terminal(&e.to_string()));
                return Ok(exit::INVALID);
            }
        };
        if self.json {
            say_json!(serde_json::json!({
                "session": h.session, "agent": h.host.as_str(), "cwd": h.cwd,
                "note": h.note, "prompt_file": h.prompt_file, "argv": h.argv,
                "command": printed(&h),
            }));
            return Ok(exit::OK);
        }
        eprintln!(
            "interband: session {} of {} in {}, its memory note {}",
            h.session,
            h.host.profile().name,
            h.cwd.display(),
            h.note.display()
        );
        if !self.run {
            say!("{}", printed(&h));
            return Ok(exit::OK);
        }
        let status = std::process::Command::new(&h.argv[0])
            .args(&h.argv[1..])
            .current_dir(&h.cwd)
            .status()
            .with_context(|| format!("cannot start {} (is it on PATH?)", h.argv[0]))?;
        Ok(status
            .code()
            .map_or(exit::TROUBLE, |c| c.clamp(0, 255) as u8))
    }
}

/// The command line a person runs: the folder, then the agent with its
/// prompt read from its file (a note of kilobytes, with newlines, does not
/// belong on a terminal's line), quoted for the shell it is given to.
fn printed(h: &handoff::Handoff) -> String {
    // (The prompt is the last word.)
    let prompt_at = h.argv.len().saturating_sub(1);
    let file = h.prompt_file.to_string_lossy();
    let words: Vec<String> = h.argv[..prompt_at].iter().map(|w| quote(w)).collect();
    if cfg!(windows) {
        // PowerShell's.
        format!(
            "Set-Location {}; {} (Get-Content -Raw {})",
            quote(&h.cwd.to_string_lossy()),
            words.join(" "),
            quote(&file)
        )
    } else {
        format!(
            "cd {} && {} \"$(cat {})\"",
            quote(&h.cwd.to_string_lossy()),
            words.join(" "),
            quote(&file)
        )
    }
}

/// A word quoted for the shell the printed line is for.
fn quote(word: &str) -> String {
    if cfg!(windows) {
        format!("'{}'", word.replace('\'', "''"))
    } else {
        shell_words::quote(word).into_owned()
    }
}
