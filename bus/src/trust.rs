//! Which project settings files the user trusts, as direnv and Claude Code's
//! workspace trust do.
//!
//! A project's `.interband/config.toml` comes with whatever repository the
//! agent is opened on. Until the user trusts that exact file, it may change
//! only settings that neither run anything nor read outside the project (see
//! [`crate::settings`]). `interband trust` records the file's SHA-256 in the
//! user's trust file (`$INTERBAND_TRUST_FILE`, else
//! `$XDG_CONFIG_HOME/interband/trusted.json`, else
//! `~/.config/interband/trusted.json`), keyed by its canonical path; any
//! change to the file needs trusting again.
//!
//! ```
//! use interband::trust::{Store, digest};
//! let mut store = Store::default();
//! let file = std::path::Path::new("/work/app/.interband/config.toml");
//! store.add(file, b"[compact]\nstrategy = \"tmux\"\n");
//! assert!(store.trusts(file, b"[compact]\nstrategy = \"tmux\"\n"));
//! assert!(!store.trusts(file, b"[compact]\nstrategy = \"command\"\n"), "changed: trust again");
//! assert!(digest(b"").starts_with("sha256:e3b0c442"));
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fsio;
use crate::settings::Env;
use crate::{Error, Result};

/// The most of a trust file read.
const MAX_STORE_BYTES: u64 = 1 << 20;

/// `sha256:<hex>` of some bytes.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in hash {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The trust file: `$INTERBAND_TRUST_FILE`, else
/// `$XDG_CONFIG_HOME/interband/trusted.json`, else `~/.config/interband/trusted.json`.
pub fn store_path(env: &dyn Env) -> Option<PathBuf> {
    let set = |k: &str| env.var(k).filter(|v| !v.trim().is_empty());
    if let Some(p) = set("INTERBAND_TRUST_FILE") {
        return Some(PathBuf::from(p));
    }
    if let Some(x) = set("XDG_CONFIG_HOME") {
        return Some(crate::paths::under(Path::new(&x), "interband/trusted.json"));
    }
    crate::paths::home(env).map(|h| crate::paths::under(&h, ".config/interband/trusted.json"))
}

/// The trusted files: canonical path → digest of the content trusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Store {
    /// Canonical path → `sha256:<hex>`.
    #[serde(default)]
    pub trusted: BTreeMap<String, String>,
}

/// Where a settings file is, as trust records it: its folder's canonical
/// form (links resolved) and its own name. The file itself is not resolved:
/// a project file that is a link to a file trusted elsewhere is a different
/// file to trust.
pub fn canonical(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            dunce::canonicalize(dir)
                .map(|d| d.join(name))
                .unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
    }
}

impl Store {
    /// Reads the trust file. A missing file trusts nothing. A file that is
    /// not the user's (owned by another user, writable by group or others)
    /// is refused: whoever can write it could trust anything.
    pub fn load(env: &dyn Env) -> Result<Store> {
        let Some(path) = store_path(env) else {
            return Ok(Store::default());
        };
        Self::load_from(&path)
    }

    /// [`Store::load`] from a given file.
    pub fn load_from(path: &Path) -> Result<Store> {
        let (file, meta) = match fsio::open_regular_meta(path, fsio::Links::Follow) {
            Ok(f) => f,
            Err(Error::NotFound { .. }) => return Ok(Store::default()),
            Err(e) => return Err(e),
        };
        if meta.uid != fsio::my_uid() || meta.mode & 0o022 != 0 {
            return Err(Error::NotOurs {
                path: path.into(),
                reason: format!(
                    "owned by uid {} with mode {:o}: a trust file must be yours and not writable by others",
                    meta.uid, meta.mode
                ),
            });
        }
        // Read from the very file checked above.
        let mut bytes = Vec::new();
        use std::io::Read;
        file.take(MAX_STORE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        if bytes.len() as u64 > MAX_STORE_BYTES {
            return Err(Error::TooLarge {
                path: path.into(),
                size: bytes.len() as u64,
                limit: MAX_STORE_BYTES,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| Error::Json {
            path: path.into(),
            source: e,
        })
    }

    /// True when `file` (any spelling) is trusted with exactly this content.
    pub fn trusts(&self, file: &Path, content: &[u8]) -> bool {
        let key = canonical(file).to_string_lossy().into_owned();
        self.trusted
            .get(&key)
            .is_some_and(|d| *d == digest(content))
    }

    /// Trusts `file` with this content; returns its canonical path.
    pub fn add(&mut self, file: &Path, content: &[u8]) -> PathBuf {
        let key = canonical(file);
        self.trusted
            .insert(key.to_string_lossy().into_owned(), digest(content));
        key
    }

    /// Forgets `file`; returns whether it was trusted.
    pub fn remove(&mut self, file: &Path) -> bool {
        let key = canonical(file).to_string_lossy().into_owned();
        self.trusted.remove(&key).is_some()
            || self.trusted.remove(&*file.to_string_lossy()).is_some()
    }

    /// Reads the trust file at `path`, changes it with `f`, and writes it
    /// back, all under its lock (`.trusted.json.lock` beside it): two
    /// `interband trust` at once never lose the other's change (a revoke
    /// included). Returns what `f` returned.
    ///
    /// ```
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let store = tmp.path().join("trusted.json");
    /// let file = tmp.path().join("config.toml");
    /// std::fs::write(&file, "x").unwrap();
    /// interband::trust::Store::update(&store, |s| { s.add(&file, b"x"); }).unwrap();
    /// assert!(interband::trust::Store::load_from(&store).unwrap().trusts(&file, b"x"));
    /// ```
    pub fn update<T>(path: &Path, f: impl FnOnce(&mut Store) -> T) -> Result<T> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let folder = fsio::Dir::outside(dir, true)?;
        crate::lock::with_lock(
            &folder,
            &crate::lock::lock_name(&name),
            std::time::Duration::from_secs(10),
            |_| {
                let mut store = Store::load_from(path)?;
                let out = f(&mut store);
                store.save(path)?;
                Ok(out)
            },
        )
    }

    /// Writes the trust file (0600, atomically; its folder is created 0700).
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fsio::create_dir_private(dir)?;
        }
        let bytes = serde_json::to_vec_pretty(self).expect("a trust store serializes");
        fsio::write_atomic(path, &bytes, true)
    }
}

/// Whether a trusted file is still as trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Its content is the content trusted.
    Current,
    /// It changed since: its privileged settings are ignored until trusted again.
    Changed,
    /// It is gone, or not a readable regular file.
    Missing,
}

impl Store {
    /// Each trusted file and its status now.
    pub fn list(&self) -> Vec<(PathBuf, Status)> {
        self.trusted
            .iter()
            .map(|(path, d)| {
                let p = PathBuf::from(path);
                let status = match crate::settings::read_project_file(&p) {
                    Ok(bytes) if digest(&bytes) == *d => Status::Current,
                    Ok(_) => Status::Changed,
                    Err(_) => Status::Missing,
                };
                (p, status)
            })
            .collect()
    }
}

/// The project settings file a `PATH` argument names: the file itself, or
/// `<folder>/.interband/config.toml` for a folder.
pub fn project_file(path: &Path) -> PathBuf {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => crate::paths::under(path, ".interband/config.toml"),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 shows a link as what it names, never as a link (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn the_store_keys_by_canonical_path_and_refuses_a_shared_file() {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("proj");
        std::fs::create_dir_all(proj.join(".interband")).unwrap();
        let file = proj.join(".interband/config.toml");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("alias");
        crate::fsio::tests::link(&proj, &link);
        let mut s = Store::default();
        s.add(&link.join(".interband/config.toml"), b"x");
        assert!(
            s.trusts(&file, b"x"),
            "the same file under another spelling"
        );
        // A project file that links to the trusted one is another file.
        let other = dir.path().join("evil/.interband");
        std::fs::create_dir_all(&other).unwrap();
        crate::fsio::tests::link(&file, &other.join("config.toml"));
        assert!(!s.trusts(&other.join("config.toml"), b"x"));
        let store = dir.path().join("cfg/trusted.json");
        s.save(&store).unwrap();
        assert_eq!(Store::load_from(&store).unwrap(), s);
        assert_eq!(s.list(), vec![(canonical(&file), Status::Current)]);
        std::fs::write(&file, "y").unwrap();
        assert_eq!(s.list()[0].1, Status::Changed);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o666)).unwrap();
            assert!(matches!(
                Store::load_from(&store),
                Err(Error::NotOurs { .. })
            ));
        }
        assert!(s.remove(&file));
        assert!(!s.trusts(&file, b"y"));
    }
}
