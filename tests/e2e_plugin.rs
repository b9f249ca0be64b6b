//! Opt-in end-to-end test of the Claude Code plugin as a user gets it: the real Claude Code
//! 2.1.332 adds this checkout as a marketplace (`.claude-plugin/marketplace.json`, whose plugin is
//! the `plugin/` folder) and installs the plugin into a private home, holding no build output, then
//! runs headless against the mock Messages API.
//!
//! Runs with `INTERBAND_E2E_CLAUDE=1`, as `tests/e2e_claude.rs` (the same CLI, from npm).
//! Proves that `claude plugin validate` passes the marketplace and the plugin without a warning; that with the binary on
//! `PATH` the plugin's hooks run (the session's pressure is published); and that with no binary
//! anywhere, every hook succeeds and the session is told once, at its start, the one command
//! that installs it.

mod common;
mod e2e;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use e2e::{Kind, MockApi, bash, run_timed, text};
use serde_json::Value;

/// Every claude run is killed after this.
const TIME_BOX: Duration = Duration::from_secs(120);
/// What the no-binary message says, in part.
const MISSING: &str = "its binary was not found";

fn claude_bin() -> Option<PathBuf> {
    e2e::npm_cli(
        "@anthropic-ai/claude-code",
        "2.1.332",
        "claude",
        "interband-e2e-2.1.332",
        "INTERBAND_E2E_CLAUDE_BIN",
    )
}

fn main() -> std::process::ExitCode {
    e2e::main(
        "the_plugin_installed_from_the_marketplace_runs_or_says_how_to_get_the_binary",
        || e2e::opt_in("INTERBAND_E2E_CLAUDE", claude_bin, Duration::from_secs(30)),
        the_plugin_installed_from_the_marketplace_runs_or_says_how_to_get_the_binary,
    )
}

/// Every file under `dir` with its size (links not followed).
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let meta = e.path().symlink_metadata().unwrap();
        if meta.is_dir() {
            out.extend(files(&e.path()));
        } else {
            out.push((e.path(), meta.len()));
        }
    }
    out
}

struct Session<'a> {
    bin: &'a Path,
    w: &'a World,
    api: &'a MockApi,
}

impl Session<'_> {
    fn dir(&self, name: &str) -> PathBuf {
        let d = self.w.dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// claude in the private world, with `path` as its PATH.
    fn command(&self, args: &[&str], path: &str) -> Command {
        let runtime = self.dir("run");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let mut c = Command::new(self.bin);
        c.args(args)
            .current_dir(self.dir("project"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.w.home())
            .env("CLAUDE_CODE_TMPDIR", self.dir("tmp"))
            .env("XDG_RUNTIME_DIR", runtime)
            .env("INTERBAND_ROOT", self.w.root())
            .env("ANTHROPIC_BASE_URL", self.api.url())
            .env("ANTHROPIC_API_KEY", "sk-test-interband-e2e-0123456789")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1");
        c
    }

    fn run(&self, args: &[&str], path: &str) -> String {
        let ran = run_timed(self.command(args, path), TIME_BOX).unwrap();
        let why = format!(
            "claude {args:?}\nstdout: {}\nstderr: {}",
            ran.stdout, ran.stderr
        );
        let status = ran.status.unwrap_or_else(|| panic!("killed: {why}"));
        assert!(status.success(), "{status}: {why}");
        ran.stdout
    }
}

fn the_plugin_installed_from_the_marketplace_runs_or_says_how_to_get_the_binary(cli: e2e::Cli) {
    let bin = cli.bin;
    // The marketplace and the plugin validate without a warning.
    for what in [".", "plugin"] {
        let mut c = Command::new(&bin);
        c.args(["plugin", "validate", what]).current_dir(repo());
        let v = run_timed(c, TIME_BOX).unwrap();
        let out = format!("{}{}", v.stdout, v.stderr);
        assert!(v.status.is_some_and(|s| s.success()), "{what}: {out}");
        assert!(out.contains("Validation passed"), "{what}: {out}");
        assert!(
            !out.contains("warning"),
            "claude plugin validate {what} warned: {out}"
        );
    }

    let w = World::new();
    let api = MockApi::start(Duration::from_millis(50));
    let s = Session {
        bin: &bin,
        w: &w,
        api: &api,
    };
    // The marketplace is this checkout itself, built (its target/ holds
    // gigabytes): installing copies the plugin's own folder, nothing else.
    let system = "/usr/local/bin:/usr/bin:/bin";
    s.run(
        &["plugin", "marketplace", "add", repo().to_str().unwrap()],
        system,
    );
    s.run(&["plugin", "install", "interband@interband"], system);
    let installed = files(&w.home().join(".claude/plugins"));
    let manifest = installed
        .iter()
        .find(|(p, _)| p.ends_with(".claude-plugin/plugin.json"))
        .unwrap_or_else(|| panic!("the plugin's copy: {installed:?}"));
    let copy = manifest.0.parent().and_then(Path::parent).unwrap();
    let copied: Vec<_> = installed
        .iter()
        .filter(|(p, _)| p.starts_with(copy))
        .collect();
    let bytes: u64 = copied.iter().map(|(_, n)| n).sum();
    assert!(
        copied.iter().all(|(p, _)| {
            let rel = p.strip_prefix(copy).unwrap();
            !rel.starts_with("target") && !rel.ends_with("Cargo.toml") && !rel.starts_with("src")
        }),
        "no build output nor sources in the plugin's copy: {copied:?}"
    );
    assert!(bytes < 256 * 1024, "{bytes} bytes copied: {copied:?}");
    println!(
        "e2e: the plugin installed from this built checkout as its marketplace: {} files, {bytes} bytes",
        copied.len()
    );

    // 1. No interband anywhere (not on PATH, no ~/.cargo/bin, no INTERBAND_BIN): every hook
    // succeeds, and the session is told once how to install it.
    api.script([bash(30_000), bash(31_000), text(31_000, "Done.")]);
    let out = s.run(
        &[
            "-p",
            "Run `echo hi` twice",
            "--allowedTools",
            "Bash",
            "--output-format",
            "json",
        ],
        system,
    );
    let result: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(result["is_error"], false, "{out}");
    let main: Vec<_> = api
        .requests()
        .into_iter()
        .filter(|r| r.kind == Kind::Main)
        .collect();
    assert!(main.len() >= 3, "{} main requests", main.len());
    let last = &main.last().unwrap().body;
    assert_eq!(
        last.matches(MISSING).count(),
        1,
        "the missing binary said once: {}",
        &last[..last.len().min(3000)]
    );
    assert!(
        last.contains("npm install -g interband"),
        "the command that fixes it, with no Rust needed"
    );
    assert!(!last.contains("hook error"), "a hook failed: {last}");
    assert!(
        !w.root().join("interpulse").exists(),
        "nothing ran without the binary"
    );

    // 2. The binary on PATH: the same hooks run it.
    let dir = Path::new(BIN)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let before = api.requests().len();
    api.script([bash(30_000), text(30_000, "Done.")]);
    let out = s.run(
        &[
            "-p",
            "Run `echo hi`",
            "--allowedTools",
            "Bash",
            "--output-format",
            "json",
        ],
        &format!("{dir}:{system}"),
    );
    let result: Value = serde_json::from_str(out.trim()).unwrap();
    let session = result["session_id"].as_str().unwrap();
    let pressure = w.bus().read("interpulse", "pressure", session);
    assert!(
        pressure.is_ok(),
        "the plugin's PostToolUse hook published nothing: {pressure:?}"
    );
    let later: Vec<_> = api.requests().into_iter().skip(before).collect();
    assert!(
        later.iter().all(|r| !r.body.contains(MISSING)),
        "the binary was found: no message"
    );
    println!("e2e: without the binary, told once; with it, the hooks publish");
}
