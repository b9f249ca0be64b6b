//! Layered settings for interband's own tools: built-in defaults, then the
//! user's file, then the project's file, then the environment — remembering
//! where each value came from.
//!
//! Settings files are TOML with one table per tool (`[interpulse]`,
//! `[intermem]`...). Every setting can also be set from the environment as
//! `INTERBAND_<TOOL>_<KEY>` (dots and dashes become `_`, upper case), e.g.
//! `INTERBAND_INTERPULSE_DEBOUNCE_CALLS=3`. Values from the environment are
//! read as JSON when they parse as JSON, else as text; a list may also be
//! written comma-separated (`30,52,70`). A bad or unknown value is reported
//! and ignored, never fatal: a hook must still run on defaults.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Where settings read environment variables from.
pub trait Env {
    /// The variable's value, if set.
    fn var(&self, name: &str) -> Option<String>;
    /// False only when no variable starting with `prefix` is set (lets a
    /// hook skip the per-key look-ups). The default says "maybe".
    fn may_have_prefix(&self, prefix: &str) -> bool {
        let _ = prefix;
        true
    }
}

impl<F: Fn(&str) -> Option<String>> Env for F {
    fn var(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// The process's environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn may_have_prefix(&self, prefix: &str) -> bool {
        std::env::vars_os().any(|(k, _)| k.as_encoded_bytes().starts_with(prefix.as_bytes()))
    }
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in default.
    Default,
    /// A settings file.
    File(PathBuf),
    /// An environment variable.
    Env(String),
    /// A value out of range, replaced by the nearest one allowed: what was
    /// given, and where.
    Bounded {
        /// The value given.
        given: String,
        /// Where it was given.
        from: Box<Origin>,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Env(v) => write!(f, "env {v}"),
            Origin::Bounded { given, from } => {
                write!(f, "bounded: {from} says {given}, out of range")
            }
        }
    }
}

/// One tool's effective settings, with the origin of each value.
#[derive(Debug, Clone)]
pub struct Layered<T> {
    /// The effective value.
    pub value: T,
    /// `tool.key.path` → where its value came from, for the settings not at their default.
    pub overrides: BTreeMap<String, Origin>,
    /// Values that were ignored, and why.
    pub problems: Vec<String>,
}

impl<T> Layered<T> {
    /// Records that the setting `key`, given as `given`, was replaced by the
    /// nearest value allowed: its origin says so, and `problem` is said.
    pub fn bounded(&mut self, key: &str, given: impl fmt::Display, problem: String) {
        self.mark_bounded(key, given);
        self.problems.push(problem);
    }

    /// [`Layered::bounded`] without a problem to say (one said it already).
    pub fn mark_bounded(&mut self, key: &str, given: impl fmt::Display) {
        let from = self.overrides.remove(key).unwrap_or(Origin::Default);
        self.overrides.insert(
            key.to_owned(),
            Origin::Bounded {
                given: given.to_string(),
                from: Box::new(from),
            },
        );
    }
}

impl<T: Serialize> Layered<T> {
    /// Where the setting `key` (`tool.key.path`) came from.
    pub fn origin(&self, key: &str) -> Origin {
        self.overrides.get(key).cloned().unwrap_or(Origin::Default)
    }

    /// Every setting under `tool`: its dotted key, effective value and origin.
    pub fn entries(&self, tool: &str) -> Vec<(String, Value, Origin)> {
        let mut leaves = BTreeMap::new();
        flatten(
            tool,
            &serde_json::to_value(&self.value).unwrap_or_default(),
            &mut leaves,
        );
        leaves
            .into_iter()
            .map(|(k, v)| {
                let o = self.origin(&k);
                (k, v, o)
            })
            .collect()
    }
}

/// The largest settings file read: 64 KiB. A bigger one is ignored whole,
/// with one problem, so a huge file cannot slow every hook down.
pub const MAX_SETTINGS_BYTES: u64 = 64 << 10;

/// The settings a project file may set only once the user trusts it: those
/// that run a command or act outside the project. Each is a dotted key or a
/// prefix of keys (`compact` covers every `compact.*`).
///
/// - `compact`: the compaction trigger runs a command, or types into a tmux
///   pane, and decides when;
/// - `interpulse.thresholds` and `interpulse.window`: they decide the level,
///   and so when the trigger acts (a project could make every session red at
///   once, and the user's command or tmux run at every turn);
/// - `interpulse.reinject.files`: which files go into the model's context
///   (a project could name the user's `.env`); an untrusted project gets the
///   default `.interband/directives.md` only;
/// - `intermem.claude_memory`: writes into `~/.claude`, which Claude Code
///   loads into every later session of the project;
/// - `bridge`: sends this machine's sessions to a server (a project could
///   name its own);
/// - `notify`: runs the desktop's notifier or the user's command.
pub const PRIVILEGED: &[&str] = &[
    "bridge",
    "compact",
    "notify",
    "interpulse.thresholds",
    "interpulse.window",
    "interpulse.reinject.files",
    "intermem.claude_memory",
];

/// True when a dotted key is one of [`PRIVILEGED`] or under one.
///
/// ```
/// use interband::settings::is_privileged;
/// assert!(is_privileged("compact.command"));
/// assert!(is_privileged("intermem.claude_memory"));
/// assert!(!is_privileged("intermem.max_bytes"));
/// assert!(!is_privileged("compaction.x"));
/// ```
pub fn is_privileged(key: &str) -> bool {
    PRIVILEGED.iter().any(|p| {
        key == *p
            || key
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// Whose a settings file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's own file: trusted.
    User,
    /// A project's `.interband/config.toml`: trusted only once the user trusts that exact file.
    Project,
}

/// A settings file as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Where it is.
    pub path: PathBuf,
    /// Whose it is.
    pub scope: Scope,
    /// Whether it is there (readable or not).
    pub exists: bool,
    /// Whether its settings count at all: it exists, could be read and is
    /// valid TOML (a broken file is ignored whole, with a problem saying why).
    pub valid: bool,
    /// Whether its privileged settings count (the user's own, or a project file the user trusts as it is).
    pub trusted: bool,
    /// Its privileged settings that were ignored because it is not trusted.
    pub ignored: Vec<String>,
}

/// The settings files, read once for every tool: each file's tables, with
/// the privileged settings of an untrusted project file already taken out.
#[derive(Debug, Clone, Default)]
pub struct Files {
    layers: Vec<(PathBuf, toml::Table)>,
    /// Each file looked at, lowest precedence first.
    pub found: Vec<FileInfo>,
    /// Problems with the files themselves (unreadable, too large, not
    /// TOML), one line each.
    pub problems: Vec<String>,
}

impl FileInfo {
    /// One line saying which settings of this untrusted file were ignored,
    /// and how to allow them; `None` when nothing was.
    pub fn notice(&self) -> Option<String> {
        (!self.ignored.is_empty()).then(|| {
            format!(
                "{}: not trusted, so these settings are ignored: {} (to allow them: interband trust {})",
                self.path.display(),
                self.ignored.join(", "),
                self.path.display()
            )
        })
    }
}

impl Files {
    /// A problem for each table of the files that none of `known` reads
    /// (a misspelt `[compcat]` would otherwise be ignored without a word).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let file = dir.path().join("config.toml");
    /// std::fs::write(&file, "[compcat]\nstrategy = \"off\"\n").unwrap();
    /// let files = interband::settings::Files::read_paths(&[(file, interband::settings::Scope::User)], &|_: &str| None);
    /// let p = files.unknown_tables(&["compact"]);
    /// assert!(p[0].contains("[compcat]"), "{p:?}");
    /// ```
    pub fn unknown_tables(&self, known: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for (path, table) in &self.layers {
            for (key, value) in table.iter().filter(|(k, _)| !known.contains(&k.as_str())) {
                let what = if value.is_table() {
                    format!("unknown table [{key}]")
                } else {
                    format!("{key}: a setting outside any table")
                };
                out.push(format!(
                    "{}: {what} ignored (tables: {})",
                    path.display(),
                    known.join(", ")
                ));
            }
        }
        out
    }

    /// The user's file (`$INTERBAND_CONFIG`, else
    /// `$XDG_CONFIG_HOME/interband/config.toml`, else
    /// `~/.config/interband/config.toml`), then the project's
    /// (`<project>/.interband/config.toml`).
    pub fn read(project: Option<&Path>, env: &dyn Env) -> Files {
        let mut list = Vec::new();
        if let Some(user) = user_file(env) {
            list.push((user, Scope::User));
        }
        if let Some(p) = project {
            list.push((
                crate::paths::under(p, ".interband/config.toml"),
                Scope::Project,
            ));
        }
        Files::read_paths(&list, env)
    }

    /// Reads the given files, lowest precedence first.
    pub fn read_paths(list: &[(PathBuf, Scope)], env: &dyn Env) -> Files {
        let mut files = Files::default();
        let mut store: Option<crate::trust::Store> = None;
        for (path, scope) in list {
            let mut info = FileInfo {
                path: path.clone(),
                scope: *scope,
                exists: false,
                valid: false,
                trusted: *scope == Scope::User,
                ignored: Vec::new(),
            };
            let mut unsafe_user_file = None;
            let read = match scope {
                Scope::User => read_user_file(path).map(|(bytes, why)| {
                    unsafe_user_file = why;
                    bytes
                }),
                Scope::Project => read_project_file(path),
            };
            let bytes = match read {
                Ok(b) => b,
                Err(crate::Error::NotFound { .. }) => {
                    files.found.push(info);
                    continue;
                }
                Err(e) => {
                    files.problems.push(format!("{e}; the file is ignored"));
                    info.exists = true;
                    files.found.push(info);
                    continue;
                }
            };
            info.exists = true;
            let text = String::from_utf8_lossy(&bytes);
            let mut table = match parse(&text) {
                Ok(t) => t,
                Err(e) => {
                    files
                        .problems
                        .push(format!("{}: not valid TOML: {e}", path.display()));
                    files.found.push(info);
                    continue;
                }
            };
            if let Some(why) = unsafe_user_file {
                // Whoever else can write it could choose commands to run.
                info.trusted = false;
                info.ignored = strip_privileged(&mut table);
                files.problems.push(format!(
                    "{}: {why}, so its settings that run things are ignored (fix: chmod go-w, and own it)",
                    path.display()
                ));
            }
            if *scope == Scope::Project {
                let store = store.get_or_insert_with(|| {
                    crate::trust::Store::load(env).unwrap_or_else(|e| {
                        files
                            .problems
                            .push(format!("{e}; no project file is trusted"));
                        crate::trust::Store::default()
                    })
                });
                info.trusted = store.trusts(path, &bytes);
                if !info.trusted {
                    info.ignored = strip_privileged(&mut table);
                }
            }
            info.valid = true;
            files.layers.push((path.clone(), table));
            files.found.push(info);
        }
        files
    }
}

impl Files {
    /// The notices of the untrusted files whose settings were ignored.
    pub fn notices(&self) -> Vec<String> {
        self.found.iter().filter_map(FileInfo::notice).collect()
    }
}

/// Reads a project's settings file: it comes with the repository, so
/// neither it nor its `.interband` folder may be a link (a link could make it
/// another project's file, trusted there); a regular file of at most
/// [`MAX_SETTINGS_BYTES`], read without blocking.
pub fn read_project_file(path: &Path) -> crate::Result<Vec<u8>> {
    let bytes = crate::fsio::read_capped(path, MAX_SETTINGS_BYTES)?;
    // (Looked at once the file is known to exist: most projects have none.)
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(crate::Error::Symlink { path: dir.into() });
    }
    Ok(bytes)
}

/// Reads the user's settings file (a link is fine: a dotfiles repository),
/// and says why it cannot be trusted as the user's own when someone else
/// owns it or may write it or its folder.
fn read_user_file(path: &Path) -> crate::Result<(Vec<u8>, Option<String>)> {
    use std::io::Read;
    let (file, meta) = crate::fsio::open_regular_meta(path, crate::fsio::Links::Follow)?;
    let me = crate::fsio::my_uid();
    let mut why = None;
    if meta.uid != me && meta.uid != 0 {
        why = Some(format!("owned by uid {}, not by you", meta.uid));
    } else if meta.mode & 0o022 != 0 {
        why = Some(format!(
            "writable by group or others (mode {:o})",
            meta.mode
        ));
    } else if let Some(dir) = dunce::canonicalize(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
        .and_then(|d| crate::fsio::metadata(&d, crate::fsio::Links::Follow).ok())
    {
        let sticky = dir.mode & 0o1000 != 0;
        if (dir.uid != me && dir.uid != 0) || (dir.mode & 0o022 != 0 && !sticky) {
            why = Some("in a folder someone else may write".to_owned());
        }
    }
    let mut bytes = Vec::new();
    file.take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| crate::Error::Io {
            path: path.into(),
            source: e,
        })?;
    if meta.len > MAX_SETTINGS_BYTES || bytes.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(crate::Error::TooLarge {
            path: path.into(),
            size: meta.len.max(bytes.len() as u64),
            limit: MAX_SETTINGS_BYTES,
        });
    }
    Ok((bytes, why))
}

fn parse(text: &str) -> Result<toml::Table, String> {
    toml::from_str::<toml::Table>(text).map_err(|e| e.message().trim().to_owned())
}

/// The privileged settings (see [`PRIVILEGED`]) a settings file's text sets,
/// as dotted keys; an error when it is not TOML.
///
/// ```
/// let keys = interband::settings::privileged_in("[compact]\nstrategy = \"tmux\"\n[intermem]\nmax_bytes = 1\n");
/// assert_eq!(keys.unwrap(), ["compact.strategy"]);
/// ```
pub fn privileged_in(text: &str) -> Result<Vec<String>, String> {
    let mut table = parse(text)?;
    Ok(strip_privileged(&mut table))
}

/// Takes the privileged settings out of a file's tables; returns their dotted keys.
fn strip_privileged(table: &mut toml::Table) -> Vec<String> {
    fn walk(prefix: &str, t: &mut toml::Table, out: &mut Vec<String>) {
        let keys: Vec<String> = t.keys().cloned().collect();
        for k in keys {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            if is_privileged(&key) {
                if let Some(v) = t.remove(&k) {
                    let mut leaves = BTreeMap::new();
                    flatten(
                        &key,
                        &serde_json::to_value(v).unwrap_or_default(),
                        &mut leaves,
                    );
                    out.extend(leaves.into_keys());
                }
            } else if let Some(toml::Value::Table(sub)) = t.get_mut(&k) {
                walk(&key, sub, out);
            }
        }
    }
    let mut out = Vec::new();
    walk("", table, &mut out);
    out
}

/// The user's settings file: `$INTERBAND_CONFIG`, else
/// `$XDG_CONFIG_HOME/interband/config.toml`, else `~/.config/interband/config.toml`.
pub fn user_file(env: &dyn Env) -> Option<PathBuf> {
    let set = |k: &str| env.var(k).filter(|v| !v.trim().is_empty());
    if let Some(p) = set("INTERBAND_CONFIG") {
        Some(PathBuf::from(p))
    } else if let Some(x) = set("XDG_CONFIG_HOME") {
        Some(crate::paths::under(Path::new(&x), "interband/config.toml"))
    } else {
        crate::paths::home(env).map(|h| crate::paths::under(&h, ".config/interband/config.toml"))
    }
}

/// The settings files' paths, lowest precedence first (see [`Files::read`]).
pub fn default_files(project: Option<&Path>, env: &dyn Env) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = user_file(env).into_iter().collect();
    if let Some(p) = project {
        files.push(crate::paths::under(p, ".interband/config.toml"));
    }
    files
}

/// The environment variable for a setting: `INTERBAND_` + the dotted key, upper-cased.
///
/// ```
/// assert_eq!(interband::settings::env_name("interpulse.thresholds.usable.yellow"),
///            "INTERBAND_INTERPULSE_THRESHOLDS_USABLE_YELLOW");
/// ```
pub fn env_name(key: &str) -> String {
    format!("INTERBAND_{}", crate::retention::env_safe(key))
}

/// Loads the `tool` table of trusted settings files into `T`, starting from
/// `T::default()` (every file given is trusted: the user's own).
/// `aliases` maps extra environment variables to dotted keys within the tool.
///
/// ```
/// #[derive(serde::Serialize, serde::Deserialize, Default, Debug)]
/// #[serde(default)]
/// struct Demo { calls: u32, thresholds: Vec<u32> }
///
/// # let dir = tempfile::tempdir().unwrap();
/// let file = dir.path().join("config.toml");
/// std::fs::write(&file, "[demo]\ncalls = 5\n").unwrap();
/// let env = |k: &str| (k == "DEMO_THRESHOLDS").then(|| "30,52".to_string());
/// let s = interband::settings::load::<Demo>("demo", &[file.clone()], &env, &[("DEMO_THRESHOLDS", "thresholds")]);
/// assert_eq!((s.value.calls, &s.value.thresholds), (5, &vec![30, 52]));
/// assert_eq!(s.origin("demo.calls"), interband::settings::Origin::File(file));
/// assert_eq!(s.origin("demo.thresholds"), interband::settings::Origin::Env("DEMO_THRESHOLDS".into()));
/// ```
pub fn load<T: Serialize + DeserializeOwned + Default>(
    tool: &str,
    files: &[PathBuf],
    env: &dyn Env,
    aliases: &[(&str, &str)],
) -> Layered<T> {
    let list: Vec<(PathBuf, Scope)> = files.iter().map(|f| (f.clone(), Scope::User)).collect();
    let files = Files::read_paths(&list, env);
    let mut layered = load_from::<T>(&files, tool, env, aliases);
    let mut problems = files.problems;
    problems.append(&mut layered.problems);
    layered.problems = problems;
    layered
}

/// Loads the `tool` table of files already read into `T`, starting from
/// `T::default()`, then the environment. The files' own problems stay in
/// [`Files::problems`]; this reports the values it ignored.
pub fn load_from<T: Serialize + DeserializeOwned + Default>(
    files: &Files,
    tool: &str,
    env: &dyn Env,
    aliases: &[(&str, &str)],
) -> Layered<T> {
    let mut problems = Vec::new();
    let layers: Vec<(&PathBuf, Value)> = files
        .layers
        .iter()
        .filter_map(|(path, t)| {
            let section = t.get(tool)?;
            Some((path, serde_json::to_value(section).unwrap_or_default()))
        })
        .collect();
    let env_prefix = format!("INTERBAND_{}_", crate::retention::env_safe(tool));
    let env_may_apply =
        env.may_have_prefix(&env_prefix) || aliases.iter().any(|(var, _)| env.var(var).is_some());
    if layers.is_empty() && !env_may_apply {
        // The common case in a hook: nothing to layer, no work.
        return Layered {
            value: T::default(),
            overrides: BTreeMap::new(),
            problems,
        };
    }

    let defaults = serde_json::to_value(T::default()).expect("settings serialize");
    let mut leaves = BTreeMap::new();
    flatten(tool, &defaults, &mut leaves);
    let mut current: BTreeMap<String, (Value, Origin)> = leaves
        .into_iter()
        .map(|(k, v)| (k, (v, Origin::Default)))
        .collect();
    for (file, section) in layers {
        let mut layer = BTreeMap::new();
        flatten(tool, &section, &mut layer);
        let mut unknown = Vec::new();
        for (k, v) in layer {
            if !current.contains_key(&k) {
                unknown.push(k);
                continue;
            }
            apply::<T>(
                &mut current,
                &k,
                v,
                Origin::File(file.clone()),
                &mut problems,
            );
        }
        if !unknown.is_empty() {
            // One line per file, however many there are.
            let shown: Vec<&str> = unknown.iter().take(5).map(String::as_str).collect();
            let more = unknown.len().saturating_sub(shown.len());
            problems.push(format!(
                "{}: {} unknown setting{} ignored: {}{}",
                file.display(),
                unknown.len(),
                if unknown.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
    }
    let keys: Vec<String> = current.keys().cloned().collect();
    let env_keys = keys.iter().map(|k| (env_name(k), k.clone())).chain(
        aliases
            .iter()
            .map(|(e, k)| (e.to_string(), format!("{tool}.{k}"))),
    );
    for (var, key) in env_keys {
        let Some(raw) = env.var(&var) else { continue };
        let Some((default, _)) = current.get(&key) else {
            continue;
        };
        let v = parse_env(&raw, default);
        apply::<T>(&mut current, &key, v, Origin::Env(var), &mut problems);
    }

    let value = build::<T>(&current).unwrap_or_default();
    Layered {
        value,
        overrides: current
            .into_iter()
            .filter(|(_, (_, o))| *o != Origin::Default)
            .map(|(k, (_, o))| (k, o))
            .collect(),
        problems,
    }
}

/// Sets `key` to `v` if it is a known setting and the result still makes a valid `T`.
fn apply<T: DeserializeOwned>(
    current: &mut BTreeMap<String, (Value, Origin)>,
    key: &str,
    v: Value,
    origin: Origin,
    problems: &mut Vec<String>,
) {
    let Some(old) = current.get(key).cloned() else {
        problems.push(format!("{origin}: unknown setting {key}"));
        return;
    };
    current.insert(key.to_owned(), (v.clone(), origin.clone()));
    if let Err(e) = build::<T>(current) {
        problems.push(format!("{origin}: {key} = {v}: {e}"));
        current.insert(key.to_owned(), old);
    }
}

fn build<T: DeserializeOwned>(
    current: &BTreeMap<String, (Value, Origin)>,
) -> serde_json::Result<T> {
    fn insert(node: &mut Map<String, Value>, parts: &[&str], v: &Value) {
        match parts {
            [] => {}
            [last] => {
                node.insert((*last).to_owned(), v.clone());
            }
            [first, rest @ ..] => {
                let child = node
                    .entry(*first)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = child {
                    insert(m, rest, v);
                }
            }
        }
    }
    let mut root = Map::new();
    for (k, (v, _)) in current {
        let parts: Vec<&str> = k.split('.').skip(1).collect();
        insert(&mut root, &parts, v);
    }
    serde_json::from_value(Value::Object(root))
}

/// Leaves of a JSON tree as dotted keys; arrays are leaves.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{prefix}.{k}"), v, out);
            }
        }
        other => {
            out.insert(prefix.to_owned(), other.clone());
        }
    }
}

fn parse_env(raw: &str, default: &Value) -> Value {
    // JSON, unless the setting is text and the JSON is not (a text setting given 42 stays "42").
    if let Ok(v) = serde_json::from_str::<Value>(raw)
        && (!default.is_string() || v.is_string())
    {
        return v;
    }
    if default.is_array() {
        let items = raw
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned())))
            .collect();
        return Value::Array(items);
    }
    Value::String(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    #[serde(default)]
    struct T {
        on: bool,
        n: u32,
        name: String,
        inner: Inner,
    }
    #[derive(Debug, Serialize, Deserialize, PartialEq, Default)]
    #[serde(default)]
    struct Inner {
        list: Vec<u32>,
    }
    impl Default for T {
        fn default() -> Self {
            T {
                on: true,
                n: 5,
                name: "x".into(),
                inner: Inner { list: vec![1, 2] },
            }
        }
    }

    #[test]
    fn later_layers_win_and_origins_say_which() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        let project = dir.path().join("project.toml");
        std::fs::write(&user, "[t]\nn = 7\nname = \"u\"\n[other]\nn = 1\n").unwrap();
        std::fs::write(&project, "[t]\nname = \"p\"\n[t.inner]\nlist = [3]\n").unwrap();
        let env = |k: &str| (k == "INTERBAND_T_ON").then(|| "false".to_owned());
        let s = load::<T>(
            "t",
            &[user.clone(), project.clone(), dir.path().join("missing")],
            &env,
            &[],
        );
        assert_eq!(
            s.value,
            T {
                on: false,
                n: 7,
                name: "p".into(),
                inner: Inner { list: vec![3] }
            }
        );
        assert_eq!(s.origin("t.n"), Origin::File(user));
        assert_eq!(s.origin("t.name"), Origin::File(project.clone()));
        assert_eq!(s.origin("t.inner.list"), Origin::File(project));
        assert_eq!(s.origin("t.on"), Origin::Env("INTERBAND_T_ON".into()));
        let entries = s.entries("t");
        assert_eq!(entries.len(), 4);
        assert!(entries.contains(&(
            "t.n".into(),
            serde_json::json!(7),
            Origin::File(dir.path().join("user.toml"))
        )));
        assert!(s.problems.is_empty(), "{:?}", s.problems);
    }

    #[test]
    fn the_process_env_skips_lookups_when_nothing_is_set() {
        assert!(!ProcessEnv.may_have_prefix("INTERBAND_SURELY_NOT_SET_"));
        assert!(ProcessEnv.may_have_prefix("PATH"));
        let s = load::<T>("t", &[], &ProcessEnv, &[]);
        assert_eq!(s.value, T::default());
        assert!(s.overrides.is_empty());
    }

    #[test]
    fn bad_values_and_files_are_reported_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[t\nn=").unwrap();
        let typo = dir.path().join("typo.toml");
        std::fs::write(&typo, "[t]\nnn = 1\nn = \"seven\"\n").unwrap();
        let env = |k: &str| (k == "INTERBAND_T_INNER_LIST").then(|| "4, 5,x".to_owned());
        let s = load::<T>("t", &[bad, typo], &env, &[]);
        assert_eq!(s.value, T::default());
        assert_eq!(s.problems.len(), 4, "{:?}", s.problems);
        assert!(s.problems[0].contains("not valid TOML"));
        assert!(
            s.problems
                .iter()
                .any(|p| p.contains("unknown setting ignored: t.nn"))
        );
        assert!(s.problems.iter().any(|p| p.contains("t.n = \"seven\"")));
    }
}
