//! `interband replay TRANSCRIPT`: a transcript replayed offline through the
//! producer's engine (see `interpulse::replay`): a timeline, a summary, and
//! optionally JSON or an SVG plot.

use interband::context::pct_text;
use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use interband::Bus;
use interband::payloads::{Level, ModelWindow};
use interband::settings::ProcessEnv;
use interpulse::config::Config;
use interpulse::replay::{self, Event, Replay as Run, Summary, What};

use crate::exit;

/// The session's project folder and model, from the transcript's first 64 MiB.
fn session_of(path: &Path) -> (Option<PathBuf>, Option<String>) {
    use std::io::Read;
    match interband::fsio::open_regular(path, interband::fsio::Links::Follow) {
        Ok(f) => replay::session_head(BufReader::new(f.take(64 << 20))),
        Err(_) => (None, None),
    }
}

/// Files larger than this get a progress bar (on a terminal).
const PROGRESS_BAR_BYTES: u64 = 20 << 20;

/// `interband replay TRANSCRIPT`
#[derive(Args)]
pub struct Replay {
    /// The Claude Code transcript (JSONL) to replay.
    transcript: PathBuf,
    /// The context window, tokens (default: `[interpulse] window` of the
    /// session's project, else the window a statusline reported for the
    /// transcript's model, else 200k; capped by `CLAUDE_CODE_AUTO_COMPACT_WINDOW`;
    /// raised to 1M when usage exceeds it).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    window: Option<u64>,
    /// Use the default settings, not the settings files and `INTERBAND_*` variables.
    #[arg(long)]
    defaults: bool,
    /// Print the events and the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also draw used context over the session into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

impl Replay {
    pub fn run(self) -> Result<u8> {
        let path = &self.transcript;
        let cfg = if self.defaults {
            Config::default()
        } else {
            // As the live hook would: the session's project settings, and the
            // window a statusline reported for its model when nothing else says it.
            let (cwd, model) = session_of(path);
            let mut loaded = Config::load(cwd.as_deref(), &ProcessEnv);
            for p in &loaded.problems {
                tell!("interband: {p}");
            }
            if loaded.value.window == 0
                && self.window.is_none()
                && let Some(m) = model
                && let Some(w) = Bus::from_env()
                    .ok()
                    .and_then(|b| b.read_typed::<ModelWindow>(&m).ok())
            {
                tell!(
                    "window: {} tokens, as a statusline reported for {m}",
                    w.payload.window
                );
                loaded.value.window = w.payload.window;
            }
            loaded.value
        };
        // A regular file only, opened without blocking: a FIFO or a device is refused.
        let (file, meta) = interband::fsio::open_regular_meta(path, interband::fsio::Links::Follow)
            .map_err(|e| match e {
                interband::Error::NotAFile { .. } => anyhow::anyhow!(
                    "cannot read {}: not a regular file (a folder, a FIFO or a device)",
                    path.display()
                ),
                e => anyhow::anyhow!("cannot read {}: {}", path.display(), e.into_io()),
            })?;
        let bar = (meta.len > PROGRESS_BAR_BYTES && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(meta.len);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        let reader = BufReader::with_capacity(256 << 10, file);
        let result = replay::replay(reader, &cfg, &ProcessEnv, self.window, &mut |bytes| {
            if let Some(bar) = &bar {
                bar.set_position(bytes);
            }
        });
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        if let Some(e) = &result.summary.read_error {
            anyhow::bail!("cannot read {}: {e}", path.display());
        }
        if let Some(out) = &self.plot {
            std::fs::write(out, replay::svg(&result, &cfg))
                .with_context(|| format!("cannot write {}", out.display()))?;
        }
        if self.json {
            say_json!(serde_json::to_string_pretty(&serde_json::json!({
                "transcript": path.to_string_lossy(),
                "events": result.events,
                "summary": result.summary,
            }))?);
        } else {
            say_part!("{}", text(&result, &path.display().to_string()));
        }
        Ok(exit::OK)
    }
}

/// The timeline and the summary, as printed.
fn text(r: &Run, name: &str) -> String {
    let s = &r.summary;
    let name = interband::text::terminal(name);
    let mut out = format!("replay of {name}: {} lines, {} bytes\n", s.lines, s.bytes);
    if !s.found {
        out += "nothing found: no tool call, usage figure or compaction in this transcript\n";
        out += &summary(s);
        return out;
    }
    out += &format!(
        "\n{:<19}  {:>6}  {:>6}  {:>7}  {:<6}  what\n",
        "time", "call", "used", "usable", "level"
    );
    for e in &r.events {
        // A line holds the transcript's own text (times, triggers): one line, escaped.
        out += &interband::text::terminal(&line(e));
        out.push('\n');
    }
    if r.events.is_empty() {
        out += "(no event: the session stayed green)\n";
    }
    out.push('\n');
    out += &summary(s);
    out
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), interband::context::pct_text)
}

fn usable(v: Option<f64>) -> String {
    pct(v)
}

fn k(tokens: u64) -> String {
    interband::context::tokens_text(tokens)
}

/// One timeline line: time, call, used %, usable %, level, what.
fn line(e: &Event) -> String {
    let time = e
        .time
        .as_deref()
        .map_or_else(|| "-".to_owned(), |t| t.replace('T', " ").replace('Z', ""));
    let what = match &e.what {
        What::LevelChange { from, to } => format!("level {} → {}", from.as_str(), to.as_str()),
        What::Warning { level, message } => format!("warning ({}): {message}", level.as_str()),
        What::Checkpoint { trigger } => format!("checkpoint requested ({trigger})"),
        What::CheckpointFile => "red checkpoint file written".to_owned(),
        What::Note { trigger } if trigger == "precompact" => {
            "memory note written (PreCompact)".to_owned()
        }
        What::Note { trigger } => format!("memory note written ({trigger})"),
        What::Compaction {
            trigger,
            pre_tokens,
            post_tokens,
        } => {
            let tokens = |t: &Option<u64>| t.map_or_else(|| "?".to_owned(), k);
            format!(
                "compaction ({}): {} → {} tokens",
                trigger.as_deref().unwrap_or("?"),
                tokens(pre_tokens),
                tokens(post_tokens)
            )
        }
        What::CompactTrigger { strategy } => {
            format!("compaction trigger fires at Stop ({strategy}: the agent asks for /compact)")
        }
    };
    format!(
        "{time:<19}  {:>6}  {:>6}  {:>7}  {:<6}  {what}",
        e.call,
        pct(e.used_pct),
        usable(e.usable_pct),
        e.level.as_str()
    )
}

/// The summary table.
fn summary(s: &Summary) -> String {
    let mut out = String::from("summary\n");
    let mut row = |key: &str, value: String| {
        out += &format!("  {key:<22} {}\n", interband::text::terminal(&value))
    };
    row(
        "tool calls",
        format!("{} ({} in subagents)", s.calls, s.subagent_calls),
    );
    row("turns", s.turns.to_string());
    if let (Some(first), Some(last)) = (&s.first_time, &s.last_time) {
        row("from", format!("{first} to {last}"));
    }
    row(
        "max used",
        match (s.max_used_pct, s.max_used_tokens) {
            (Some(p), Some(t)) => format!("{} ({} tokens)", pct_text(p), k(t)),
            _ => "-".to_owned(),
        },
    );
    row(
        "window",
        format!("{} (autocompact at {})", k(s.window), k(s.autocompact_at)),
    );
    row(
        "checkpoints",
        format!(
            "{} ({} red checkpoint files)",
            s.checkpoints, s.checkpoint_files
        ),
    );
    row("memory notes", s.notes.to_string());
    row("compactions", s.compactions.to_string());
    row("trigger firings", s.trigger_firings.to_string());
    row("final level", s.final_level.as_str().to_owned());
    if s.skipped_lines > 0 {
        row("skipped lines", s.skipped_lines.to_string());
    }
    out += &format!("  {:<22} {:>6}  {:>8}\n", "level", "calls", "warnings");
    for level in [Level::Green, Level::Yellow, Level::Orange, Level::Red] {
        out += &format!(
            "  {:<22} {:>6}  {:>8}\n",
            level.as_str(),
            s.calls_at_level.get(level),
            s.warnings.get(level)
        );
    }
    out
}
