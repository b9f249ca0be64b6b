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
//!
//! The Windows packages `scripts/check-windows dist` builds on Linux (for
//! x86_64-pc-windows-gnu, into `target/windows/dist/`, or
//! `INTERBAND_WINDOWS_DIST`) are checked as files: one `interband.exe` in the
//! npm package and the wheel, a 64-bit PE console program that imports
//! only Windows' own DLLs; and, where Wine is (its prefix made by
//! `scripts/check-windows`), the hook from the package is run as Claude Code
//! runs it. The release workflow installs the MSVC builds on real Windows.

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

/// npm's command (a `.cmd` file on Windows, which `Command` runs by its full name).
const NPM: &str = if cfg!(windows) { "npm.cmd" } else { "npm" };

/// npm, with nothing of the caller's configuration and no network.
fn npm(w: &World, args: &[&str]) -> Command {
    let mut c = bare(NPM);
    c.args([
        "--offline",
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
    ])
    .arg("--cache")
    .arg(w.dir.path().join("npm-cache"))
    .args(args)
    .env("HOME", w.home())
    .env("USERPROFILE", w.home())
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
    head.starts_with(b"\x7fELF")
        || head.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
        || head.starts_with(b"MZ")
}

/// A program's file name here (`interband.exe` on Windows).
fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

/// What `npm install -g --prefix P` puts on PATH: `P/bin/interband` (the
/// native binary, once the postinstall ran) on Unix; npm's shim
/// `P/interband.cmd` on Windows, which runs the placeholder through Node.
fn npm_bin(prefix: &Path) -> PathBuf {
    if cfg!(windows) {
        prefix.join("interband.cmd")
    } else {
        prefix.join("bin/interband")
    }
}

/// The folder of a venv's or a tool's programs.
fn venv_bin(venv: &Path) -> PathBuf {
    venv.join(if cfg!(windows) { "Scripts" } else { "bin" })
}

/// Python 3 as this system names it.
const PYTHON: &str = if cfg!(windows) { "python" } else { "python3" };

/// pip's "read no configuration file".
const NO_CONFIG: &str = if cfg!(windows) { "nul" } else { "/dev/null" };

/// The same file, however each path spells it (Windows: slashes, case,
/// `\\?\`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A command whose environment is `PATH` and what the caller adds, plus,
/// on Windows, what any program there needs (`SystemRoot`, `TEMP`...).
fn bare(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    if cfg!(windows) {
        for k in [
            "SystemRoot",
            "SystemDrive",
            "ComSpec",
            "PATHEXT",
            "TEMP",
            "TMP",
            "WINDIR",
        ] {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
    }
    c
}

/// `interband install` from `bin` in the world's HOME, and the program the
/// installed hooks run.
fn install_from(w: &World, bin: &Path) -> String {
    let o = ok(
        "interband install",
        bare(bin)
            .arg("install")
            .env("HOME", w.home())
            .env("USERPROFILE", w.home())
            .env("INTERBAND_ROOT", w.root())
            .finish(),
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

/// The shell a host runs a hook command in: `sh -c` on Unix; on Windows
/// PowerShell, as Claude Code (without Git Bash), Codex, Gemini CLI and
/// Copilot CLI run it.
fn host_shell(command: &str) -> Command {
    if cfg!(windows) {
        let mut c = bare("powershell.exe");
        c.args(["-NoProfile", "-NonInteractive", "-Command", command]);
        c
    } else {
        let mut c = bare("sh");
        c.args(["-c", command]);
        c
    }
}

/// Runs the installed hook as Claude Code does (through a shell, a captured
/// input on stdin): it answers, exits 0, and publishes the session's pressure.
fn the_hook_runs(w: &World, command: &str) {
    let mut sh = host_shell(command);
    sh.env("HOME", w.home())
        .env("USERPROFILE", w.home())
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
    ok("npm install -g", npm(&w, &args).finish());
    let on_path = npm_bin(&prefix);
    assert!(
        is_native(&on_path) || cfg!(windows),
        "{} is the native binary, not a script",
        on_path.display()
    );
    let version = ok(
        "--version",
        Command::new(&on_path).arg("--version").finish(),
    );
    assert!(
        stdout(&version).starts_with(&format!("interband {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        stdout(&version)
    );
    let command = install_from(&w, &on_path);
    let real = program(&command);
    if cfg!(windows) {
        // npm's shim runs the placeholder, which runs the platform package's binary.
        assert!(
            command.contains("/node_modules/@interband/win32-"),
            "the hooks run the platform package's interband.exe, never npm's shim or Node: {command}"
        );
    } else {
        assert_eq!(
            real,
            std::fs::canonicalize(&on_path).unwrap(),
            "the hooks run the binary's own canonical path, never npm's link or Node: {command}"
        );
    }
    assert!(real.is_absolute() && is_native(&real), "{command}");
    the_hook_runs(&w, &command);

    // Installed again from another prefix: the hooks move to the new binary.
    let other = w.dir.path().join("other-prefix");
    let mut args = vec!["install", "-g", "--prefix", other.to_str().unwrap()];
    args.extend(list.iter().map(|p| p.to_str().unwrap()));
    ok("npm install -g (again)", npm(&w, &args).finish());
    let moved = install_from(&w, &npm_bin(&other));
    if cfg!(windows) {
        assert!(moved.contains("/other-prefix/"), "{moved}");
    } else {
        assert_eq!(
            program(&moved),
            std::fs::canonicalize(other.join("bin/interband")).unwrap()
        );
    }
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
    ok("npm install -g --ignore-scripts", npm(&w, &args).finish());
    let on_path = npm_bin(&prefix);
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
    let o = ok("npx interband install", c.finish());
    assert!(stdout(&o).contains("npx's cache"), "{}", stdout(&o));
    assert!(stdout(&o).contains("do nothing"), "{}", stdout(&o));
    let command = hook_command(&w);
    let bin = command
        .split(' ')
        .find(|w| w.contains("/_npx/"))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("the binary in npx's cache: {command}"));
    assert!(is_native(&bin), "{command}");
    the_hook_runs(&w, &command);
    // npm clears its cache: the hook does nothing, and fails nothing
    // (silently on Unix; on Windows the shell's error goes to stderr, which
    // Claude Code does not show from a hook that exits 0).
    std::fs::remove_dir_all(w.dir.path().join("npm-cache/_npx")).unwrap();
    let mut sh = host_shell(&command);
    sh.env("HOME", w.home());
    let o = with_stdin(&mut sh, &capture("PostToolUse.input.json"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(
        cfg!(windows) || o.stderr.is_empty(),
        "silent: {}",
        stderr(&o)
    );
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
            "windows" => "win32",
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
    let program = planted.join(format!("bin/{}", exe("interband")));
    std::fs::write(
        &program,
        format!("#!/bin/sh\necho planted > '{}'\n", marker.display()),
    )
    .unwrap();
    set_executable(&program);
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
        .finish(),
    );
    let on_path = npm_bin(&prefix);
    let o2 = bare(&on_path)
        .arg("--version")
        .env("HOME", w.home())
        .finish();
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
        Command::new(PYTHON)
            .args(["-m", "venv"])
            .arg(&venv)
            .finish(),
    );
    let wheels = dist().join("pypi");
    ok(
        "pip install --no-index",
        Command::new(venv_bin(&venv).join(exe("pip")))
            .args([
                "install",
                "--quiet",
                "--no-index",
                "--disable-pip-version-check",
            ])
            .arg("--find-links")
            .arg(&wheels)
            .arg("interband")
            .env("PIP_CONFIG_FILE", NO_CONFIG)
            .finish(),
    );
    let on_path = venv_bin(&venv).join(exe("interband"));
    assert!(
        is_native(&on_path),
        "{} is the binary itself",
        on_path.display()
    );
    let command = install_from(&w, &on_path);
    assert!(same_file(&program(&command), &on_path), "{command}");
    the_hook_runs(&w, &command);
}

/// A tool install's command on PATH (`bin`, a link into the tool's own
/// venv) is the binary itself, and the hooks it installs run it.
fn a_tool_install_gives_the_binary(w: &World, bin: &Path) {
    assert!(is_native(bin), "{} is the binary itself", bin.display());
    let command = install_from(w, bin);
    assert!(same_file(&program(&command), bin), "{command}");
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
            .finish(),
    );
    a_tool_install_gives_the_binary(&w, &d.join("uv-bin").join(exe("interband")));
}

/// pipx as `python3 -m pipx`, from `INTERBAND_PIPX_PYTHONPATH` or PATH.
fn pipx() -> Option<Command> {
    if let Some(dir) = std::env::var_os("INTERBAND_PIPX_PYTHONPATH") {
        let mut c = Command::new(PYTHON);
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
        .env("PIP_CONFIG_FILE", NO_CONFIG)
        .env("HOME", w.home());
    ok("pipx install", c.finish());
    a_tool_install_gives_the_binary(&w, &d.join("pipx-bin").join(exe("interband")));
}

/// Where `scripts/check-windows dist` wrote the Windows packages.
fn windows_dist() -> PathBuf {
    std::env::var_os("INTERBAND_WINDOWS_DIST")
        .map_or_else(|| repo().join("target/windows/dist"), PathBuf::from)
}

/// The one file in `dir` whose name starts with `start` and ends with `end`.
fn one_file(dir: &Path, start: &str, end: &str) -> Result<PathBuf, String> {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|_| format!("no {}: run scripts/check-windows dist", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(start) && n.ends_with(end))
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "not one {start}*{end} in {}: {found:?}",
            dir.display()
        )),
    }
}

/// DLLs in every Windows' System32 since Windows 10, which interband.exe
/// may import; never a compiler's runtime a user would have to install
/// (vcruntime140.dll, libgcc_s_seh-1.dll, libwinpthread-1.dll).
const WINDOWS_OWN: [&str; 19] = [
    "kernel32.dll",
    "ntdll.dll",
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "ws2_32.dll",
    "userenv.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "shell32.dll",
    "ole32.dll",
    "oleaut32.dll",
    "user32.dll",
    "secur32.dll",
    "crypt32.dll",
    "iphlpapi.dll",
    "psapi.dll",
    "dbghelp.dll",
    "synchronization.dll",
];

fn windows_own(dll: &str) -> bool {
    let dll = dll.to_ascii_lowercase();
    WINDOWS_OWN.contains(&dll.as_str()) || dll.starts_with("api-ms-win-")
}

/// `interband.exe` from the Windows npm package, extracted into the world,
/// after checking the package names itself for Windows on x64.
fn windows_exe_from_npm(w: &World) -> PathBuf {
    let tgz = one_file(&windows_dist().join("npm"), "interband-win32-x64-", ".tgz").unwrap();
    let into = w.dir.path().join("npm-win32");
    std::fs::create_dir_all(&into).unwrap();
    ok(
        "tar -xzf",
        Command::new("tar")
            .arg("-xzf")
            .arg(&tgz)
            .arg("-C")
            .arg(&into)
            .finish(),
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(into.join("package/package.json")).unwrap()).unwrap();
    assert_eq!(manifest["name"], "@interband/win32-x64");
    assert_eq!(manifest["os"], serde_json::json!(["win32"]));
    assert_eq!(manifest["cpu"], serde_json::json!(["x64"]));
    assert_eq!(
        manifest["description"],
        "The native interband binary for win32 x64; installed by the interband package"
    );
    assert!(
        manifest["files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "bin/interband.exe")),
        "{manifest}"
    );
    into.join("package/bin/interband.exe")
}

fn the_windows_packages_hold_one_interband_exe_importing_only_windows_own_dlls() {
    let w = World::new();
    let exe = windows_exe_from_npm(&w);
    let bytes = std::fs::read(&exe).unwrap();

    // The wheel holds the same bytes, as `Scripts/interband.exe`.
    let whl = one_file(&windows_dist().join("pypi"), "interband-", "-win_amd64.whl").unwrap();
    let unpacked = w.dir.path().join("wheel-win");
    ok(
        "python3 -m zipfile -e",
        Command::new(PYTHON)
            .args(["-m", "zipfile", "-e"])
            .arg(&whl)
            .arg(&unpacked)
            .finish(),
    );
    let in_wheel = unpacked.join(format!(
        "interband-{}.data/scripts/interband.exe",
        env!("CARGO_PKG_VERSION")
    ));
    assert!(
        std::fs::read(&in_wheel).unwrap() == bytes,
        "the npm package and the wheel ship the same interband.exe"
    );

    // A 64-bit x86 console program.
    use object::read::pe::PeFile64;
    use object::{Object as _, pe};
    let file = PeFile64::parse(&*bytes).expect("interband.exe is a 64-bit PE file");
    let header = file.nt_headers();
    assert_eq!(
        header.file_header.machine.get(object::LittleEndian),
        pe::IMAGE_FILE_MACHINE_AMD64
    );
    assert_eq!(
        header.optional_header.subsystem.get(object::LittleEndian),
        pe::IMAGE_SUBSYSTEM_WINDOWS_CUI,
        "a console program (a hook's stdin and stdout)"
    );
    let mut dlls: Vec<String> = file
        .imports()
        .unwrap()
        .iter()
        .map(|i| String::from_utf8_lossy(i.library()).into_owned())
        .collect();
    dlls.sort();
    dlls.dedup();
    assert!(
        dlls.iter().any(|d| d.eq_ignore_ascii_case("kernel32.dll")),
        "{dlls:?}"
    );
    let foreign: Vec<&String> = dlls.iter().filter(|d| !windows_own(d)).collect();
    assert!(
        foreign.is_empty(),
        "interband.exe needs only Windows' own DLLs; it also imports {foreign:?} (all: {dlls:?})"
    );

    // The main package names both Windows packages and installs on Windows.
    let main = one_file(
        &windows_dist().join("npm"),
        &format!("interband-{}", env!("CARGO_PKG_VERSION")),
        ".tgz",
    )
    .unwrap();
    let listing = ok(
        "tar -xzOf",
        Command::new("tar")
            .arg("-xzOf")
            .arg(&main)
            .arg("package/package.json")
            .finish(),
    );
    let manifest: Value = serde_json::from_slice(&listing.stdout).unwrap();
    assert!(
        manifest["os"]
            .as_array()
            .is_some_and(|o| o.iter().any(|o| o == "win32")),
        "{manifest}"
    );
    for name in ["@interband/win32-x64", "@interband/win32-arm64"] {
        assert!(
            manifest["optionalDependencies"].get(name).is_some(),
            "{name}: {manifest}"
        );
    }
}

/// Wine and the prefix `scripts/check-windows` made, if both are here.
fn wine() -> Result<(PathBuf, PathBuf), String> {
    let wine = std::env::var_os("INTERBAND_WINE")
        .map_or_else(|| PathBuf::from("/usr/lib/wine/wine64"), PathBuf::from);
    let prefix = std::env::var_os("INTERBAND_WINEPREFIX")
        .map_or_else(|| repo().join("target/windows/wine"), PathBuf::from);
    if !wine.is_file() {
        return Err(format!("no Wine at {} (INTERBAND_WINE)", wine.display()));
    }
    if !prefix.join("system.reg").is_file() {
        return Err(format!(
            "no Wine prefix at {}: scripts/check-windows makes it",
            prefix.display()
        ));
    }
    Ok((wine, prefix))
}

fn the_windows_package_s_hook_warns_red_in_claude_s_format_under_wine() {
    let (wine, prefix) = wine().unwrap();
    let w = World::new();
    let exe = windows_exe_from_npm(&w);
    // 80% of a 200k window.
    let transcript = claude_transcript(w.dir.path(), "session.jsonl", 160_000);
    let mut input: Value = serde_json::from_slice(&capture("PostToolUse.input.json")).unwrap();
    input["transcript_path"] = serde_json::json!(transcript);
    input["cwd"] = serde_json::json!(w.dir.path());
    let mut c = Command::new(wine);
    c.arg(&exe)
        .args(["hook", "--host", "claude"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
        .env("HOME", w.home())
        .env("USERPROFILE", w.home())
        .env("INTERBAND_ROOT", w.root())
        .current_dir(w.dir.path());
    let o = with_stdin(&mut c, input.to_string().as_bytes());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let said: Value = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("{e}: Claude's JSON on stdout: {}", stdout(&o)));
    assert_eq!(said["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let context = said["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.starts_with("Context RED: 80% used (160k of 200k tokens)"),
        "{said}"
    );
}

fn main() -> std::process::ExitCode {
    let npm_ready = packages("npm", ".tgz").and_then(|_| {
        trials::runs(NPM, "--version")
            .then_some(())
            .ok_or_else(|| "npm is not installed".to_owned())
    });
    let pypi_ready = packages("pypi", ".whl").and_then(|_| {
        std::process::Command::new(PYTHON)
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
    let windows_ready = one_file(&windows_dist().join("npm"), "interband-win32-x64-", ".tgz")
        .and_then(|_| {
            trials::runs("python3", "--version")
                .then_some(())
                .ok_or_else(|| "python3 is not installed".to_owned())
        });
    let wine_ready = windows_ready.clone().and_then(|()| wine().map(|_| ()));
    trials::run(vec![
        (
            "the_windows_packages_hold_one_interband_exe_importing_only_windows_own_dlls",
            with(
                &windows_ready,
                the_windows_packages_hold_one_interband_exe_importing_only_windows_own_dlls,
            ),
        ),
        (
            "the_windows_package_s_hook_warns_red_in_claude_s_format_under_wine",
            with(
                &wine_ready,
                the_windows_package_s_hook_warns_red_in_claude_s_format_under_wine,
            ),
        ),
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
