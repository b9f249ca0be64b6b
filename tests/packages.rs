//! The packages `scripts/dist` writes into `target/dist/`, installed as their
//! users install them, with no network: npm into a temp prefix and cache
//! (`--offline`), npx from the same files, a wheel into a fresh venv
//! (`--no-index`). Each time the `interband` on PATH must be the native
//! binary itself (an ELF file, not a Node or Python script), `interband
//! install` must write that binary's own path into the host's settings, and
//! the hooks must run from it. The same from `uv tool install` and `pipx
//! install` (`INTERBAND_UV`: a uv binary, else `uv` on PATH;
//! `INTERBAND_PIPX_PYTHONPATH`: where pipx is installed, else `pipx` on
//! PATH). Without `target/dist/` (or `INTERBAND_DIST`), or without npm,
//! Python, uv or pipx, each test reports itself ignored with the reason;
//! `.ci/run` builds the packages and installs uv and pipx first.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;
use serde_json::Value;

fn dist() -> PathBuf {
    std::env::var_os("INTERBAND_DIST").map_or_else(|| repo().join("target/dist"), PathBuf::from)
}

/// The packages of one kind (`npm`, `pypi`), or why there are none.
fn packages(kind: &str, ext: &str) -> Result<Vec<PathBuf>, String> {
    let dir = dist().join(kind);
    let list: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|_| format!("no {}: run scripts/dist first", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    if list.is_empty() {
        return Err(format!("no *{ext} in {}: run scripts/dist", dir.display()));
    }
    Ok(list)
}

fn npm_packages() -> Vec<PathBuf> {
    let mut list = packages("npm", ".tgz").unwrap();
    // The platform package before the main one, as npm would fetch them.
    list.sort_by_key(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("interband-0"))
    });
    assert!(
        list.len() >= 2,
        "the main package and one platform package: {list:?}"
    );
    list
}

/// npm, with nothing of the caller's configuration and no network.
fn npm(w: &World, args: &[&str]) -> Command {
    let mut c = Command::new("npm");
    c.args([
        "--offline",
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
    ])
    .arg("--cache")
    .arg(w.dir.path().join("npm-cache"))
    .args(args)
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", w.home())
    .env("npm_config_userconfig", w.dir.path().join("npmrc"))
    .current_dir(w.dir.path())
    .stdin(Stdio::null());
    c
}

fn ok(what: &str, o: Output) -> Output {
    assert!(
        o.status.success(),
        "{what}: {:?}\nstdout: {}\nstderr: {}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    o
}

/// Whether `path` (followed through its links) is a native executable, not a script.
fn is_native(path: &Path) -> bool {
    let head = std::fs::read(path).unwrap_or_default();
    head.starts_with(b"\x7fELF") || head.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
}

/// `interband install` from `bin` in the world's HOME, and the program the
/// installed hooks run.
fn install_from(w: &World, bin: &Path) -> String {
    let o = ok(
        "interband install",
        Command::new(bin)
            .arg("install")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", w.home())
            .env("INTERBAND_ROOT", w.root())
            .output()
            .unwrap(),
    );
    let said = stdout(&o);
    assert!(
        said.contains("installed interband") || said.contains("they now run"),
        "{said}"
    );
    hook_command(w)
}

/// The command of interband's PostToolUse hook in the world's Claude settings.
fn hook_command(w: &World) -> String {
    let settings: Value =
        serde_json::from_slice(&std::fs::read(w.home().join(".claude/settings.json")).unwrap())
            .unwrap();
    settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs the installed hook as Claude Code does (through a shell, a captured
/// input on stdin): it answers, exits 0, and publishes the session's pressure.
fn the_hook_runs(w: &World, command: &str) {
    let mut sh = Command::new("sh");
    sh.args(["-c", command])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", w.home())
        .env("INTERBAND_ROOT", w.root());
    let o = with_stdin(&mut sh, &capture("PostToolUse.input.json"));
    assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
    let published = files_under(&w.root());
    assert!(
        published.iter().any(|f| f.contains("interpulse/pressure/")),
        "the hook published the session's pressure: {published:?}"
    );
}

/// The program a hook command runs (its first word: the temp paths hold no space).
fn program(command: &str) -> PathBuf {
    PathBuf::from(command.split(' ').next().unwrap_or_default())
}

fn npm_global_install_puts_the_native_binary_on_path() {
    let w = World::new();
    let prefix = w.dir.path().join("prefix");
    let mut args = vec!["install", "-g", "--prefix", prefix.to_str().unwrap()];
    let list = npm_packages();
    args.extend(list.iter().map(|p| p.to_str().unwrap()));
    ok("npm install -g", npm(&w, &args).output().unwrap());
    let on_path = prefix.join("bin/interband");
    assert!(
        is_native(&on_path),
        "{} is the native binary, not a script",
        on_path.display()
    );
    let version = ok(
        "--version",
        Command::new(&on_path).arg("--version").output().unwrap(),
    );
    assert!(
        stdout(&version).starts_with(&format!("interband {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        stdout(&version)
    );
    let command = install_from(&w, &on_path);
    let real = std::fs::canonicalize(&on_path).unwrap();
    assert_eq!(
        program(&command),
        real,
        "the hooks run the binary's own canonical path, never npm's link or Node: {command}"
    );
    assert!(real.is_absolute() && is_native(&real));
    the_hook_runs(&w, &command);

    // Installed again from another prefix: the hooks move to the new binary.
    let other = w.dir.path().join("other-prefix");
    let mut args = vec!["install", "-g", "--prefix", other.to_str().unwrap()];
    args.extend(list.iter().map(|p| p.to_str().unwrap()));
    ok("npm install -g (again)", npm(&w, &args).output().unwrap());
    let moved = install_from(&w, &other.join("bin/interband"));
    assert_eq!(
        program(&moved),
        std::fs::canonicalize(other.join("bin/interband")).unwrap()
    );
    the_hook_runs(&w, &moved);
}

fn npm_without_install_scripts_still_installs_hooks_that_run_the_native_binary() {
    // `--ignore-scripts` keeps the Node placeholder on PATH: it runs the
    // native binary, and the hooks it installs name the native binary itself.
    let w = World::new();
    let prefix = w.dir.path().join("prefix");
    let mut args = vec![
        "install",
        "-g",
        "--ignore-scripts",
        "--prefix",
        prefix.to_str().unwrap(),
    ];
    let list = npm_packages();
    args.extend(list.iter().map(|p| p.to_str().unwrap()));
    ok(
        "npm install -g --ignore-scripts",
        npm(&w, &args).output().unwrap(),
    );
    let on_path = prefix.join("bin/interband");
    assert!(!is_native(&on_path), "the placeholder stays a script");
    let command = install_from(&w, &on_path);
    let program = program(&command);
    assert!(is_native(&program), "{command}");
    assert!(
        program
            .to_string_lossy()
            .contains("/node_modules/@interband/"),
        "the platform package's binary: {command}"
    );
    the_hook_runs(&w, &command);
}

fn npx_install_writes_the_native_binary_and_guards_against_npm_clearing_it() {
    let w = World::new();
    let mut args = vec!["exec", "--yes"];
    let list = npm_packages();
    for p in &list {
        args.extend(["--package", p.to_str().unwrap()]);
    }
    args.extend(["--", "interband", "install"]);
    let mut c = npm(&w, &args);
    c.env("INTERBAND_ROOT", w.root());
    let o = ok("npx interband install", c.output().unwrap());
    assert!(stdout(&o).contains("npx's cache"), "{}", stdout(&o));
    let command = hook_command(&w);
    let bin = command
        .split(' ')
        .find(|w| w.contains("/_npx/"))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("the binary in npx's cache: {command}"));
    assert!(is_native(&bin), "{command}");
    the_hook_runs(&w, &command);
    // npm clears its cache: the hook does nothing, and fails nothing.
    std::fs::remove_dir_all(w.dir.path().join("npm-cache/_npx")).unwrap();
    let mut sh = Command::new("sh");
    sh.args(["-c", &command]).env_clear().env("HOME", w.home());
    let o = with_stdin(&mut sh, &capture("PostToolUse.input.json"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "silent");
}

/// With the platform package left out (`--omit=optional`), a binary planted
/// in a `node_modules` above the prefix (a prefix under the shared temp
/// folder, another local user's folder) is never taken: neither the
/// postinstall nor the placeholder looks outside the package's own tree.
fn npm_takes_no_binary_planted_above_its_own_tree() {
    let w = World::new();
    let shared = w.dir.path().join("shared");
    let marker = w.dir.path().join("planted-ran");
    let platform = format!(
        "{}-{}",
        match std::env::consts::OS {
            "macos" => "darwin",
            os => os,
        },
        match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            a => a,
        }
    );
    let planted = shared.join(format!("node_modules/@interband/{platform}"));
    std::fs::create_dir_all(planted.join("bin")).unwrap();
    std::fs::write(
        planted.join("package.json"),
        format!(r#"{{"name":"@interband/{platform}","version":"0.1.0"}}"#),
    )
    .unwrap();
    let program = planted.join("bin/interband");
    std::fs::write(
        &program,
        format!("#!/bin/sh\necho planted > '{}'\n", marker.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = shared.join("prefix");
    let main = npm_packages()
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("interband-0")
        })
        .unwrap();
    let o = ok(
        "npm install -g --omit=optional",
        npm(
            &w,
            &[
                "install",
                "-g",
                "--omit=optional",
                "--prefix",
                prefix.to_str().unwrap(),
                main.to_str().unwrap(),
            ],
        )
        .output()
        .unwrap(),
    );
    let on_path = prefix.join("bin/interband");
    let o2 = Command::new(&on_path)
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", w.home())
        .output()
        .unwrap();
    assert!(!marker.exists(), "the planted program ran");
    assert_eq!(code(&o2), 1, "{}", stderr(&o2));
    assert!(
        stderr(&o2).contains("native binary for") && stderr(&o2).contains("is missing"),
        "the placeholder says the binary is missing: {}",
        stderr(&o2)
    );
    assert!(
        !is_native(&on_path),
        "the placeholder is left: {}",
        stdout(&o)
    );
}

fn a_wheel_in_a_fresh_venv_puts_the_native_binary_on_path() {
    let w = World::new();
    let venv = w.dir.path().join("venv");
    ok(
        "python3 -m venv",
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .unwrap(),
    );
    let wheels = dist().join("pypi");
    ok(
        "pip install --no-index",
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--no-index",
                "--disable-pip-version-check",
            ])
            .arg("--find-links")
            .arg(&wheels)
            .arg("interband")
            .env("PIP_CONFIG_FILE", "/dev/null")
            .output()
            .unwrap(),
    );
    let on_path = venv.join("bin/interband");
    assert!(
        is_native(&on_path),
        "{} is the binary itself",
        on_path.display()
    );
    let command = install_from(&w, &on_path);
    assert_eq!(program(&command), std::fs::canonicalize(&on_path).unwrap());
    the_hook_runs(&w, &command);
}

/// A tool install's command on PATH (`bin`, a link into the tool's own
/// venv) is the binary itself, and the hooks it installs run it.
fn a_tool_install_gives_the_binary(w: &World, bin: &Path) {
    assert!(is_native(bin), "{} is the binary itself", bin.display());
    let command = install_from(w, bin);
    let real = std::fs::canonicalize(bin).unwrap();
    assert_eq!(program(&command), real, "{command}");
    the_hook_runs(w, &command);
}

fn uv() -> Option<PathBuf> {
    std::env::var_os("INTERBAND_UV")
        .map(PathBuf::from)
        .or_else(|| trials::runs("uv", "--version").then(|| PathBuf::from("uv")))
}

fn uv_tool_install_puts_the_native_binary_on_path() {
    let w = World::new();
    let d = w.dir.path();
    ok(
        "uv tool install",
        Command::new(uv().unwrap())
            .args(["tool", "install", "--offline", "--no-index", "--find-links"])
            .arg(dist().join("pypi"))
            .arg("interband")
            .env("UV_TOOL_DIR", d.join("uv-tools"))
            .env("UV_TOOL_BIN_DIR", d.join("uv-bin"))
            .env("UV_CACHE_DIR", d.join("uv-cache"))
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env("UV_NO_CONFIG", "1")
            .env("HOME", w.home())
            .output()
            .unwrap(),
    );
    a_tool_install_gives_the_binary(&w, &d.join("uv-bin/interband"));
}

/// pipx as `python3 -m pipx`, from `INTERBAND_PIPX_PYTHONPATH` or PATH.
fn pipx() -> Option<Command> {
    if let Some(dir) = std::env::var_os("INTERBAND_PIPX_PYTHONPATH") {
        let mut c = Command::new("python3");
        c.args(["-m", "pipx"]).env("PYTHONPATH", dir);
        return Some(c);
    }
    trials::runs("pipx", "--version").then(|| Command::new("pipx"))
}

fn pipx_install_puts_the_native_binary_on_path() {
    let w = World::new();
    let d = w.dir.path();
    let wheels = dist().join("pypi");
    let mut c = pipx().unwrap();
    c.arg("install")
        .arg(format!(
            "--pip-args=--no-index --find-links {}",
            wheels.display()
        ))
        .arg("interband")
        .env("PIPX_HOME", d.join("pipx-home"))
        .env("PIPX_BIN_DIR", d.join("pipx-bin"))
        .env("PIPX_MAN_DIR", d.join("pipx-man"))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("HOME", w.home());
    ok("pipx install", c.output().unwrap());
    a_tool_install_gives_the_binary(&w, &d.join("pipx-bin/interband"));
}

fn main() -> std::process::ExitCode {
    let npm_ready = packages("npm", ".tgz").and_then(|_| {
        trials::runs("npm", "--version")
            .then_some(())
            .ok_or_else(|| "npm is not installed".to_owned())
    });
    let pypi_ready = packages("pypi", ".whl").and_then(|_| {
        std::process::Command::new("python3")
            .args(["-c", "import venv, ensurepip"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| ())
            .ok_or_else(|| "python3 with venv and ensurepip is not installed".to_owned())
    });
    let with = |ready: &Result<(), String>, f: fn()| ready.clone().map(|()| f);
    let uv_ready = pypi_ready.clone().and_then(|()| {
        uv().map(|_| ())
            .ok_or_else(|| "no uv (INTERBAND_UV, or uv on PATH)".to_owned())
    });
    let pipx_ready = pypi_ready.clone().and_then(|()| {
        pipx()
            .map(|_| ())
            .ok_or_else(|| "no pipx (INTERBAND_PIPX_PYTHONPATH, or pipx on PATH)".to_owned())
    });
    trials::run(vec![
        (
            "npm_global_install_puts_the_native_binary_on_path",
            with(
                &npm_ready,
                npm_global_install_puts_the_native_binary_on_path,
            ),
        ),
        (
            "npm_without_install_scripts_still_installs_hooks_that_run_the_native_binary",
            with(
                &npm_ready,
                npm_without_install_scripts_still_installs_hooks_that_run_the_native_binary,
            ),
        ),
        (
            "npx_install_writes_the_native_binary_and_guards_against_npm_clearing_it",
            with(
                &npm_ready,
                npx_install_writes_the_native_binary_and_guards_against_npm_clearing_it,
            ),
        ),
        (
            "npm_takes_no_binary_planted_above_its_own_tree",
            with(&npm_ready, npm_takes_no_binary_planted_above_its_own_tree),
        ),
        (
            "a_wheel_in_a_fresh_venv_puts_the_native_binary_on_path",
            with(
                &pypi_ready,
                a_wheel_in_a_fresh_venv_puts_the_native_binary_on_path,
            ),
        ),
        (
            "uv_tool_install_puts_the_native_binary_on_path",
            with(&uv_ready, uv_tool_install_puts_the_native_binary_on_path),
        ),
        (
            "pipx_install_puts_the_native_binary_on_path",
            with(&pipx_ready, pipx_install_puts_the_native_binary_on_path),
        ),
    ])
}
