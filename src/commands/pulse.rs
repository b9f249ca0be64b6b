//! The producer's commands: `hook`, `thresholds`, `pressure`.

use std::io::{Read as _, Write as _};

use anyhow::Result;
use clap::Args;
use interband::Bus;
use interband::settings::ProcessEnv;
use interpulse::config::Config;
use interpulse::hook::{Hook as HookCtx, post_tool_use};
use interpulse::host::{HookInput, MAX_INPUT_BYTES};

use crate::exit;

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Appends one line to `$INTERBAND_LOG`, if set. Never fails.
pub fn log(what: &str) {
    let Some(path) = std::env::var_os("INTERBAND_LOG").filter(|p| !p.is_empty()) else {
        return;
    };
    let line = format!("{} {what}\n", interband::envelope::now_timestamp());
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
}

/// `interband hook`: one JSON object on stdin, dispatched on `hook_event_name`.
/// Always exits 0 and prints nothing but a valid host response.
#[derive(Args)]
pub struct Hook {}

impl Hook {
    pub fn run(self) -> Result<u8> {
        // A bug must not fail the host's tool call: log it and exit 0 with nothing on stdout.
        std::panic::set_hook(Box::new(|info| {
            log(&format!("hook: panic: {info}"));
            std::process::exit(0);
        }));
        match handle() {
            Ok(Some(out)) => {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{out}").and_then(|_| stdout.flush());
            }
            Ok(None) => {}
            Err(e) => log(&format!("hook: {e:#}")),
        }
        Ok(exit::OK)
    }
}

fn handle() -> Result<Option<String>> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)?;
    anyhow::ensure!(
        buf.len() as u64 <= MAX_INPUT_BYTES,
        "stdin is over {MAX_INPUT_BYTES} bytes"
    );
    let input =
        HookInput::parse(&buf).map_err(|e| anyhow::anyhow!("stdin is not a hook input: {e}"))?;
    let bus = Bus::from_env()?;
    let ctx = HookCtx {
        bus: &bus,
        env: &ProcessEnv,
        now: now(),
    };
    let reply = match input.hook_event_name.as_str() {
        "PostToolUse" | "AfterTool" => post_tool_use(&ctx, &input)?,
        _ => return Ok(None),
    };
    for p in &reply.problems {
        log(&format!(
            "hook {} {}: {p}",
            input.hook_event_name, input.session_id
        ));
    }
    Ok(reply.stdout)
}

/// `interband thresholds`: the effective threshold table.
#[derive(Args)]
pub struct Thresholds {
    /// Print the markdown table (the README carries the default one).
    #[arg(long)]
    markdown: bool,
}

impl Thresholds {
    pub fn run(self) -> Result<u8> {
        let project = std::env::current_dir().ok();
        let cfg = Config::load(project.as_deref(), &ProcessEnv);
        for p in &cfg.problems {
            eprintln!("interband: {p}");
        }
        let t = cfg.value.thresholds;
        if self.markdown {
            print!("{}", t.markdown());
        } else {
            println!("{}", serde_json::to_string_pretty(&t)?);
        }
        Ok(exit::OK)
    }
}

/// `interband pressure`: the dashboard.
#[derive(Args)]
pub struct Pressure {
    /// One session.
    #[arg(long, conflicts_with = "all")]
    session: Option<String>,
    /// Every session (default: the most recent one).
    #[arg(long)]
    all: bool,
    /// JSON (one array).
    #[arg(long)]
    json: bool,
}

impl Pressure {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        let mut rows = interpulse::dashboard::rows(&bus, now());
        if let Some(s) = &self.session {
            rows.retain(|r| &r.session == s || interband::paths::safe_key(&r.session) == *s);
            anyhow::ensure!(!rows.is_empty(), "no pressure published for session {s:?}");
        } else if !self.all {
            rows.truncate(1);
        }
        if self.json {
            let list: Vec<_> = rows.iter().map(interpulse::dashboard::json).collect();
            println!("{}", serde_json::Value::Array(list));
        } else if rows.is_empty() {
            println!(
                "no sessions yet: interpulse publishes on every tool call once `interband hook` is installed"
            );
        } else {
            for r in &rows {
                println!("{}", interpulse::dashboard::line(r));
            }
        }
        Ok(exit::OK)
    }
}
