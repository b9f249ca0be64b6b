//! `interband config`: the effective settings and where each value came from.

use anyhow::Result;
use clap::Args;
use interband::settings::ProcessEnv;
use interband_consumers::hooks::AllSettings;
use interpulse::config::Config;

use crate::exit;

/// `interband config`
#[derive(Args)]
pub struct ShowConfig {
    /// One JSON object per setting.
    #[arg(long)]
    json: bool,
}

impl ShowConfig {
    pub fn run(self) -> Result<u8> {
        let project = std::env::current_dir().ok();
        let files = interband::settings::default_files(project.as_deref(), &ProcessEnv);
        let pulse = Config::load(project.as_deref(), &ProcessEnv);
        let consumers = AllSettings::load(project.as_deref(), &ProcessEnv);
        let mut rows = pulse.entries("interpulse");
        rows.extend(consumers.intermem.entries("intermem"));
        rows.extend(consumers.interline.entries("interline"));
        rows.extend(consumers.compact.entries("compact"));
        if self.json {
            for (k, v, o) in &rows {
                println!(
                    "{}",
                    serde_json::json!({"key": k, "value": v, "from": o.to_string()})
                );
            }
        } else {
            println!("# settings files, lowest precedence first:");
            for f in &files {
                let state = if f.exists() { "" } else { " (absent)" };
                println!("#   {}{state}", f.display());
            }
            for (k, v, o) in &rows {
                println!("{k} = {v}    # {o}");
            }
        }
        // Each part reads the same files: a file's problem is said once.
        let mut problems: Vec<String> = Vec::new();
        for p in pulse.problems.iter().cloned().chain(consumers.problems()) {
            if !problems.contains(&p) {
                problems.push(p);
            }
        }
        for p in &problems {
            eprintln!("interband: {p}");
        }
        Ok(if problems.is_empty() {
            exit::OK
        } else {
            exit::INVALID
        })
    }
}
