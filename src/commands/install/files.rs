//! The settings file, its backup and the install record: read, checked, written atomically, restored.

use super::*;

// ---------------------------------------------------------------------------------------------
// The settings file, its backup and the install record.

pub(super) struct Files {
    pub(super) settings: PathBuf,
    pub(super) backup: PathBuf,
    pub(super) record: PathBuf,
}

impl Files {
    /// Next to the settings file; for a project's (which is usually
    /// committed), in the user's own state folder instead
    /// (`$XDG_STATE_HOME/interband/installs/`, else `~/.local/state/...`),
    /// named after the file's path.
    pub(super) fn new(path: &Path, project: bool) -> Self {
        let with = |base: &Path, suffix: &str| {
            let mut s = base.as_os_str().to_owned();
            s.push(suffix);
            PathBuf::from(s)
        };
        let files = |base: &Path| Files {
            settings: path.to_owned(),
            backup: with(base, ".interband-backup"),
            record: with(base, ".interband-install.json"),
        };
        let Some(installs) = project
            .then(state_home)
            .flatten()
            .map(|s| interband::paths::under(&s, "interband/installs"))
        else {
            return files(path);
        };
        // The path's slug, for a person, and a digest of the path itself:
        // two paths with one slug (`my/app`, `my-app`) never share a record.
        let slug = interband_consumers::intermem::slug(path);
        let digest = interband::trust::digest(path.as_os_str().as_encoded_bytes());
        let hex = digest.trim_start_matches("sha256:");
        // At most 96 characters of the slug, its end (the project's own
        // folder names): a name stays well under a file system's 255.
        let start = slug.char_indices().rev().nth(95).map_or(0, |(i, _)| i);
        let named = files(&installs.join(format!("{}-{}", &slug[start..], &hex[..16])));
        // A record an earlier release named by the slug alone: this file's
        // when it says so, or, saying no file, when every group it added
        // is in this file (two paths can share a slug).
        let legacy = files(&installs.join(&slug));
        let ours = |r: &Record| match &r.settings {
            Some(s) => Path::new(s) == path,
            None => read_settings(path, r.host).ok().flatten().is_some_and(|o| {
                r.added.iter().all(|a| {
                    super::event_groups(&o.json, &a.event).is_some_and(|g| g.contains(&a.group))
                })
            }),
        };
        if !named.record.exists()
            && read_record(&legacy.record)
                .ok()
                .flatten()
                .is_some_and(|r| ours(&r))
        {
            return legacy;
        }
        named
    }

    /// Removes what an install or uninstall killed mid-write left beside
    /// these files (`.interband-tmp.*` copies of the user's settings, a
    /// minute old or more: never a write under way).
    pub(super) fn sweep(&self, t: &Target) {
        let age = std::time::Duration::from_secs(60);
        let config = (t.host == Host::Codex)
            .then(|| t.codex_config().ok())
            .flatten();
        for p in [&self.settings, &self.record]
            .into_iter()
            .chain(config.as_ref())
        {
            interband::fsio::sweep_temps_beside(p, age);
        }
    }
}

impl Files {
    /// Runs `f` holding the install lock of this settings file: the
    /// settings, the record and the backup are read and written by one
    /// install or uninstall at a time (two at once could each write a
    /// record, and the one kept would not know what the other added). The
    /// lock is an advisory lock on `<record>.lock`, created 0600, never
    /// through a link; a lock file removed while waited on is taken anew.
    pub(super) fn locked<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut name = self.record.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        // The host's own folder not there yet: no file to race on, and a
        // command that writes nothing (a dry run, an uninstall of nothing)
        // makes no folder for a lock. (A project's records are in
        // interband's own state folder, made as needed.)
        if path.parent().is_some_and(|d| !d.exists()) && path.parent() == self.settings.parent() {
            return f();
        }
        if let Some(dir) = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        {
            crate::platform::private_dirs(dir)?;
        }
        loop {
            let file = crate::platform::private_options(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true),
                crate::platform::Open {
                    no_link: true,
                    ..Default::default()
                },
            )
            .open(&path)
            .with_context(|| format!("{}: cannot open the install lock", path.display()))?;
            let held = interband::fsio::identity_of(&file, &path)?;
            let mut lock = fd_lock::RwLock::new(file);
            let _guard = lock
                .write()
                .with_context(|| format!("{}: cannot take the install lock", path.display()))?;
            let same =
                interband::fsio::metadata(&path, interband::fsio::Links::Refuse).is_ok_and(|now| {
                    now.kind == interband::fsio::Kind::File && (now.dev, now.ino) == held
                });
            if same {
                let out = f();
                // Gone with what it guards (an uninstall took the record):
                // removed while held, so a waiter opens it anew.
                if !self.record.exists() {
                    let _ = std::fs::remove_file(&path);
                }
                return out;
            }
        }
    }
}

/// The user's state folder: `$XDG_STATE_HOME`, else `~/.local/state`.
pub(super) fn state_home() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            interband::paths::home(&interband::settings::ProcessEnv)
                .map(|h| interband::paths::under(&h, ".local/state"))
        })
}

/// A settings file as read: its bytes, its JSON and its permission bits.
pub(super) struct Original {
    pub(super) bytes: Vec<u8>,
    pub(super) json: Value,
    pub(super) mode: u32,
}

/// Settings files are small; this bounds what a mistaken path can make us read.
pub(super) const MAX_SETTINGS_BYTES: u64 = 16 << 20;

pub(super) fn invalid(path: &Path, reason: impl Into<String>) -> anyhow::Error {
    interband::Error::Invalid {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
    .into()
}

/// Reads and parses a JSON file; None when it does not exist.
pub(super) fn read_json(path: &Path) -> Result<Option<Original>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::Error::new(e).context(path.display().to_string())),
    };
    if !meta.is_file() {
        anyhow::bail!("{}: not a regular file", path.display());
    }
    if meta.len() > MAX_SETTINGS_BYTES {
        anyhow::bail!(
            "{}: {} bytes is over the {MAX_SETTINGS_BYTES}-byte limit",
            path.display(),
            meta.len()
        );
    }
    // Never blocking, bounded even if the file grew since the stat.
    let bytes = interband::fsio::read_regular(path, MAX_SETTINGS_BYTES)?;
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err(invalid(
            path,
            "it starts with a byte-order mark (U+FEFF), which JSON does not allow (a host may \
             ignore the whole file); save it as UTF-8 without one, then run this again",
        ));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid(path, "not valid UTF-8"))?;
    let json = serde_json::from_str(text).map_err(|e| {
        if interband_hosts::project::parse_json(&bytes, true).is_some() {
            invalid(
                path,
                "it has comments (// or /* */), which some hosts allow: interband does not edit \
                 a file with comments, as it would lose them; nothing was changed. Take the \
                 comments out (the file is otherwise valid), then run this again",
            )
        } else {
            invalid(path, format!("not valid JSON: {e}"))
        }
    })?;
    if let Err(e) = no_key_twice(text) {
        return Err(invalid(
            path,
            format!(
                "{e}: interband would keep one and lose the other, so it changes nothing; keep one"
            ),
        ));
    }
    Ok(Some(Original {
        bytes,
        json,
        mode: crate::platform::mode(&meta),
    }))
}

/// Reads `host`'s settings file, its hooks in the shape interband edits
/// ([`interband_hosts::shape`]; [`pretty_own`] writes them back in the host's).
pub(super) fn read_settings(path: &Path, host: Host) -> Result<Option<Original>> {
    let mut o = read_json(path)?;
    if let Some(o) = &mut o {
        if !o.json.is_object() {
            return Err(invalid(path, "not a JSON object"));
        }
        host.profile().hook_shape.to_grouped(&mut o.json);
    }
    Ok(o)
}

/// Checks that no object in a JSON text holds one key twice (a parser
/// keeps the last, so rewriting the file would lose the first).
pub(super) fn no_key_twice(text: &str) -> std::result::Result<(), serde_json::Error> {
    use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
    struct Once;
    impl<'de> DeserializeSeed<'de> for Once {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
            d.deserialize_any(Once)
        }
    }
    impl<'de> Visitor<'de> for Once {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = m.next_key::<String>()? {
                if !seen.insert(key.clone()) {
                    return Err(A::Error::custom(format!(
                        "the key \"{key}\" is there twice"
                    )));
                }
                m.next_value_seed(Once)?;
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> std::result::Result<(), A::Error> {
            while s.next_element_seed(Once)?.is_some() {}
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> std::result::Result<(), E> {
            Ok(())
        }
    }
    let mut d = serde_json::Deserializer::from_str(text);
    Once.deserialize(&mut d)
}

/// [`read_settings`], taking a file with comments as the host does (for
/// `doctor`, which only reads): true when it had some.
pub(super) fn read_settings_with_comments(
    path: &Path,
    host: Host,
) -> Result<Option<(Original, bool)>> {
    match read_settings(path, host) {
        Ok(o) => Ok(o.map(|o| (o, false))),
        Err(e) => {
            let Ok(bytes) = interband::fsio::read_regular(path, MAX_SETTINGS_BYTES) else {
                return Err(e);
            };
            let Some(mut json) =
                interband_hosts::project::parse_json(&bytes, true).filter(Value::is_object)
            else {
                return Err(e);
            };
            host.profile().hook_shape.to_grouped(&mut json);
            let mode = std::fs::metadata(path).map_or(0o600, |m| crate::platform::mode(&m));
            Ok(Some((Original { bytes, json, mode }, true)))
        }
    }
}

/// `settings` as `host`'s file holds them, laid out as the file was
/// (`bytes`: compact stays compact, an indent stays that indent; a new
/// file is [`pretty`]).
pub(super) fn pretty_own(settings: &Value, host: Host, like: Option<&[u8]>) -> String {
    let mut own = settings.clone();
    host.profile().hook_shape.to_own(&mut own);
    let text = render(&own, like);
    // Lines that ended in CRLF still do (JSON holds no raw newline in a string).
    if like.is_some_and(|b| b.windows(2).any(|w| w == b"\r\n")) {
        text.replace('\n', "\r\n")
    } else {
        text
    }
}

/// `own` laid out as `like` is.
fn render(own: &Value, like: Option<&[u8]>) -> String {
    match like.map(layout_of) {
        None | Some(Layout::Indented(None)) => pretty(own),
        Some(Layout::Compact { newline }) => {
            let mut s = serde_json::to_string(own).expect("a JSON value serializes");
            if newline {
                s.push('\n');
            }
            s
        }
        Some(Layout::Indented(Some(indent))) => {
            use serde::Serialize as _;
            let mut out = Vec::new();
            let f = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut out, f);
            own.serialize(&mut ser).expect("a JSON value serializes");
            let mut s = String::from_utf8(out).expect("JSON is UTF-8");
            s.push('\n');
            s
        }
    }
}

/// How a settings file is laid out.
#[derive(Debug, PartialEq)]
pub(super) enum Layout {
    /// On one line (a trailing newline or not).
    Compact { newline: bool },
    /// Over lines, indented by this (`None`: as [`pretty`] does).
    Indented(Option<String>),
}

/// The layout of a settings file's text.
pub(super) fn layout_of(bytes: &[u8]) -> Layout {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    if !body.contains(&b'\n') {
        return Layout::Compact {
            newline: body.len() < bytes.len(),
        };
    }
    let indent: String = body
        .split(|b| *b == b'\n')
        .skip(1)
        .find_map(|line| {
            let lead = line
                .iter()
                .take_while(|b| **b == b' ' || **b == b'\t')
                .count();
            (lead > 0 && lead < line.len())
                .then(|| String::from_utf8_lossy(&line[..lead]).into_owned())
        })
        .unwrap_or_default();
    Layout::Indented((!indent.is_empty() && indent != "  ").then_some(indent))
}

/// Checks the parts of the settings that install and uninstall change.
pub(super) fn check_shape(path: &Path, settings: &Value, host: Host) -> Result<()> {
    if !settings.is_object() {
        return Err(invalid(path, "not a JSON object"));
    }
    match settings.get("hooks") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return Err(invalid(path, "\"hooks\" is not an object")),
    }
    for e in host.events() {
        match settings.get("hooks").and_then(|h| h.get(e.name)) {
            None | Some(Value::Array(_)) => {}
            Some(_) => {
                return Err(invalid(
                    path,
                    format!("\"hooks.{}\" is not an array", e.name),
                ));
            }
        }
    }
    if host.has_statusline() {
        match settings.get("statusLine") {
            None | Some(Value::Object(_)) => {}
            Some(_) => return Err(invalid(path, "\"statusLine\" is not an object")),
        }
    }
    Ok(())
}

/// What one install added to one event.
pub(super) struct Added {
    pub(super) event: String,
    /// The event's array did not exist before.
    pub(super) created_event: bool,
    pub(super) group: Value,
}

pub(super) struct StatusRecord {
    pub(super) installed: Value,
    /// None: there was no statusLine.
    pub(super) original: Option<Value>,
}

/// `<file>.interband-install.json`: what install added, so uninstall can take exactly that out.
pub(super) struct Record {
    pub(super) host: Host,
    /// The settings file it is the record of (absent in records written
    /// before 0.1.0's hardening: `uninstall --purge` keeps those).
    pub(super) settings: Option<String>,
    pub(super) program: String,
    pub(super) created_file: bool,
    /// Install created the file's folder too (`.claude/` in a project).
    pub(super) created_dir: bool,
    pub(super) created_hooks: bool,
    pub(super) added: Vec<Added>,
    pub(super) statusline: Option<StatusRecord>,
}

pub(super) const RECORD_FORMAT: &str = "interband-install/1";

impl Record {
    pub(super) fn to_json(&self) -> Value {
        let added: Vec<Value> = self
            .added
            .iter()
            .map(|a| json!({"event": a.event, "created_event": a.created_event, "group": a.group}))
            .collect();
        let mut o = json!({
            "format": RECORD_FORMAT,
            "host": self.host.key(),
            "settings": self.settings,
            "program": self.program,
            "created_file": self.created_file,
            "created_dir": self.created_dir,
            "created_hooks": self.created_hooks,
            "added": added,
        });
        if let Some(s) = &self.statusline {
            o["statusLine"] = json!({
                "installed": s.installed,
                "original": s.original,
                "had_original": s.original.is_some(),
            });
        }
        o
    }

    pub(super) fn from_json(j: &Value) -> Option<Record> {
        let s = |k: &str| Some(j.get(k)?.as_str()?.to_owned());
        let b = |j: &Value, k: &str| j.get(k)?.as_bool();
        if s("format")? != RECORD_FORMAT {
            return None;
        }
        let host = Host::from_key(&s("host")?)?;
        let added = j
            .get("added")?
            .as_array()?
            .iter()
            .map(|a| {
                Some(Added {
                    event: a.get("event")?.as_str()?.to_owned(),
                    created_event: b(a, "created_event")?,
                    group: a.get("group")?.clone(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let statusline = match j.get("statusLine") {
            None => None,
            Some(st) => Some(StatusRecord {
                installed: st.get("installed")?.clone(),
                original: if b(st, "had_original")? {
                    Some(st.get("original")?.clone())
                } else {
                    None
                },
            }),
        };
        Some(Record {
            host,
            settings: s("settings"),
            program: s("program")?,
            created_file: b(j, "created_file")?,
            created_dir: b(j, "created_dir").unwrap_or(false),
            created_hooks: b(j, "created_hooks")?,
            added,
            statusline,
        })
    }
}

pub(super) fn read_record(path: &Path) -> Result<Option<Record>> {
    let Some(o) = read_json(path)? else {
        return Ok(None);
    };
    Record::from_json(&o.json)
        .map(Some)
        .ok_or_else(|| invalid(path, "not an interband install record"))
}

pub(super) fn exists(path: &Path) -> Result<bool> {
    path.try_exists()
        .with_context(|| path.display().to_string())
}

/// Writes atomically and durably; `mode` keeps the permissions of the file replaced.
/// Fails if the settings file changed since it was read (the host or the
/// user wrote it meanwhile): writing now would lose their change.
pub(super) fn unchanged_since_read(path: &Path, original: Option<&Original>) -> Result<()> {
    let now = match interband::fsio::read_regular(path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(interband::Error::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    if now.as_deref() != original.map(|o| o.bytes.as_slice()) {
        anyhow::bail!(
            "{}: changed while interband was editing it; nothing written, run the command again",
            path.display()
        );
    }
    Ok(())
}

/// Whether an executable `name` is on the PATH.
pub(super) fn on_path(name: &str) -> bool {
    crate::platform::path_candidates(name)
        .any(|p| std::fs::metadata(p).is_ok_and(|m| crate::platform::executable(&m)))
}

/// The file a chain of symbolic links at `path` ends at (`path` itself when
/// it is no link): a user's settings kept in a dotfiles repository are
/// written there, so the link stays a link. The end may not exist yet (a
/// link to a file the dotfiles repository does not have yet).
pub(super) fn through_links(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_owned();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at).with_context(|| {
                    format!("{}: cannot follow the symbolic link", at.display())
                })?;
                at = match at.parent() {
                    Some(dir) => dir.join(to),
                    None => to,
                };
            }
            _ => return Ok(at),
        }
    }
    anyhow::bail!("{}: too many levels of symbolic links", path.display())
}

pub(super) fn write_file(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::platform::private_dirs(dir)?;
    }
    interband::fsio::write_atomic(path, bytes, true)?;
    if let Some(mode) = mode {
        crate::platform::set_mode(path, mode).with_context(|| path.display().to_string())?;
    }
    Ok(())
}

pub(super) fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::Error::new(e).context(path.display().to_string()))
        }
        _ => Ok(()),
    }
}

/// A unified diff of the settings text before and after (None: no file).
pub(super) fn dry_run_diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let name = path.display().to_string();
    let label = |text: Option<&str>| {
        if text.is_some() {
            name.as_str()
        } else {
            "/dev/null"
        }
    };
    TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(label(before), label(after))
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// JSON helpers (serde_json's `preserve_order` keeps the keys in the file's order).

/// Pretty text (two-space indent) with a trailing newline.
pub(super) fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a JSON value serializes");
    s.push('\n');
    s
}

/// The fields of a value checked to be an object.
pub(super) fn obj(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v.as_object_mut().expect("checked to be an object")
}

/// Removes `key` from an object, keeping the order of the other keys.
pub(super) fn remove_key(v: &mut Value, key: &str) {
    if let Some(o) = v.as_object_mut() {
        o.shift_remove(key);
    }
}
