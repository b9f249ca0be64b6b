//! The build script names only files that exist for cargo to watch: cargo
//! takes a file it cannot find as changed, and reruns the script (and
//! recompiles the binary crate) on every build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest build of this package's build script, beside the test binary.
fn build_script() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap();
    std::fs::read_dir(profile.join("build"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("interband-"))
        .map(|e| {
            e.path().join(format!(
                "build-script-build{}",
                std::env::consts::EXE_SUFFIX
            ))
        })
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("the build script was built")
}

/// What the script asks cargo to watch, run in `dir`.
fn watched(dir: &Path) -> Vec<String> {
    let o = Command::new(build_script())
        .current_dir(dir)
        .env_remove("INTERBAND_COMMIT")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("cargo:rerun-if-changed="))
        .map(str::to_owned)
        .collect()
}

#[test]
#[cfg_attr(
    all(windows, target_env = "gnu"),
    ignore = "a cross build's build script is a Linux program, beside no Windows test (docs/hosts.md, Platforms); runs on the release workflow's Windows"
)]
fn the_build_script_watches_only_files_that_exist() {
    let layouts: [(&str, &[&str]); 4] = [
        (
            "loose refs, no packed-refs",
            &[".git/HEAD", ".git/refs/heads/main"],
        ),
        (
            "packed refs, no loose file",
            &[".git/HEAD", ".git/packed-refs"],
        ),
        ("a detached HEAD", &[".git/HEAD"]),
        ("no checkout (a source tarball)", &[]),
    ];
    for (what, files) in layouts {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join(".git/refs/heads")).unwrap();
        for f in files {
            let body = match (*f, what) {
                (".git/HEAD", "a detached HEAD") => "0123456789abcdef0123456789abcdef01234567\n",
                (".git/HEAD", _) => "ref: refs/heads/main\n",
                _ => "0123456789abcdef0123456789abcdef01234567\n",
            };
            std::fs::write(work.join(f), body).unwrap();
        }
        let named = watched(&work);
        for f in &named {
            assert!(
                work.join(f).is_file(),
                "{what}: names {f}, which is not there"
            );
        }
        for f in files {
            assert!(
                named.iter().any(|n| n == f),
                "{what}: {f} is not watched: {named:?}"
            );
        }
    }
}
