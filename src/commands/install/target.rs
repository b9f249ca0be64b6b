//! Which settings file a command works on: the host, `--settings`, `--project`, the binary to run.

use super::*;

/// Which settings file, for which host, and the command to register.
#[derive(Args)]
pub(super) struct Target {
    /// The settings file to change (default: the host's user settings under $HOME).
    #[arg(long, value_name = "PATH", conflicts_with = "project")]
    pub(super) settings: Option<PathBuf>,
    /// The project's settings in the current folder (e.g. `./.claude/settings.json`).
    #[arg(long)]
    pub(super) project: bool,
    /// The agent host whose settings to change.
    #[arg(long, value_parser = host_parser(), default_value = "claude")]
    pub(super) host: Host,
    /// Print the change as a diff and write nothing.
    #[arg(long)]
    pub(super) dry_run: bool,
    /// The interband program the host should run (default: this binary's
    /// absolute path; with --project, `interband`, found on each user's PATH).
    #[arg(long, value_name = "PATH")]
    pub(super) command: Option<PathBuf>,
}

/// `--host`: the hosts by their profiles' keys.
pub(super) fn host_parser() -> impl clap::builder::TypedValueParser<Value = Host> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Host::ALL.map(|h| {
        let p = h.profile();
        PossibleValue::new(p.key).help(format!("{}: ~/{}", p.name, p.settings_file))
    }))
    .map(|key| Host::from_key(&key).expect("one of the possible values"))
}

/// What `interband install` needs to know of a host, from its profile.
pub(super) trait Installs {
    /// Its name on the command line.
    fn key(self) -> &'static str;
    /// The settings file, relative to HOME or to the project folder.
    fn file(self) -> &'static str;
    /// The events to register.
    fn events(self) -> &'static [Event];
    /// Whether interband's statusline goes there too.
    fn has_statusline(self) -> bool;
    /// The project's file for its hooks, relative to the project folder.
    fn project_file(self) -> &'static str;
}

impl Installs for Host {
    fn key(self) -> &'static str {
        self.profile().key
    }
    fn file(self) -> &'static str {
        self.profile().settings_file
    }
    fn events(self) -> &'static [Event] {
        self.profile().hook_events
    }
    fn has_statusline(self) -> bool {
        self.profile().statusline
    }
    fn project_file(self) -> &'static str {
        self.profile().project_file.unwrap_or(self.file())
    }
}

impl Target {
    /// Where Codex keeps the trust of the hooks in `hooks_json`: the
    /// `config.toml` beside it, but for a project's hooks the user's own
    /// (`$CODEX_HOME/config.toml`, by default `~/.codex/config.toml`). A
    /// project's folder is shared with everyone who clones it: trust written
    /// there would be one machine's, and a repository that trusts its own
    /// hooks.
    ///
    /// Beside the `hooks.json` where Codex finds it, not beside the file a
    /// link there points to, and itself followed when it is a link.
    pub(super) fn codex_config(&self) -> Result<PathBuf> {
        let hooks_json = if self.project {
            self.user_path()
                .context("HOME is not set: cannot find Codex's config.toml")?
        } else {
            self.located()?
        };
        through_links(&codex_trust::config_file(&hooks_json))
    }

    /// The `hooks.json` path Codex keys its trust entries by (checked with
    /// the real Codex's `hooks/list`): `$CODEX_HOME` resolved to its real
    /// folder when set, else `~/.codex` as it is; the file's own link is
    /// never followed. A key naming another path is ignored by Codex.
    pub(super) fn codex_key_path(&self) -> Result<PathBuf> {
        let located = self.located()?;
        if self.settings.is_none()
            && !self.project
            && let Some(h) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty())
            && let Ok(real) = dunce::canonicalize(&h)
        {
            return Ok(real.join("hooks.json"));
        }
        Ok(located)
    }

    /// The user's own settings file for the host (as without `--project`):
    /// Codex keeps its configuration in `$CODEX_HOME` when set.
    pub(super) fn user_path(&self) -> Option<PathBuf> {
        self.host
            .profile()
            .user_settings(&interband::settings::ProcessEnv)
    }

    /// The settings at the other level, when they can be told: the user's
    /// for `--project`, the current folder's project settings otherwise.
    /// (Not with `--settings PATH`.)
    pub(super) fn other_level(&self) -> Option<(PathBuf, Value)> {
        if self.settings.is_some() {
            return None;
        }
        let path = if self.project {
            self.user_path()?
        } else {
            let here =
                interband::paths::under(&std::env::current_dir().ok()?, self.host.project_file());
            if Some(&here) == self.user_path().as_ref() {
                return None;
            }
            here
        };
        let json = read_settings(&path, self.host).ok()??.json;
        Some((path, json))
    }

    /// The settings file to work on. A symbolic link (a dotfiles manager's) is followed, so the
    /// link stays a link and the backup and record sit next to the real file.
    pub(super) fn path(&self) -> Result<PathBuf> {
        self.located().and_then(|p| through_links(&p))
    }

    /// The settings file where the host looks for it (a link not followed).
    pub(super) fn located(&self) -> Result<PathBuf> {
        let path = match (&self.settings, self.project) {
            (Some(p), _) => p.clone(),
            (None, true) => {
                // A project's settings come with the repository: a link in it
                // (`.claude -> ~/.claude`, or `settings.json` pointing at some
                // other file) would make install write outside the project.
                let project = std::env::current_dir().context("the current folder")?;
                let path = interband::paths::under(&project, self.host.project_file());
                let mut at = project.clone();
                for part in Path::new(self.host.project_file()).components() {
                    at.push(part);
                    if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                        anyhow::bail!(
                            "{}: a symbolic link inside the project; refusing to write through it (--settings PATH names a file outside)",
                            at.display()
                        );
                    }
                }
                return Ok(path);
            }
            (None, false) => self
                .user_path()
                .context("HOME is not set: pass --settings PATH")?,
        };
        Ok(path)
    }

    /// The program the hooks run, as the host's shell reads it back
    /// ([`crate::platform::program_word`]).
    /// A project's settings are shared with everyone who clones it: there the
    /// program is `interband` on each one's PATH, never this machine's path.
    pub(super) fn program(&self) -> Result<String> {
        let program = match &self.command {
            Some(p) if p.as_os_str().is_empty() => anyhow::bail!("--command is empty"),
            // A path as given, relative to here: the host runs it from
            // anywhere, so it is made absolute (a bare name stays PATH's).
            Some(p) if p.components().count() > 1 && p.is_relative() => std::path::absolute(p)
                .with_context(|| format!("{}: cannot make it absolute", p.display()))?,
            Some(p) => p.clone(),
            None if self.project => PathBuf::from("interband"),
            None => std::env::current_exe()
                .and_then(dunce::canonicalize)
                .context(
                    "cannot find the path of the running interband binary: pass --command PATH",
                )?,
        };
        let program = program
            .to_str()
            .with_context(|| format!("{}: the path is not UTF-8", program.display()))?;
        crate::platform::program_word(program)
    }
}

impl Target {
    /// The flags that name the same file again, for the "undo with" hint.
    pub(super) fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(p) = &self.settings {
            let _ = write!(
                s,
                " --settings {}",
                shell_words::quote(&p.to_string_lossy())
            );
        }
        if self.project {
            s.push_str(" --project");
        }
        if self.host != Host::Claude {
            let _ = write!(s, " --host {}", self.host.key());
        }
        s
    }
}
