//! The producer's commands: `thresholds`, `pressure`.

use anyhow::Result;
use clap::Args;
use interband::Bus;
use interband::payloads::{CompactionRecord, Kept};
use interband::settings::ProcessEnv;
use interband_consumers::summary::record;
use interpulse::config::Config;

use crate::exit;

pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `interband thresholds`: the thresholds in force, as JSON or a table.
#[derive(Args)]
pub struct Thresholds {
    /// Print the markdown table (docs/hooks.md carries the default one).
    #[arg(long)]
    markdown: bool,
}

impl Thresholds {
    pub fn run(self) -> Result<u8> {
        let project = std::env::current_dir().ok();
        let files = interband::settings::Files::read(project.as_deref(), &ProcessEnv);
        let cfg = Config::load_from(&files, &ProcessEnv);
        // As `interband config`: the thresholds in force are shown, and any
        // problem with the settings (any part's) makes it exit 1.
        let theirs =
            interband_consumers::hooks::AllSettings::load_from(&files, &ProcessEnv).problems();
        let problems = super::config::problems(&files, &[&cfg.problems, &theirs]);
        for p in &problems {
            tell!("interband: {p}");
        }
        let t = cfg.value.thresholds;
        if self.markdown {
            say_part!("{}", t.markdown());
        } else {
            let v = super::config::whole(&serde_json::to_value(t)?);
            say_json!(serde_json::to_string_pretty(&v)?);
        }
        Ok(if problems.is_empty() {
            exit::OK
        } else {
            exit::INVALID
        })
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
        // With --all, the sessions of other machines too, as a running bridge keeps them.
        let remote: Vec<(String, interpulse::dashboard::Row)> = if self.all {
            let now = now();
            interband_bridge::remote_messages(&bus, "interpulse", "pressure")
                .into_iter()
                .filter_map(|(host, m)| {
                    let pressure: interband::payloads::Pressure =
                        serde_json::from_value(m.envelope.payload).ok()?;
                    let row = interpulse::dashboard::Row {
                        session: m.envelope.session_id,
                        age_secs: (now - pressure.ts).max(0.0),
                        pressure,
                    };
                    Some((host, row))
                })
                .collect()
        } else {
            Vec::new()
        };
        if self.json {
            let mut list: Vec<_> = rows
                .iter()
                .map(|r| {
                    let mut v = interpulse::dashboard::json(r);
                    if let Some(c) = compaction(&bus, &r.session) {
                        v["compaction"] = compaction_json(&c);
                    }
                    v
                })
                .collect();
            for (host, r) in &remote {
                let mut v = interpulse::dashboard::json(r);
                v["host"] = serde_json::Value::String(host.clone());
                list.push(v);
            }
            say_json!(serde_json::Value::Array(list));
        } else if rows.is_empty() && remote.is_empty() {
            say!("{}", super::install::doctor::no_sessions_yet());
        } else {
            for r in &rows {
                say!("{}", interpulse::dashboard::line(r));
                if let Some(c) = compaction(&bus, &r.session) {
                    say!("  last compaction: {}", record::line(&c));
                }
            }
            for (host, r) in &remote {
                say!("{host}: {}", interpulse::dashboard::line(r));
            }
        }
        Ok(exit::OK)
    }
}

/// A session's latest compaction record, if it has one.
pub fn compaction(bus: &Bus, session: &str) -> Option<CompactionRecord> {
    record::read(bus, &interband::paths::safe_key(session))
}

/// A compaction record as `pressure --json` and `top --json` show it: its
/// line and its counts.
pub fn compaction_json(c: &CompactionRecord) -> serde_json::Value {
    serde_json::json!({
        "line": record::line(c),
        "facts": c.facts.len(),
        "kept_by_summary": c.count(Kept::Summary),
        "brought_back_by_note": c.count(Kept::Note),
        "lost": c.count(Kept::Lost),
        "summary_read": c.summary_read,
        "settled": c.settled,
        "tokens_before": c.tokens_before,
        "ts": c.ts,
    })
}
