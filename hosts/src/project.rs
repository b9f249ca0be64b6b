//! A host's own settings in a project folder (`.qwen/settings.json`,
//! `.gemini/settings.json`, `.claude/settings.json`): a cloned repository
//! brings them, so a setting there that decides a level (a window, a
//! compaction threshold, a model) counts only where the host itself trusts
//! the folder, and then only once the user has trusted that exact file with
//! `interband trust FILE`, as a project's `.interband/config.toml` needs for
//! its thresholds (SECURITY.md). What is ignored, and why, is said by
//! `interband config` and `interband doctor`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The most of a host's settings file read.
const MAX_BYTES: u64 = 1 << 20;

/// Why a project's setting does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// The host does not trust the folder, so does not read the file either.
    HostDistrusts,
    /// The host reads it; interband waits for `interband trust FILE`.
    NotTrusted,
    /// The file is there, but interband cannot read it (over 1 MiB, not a
    /// regular file, not JSON): what it sets is not known.
    Unreadable,
}

/// One setting a host's project file sets that interband reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The file.
    pub file: PathBuf,
    /// Where in it, as a JSON pointer (`/context/autoCompactThreshold`).
    pub key: &'static str,
    /// The value it sets.
    pub value: Value,
    /// Why it does not count, when it does not.
    pub ignored: Option<Ignored>,
}

impl Setting {
    /// The value, when it counts.
    pub fn counted(&self) -> Option<&Value> {
        self.ignored.is_none().then_some(&self.value)
    }

    /// What a person reads of it, when it is ignored (`interband config`,
    /// `doctor`, the hook's log).
    pub fn notice(&self, host: &str) -> Option<String> {
        let key = self.key.trim_start_matches('/').replace('/', ".");
        let file = self.file.display();
        Some(match self.ignored? {
            Ignored::HostDistrusts => format!(
                "{file} sets {key} = {}: ignored, as {host} does not trust this folder",
                self.value
            ),
            Ignored::NotTrusted => format!(
                "{file} sets {key} = {}, which {host} uses here: interband ignores it until you \
                 trust the file (`interband trust {file}`)",
                self.value
            ),
            Ignored::Unreadable => format!(
                "{file} cannot be read (over 1 MiB, not a regular file, or not JSON): what it \
                 sets of {key} is not known, and not taken"
            ),
        })
    }
}

/// A host's settings file: JSON, with the comments the host allows
/// (`comments`: Qwen Code and Gemini CLI strip them, Claude Code does not),
/// read bounded and without blocking. `None` when it is absent, unreadable
/// or not a JSON object.
pub fn read_json(file: &Path, comments: bool) -> Option<(Vec<u8>, Value)> {
    let bytes = interband::fsio::read_regular(file, MAX_BYTES).ok()?;
    let v = parse_json(&bytes, comments)?;
    v.is_object().then_some((bytes, v))
}

/// `bytes` as JSON, with `//` and `/* */` comments taken out first where
/// `comments` (as the hosts' `strip-json-comments` does; a trailing comma
/// stays an error there too).
pub fn parse_json(bytes: &[u8], comments: bool) -> Option<Value> {
    if comments {
        // `//` and `/* */` only: a `#` line is no comment to the hosts'
        // `strip-json-comments`, so none here.
        let text = json_comments::CommentSettings::c_style().strip_comments(bytes);
        serde_json::from_reader(text).ok()
    } else {
        serde_json::from_slice(bytes).ok()
    }
}

/// The settings at `keys` (JSON pointers) that `file` sets, each with
/// whether it counts: `host_trusts` is asked, once, only when one is set;
/// interband's trust file is read, once, only when the host trusts.
pub fn settings(
    file: &Path,
    comments: bool,
    keys: &[&'static str],
    host_trusts: impl FnOnce() -> bool,
    env: &dyn interband::settings::Env,
) -> Vec<Setting> {
    let Some((bytes, v)) = read_json(file, comments) else {
        // There and unreadable: what it sets is unknown, never "nothing".
        if std::fs::symlink_metadata(file).is_err() {
            return Vec::new();
        }
        return keys
            .iter()
            .map(|key| Setting {
                file: file.to_owned(),
                key,
                value: Value::Null,
                ignored: Some(Ignored::Unreadable),
            })
            .collect();
    };
    let set: Vec<(&'static str, Value)> = keys
        .iter()
        .filter_map(|k| v.pointer(k).map(|value| (*k, value.clone())))
        .collect();
    if set.is_empty() {
        return Vec::new();
    }
    let ignored = if !host_trusts() {
        Some(Ignored::HostDistrusts)
    } else if interband::trust::Store::load(env).is_ok_and(|s| s.trusts(file, &bytes)) {
        None
    } else {
        Some(Ignored::NotTrusted)
    };
    set.into_iter()
        .map(|(key, value)| Setting {
            file: file.to_owned(),
            key,
            value,
            ignored,
        })
        .collect()
}

/// For a host that reads nothing interband uses from a project folder.
pub fn none(_project: &Path, _env: &dyn interband::settings::Env) -> Vec<Setting> {
    Vec::new()
}

/// Whether `a` and `b` name one file (links resolved): a project folder
/// that is the home folder has the user's own settings file, not a
/// project's.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let real = |p: &Path| dunce::canonicalize(p).ok();
    a == b || real(a).is_some_and(|r| Some(r) == real(b))
}

/// The value `key` has among `settings`, when it counts.
pub fn counted<'a>(settings: &'a [Setting], key: &str) -> Option<&'a Value> {
    settings
        .iter()
        .find(|s| s.key == key)
        .and_then(Setting::counted)
}

/// What a Gemini-style `trustedFolders.json` (a path → `TRUST_FOLDER`,
/// `TRUST_PARENT` or `DO_NOT_TRUST`, comments allowed) says of `folder`:
/// `Some(true)` trusted, `Some(false)` not (or the file is there but not
/// such a map: the host refuses to start on it), `None` when no rule
/// speaks of it or there is no file. Gemini CLI and Qwen Code weigh the
/// rules differently: `longest` takes the longest rule covering the folder
/// (an unknown level makes the file invalid); else a trusting rule covering
/// it wins, a distrusting one counts for the folder itself only, and an
/// unknown level is passed over. Paths are compared with links resolved;
/// Gemini's way also folds case on Windows and macOS, as Gemini CLI 0.61
/// does there (its `normalizePath`).
pub fn folder_rule(rules: &Path, folder: &Path, longest: bool) -> Option<bool> {
    if std::fs::symlink_metadata(rules).is_err() {
        return None;
    }
    let Some((_, Value::Object(rules))) = read_json(rules, true) else {
        return Some(false);
    };
    let fold = longest && cfg!(any(windows, target_os = "macos"));
    let real = |p: &Path| {
        let real = dunce::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if fold {
            PathBuf::from(real.to_string_lossy().to_lowercase())
        } else {
            real
        }
    };
    let folder = real(folder);
    let mut best: Option<(usize, bool)> = None;
    let (mut trusting, mut distrusting) = (false, false);
    for (rule, level) in &rules {
        let rule_path = Path::new(rule);
        let (covered, trusts) = match level.as_str() {
            Some("TRUST_FOLDER") => (Some(real(rule_path)), true),
            Some("TRUST_PARENT") => (rule_path.parent().map(real), true),
            Some("DO_NOT_TRUST") => (Some(real(rule_path)), false),
            _ if longest => return Some(false),
            _ => continue,
        };
        let Some(covered) = covered else { continue };
        if longest {
            if folder.starts_with(&covered) && best.is_none_or(|(len, _)| rule.len() > len) {
                best = Some((rule.len(), trusts));
            }
        } else if trusts && folder.starts_with(&covered) {
            trusting = true;
        } else if !trusts && folder == covered {
            distrusting = true;
        }
    }
    if longest {
        best.map(|(_, trusts)| trusts)
    } else if trusting {
        Some(true)
    } else {
        distrusting.then_some(false)
    }
}

/// For tests: a `trustedFolders.json` of `rules` (a folder, its level),
/// each path written as JSON spells it (a Windows path's backslashes
/// escaped).
#[cfg(test)]
pub(crate) fn rules_for_test<P: AsRef<Path>>(rules: &[(P, &str)]) -> String {
    let map: serde_json::Map<String, Value> = rules
        .iter()
        .map(|(p, level)| (p.as_ref().display().to_string(), Value::from(*level)))
        .collect();
    Value::Object(map).to_string()
}

/// For tests: trusts `file` as it is now in the trust file at `store`.
#[cfg(test)]
pub(crate) fn trust_for_test(file: &Path, store: &Path) {
    let mut s = interband::trust::Store::load_from(store).unwrap_or_default();
    s.add(file, &std::fs::read(file).unwrap());
    s.save(store).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_in_another_case_counts_for_gemini_where_its_file_system_folds_case() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("Proj");
        std::fs::create_dir(&project).unwrap();
        let rules = dir.path().join("trustedFolders.json");
        let upper = PathBuf::from(project.to_string_lossy().to_uppercase());
        std::fs::write(&rules, rules_for_test(&[(&upper, "TRUST_FOLDER")])).unwrap();
        let folds = cfg!(any(windows, target_os = "macos"));
        assert_eq!(
            folder_rule(&rules, &project, true),
            folds.then_some(true),
            "Gemini's way"
        );
        // The same spelling counts for both, whatever the canonical form.
        std::fs::write(&rules, rules_for_test(&[(&project, "TRUST_FOLDER")])).unwrap();
        assert_eq!(folder_rule(&rules, &project, true), Some(true));
        assert_eq!(folder_rule(&rules, &project, false), Some(true));
    }

    #[test]
    fn a_setting_counts_where_the_host_and_interband_both_trust_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            "{\n  // the team's threshold\n  \"context\": {\"autoCompactThreshold\": 0.05}\n}\n",
        )
        .unwrap();
        let store = dir.path().join("trusted.json");
        let env = |k: &str| (k == "INTERBAND_TRUST_FILE").then(|| store.display().to_string());
        let key = "/context/autoCompactThreshold";
        let got = |host: bool| settings(&file, true, &[key], || host, &env);
        assert_eq!(got(false)[0].ignored, Some(Ignored::HostDistrusts));
        assert_eq!(got(true)[0].ignored, Some(Ignored::NotTrusted));
        assert_eq!(counted(&got(true), key), None);
        let notice = got(true)[0].notice("Qwen Code").unwrap();
        assert!(
            notice.contains("context.autoCompactThreshold = 0.05"),
            "{notice}"
        );
        assert!(notice.contains("interband trust"), "{notice}");
        // Trusted as it is now, it counts; changed since, it does not.
        let mut s = interband::trust::Store::default();
        s.add(&file, &std::fs::read(&file).unwrap());
        s.save(&store).unwrap();
        assert_eq!(counted(&got(true), key), Some(&serde_json::json!(0.05)));
        assert_eq!(counted(&got(false), key), None, "the host's trust first");
        std::fs::write(&file, r#"{"context":{"autoCompactThreshold":0.04}}"#).unwrap();
        assert_eq!(counted(&got(true), key), None);
        // Comments only where the host allows them; a file that sets nothing asks nobody.
        assert!(settings(&file, false, &["/nothing"], || panic!("asked"), &env).is_empty());
        std::fs::write(&file, "// x\n{\"context\":{\"autoCompactThreshold\":0.05}}").unwrap();
        assert_eq!(
            settings(&file, false, &[key], || true, &env)[0].ignored,
            Some(Ignored::Unreadable)
        );
        // A `#` line is no comment to the hosts; a file over the bound is
        // unreadable, never empty.
        std::fs::write(&file, "{\n# x\n\"context\":{}}").unwrap();
        assert_eq!(parse_json(&std::fs::read(&file).unwrap(), true), None);
        std::fs::write(&file, format!("{{\"pad\":\"{}\"}}", "x".repeat(1 << 20))).unwrap();
        assert_eq!(
            settings(&file, true, &[key], || true, &env)[0].ignored,
            Some(Ignored::Unreadable)
        );
    }

    #[test]
    fn folder_rules_read_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let (a, ab) = (dir.path().join("a"), dir.path().join("a/b"));
        std::fs::create_dir_all(&ab).unwrap();
        let rules = dir.path().join("trustedFolders.json");
        let write = |v: serde_json::Value| std::fs::write(&rules, v.to_string()).unwrap();
        let (s, n) = (|p: &Path| p.to_str().unwrap().to_owned(), None);
        assert_eq!(folder_rule(&rules, &a, true), n, "no file");
        write(serde_json::json!({s(&a): "TRUST_FOLDER", s(&ab): "DO_NOT_TRUST"}));
        assert_eq!(
            folder_rule(&rules, &ab, true),
            Some(false),
            "the longest rule"
        );
        assert_eq!(
            folder_rule(&rules, &ab, false),
            Some(true),
            "a trusting rule covers it"
        );
        assert_eq!(folder_rule(&rules, &a, true), Some(true));
        assert_eq!(
            folder_rule(&rules, dir.path(), true),
            n,
            "no rule covers it"
        );
        write(serde_json::json!({s(&a): "DO_NOT_TRUST"}));
        assert_eq!(folder_rule(&rules, &a, false), Some(false));
        assert_eq!(
            folder_rule(&rules, &ab, false),
            n,
            "distrust is for the folder itself"
        );
        write(serde_json::json!({s(&ab): "TRUST_PARENT"}));
        assert_eq!(folder_rule(&rules, &a, false), Some(true));
        write(serde_json::json!({s(&a): "SOMETIMES", s(&ab): "TRUST_FOLDER"}));
        assert_eq!(
            folder_rule(&rules, &ab, true),
            Some(false),
            "Gemini: invalid"
        );
        assert_eq!(
            folder_rule(&rules, &ab, false),
            Some(true),
            "Qwen: passed over"
        );
        std::fs::write(&rules, "[not a map").unwrap();
        assert_eq!(folder_rule(&rules, &a, false), Some(false), "a broken file");
    }
}
