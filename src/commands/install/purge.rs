//! `interband uninstall --purge`: interband's data goes too. Only what
//! interband itself writes under the root is removed (its channels and its
//! internal folders); another plugin's channels on a shared root stay, and
//! so does the root when anything is left in it. Then the trust file and the
//! install records.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The folders under the root that are interband's own.
const OURS: &[&str] = &[
    "interpulse",
    "intermem",
    "interline",
    "compact",
    "intercheck",
    ".state",
    ".journal",
    ".consumers",
    ".remote",
];

/// What a purge removes here, existing only.
fn targets() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(root) = interband::paths::root_from_env() {
        out.extend(OURS.iter().map(|n| root.join(n)));
        out.push(root.join(interband::retention::SWEEP_STAMP));
    }
    out.extend(interband::trust::store_path(
        &interband::settings::ProcessEnv,
    ));
    out.extend(super::state_home().map(|s| s.join("interband")));
    out.retain(|p| std::fs::symlink_metadata(p).is_ok());
    out
}

pub fn purge(yes: bool) -> Result<()> {
    let targets = targets();
    if targets.is_empty() {
        say!("nothing of interband's data to remove");
        return Ok(());
    }
    say!("interband's data to remove:");
    for t in &targets {
        say!("  {}", t.display());
    }
    if !yes {
        anyhow::ensure!(
            std::io::stdin().is_terminal(),
            "nothing removed: confirm with --yes (no terminal to ask on)"
        );
        eprint!("remove all of it? type yes: ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            say!("nothing removed");
            return Ok(());
        }
    }
    for t in &targets {
        remove(t)?;
    }
    // The root itself, once nothing else is in it (another plugin's
    // channels keep it).
    if let Ok(root) = interband::paths::root_from_env()
        && std::fs::remove_dir(&root).is_ok()
    {
        say!("removed {}", root.display());
    }
    say!("removed interband's data ({} item(s))", targets.len());
    Ok(())
}

/// Removes a file or a folder with everything in it, never through a link
/// (a link is removed itself).
fn remove(p: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(p).with_context(|| p.display().to_string())?;
    if meta.is_dir() {
        std::fs::remove_dir_all(p)
    } else {
        std::fs::remove_file(p)
    }
    .with_context(|| format!("{}: cannot remove it", p.display()))
}
