//! `interband config` (the effective settings and where each value came
//! from) and `interband trust` (which project settings files may run things).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use interband::settings::{Files, ProcessEnv, Scope, privileged_in, read_project_file};
use interband::text::terminal;
use interband::trust::{Status, Store, project_file, store_path};
use interband_consumers::hooks::AllSettings;
use interpulse::config::Config;

use crate::exit;

/// `interband config`
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ShowConfig {
    /// One JSON object per setting.
    #[arg(long)]
    json: bool,
    #[command(subcommand)]
    action: Option<ConfigAction>,
}

/// What `interband config` can do besides showing the settings.
#[derive(clap::Subcommand)]
enum ConfigAction {
    /// Write your settings file (`$INTERBAND_CONFIG`, else
    /// `~/.config/interband/config.toml`) as a template of every setting,
    /// each commented out at its default; never over a file that exists.
    Init {
        /// Print the template instead of writing it.
        #[arg(long)]
        print: bool,
    },
}

/// Every setting at its default, each commented out under its table: a
/// settings file that changes nothing until a line is uncommented.
pub fn template() -> Result<String> {
    use interband_consumers::{compact, interline, intermem};
    let mut doc = toml::Table::new();
    let mut put = |name: &str, v: Result<toml::Value, toml::ser::Error>| -> Result<()> {
        doc.insert(name.to_owned(), v.context(name.to_owned())?);
        Ok(())
    };
    put("interpulse", toml::Value::try_from(Config::default()))?;
    put(
        "intermem",
        toml::Value::try_from(intermem::Settings::default()),
    )?;
    put(
        "interline",
        toml::Value::try_from(interline::Settings::default()),
    )?;
    put(
        "compact",
        toml::Value::try_from(compact::Settings::default()),
    )?;
    put(
        "notify",
        toml::Value::try_from(interband_consumers::notify::Settings::default()),
    )?;
    put(
        "bridge",
        toml::Value::try_from(interband_bridge::Settings::default()),
    )?;
    let body = toml::to_string(&doc)?;
    let mut out = String::from(
        "# interband's settings, each at its default: uncomment a line to change it.\n\
         # Every setting is described in docs/settings.md; `interband config` shows the values in\n\
         # effect and where each came from.\n",
    );
    for line in body.lines() {
        let table = line.starts_with('[');
        match (table, line.trim().is_empty()) {
            (true, _) => {
                out.push('\n');
                out.push_str(line);
            }
            (false, true) => continue,
            (false, false) => {
                out.push_str("# ");
                out.push_str(line);
            }
        }
        out.push('\n');
    }
    Ok(out)
}

impl ConfigAction {
    fn run(self) -> Result<u8> {
        let ConfigAction::Init { print } = self;
        let text = template()?;
        if print {
            print!("{text}");
            return Ok(exit::OK);
        }
        let path = interband::settings::user_file(&ProcessEnv)
            .context("HOME is not set: set INTERBAND_CONFIG, or use --print")?;
        if std::fs::symlink_metadata(&path).is_ok() {
            anyhow::bail!(
                "{} exists: nothing written (`interband config init --print` shows the template)",
                path.display()
            );
        }
        if let Some(dir) = path.parent() {
            crate::platform::private_dirs(dir)?;
        }
        {
            use std::io::Write as _;
            let mut f = crate::platform::private_options(
                std::fs::OpenOptions::new().write(true).create_new(true),
                Default::default(),
            )
            .open(&path)
            .with_context(|| path.display().to_string())?;
            f.write_all(text.as_bytes())
                .with_context(|| path.display().to_string())?;
        }
        say!(
            "wrote {}: every setting, commented out at its default",
            path.display()
        );
        Ok(exit::OK)
    }
}

impl ShowConfig {
    pub fn run(self) -> Result<u8> {
        if let Some(action) = self.action {
            return action.run();
        }
        let project = std::env::current_dir().ok();
        let files = Files::read(project.as_deref(), &ProcessEnv);
        let pulse = Config::load_from(&files, &ProcessEnv);
        let consumers = AllSettings::load_from(&files, &ProcessEnv);
        let mut rows = pulse.entries("interpulse");
        rows.extend(consumers.intermem.entries("intermem"));
        rows.extend(consumers.interline.entries("interline"));
        rows.extend(consumers.compact.entries("compact"));
        rows.extend(consumers.notify.entries("notify"));
        let bridge = super::bridge::settings(&files);
        rows.extend(bridge.entries("bridge"));
        if self.json {
            for (k, v, o) in &rows {
                say_json!(serde_json::json!({"key": k, "value": whole(v), "from": o.to_string()}));
            }
        } else {
            println!("# settings files, lowest precedence first:");
            for f in &files.found {
                let state = match (f.exists, f.scope, f.trusted) {
                    (false, _, _) => " (absent)".to_owned(),
                    (true, _, _) if !f.valid => " (not valid: ignored whole, see below)".to_owned(),
                    (true, Scope::User, _) => " (yours: trusted)".to_owned(),
                    (true, Scope::Project, true) => " (project: trusted)".to_owned(),
                    (true, Scope::Project, false) if f.ignored.is_empty() => {
                        " (project: not trusted; it sets nothing that needs trust)".to_owned()
                    }
                    (true, Scope::Project, false) => format!(
                        " (project: NOT trusted; ignored: {}; `interband trust {}` allows them)",
                        f.ignored.join(", "),
                        f.path.display()
                    ),
                };
                println!("#   {}", terminal(&format!("{}{state}", f.path.display())));
            }
            for (k, v, o) in &rows {
                let value = whole(v);
                // What a value means where it is not plain.
                let means = match (k.as_str(), value.as_u64()) {
                    ("interpulse.window", Some(0)) => {
                        "; 0: no fixed window, each session's own is found (see below)"
                    }
                    _ => "",
                };
                println!("{}", terminal(&format!("{k} = {value}    # {o}{means}")));
            }
            println!(
                "# each session's window, best first (`interband pressure --json` says which it took):"
            );
            for host in interband_hosts::Host::ALL {
                let p = host.profile();
                println!("#   {}: {}", p.name, p.window_order);
            }
            let ignored = project
                .as_deref()
                .map(ignored_host_settings)
                .unwrap_or_default();
            if !ignored.is_empty() {
                println!("# the hosts' own settings in this project that interband ignores:");
                for i in ignored {
                    println!("#   {}", terminal(&i));
                }
            }
        }
        // Each part reads the same files: a file's problem is said once.
        let theirs = consumers.problems();
        let problems = problems(&files, &[&pulse.problems, &theirs]);
        for p in &problems {
            eprintln!("interband: {}", terminal(p));
        }
        Ok(if problems.is_empty() {
            exit::OK
        } else {
            exit::INVALID
        })
    }
}

/// When `file` is a host's own settings file in a project folder
/// (`.qwen/settings.json`, `.gemini/settings.json`, `.claude/settings.json`),
/// the settings interband reads from it, as a person writes their names.
fn host_file(file: &std::path::Path) -> Option<Vec<String>> {
    let project = file.parent()?.parent()?;
    let mut keys = Vec::new();
    let mut ours = false;
    for host in interband_hosts::Host::ALL {
        let p = host.profile();
        let (folder, _) = p.settings_file.split_once('/')?;
        ours |= file.parent()?.file_name().is_some_and(|f| f == folder)
            && file.extension().is_some_and(|e| e == "json");
        for s in (p.project_settings)(project, &ProcessEnv) {
            if interband_hosts::project::same_file(&s.file, file) {
                keys.push(s.key.trim_start_matches('/').replace('/', "."));
            }
        }
    }
    ours.then_some(keys)
}

/// What each host's own settings in `project` set that interband ignores
/// there, and why (`interband config`, `doctor`).
pub fn ignored_host_settings(project: &std::path::Path) -> Vec<String> {
    interband_hosts::Host::ALL
        .iter()
        .flat_map(|h| {
            let p = h.profile();
            (p.project_settings)(project, &ProcessEnv)
                .into_iter()
                .filter_map(|s| s.notice(p.name))
        })
        .collect()
}

/// `v` with every whole number written as one (`900`, not `900.0`), as a
/// person writes it in a settings file.
pub fn whole(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => Value::from(f as i64),
            _ => v.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(whole).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), whole(v))).collect())
        }
        other => other.clone(),
    }
}

/// The problems with the settings files and values, each said once (an
/// untrusted project file's ignored settings are notices, not problems).
pub fn problems(files: &Files, parts: &[&[String]]) -> Vec<String> {
    let notices = files.notices();
    let unknown = files.unknown_tables(&[
        "interpulse",
        "intermem",
        "interline",
        "compact",
        "notify",
        "bridge",
    ]);
    let mut out: Vec<String> = Vec::new();
    for p in files
        .problems
        .iter()
        .chain(&unknown)
        .chain(parts.iter().copied().flatten())
    {
        if !out.contains(p) && !notices.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// `interband trust [PATH]`: trust a project's settings file as it is now.
///
/// A project's `.interband/config.toml` may set the settings that run a
/// command or act outside the project (`[compact]`, `intermem.claude_memory`)
/// only once you trust that exact file: its SHA-256 is recorded in your
/// config folder, and any change to it needs trusting again.
#[derive(Args)]
pub struct Trust {
    /// The settings file, or a project folder (its `.interband/config.toml`);
    /// default: the current folder's.
    path: Option<PathBuf>,
    /// List the trusted files and whether each is still as trusted.
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
    /// Stop trusting the file.
    #[arg(long)]
    revoke: bool,
}

impl Trust {
    pub fn run(self) -> Result<u8> {
        let store_file = store_path(&ProcessEnv)
            .context("cannot find your config folder: set HOME or XDG_CONFIG_HOME")?;
        let store = Store::load_from(&store_file)?;
        if self.list {
            anyhow::ensure!(self.path.is_none(), "--list takes no path");
            println!(
                "# trusted in {}",
                terminal(&store_file.display().to_string())
            );
            for (path, status) in store.list() {
                let status = match status {
                    Status::Current => "trusted",
                    Status::Changed => "CHANGED since trusted: its privileged settings are ignored",
                    Status::Missing => "missing",
                };
                println!("{}  {status}", terminal(&path.display().to_string()));
            }
            return Ok(exit::OK);
        }
        let given = match self.path {
            Some(p) => p,
            None => std::env::current_dir().context("cannot read the current folder")?,
        };
        let file = project_file(&given);
        if self.revoke {
            let removed = Store::update(&store_file, |s| s.remove(&file))?;
            if removed {
                println!(
                    "no longer trusted: {}",
                    terminal(&file.display().to_string())
                );
            } else {
                println!("was not trusted: {}", terminal(&file.display().to_string()));
            }
            return Ok(exit::OK);
        }
        // Read as a project's file is read (no link, bounded, regular), and
        // what trusting it allows told from exactly the bytes trusted.
        let bytes = read_project_file(&file)?;
        let privileged = match host_file(&file) {
            // A host's own settings file in the project (`.qwen/settings.json`):
            // what it sets that interband reads.
            Some(keys) => keys,
            None => privileged_in(&String::from_utf8_lossy(&bytes))
                .map_err(|e| anyhow::anyhow!("{}: not valid TOML: {e}", file.display()))?,
        };
        let key = Store::update(&store_file, |s| s.add(&file, &bytes))?;
        say!("trusted: {}", key.display());
        if privileged.is_empty() {
            println!("it sets nothing that needs trust");
        } else {
            println!("it may now set: {}", terminal(&privileged.join(", ")));
        }
        Ok(exit::OK)
    }
}
