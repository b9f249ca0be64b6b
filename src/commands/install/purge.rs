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

/// What a purge removes here, existing only, and the project installs
/// still in place whose records it keeps (the settings files they are the
/// records of): without its record, `uninstall --project` could not give a
/// project's file back as it was.
fn targets() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut out = Vec::new();
    if let Ok(root) = interband::paths::root_from_env() {
        out.extend(OURS.iter().map(|n| root.join(n)));
        out.push(root.join(interband::retention::SWEEP_STAMP));
    }
    if let Some(store) = interband::trust::store_path(&interband::settings::ProcessEnv) {
        // The trust file and the lock it is changed under.
        out.push(interband::lock::lock_path_for(&store));
        out.push(store);
    }
    let mut kept = Vec::new();
    if let Some(state) = super::state_home().map(|s| s.join("interband")) {
        let installs = state.join("installs");
        let records: Vec<PathBuf> = std::fs::read_dir(&installs)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".interband-install.json"))
            .collect();
        let mut keep: Vec<PathBuf> = Vec::new();
        for record in records {
            if let Some(settings) = in_place(&record) {
                let base = record
                    .to_string_lossy()
                    .replace(".interband-install.json", "");
                keep.extend([
                    record.clone(),
                    PathBuf::from(format!("{base}.interband-backup")),
                    PathBuf::from(format!("{}.lock", record.display())),
                ]);
                kept.push(settings);
            }
        }
        if keep.is_empty() {
            out.push(state);
        } else {
            // The state folder's other entries go; the installs folder keeps
            // only what the installs in place need.
            for dir in [&state, &installs] {
                for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    let p = e.path();
                    if p != installs && !keep.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
    }
    out.retain(|p| std::fs::symlink_metadata(p).is_ok());
    (out, kept)
}

/// The settings file an install record is the record of, when interband's
/// hooks are still there (or when the record does not say which file it is:
/// kept, as it may be).
fn in_place(record: &Path) -> Option<PathBuf> {
    let json: serde_json::Value =
        serde_json::from_slice(&interband::fsio::read_regular(record, 1 << 20).ok()?).ok()?;
    let Some(settings) = json.get("settings").and_then(|s| s.as_str()) else {
        return Some(record.to_owned());
    };
    let host = json
        .get("host")
        .and_then(|h| h.as_str())
        .and_then(super::Host::from_key)?;
    let (o, _) = super::read_settings_with_comments(Path::new(settings), host).ok()??;
    let hooks = o.json.get("hooks")?.as_object()?;
    hooks
        .values()
        .filter_map(|g| g.as_array())
        .flatten()
        .flat_map(super::group_commands)
        .any(|c| super::runs_interband(c, "hook"))
        .then(|| PathBuf::from(settings))
}

pub fn purge(yes: bool) -> Result<()> {
    let (targets, kept) = targets();
    for settings in &kept {
        say!(
            "kept: the install record of {}, where interband's hooks still are (`interband uninstall --project` there takes them out and gives the file back)",
            settings.display()
        );
    }
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
    let mut kept = Vec::new();
    for t in &targets {
        remove_ours(t, t.ends_with("intermem"), &mut kept)?;
    }
    if !kept.is_empty() {
        say!(
            "kept {} file(s) interband did not write, and the folders that hold them: {}",
            kept.len(),
            kept.iter()
                .take(5)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
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

/// Removes what interband writes at `p` (a file, or a folder and what is in
/// it), never through a link (a link is removed itself), and nothing else:
/// a root set to a folder of the user's (`INTERBAND_ROOT=$HOME`) may hold a
/// `compact/` or `.journal/` of theirs. interband writes `.json` (messages,
/// state, journal records, cursors), `.lock`, `.stamp`, `*.interband-*`
/// temporaries and, under `intermem/` (`notes`: true), `.md` notes; a folder
/// goes once it is empty. What is kept is listed in `kept`.
fn remove_ours(p: &Path, notes: bool, kept: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::symlink_metadata(p).with_context(|| p.display().to_string())?;
    if meta.is_dir() {
        for e in std::fs::read_dir(p).with_context(|| p.display().to_string())? {
            let e = e.with_context(|| p.display().to_string())?;
            remove_ours(&e.path(), notes, kept)?;
        }
        // Empty now, or it holds what is kept.
        let _ = std::fs::remove_dir(p);
        return Ok(());
    }
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ours = [".json", ".lock", ".stamp"]
        .iter()
        .any(|x| name.ends_with(x))
        || name.contains(".interband-")
        || (notes && name.ends_with(".md"));
    if ours {
        std::fs::remove_file(p).with_context(|| format!("{}: cannot remove it", p.display()))
    } else {
        kept.push(p.to_owned());
        Ok(())
    }
}
