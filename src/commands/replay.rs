//! `interband replay TRANSCRIPT`: a transcript re-enacted through the hooks'
//! own code (see [`crate::replay`]): a timeline, a summary, and optionally
//! JSON or an SVG plot.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use interband::context::{pct_text, tokens_text};
use interband::payloads::Level;
use interband_hosts::Host;

use crate::exit;
use crate::replay::{self, Event, Options, Replay as Run, Summary, What};

/// Files larger than this get a progress bar (on a terminal).
const PROGRESS_BAR_BYTES: u64 = 20 << 20;

/// `interband replay TRANSCRIPT`
#[derive(Args)]
pub struct Replay {
    /// The transcript to replay: a session file of any host interband
    /// knows (its place and lines tell which; `--host` names it otherwise).
    transcript: PathBuf,
    /// The context window, tokens (default: as the hook finds it: the
    /// `[interpulse] window` setting, the window a statusline reported for the
    /// transcript's model, the host's own, else 200k).
    /// `200000`, `200k`, `1m` or `1M` all name a number of tokens.
    #[arg(long, value_name = "TOKENS", value_parser = parse_tokens)]
    window: Option<u64>,
    /// The host that wrote the transcript, by its key, when its name and lines do not tell.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Host::ALL.map(|h| h.profile().key)))]
    host: Option<String>,
    /// Use the default settings, not the settings files and `INTERBAND_*` variables.
    #[arg(long)]
    defaults: bool,
    /// Print the events and the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Also draw the context used over the session into this SVG file (`.svg`).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

impl Replay {
    pub fn run(self) -> Result<u8> {
        let path = &self.transcript;
        if let Some(out) = &self.plot
            && !out
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
        {
            tell!(
                "interband: --plot writes an SVG image; name the file .svg (not {})",
                out.display()
            );
            return Ok(exit::TROUBLE);
        }
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        let bar = (len > PROGRESS_BAR_BYTES && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(len);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        let opts = Options {
            defaults: self.defaults,
            window: self.window,
            host: self.host.as_deref().and_then(Host::from_key),
        };
        let result = replay::replay(path, &opts, &mut |bytes| {
            if let Some(bar) = &bar {
                bar.set_position(bytes);
            }
        });
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let result = result?;
        if let Some(w) = self.window
            && result.summary.window != w
        {
            // The host's window order put something above the setting, or
            // the session outgrew it: said, with what the hook used instead.
            let used = result.summary.max_used_tokens.unwrap_or(0);
            let why = if used > w {
                format!(
                    "the session used {} tokens, more than that",
                    tokens_text(used)
                )
            } else {
                "the host's window order puts what the session says above it (`interband config` shows the order)".to_owned()
            };
            tell!(
                "interband replay: --window {} was not used: {why}; the window is {}, {}",
                tokens_text(w),
                tokens_text(result.summary.window),
                result
                    .summary
                    .window_source
                    .map_or("as the hook found it", |s| s.describe())
            );
        }
        if let Some(out) = &self.plot {
            std::fs::write(out, replay::plot::svg(&result, &result.thresholds))
                .with_context(|| format!("cannot write {}", out.display()))?;
        }
        if self.json {
            say_json!(serde_json::to_string_pretty(&serde_json::json!({
                "transcript": path.to_string_lossy(),
                "host": result.host,
                "events": result.events,
                "summary": result.summary,
                "series": result.series,
            }))?);
        } else {
            say_part!("{}", text(&result, &path.display().to_string()));
        }
        if !result.summary.found {
            let names: Vec<&str> = Host::ALL.iter().map(|h| h.profile().name).collect();
            let keys: Vec<&str> = Host::ALL.iter().map(|h| h.profile().key).collect();
            tell!(
                "interband: nothing to replay in {} as {}'s: no tool call, usage figure or compaction. \
                 Is it a transcript of {}? A copy out of its host's folder may need the host named: --host {}",
                path.display(),
                result.host.profile().name,
                names.join(", "),
                keys.join("|")
            );
            return Ok(exit::INVALID);
        }
        Ok(exit::OK)
    }
}

/// The timeline and the summary, as printed.
fn text(r: &Run, name: &str) -> String {
    let s = &r.summary;
    let name = interband::text::terminal(name);
    let mut out = format!(
        "replay of {name} ({}): {} lines, {} bytes\n",
        r.host.profile().name,
        s.lines,
        s.bytes
    );
    if !s.found {
        out += "nothing found: no tool call, usage figure or compaction in this transcript\n";
        return out;
    }
    out += &format!(
        "\n{:<19}  {:>6}  {:>5}  {:>6}  {:<6}  what\n",
        "time", "call", "used", "room", "level"
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
    v.map_or_else(|| "-".to_owned(), pct_text)
}

/// One timeline line: time, call, used %, usable room left %, level, what.
fn line(e: &Event) -> String {
    let time = e
        .time
        .as_deref()
        .map_or_else(|| "-".to_owned(), |t| t.replace('T', " ").replace('Z', ""));
    let what = match &e.what {
        What::LevelChange { from, to } => format!("level {} → {}", from.as_str(), to.as_str()),
        What::Warning { level, message } => format!("warning ({}): {message}", level.as_str()),
        What::Directives => "the project's directives given again".to_owned(),
        What::Checkpoint { trigger } => format!("checkpoint requested ({trigger})"),
        What::CheckpointFile => "red checkpoint file written".to_owned(),
        What::Note { trigger } => format!("memory note written ({trigger})"),
        What::Notice { message } => format!("the agent is told: {message}"),
        What::Compaction {
            trigger,
            pre_tokens,
            post_tokens,
        } => {
            // What the host says of it, as it counts: Claude Code's count
            // after is its summary's size alone, no figure of the context.
            let before = pre_tokens.map_or_else(|| "?".to_owned(), tokens_text);
            let after = post_tokens
                .map(|t| format!(", {} after by the host's count", tokens_text(t)))
                .unwrap_or_default();
            format!(
                "compaction ({}): {before} tokens before{after}",
                trigger.as_deref().unwrap_or("?"),
            )
        }
        What::Record { line, .. } => format!("record: {line}"),
        What::NoteBack { bytes } => {
            format!("the latest note comes back into the new context ({bytes} bytes)")
        }
        What::CompactTrigger { strategy } if strategy == "advise" => {
            "compaction trigger fires at the turn's end (advise)".to_owned()
        }
        What::CompactTrigger { strategy } => {
            format!("compaction trigger fires at the turn's end ({strategy}; replayed as advise)")
        }
    };
    format!(
        "{time:<19}  {:>6}  {:>5}  {:>6}  {:<6}  {what}",
        e.call,
        pct(e.used_pct),
        pct(e.usable_pct),
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
            (Some(p), Some(t)) => format!("{} ({} tokens)", pct_text(p), tokens_text(t)),
            _ => "-".to_owned(),
        },
    );
    row(
        "window",
        format!(
            "{} (compacts at {})",
            tokens_text(s.window),
            tokens_text(s.autocompact_at)
        ),
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
    row("notes brought back", s.notes_back.to_string());
    if s.records > 0 {
        row(
            "compactions recorded",
            format!(
                "{} ({} facts lost by the summary and the note)",
                s.records, s.lost_facts
            ),
        );
    }
    row("trigger firings", s.trigger_firings.to_string());
    row("final level", s.final_level.as_str().to_owned());
    if s.skipped_lines > 0 {
        row("skipped lines", s.skipped_lines.to_string());
    }
    if !s.hook_problems.is_empty() {
        row("hook problems", s.hook_problems.len().to_string());
        for p in s.hook_problems.iter().take(5) {
            row("", p.clone());
        }
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

/// A number of tokens as people write it: `200000`, `200_000`, `200,000`,
/// `200k`, `1m`, `1M`, `1.5m`. At least one.
fn parse_tokens(text: &str) -> Result<u64, String> {
    let t: String = text
        .trim()
        .chars()
        .filter(|c| !matches!(c, '_' | ','))
        .collect();
    let (digits, times) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        _ => (t.as_str(), 1.0),
    };
    let n = digits
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n > 0.0)
        .map(|n| (n * times).round())
        .filter(|n| *n >= 1.0 && *n <= u64::MAX as f64)
        .ok_or_else(|| format!("{text:?} is not a number of tokens (e.g. 200000, 200k, 1m)"))?;
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_tokens;

    #[test]
    fn windows_are_read_as_people_write_them() {
        for (text, n) in [
            ("200000", 200_000),
            ("200_000", 200_000),
            ("200,000", 200_000),
            ("200k", 200_000),
            ("200K", 200_000),
            ("1m", 1_000_000),
            ("1M", 1_000_000),
            ("1.5m", 1_500_000),
            (" 128k ", 128_000),
        ] {
            assert_eq!(parse_tokens(text), Ok(n), "{text}");
        }
        for bad in ["", "0", "-5", "k", "lots", "1e400", "0.0001"] {
            assert!(parse_tokens(bad).is_err(), "{bad}");
        }
    }
}
