//! The bus commands: validate, schema, publish, read, ls, prune, watch.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use interband::fsio::MAX_MESSAGE_BYTES;
use interband::{Bus, Message, Subscription, WatchOptions};
use serde_json::{Value, json};

use crate::exit;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// `interband validate PATH...`
#[derive(Args)]
pub struct Validate {
    /// Message files, or folders to search recursively for `*.json` files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// `text`: one line per invalid file; `json`: one JSON report.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

impl Validate {
    pub fn run(self) -> Result<u8> {
        let mut files = Vec::new();
        let mut trouble = Vec::new();
        for p in &self.paths {
            collect_json_files(p, &mut files, &mut trouble);
        }
        let mut invalid = Vec::new();
        let mut valid = 0;
        for f in &files {
            match interband::read_path(f) {
                // Strict: what a v1 reader tolerates is still invalid here.
                Ok(m) if !m.flags.is_empty() => invalid.push((
                    f.clone(),
                    format!(
                        "{}: invalid data: {} (a v1 reader tolerates it; interband readers accept it with a warning)",
                        f.display(),
                        m.flags.join("; ")
                    ),
                )),
                Ok(_) => valid += 1,
                Err(e) if e.is_invalid_data() => invalid.push((f.clone(), e.to_string())),
                Err(e) => trouble.push((f.clone(), e.to_string())),
            }
        }
        match self.format {
            Format::Text => {
                for (_, e) in invalid.iter().chain(&trouble) {
                    say!("{e}");
                }
                tell!(
                    "{} checked, {} invalid, {} unreadable",
                    files.len(),
                    invalid.len(),
                    trouble.len()
                );
            }
            Format::Json => {
                let list = |v: &[(PathBuf, String)]| -> Vec<Value> {
                    v.iter()
                        .map(|(p, e)| json!({"path": p, "error": e}))
                        .collect()
                };
                let report = json!({
                    "checked": files.len(),
                    "valid": valid,
                    "invalid": list(&invalid),
                    "unreadable": list(&trouble),
                });
                say_json!(report);
            }
        }
        Ok(if !trouble.is_empty() {
            exit::TROUBLE
        } else if !invalid.is_empty() {
            exit::INVALID
        } else {
            exit::OK
        })
    }
}

/// Files named on the command line are taken as they are; folders are searched
/// for `*.json` files, skipping hidden names (temp files, locks). A symlink
/// found there (to a `*.json` file or a folder) is reported, not followed.
fn collect_json_files(path: &Path, files: &mut Vec<PathBuf>, trouble: &mut Vec<(PathBuf, String)>) {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => return trouble.push((path.into(), format!("{}: {e}", path.display()))),
    };
    if !meta.is_dir() {
        return files.push(path.into());
    }
    let mut entries: Vec<_> = match std::fs::read_dir(path) {
        Ok(rd) => rd.flatten().collect(),
        Err(e) => return trouble.push((path.into(), format!("{}: {e}", path.display()))),
    };
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = e.file_type() else { continue };
        if name.starts_with('.') {
            continue;
        }
        if ft.is_symlink() {
            // Not followed, and not passed over in silence: CI must not go
            // green on data it never looked at.
            let p = e.path();
            if name.ends_with(".json") || p.is_dir() {
                trouble.push((
                    p.clone(),
                    format!("{}: a symbolic link, not followed", p.display()),
                ));
            }
            continue;
        }
        if ft.is_dir() {
            collect_json_files(&e.path(), files, trouble);
        } else if name.ends_with(".json") {
            files.push(e.path());
        }
    }
}

/// `interband schema --out DIR | --check [DIR]`
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct Schema {
    /// Write every schema file under DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Fail (exit 1) if the schemas in DIR (default `schemas`) are missing or stale.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "schemas")]
    check: Option<PathBuf>,
}

impl Schema {
    pub fn run(self) -> Result<u8> {
        if let Some(dir) = self.out {
            interband::schema::write_all(&dir)?;
            tell!(
                "wrote {} schema files to {}",
                interband::schema::files().len(),
                dir.display()
            );
            return Ok(exit::OK);
        }
        let dir = self.check.expect("clap requires --out or --check");
        if !dir.is_dir() {
            anyhow::bail!("{}: not a folder of schemas", dir.display());
        }
        let stale = interband::schema::stale(&dir);
        for f in &stale {
            say!(
                "{}: missing, stale or not generated; run `interband schema --out {}` (and remove what it does not write)",
                dir.join(f).display(),
                dir.display()
            );
        }
        Ok(if stale.is_empty() {
            exit::OK
        } else {
            exit::INVALID
        })
    }
}

/// `interband publish NAMESPACE CHANNEL KEY --type TYPE --payload JSON`
#[derive(Args)]
pub struct Publish {
    /// The plugin or part that owns the channel, e.g. `interpulse`: a folder
    /// under the root (A-Z a-z 0-9 . _ -, not starting with `.`).
    namespace: String,
    /// The channel in that namespace, e.g. `pressure`: a folder in it (same
    /// rules).
    channel: String,
    /// The key, e.g. a session id: one file per key, the latest value wins.
    /// Other characters become `_`, as in protocol v1.
    key: String,
    /// The message type, e.g. `context_pressure`.
    #[arg(long = "type", value_name = "TYPE")]
    msg_type: String,
    /// The payload as JSON, or `-` to read it from stdin.
    #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
    payload: String,
    /// The envelope's `session_id` (empty when omitted).
    #[arg(long, default_value = "")]
    session: String,
}

impl Publish {
    pub fn run(self) -> Result<u8> {
        let text = if self.payload == "-" {
            let mut buf = Vec::new();
            std::io::stdin()
                .take(MAX_MESSAGE_BYTES + 1)
                .read_to_end(&mut buf)
                .context("reading the payload from stdin")?;
            if buf.len() as u64 > MAX_MESSAGE_BYTES {
                return Err(interband::Error::TooLarge {
                    path: "<stdin>".into(),
                    size: buf.len() as u64,
                    limit: MAX_MESSAGE_BYTES,
                }
                .into());
            }
            String::from_utf8(buf).context("the payload on stdin is not UTF-8")?
        } else {
            self.payload
        };
        let payload: Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}/{}/{}: the payload is not valid JSON",
                self.namespace,
                self.channel,
                interband::paths::safe_key(&self.key)
            )
        })?;
        let bus = Bus::from_env()?;
        let p = bus.publish(
            &self.namespace,
            &self.channel,
            &self.key,
            &self.msg_type,
            &self.session,
            payload,
        )?;
        say_json!(json!({"path": p.path, "seq": p.seq}));
        Ok(exit::OK)
    }
}

/// Resolves `NAMESPACE/CHANNEL/KEY` or a file path to a message.
fn read_target(bus: &Bus, target: &str) -> Result<Message> {
    let looks_like_path = target.ends_with(".json") || target.starts_with(['/', '.']);
    if looks_like_path {
        return Ok(bus.read_file(Path::new(target))?);
    }
    let parts: Vec<&str> = target.splitn(3, '/').collect();
    let [ns, ch, key] = parts[..] else {
        bail!("{target:?}: expected NAMESPACE/CHANNEL/KEY or a path to a .json file");
    };
    Ok(bus.read(ns, ch, key)?)
}

/// `interband read NAMESPACE/CHANNEL/KEY`
#[derive(Args)]
pub struct Read {
    /// `NAMESPACE/CHANNEL/KEY`, or a path to a message file.
    target: String,
    /// Print only the payload.
    #[arg(long)]
    payload: bool,
}

impl Read {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        let msg = read_target(&bus, &self.target)?;
        for f in &msg.flags {
            tell!("interband: tolerated: {f}");
        }
        let out = if self.payload {
            msg.envelope.payload
        } else {
            serde_json::to_value(&msg.envelope)?
        };
        say_json!(serde_json::to_string_pretty(&out)?);
        Ok(exit::OK)
    }
}

/// `interband ls [GLOB]`
#[derive(Args)]
pub struct Ls {
    /// A `NAMESPACE/CHANNEL/KEY` glob (`*` stays within one part; `**` crosses).
    #[arg(default_value = "**")]
    glob: String,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
}

impl Ls {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        let set = interband::watch::compile_patterns(&[&self.glob])?;
        let mut code = exit::OK;
        for (ns, ch) in interband::retention::channels(&bus)? {
            let dir = bus.channel(&ns, &ch, false)?;
            // Every `*.json` in the folder, as the v1 pruners count them:
            // nothing is passed over in silence.
            let mut names: Vec<String> = dir
                .entries()?
                .into_iter()
                .map(|e| e.name.to_string_lossy().into_owned())
                .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
                .filter(|k| !k.is_empty())
                .collect();
            names.sort();
            for key in names {
                let address = format!("{ns}/{ch}/{key}");
                if !set.is_match(&address) {
                    continue;
                }
                let shown = interband::text::terminal(&address).into_owned();
                let mut flags = key_flags(&key);
                let row = match bus.read_file(&dir.path().join(format!("{key}.json"))) {
                    Ok(m) => {
                        flags.extend(m.flags.iter().map(|f| format!("tolerated: {f}")));
                        json!({"address": shown, "type": m.envelope.msg_type, "seq": m.envelope.seq,
                               "timestamp": m.envelope.timestamp, "session_id": m.envelope.session_id,
                               "flags": flags})
                    }
                    Err(e) => {
                        code = exit::INVALID;
                        json!({"address": shown, "error": e.to_string(), "flags": flags})
                    }
                };
                if self.json {
                    say_json!(row);
                    continue;
                }
                let flags = flags.join("; ");
                match row["error"].as_str() {
                    Some(err) => say_row(&[&shown, "INVALID", err, &flags]),
                    None => say_row(&[
                        &shown,
                        row["type"].as_str().unwrap_or(""),
                        &format!("seq {}", row["seq"]),
                        row["timestamp"].as_str().unwrap_or(""),
                        &flags,
                    ]),
                }
            }
        }
        Ok(code)
    }
}

/// What is unusual about a key's name: a v1 writer may make names interband
/// never publishes, which are read, listed and delivered all the same.
fn key_flags(key: &str) -> Vec<String> {
    let mut flags = Vec::new();
    if key.starts_with('.') {
        flags.push("a key starting with '.': interband does not publish it".to_owned());
    }
    if key.len() > interband::paths::MAX_NAME_BYTES {
        flags.push(format!(
            "a key of {} bytes: interband publishes at most {}",
            key.len(),
            interband::paths::MAX_NAME_BYTES
        ));
    }
    if interband::paths::safe_key(key) != key {
        flags.push("not a key name the bus writes (outside A-Z a-z 0-9 . _ -)".to_owned());
    }
    flags
}

/// One tab-separated row: each field terminal-safe (its own tabs and
/// newlines escaped), so a field can never make a column or a line.
fn say_row(fields: &[&str]) {
    let fields: Vec<_> = fields
        .iter()
        .map(|f| interband::text::terminal(f))
        .collect();
    println!("{}", fields.join("\t"));
}

/// `interband prune [NAMESPACE/CHANNEL]`
#[derive(Args)]
pub struct Prune {
    /// One channel; all channels when omitted (and the values other
    /// machines' bridges sent, kept under `.remote`).
    channel: Option<String>,
}

impl Prune {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        let report = match &self.channel {
            None => {
                let mut r = interband::retention::prune_all(&bus)?;
                // And what other machines' bridges sent, by the same rules.
                r.removed.extend(interband_bridge::prune_remote(&bus, true));
                r
            }
            Some(c) => {
                let Some((ns, ch)) = c.split_once('/') else {
                    bail!("{c:?}: expected NAMESPACE/CHANNEL");
                };
                interband::retention::prune_channel(&bus, ns, ch, true)?
            }
        };
        for p in report.removed.iter().chain(&report.temp_removed) {
            say!("removed {}", p.display());
        }
        tell!(
            "{} messages and {} temp files removed",
            report.removed.len(),
            report.temp_removed.len()
        );
        Ok(exit::OK)
    }
}

/// `interband watch GLOB... [--exec CMD ARGS...]`
#[derive(Args)]
pub struct Watch {
    /// `NAMESPACE/CHANNEL/KEY` globs to follow. Without any: run the enabled
    /// consumers (intermem, the compaction command) until stopped.
    globs: Vec<String>,
    /// Also deliver the values present at start.
    #[arg(long)]
    existing: bool,
    /// Poll instead of using file events (also `INTERBAND_WATCH_POLL=1`).
    #[arg(long)]
    poll: bool,
    /// Stop after this many values.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many seconds without a new value.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Run CMD ARGS... for each value, with the envelope on stdin (no shell involved).
    /// Takes the rest of the command line.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "CMD")]
    exec: Option<Vec<String>>,
}

impl Watch {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        let defaults = WatchOptions::default();
        let poll = self.poll || defaults.poll;
        let opts = WatchOptions {
            poll,
            initial: self.existing,
            ..defaults
        };
        if self.globs.is_empty() {
            return run_consumers(&bus, opts, self.idle_timeout);
        }
        let mut sub = Subscription::new(&bus, &self.globs, opts)?;
        if !sub.uses_events() && !poll {
            tell!("interband: file events unavailable here; polling instead");
        }
        let tick = self
            .idle_timeout
            .map_or(Duration::from_secs(3600), Duration::from_secs_f64);
        let mut seen = 0u64;
        let mut stdout = std::io::stdout().lock();
        while self.count.is_none_or(|n| seen < n) {
            let Some(msg) = sub.next(tick)? else {
                if self.idle_timeout.is_some() {
                    break;
                }
                continue;
            };
            seen += 1;
            let address = msg
                .address
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let envelope = serde_json::to_vec(&msg.envelope)?;
            match &self.exec {
                None => {
                    let mut line =
                        json!({"address": address, "path": msg.path, "envelope": msg.envelope});
                    if !msg.flags.is_empty() {
                        line["flags"] = json!(msg.flags);
                    }
                    writeln!(stdout, "{}", interband::text::json(&line.to_string()))?;
                    stdout.flush()?;
                }
                Some(argv) => run_exec(argv, &address, &msg, &envelope),
            }
        }
        Ok(exit::OK)
    }
}

/// `interband watch` without globs: every enabled consumer, in one process.
fn run_consumers(bus: &Bus, opts: WatchOptions, idle_timeout: Option<f64>) -> Result<u8> {
    let env = interband::settings::ProcessEnv;
    let project = std::env::current_dir().ok();
    let settings = interband_consumers::hooks::AllSettings::load(project.as_deref(), &env);
    for p in settings.problems() {
        tell!("interband: {p}");
    }
    let home = interband::paths::home(&env);
    let mut consumers = interband_consumers::hooks::watch_consumers(&settings, home);
    // Each consumer's work is claimed for this watch (hooks then leave it
    // here); one another watch holds already is left to that watch.
    let mut claims = Vec::new();
    let mut kept = Vec::new();
    for c in consumers.drain(..) {
        match interband::consumer::claim_watch(bus, c.name())? {
            Some(claim) => {
                claims.push(claim);
                kept.push(c);
            }
            None => tell!(
                "interband: another watch already runs {}; leaving it to that one",
                c.name()
            ),
        }
    }
    let mut consumers = kept;
    // With `[bridge] url` set, the bridge runs in this watch too, until it ends.
    let stop_bridge = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let configured = super::bridge::configured().unwrap_or_else(|e| {
        // A bridge that cannot start never stops the consumers.
        tell!("interband: bridge not started: {e}");
        None
    });
    let bridge = match configured {
        Some(o) => {
            tell!(
                "interband: bridging through {} as {}",
                interband_bridge::without_login(&o.url),
                o.host
            );
            let (bus, stop) = (bus.clone(), stop_bridge.clone());
            Some(std::thread::spawn(move || {
                if let Err(e) = interband_bridge::run(&bus, &o, stop) {
                    eprintln!("interband: bridge: {e}");
                }
            }))
        }
        None => None,
    };
    let names: Vec<String> = consumers.iter().map(|c| c.name().to_owned()).collect();
    tell!(
        "interband: watching {} for {}",
        bus.root().display(),
        names.join(", ")
    );
    let idle = idle_timeout.map(Duration::from_secs_f64);
    let (mut handled, mut errors, mut given_up) = (0, 0, 0);
    let mut last = std::time::Instant::now();
    let report = interband::consumer::watch(
        bus,
        &mut consumers,
        opts,
        Duration::from_millis(50),
        |r| {
            if r.handled > handled || r.errors.len() > errors {
                last = std::time::Instant::now();
            }
            if r.handled > handled {
                tell!("interband: {} value(s) handled", r.handled);
                handled = r.handled;
            }
            for e in &r.errors[errors..] {
                tell!("interband: {e}");
            }
            errors = r.errors.len();
            for e in &r.given_up[given_up..] {
                tell!("interband: {e}");
                // The session (the message's key) hears of it at its next hook call.
                if let interband::Error::Consumer { path, .. } = e
                    && let Some(session) = path.file_stem().and_then(|s| s.to_str())
                {
                    let text = format!(
                        "interband could not save a memory note for this session ({e}); see its log."
                    );
                    if let Err(e) = interband::notice::add(bus, session, &text) {
                        tell!("interband: {e}");
                    }
                }
            }
            given_up = r.given_up.len();
            idle.is_none_or(|idle| last.elapsed() < idle)
        },
    )?;
    drop(claims);
    stop_bridge.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(b) = bridge {
        let _ = b.join();
    }
    Ok(if report.errors.is_empty() && report.given_up.is_empty() {
        exit::OK
    } else {
        exit::INVALID
    })
}

/// Runs one `--exec` command; its failure is reported, not fatal.
fn run_exec(argv: &[String], address: &str, msg: &Message, envelope: &[u8]) {
    let result = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env("INTERBAND_ADDRESS", address)
        .env("INTERBAND_PATH", &msg.path)
        .env("INTERBAND_SEQ", msg.envelope.seq.to_string())
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                // A command that does not read its stdin is fine: its closed
                // pipe must not kill us (SIGPIPE is otherwise fatal here).
                // (The watch loop is single-threaded.)
                crate::platform::with_closed_pipe_an_error(|| {
                    let _ = stdin.write_all(envelope);
                    drop(stdin);
                });
            }
            child.wait()
        });
    match result {
        Ok(status) if status.success() => {}
        Ok(status) => tell!("interband: {}: {} for {address}", argv[0], status),
        Err(e) => tell!("interband: {}: {e}", argv[0]),
    }
}
