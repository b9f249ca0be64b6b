//! Where messages live: the root, channel folders and safe keys, exactly as protocol v1.
//!
//! A message is the file `<root>/<namespace>/<channel>/<safe key>.json`.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Prefix of the temporary files writers create before renaming them into place.
pub const TEMP_PREFIX: &str = ".interband-tmp.";

/// The user's home folder, where every host keeps its `~` files: `$HOME`
/// on Unix; on Windows `%USERPROFILE%` (where Node's `os.homedir()` and
/// Rust's `dirs` look, so the hosts' own `~`), else `$HOME` (which Git
/// Bash sets to the same folder). A blank value is no value.
///
/// ```
/// use std::path::PathBuf;
/// let env = |k: &str| (k == "HOME").then(|| "/home/me".to_owned());
/// assert_eq!(interband::paths::home(&env), Some(PathBuf::from("/home/me")));
/// let blank = |k: &str| (k == "HOME").then(|| " ".to_owned());
/// assert_eq!(interband::paths::home(&blank), None);
/// ```
pub fn home(env: &dyn crate::settings::Env) -> Option<PathBuf> {
    let set = |k: &str| {
        env.var(k)
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
    };
    if cfg!(windows) {
        set("USERPROFILE").or_else(|| set("HOME"))
    } else {
        set("HOME")
    }
}

/// `base` joined with `rel`'s `/`-separated parts one by one, so that a
/// path shown on Windows has one kind of separator (`C:\\Users\\me\\.claude\\settings.json`,
/// never `...\\.claude/settings.json`); on Unix the same as `base.join(rel)`.
///
/// ```
/// use std::path::Path;
/// assert_eq!(interband::paths::under(Path::new("/p"), ".claude/settings.json"), Path::new("/p/.claude/settings.json"));
/// ```
pub fn under(base: &Path, rel: &str) -> PathBuf {
    rel.split('/')
        .filter(|part| !part.is_empty())
        .fold(base.to_path_buf(), |path, part| path.join(part))
}

/// The root folder: `$INTERBAND_ROOT` when set and not blank, else `~/.interband` ([`home`]).
///
/// ```
/// let root = interband::paths::resolve_root(Some("/srv/bus".into()), Some("/home/me".into())).unwrap();
/// assert_eq!(root, std::path::PathBuf::from("/srv/bus"));
/// let root = interband::paths::resolve_root(None, Some("/home/me".into())).unwrap();
/// assert_eq!(root, std::path::PathBuf::from("/home/me/.interband"));
/// ```
pub fn resolve_root(
    interband_root: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Result<PathBuf> {
    let not_blank = |s: &std::ffi::OsString| !s.to_string_lossy().trim().is_empty();
    if let Some(root) = interband_root.filter(not_blank) {
        return Ok(PathBuf::from(root));
    }
    match home.filter(not_blank) {
        Some(home) => Ok(PathBuf::from(home).join(".interband")),
        None => Err(Error::NoRoot),
    }
}

/// The root folder from the environment (see [`resolve_root`]).
pub fn root_from_env() -> Result<PathBuf> {
    resolve_root(
        std::env::var_os("INTERBAND_ROOT"),
        home(&crate::settings::ProcessEnv).map(PathBuf::into_os_string),
    )
}

/// Makes a key safe as a file name, exactly as protocol v1: `/` and white space
/// become `_`, any other character outside `A-Za-z0-9._-` becomes `_`, and an
/// empty key becomes `default`.
///
/// ```
/// use interband::paths::safe_key;
/// assert_eq!(safe_key("a/b c"), "a_b_c");
/// assert_eq!(safe_key("sess-1.2_x"), "sess-1.2_x");
/// assert_eq!(safe_key("é!"), "__");
/// assert_eq!(safe_key(""), "default");
/// ```
pub fn safe_key(raw: &str) -> String {
    if raw.is_empty() {
        return "default".to_owned();
    }
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The longest namespace, channel or (safe) key: its file name, with the
/// `.lock` and temp-file decorations added, must stay within 255 bytes.
pub const MAX_NAME_BYTES: usize = 200;

/// Checks that a namespace or channel name is one plain path segment
/// (`A-Za-z0-9._-`, not `.` or `..`, not starting with `.`).
pub fn check_segment(what: &'static str, value: &str) -> Result<()> {
    let reason = if value.trim().is_empty() {
        Some("must not be empty")
    } else if value.starts_with('.') {
        Some("must not start with '.'")
    } else if value.len() > MAX_NAME_BYTES {
        Some("must be at most 200 bytes")
    } else if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        Some("may only contain A-Z a-z 0-9 . _ -")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidName {
            what,
            value: value.to_owned(),
            reason: reason.to_owned(),
        }),
        None => Ok(()),
    }
}

/// True for names the bus writes for itself (temp files, locks, stamps) and
/// that readers and scanners must skip.
pub fn is_internal_name(name: &str) -> bool {
    name.starts_with('.')
}

/// The parts of a message path relative to the root: `namespace/channel/key.json`.
/// Returns `None` for anything else (temp files, locks, the bus's own
/// folders, deeper or shallower paths). A key may start with `.`: both v1
/// libraries write such keys (`.hidden`, `..`), and none of the bus's own
/// files in a channel folder ends in `.json`.
pub fn split_message_path(root: &Path, path: &Path) -> Option<(String, String, String)> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts = rel.iter().map(|p| p.to_str());
    let (ns, ch, file) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() || [ns, ch].iter().any(|s| is_internal_name(s)) {
        return None;
    }
    let key = file.strip_suffix(".json")?;
    if key.is_empty() {
        return None;
    }
    Some((ns.to_owned(), ch.to_owned(), key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn safe_keys_are_plain_file_names(raw in ".*") {
            let k = safe_key(&raw);
            prop_assert!(!k.is_empty());
            prop_assert!(k.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)));
            prop_assert!(!k.contains('/'));
            // One output character per input character (v1 maps each one).
            if !raw.is_empty() { prop_assert_eq!(k.chars().count(), raw.chars().count()); }
            // Idempotent.
            prop_assert_eq!(safe_key(&k), k.clone());
        }
    }

    #[test]
    fn dots_survive_but_cannot_escape_the_folder() {
        // `..` is a legal v1 key; it becomes the file `...json`, inside the channel folder.
        assert_eq!(safe_key("../../x"), ".._.._x");
        assert_eq!(safe_key(".."), "..");
    }

    #[test]
    fn segments_reject_traversal_and_separators() {
        for bad in ["", " ", ".", "..", ".hidden", "a/b", "a b", "ü"] {
            assert!(check_segment("channel", bad).is_err(), "{bad:?}");
        }
        for good in ["interpulse", "context_pressure", "a.b-c_1"] {
            check_segment("channel", good).unwrap();
        }
    }

    #[test]
    fn root_prefers_interband_root_then_home() {
        assert_eq!(
            resolve_root(Some("  ".into()), Some("/h".into())).unwrap(),
            PathBuf::from("/h/.interband")
        );
        assert!(matches!(resolve_root(None, None), Err(Error::NoRoot)));
    }

    #[test]
    fn message_paths_split_into_three_parts() {
        let root = Path::new("/r");
        assert_eq!(
            split_message_path(root, Path::new("/r/a/b/k.json")),
            Some(("a".into(), "b".into(), "k".into()))
        );
        assert_eq!(
            split_message_path(root, Path::new("/r/a/b/..json")),
            Some(("a".into(), "b".into(), ".".into())),
            "a v1 writer's key"
        );
        for other in [
            "/r/a/b/.interband-tmp.x",
            "/r/a/b/.k.json.lock",
            "/r/a/b/.interband-prune.stamp",
            "/r/a/b/.json",
            "/r/a/b/k.txt",
            "/r/a/k.json",
            "/r/a/b/c/k.json",
            "/r/.consumers/b/k.json",
            "/elsewhere/a/b/k.json",
        ] {
            assert_eq!(split_message_path(root, Path::new(other)), None, "{other}");
        }
    }
}
