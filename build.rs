//! Names the commit the binary was built from, for `interband --version`:
//! `INTERBAND_COMMIT` when a packager sets it, else `git rev-parse` in the
//! checkout, else "unknown commit" (a source tarball).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=INTERBAND_COMMIT");
    // A new commit moves HEAD or the branch it names. Only files that exist
    // are named: cargo takes a missing one as changed on every build, and a
    // checkout may keep its refs loose (no packed-refs) or packed (no loose
    // file for the branch), or be no checkout at all.
    let mut watched = vec![".git/HEAD".to_owned(), ".git/packed-refs".to_owned()];
    if let Ok(head) = std::fs::read_to_string(".git/HEAD")
        && let Some(r) = head.trim().strip_prefix("ref: ")
    {
        watched.push(format!(".git/{r}"));
    }
    for f in watched.iter().filter(|f| std::path::Path::new(f).is_file()) {
        println!("cargo:rerun-if-changed={f}");
    }
    let commit = std::env::var("INTERBAND_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| {
            let o = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()?;
            let c = String::from_utf8(o.stdout).ok()?.trim().to_owned();
            (o.status.success() && !c.is_empty()).then(|| format!("commit {c}"))
        })
        .unwrap_or_else(|| "unknown commit".to_owned());
    println!("cargo:rustc-env=INTERBAND_COMMIT={commit}");
}
