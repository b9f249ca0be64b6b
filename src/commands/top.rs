//! `interband top`: every session on the bus, live, most urgent first.
//!
//! One row per session that published its pressure: host, project, model, the
//! level as a word (and a colour unless `NO_COLOR`), the share of the window
//! used with a gauge that fills as it fills, used/window, the tokens left
//! before the host compacts, calls, how long ago it was updated, and markers for a
//! saved note and a pending compaction. It redraws when the bus changes (a
//! file watch on the channels it shows, and one on the other machines'
//! values a bridge keeps), and once a second for the ages.
//! `--once` prints one snapshot as a table, `--json` as JSON.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Args, ValueEnum};
use interband::Bus;
use interband::context::tokens_text;
use interband::paths::safe_key;
use interband::payloads::{
    Checkpoint, CompactionRecord, CompactionRequested, ContextWindow, Level, MemoryNote,
    SubagentContext,
};
use interband_hosts::Host;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Row, Table, TableState};
use serde_json::{Value, json};

use crate::exit;

/// The channels the view is made of; a change to any of them redraws it.
const PATTERNS: [&str; 5] = [
    "interpulse/pressure/*",
    "interline/context/*",
    "intermem/note/*",
    "intermem/compaction/*",
    "compact/pending/*",
];

/// `interband top`
#[derive(Args)]
pub struct Top {
    /// Print one snapshot as a table and exit.
    #[arg(long)]
    once: bool,
    /// Print one snapshot as JSON and exit (with or without --once).
    #[arg(long)]
    json: bool,
    /// Show only sessions whose host, project, model or id contains this text.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// The order: most urgent first, most recently updated first, or by project.
    #[arg(long, value_enum, default_value = "urgency")]
    sort: Sort,
    /// Also the sessions that ended more than an hour ago.
    #[arg(long)]
    all: bool,
}

/// How long an ended session stays in the default view, seconds.
pub const ENDED_SHOWN_SECS: f64 = 3600.0;

/// The orders rows can be shown in.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sort {
    /// Red first, then less room before compaction first.
    Urgency,
    /// Most recently updated first.
    Recent,
    /// By project, then session.
    Project,
}

impl Sort {
    fn next(self) -> Self {
        match self {
            Sort::Urgency => Sort::Recent,
            Sort::Recent => Sort::Project,
            Sort::Project => Sort::Urgency,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Sort::Urgency => "urgency",
            Sort::Recent => "recent",
            Sort::Project => "project",
        }
    }
}

/// One session as the view shows it.
#[derive(Debug, Clone)]
pub struct Session {
    session: String,
    host: String,
    project: String,
    model: String,
    pressure: interband::payloads::Pressure,
    age_secs: f64,
    note: Option<MemoryNote>,
    pending: Option<CompactionRequested>,
    checkpoint: Option<Checkpoint>,
    compaction: Option<CompactionRecord>,
    /// Its subagents still running, as their own calls published them.
    subagents: Vec<SubagentContext>,
}

impl Session {
    fn level(&self) -> Level {
        self.pressure.level
    }

    fn used(&self) -> String {
        interpulse::dashboard::used_of_window(&self.pressure)
    }

    /// The share of the window used, with a gauge that fills as it fills.
    fn used_share(&self) -> String {
        match interpulse::dashboard::used_share(&self.pressure) {
            Some(u) => format!("{} {:>4}", gauge(u, 10), interband::context::pct_text(u)),
            None => format!("{}    ?", "·".repeat(10)),
        }
    }

    /// The figure in the words warnings and notes use, when it is known.
    fn figure(&self) -> String {
        let p = &self.pressure;
        match (p.used_tokens, p.window, p.compact_at) {
            (Some(u), Some(w), Some(c)) => match (p.window_other, p.compact_at_other) {
                (Some(o), Some(oc)) if o != w => {
                    interband::context::describe_either(u, (o, oc), (w, c))
                }
                _ => interband::context::describe(u, w, c),
            },
            _ => self.used(),
        }
    }

    /// The tokens left before the host compacts.
    fn to_compact(&self) -> String {
        interpulse::dashboard::to_compact(&self.pressure).map_or("-".into(), tokens_text)
    }

    /// Seconds since the agent was last warned in this context, when it was.
    fn warned_ago(&self) -> Option<f64> {
        Some(self.ago(self.pressure.warned_at? as f64))
    }

    /// When the session's latest values were written, newest first: Unix
    /// seconds and what happened.
    fn events(&self) -> Vec<(f64, String)> {
        let p = &self.pressure;
        let mut list = vec![(p.ts, format!("pressure {}", p.level.as_str()))];
        if let (Some(at), Some(level)) = (p.warned_at, p.warned_level) {
            list.push((at as f64, format!("warned ({})", level.as_str())));
        }
        if let Some(c) = &self.checkpoint {
            list.push((c.ts, format!("checkpoint requested ({})", c.trigger)));
        }
        if let Some(n) = &self.note {
            list.push((n.ts, format!("note written ({}): {}", n.trigger, n.path)));
        }
        if let Some(c) = &self.pending {
            list.push((c.ts, format!("compaction requested ({})", c.strategy)));
        }
        if let Some(c) = &self.compaction {
            list.push((c.ts, interband_consumers::summary::record::line(c)));
        }
        list.sort_by(|a, b| b.0.total_cmp(&a.0));
        list
    }

    /// Seconds ago, by this view's clock (the pressure's age tells it).
    fn ago(&self, ts: f64) -> f64 {
        (self.pressure.ts + self.age_secs - ts).max(0.0).round()
    }

    /// The agent CLI whose session it is, as its hook said (else its
    /// transcript's place tells).
    fn agent(&self) -> Option<Host> {
        match self.pressure.agent.as_deref() {
            Some(a) => Host::from_key(a),
            // Published before the producer said it.
            None => Host::of_transcript(self.pressure.transcript_path.as_deref()?),
        }
    }

    /// "✎" a memory note is saved, "⟳ /compact" compacting is advised (the
    /// host's own command); see [`LEGEND`].
    fn markers(&self) -> String {
        let mut m = Vec::new();
        if self.note.is_some() {
            m.push("✎".to_owned());
        }
        if self.pending.is_some() || self.level() == Level::Red && self.pressure.ended_at.is_none()
        {
            let command = self
                .agent()
                .map_or("/compact", |h| h.profile().compact_command);
            m.push(format!("⟳ {command}"));
        }
        m.join(" ")
    }

    fn matches(&self, text: &str) -> bool {
        let t = text.to_lowercase();
        [&self.session, &self.host, &self.project, &self.model]
            .iter()
            .any(|f| f.to_lowercase().contains(&t))
    }

    fn json(&self) -> Value {
        let p = &self.pressure;
        json!({
            "subagents": self.subagents.iter().map(|a| json!({
                "agent": a.agent, "agent_type": a.agent_type, "model": a.model,
                "used_tokens": a.used_tokens, "window": a.window, "calls": a.calls,
                "updated_secs_ago": (self.pressure.ts + self.age_secs - a.ts).max(0.0).round(),
            })).collect::<Vec<_>>(),
            "session": self.session, "host": self.host, "machine": self.host,
            "agent": self.agent().map(Host::as_str), "project": self.project,
            "model": self.model, "level": p.level.as_str(),
            "used_pct": interpulse::dashboard::used_share(p).map(interband::context::percent),
            "to_compact_tokens": interpulse::dashboard::to_compact(p),
            "usable_pct": p.context_usable, "compact_at": p.compact_at,
            "used_tokens": p.used_tokens, "window": p.window, "window_source": p.window_source,
            "level_if_smaller": p.level_if_smaller, "compact_at_other": p.compact_at_other,
            "window_other": p.window_other, "calls": p.calls,
            "source": p.source, "age_secs": self.age_secs.round(), "ended_at": p.ended_at,
            "warned_secs_ago": self.warned_ago(),
            "note": self.note.as_ref().map(|n| &n.path),
            "compaction_pending": self.pending.as_ref().map(|c| &c.strategy),
            "compaction": self.compaction.as_ref().map(super::pulse::compaction_json),
            "last_events": self.events().iter().map(|(ts, what)| json!({
                "secs_ago": self.ago(*ts), "what": what,
            })).collect::<Vec<_>>(),
        })
    }
}

/// A `width`-cell gauge that fills as the context fills.
fn gauge(pct: f64, width: usize) -> String {
    let full = ((pct.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
    format!("{}{}", "█".repeat(full), "░".repeat(width - full))
}

fn or_dash(text: &str) -> String {
    if text.is_empty() {
        "-".to_owned()
    } else {
        text.to_owned()
    }
}

pub fn age(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{s:.0}s"),
        s if s < 5400.0 => format!("{:.0}m", s / 60.0),
        s => format!("{:.1}h", s / 3600.0),
    }
}

/// Every session with a published pressure, in `sort` order, those matching `filter`.
pub fn snapshot(bus: &Bus, now: f64, sort: Sort, filter: Option<&str>) -> Vec<Session> {
    snapshot_of(bus, now, sort, filter, false)
}

/// [`snapshot`], with the sessions that ended long ago too when `all`.
pub fn snapshot_of(
    bus: &Bus,
    now: f64,
    sort: Sort,
    filter: Option<&str>,
    all: bool,
) -> Vec<Session> {
    let host = interband_bridge::host_name();
    let mut list: Vec<Session> = interpulse::dashboard::rows(bus, now)
        .into_iter()
        .map(|r| {
            let key = safe_key(&r.session);
            // The statusline's name for it, else the transcript's (every
            // host, headless runs too), as the producer published it.
            let model = bus
                .read_typed::<ContextWindow>(&key)
                .ok()
                .and_then(|e| e.payload.model)
                .or_else(|| r.pressure.model.clone())
                .unwrap_or_default();
            let project = r
                .pressure
                .cwd
                .as_deref()
                .and_then(|c| std::path::Path::new(c).file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Session {
                note: bus.read_typed::<MemoryNote>(&key).ok().map(|e| e.payload),
                pending: bus
                    .read_typed::<CompactionRequested>(&key)
                    .ok()
                    .map(|e| e.payload),
                checkpoint: bus.read_typed::<Checkpoint>(&key).ok().map(|e| e.payload),
                compaction: super::pulse::compaction(bus, &r.session),
                subagents: SubagentContext::running(bus, &r.session, now),
                session: r.session,
                host: host.clone(),
                project,
                model,
                pressure: r.pressure,
                age_secs: r.age_secs,
            }
        })
        .chain(remote_sessions(bus, now))
        .filter(|s| filter.is_none_or(|f| s.matches(f)))
        .filter(|s| {
            all || s
                .pressure
                .ended_at
                .is_none_or(|t| now - t as f64 <= ENDED_SHOWN_SECS)
        })
        .collect();
    match sort {
        Sort::Urgency => list.sort_by(|a, b| {
            // Live sessions first: an ended one needs nobody.
            (a.pressure.ended_at.is_some())
                .cmp(&b.pressure.ended_at.is_some())
                .then_with(|| b.level().cmp(&a.level()))
                .then_with(|| {
                    let room = |s: &Session| s.pressure.context_usable.unwrap_or(f64::INFINITY);
                    room(a).total_cmp(&room(b))
                })
                .then_with(|| a.age_secs.total_cmp(&b.age_secs))
        }),
        Sort::Recent => list.sort_by(|a, b| a.age_secs.total_cmp(&b.age_secs)),
        Sort::Project => list.sort_by(|a, b| {
            (a.project.as_str(), a.session.as_str()).cmp(&(b.project.as_str(), b.session.as_str()))
        }),
    }
    list
}

/// The sessions of other machines, as a running `interband bridge` keeps them.
fn remote_sessions(bus: &Bus, now: f64) -> Vec<Session> {
    let of = |ns: &str, ch: &str| interband_bridge::remote_messages(bus, ns, ch);
    let models = of("interline", "context");
    let notes = of("intermem", "note");
    let pending = of("compact", "pending");
    let checkpoints = of("interpulse", "checkpoint");
    let compactions = of("intermem", "compaction");
    fn find<T: serde::de::DeserializeOwned>(
        list: &[(String, interband::Message)],
        host: &str,
        key: &str,
    ) -> Option<T> {
        list.iter()
            .find(|(h, m)| h == host && m.path.file_stem().is_some_and(|s| s == key))
            .and_then(|(_, m)| serde_json::from_value(m.envelope.payload.clone()).ok())
    }
    of("interpulse", "pressure")
        .into_iter()
        .filter_map(|(host, m)| {
            let key = m.path.file_stem()?.to_string_lossy().into_owned();
            let pressure: interband::payloads::Pressure =
                serde_json::from_value(m.envelope.payload).ok()?;
            Some(Session {
                project: pressure
                    .cwd
                    .as_deref()
                    .and_then(|c| std::path::Path::new(c).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                model: find::<ContextWindow>(&models, &host, &key)
                    .and_then(|c| c.model)
                    .or_else(|| pressure.model.clone())
                    .unwrap_or_default(),
                note: find(&notes, &host, &key),
                pending: find(&pending, &host, &key),
                checkpoint: find(&checkpoints, &host, &key),
                compaction: find(&compactions, &host, &key),
                // (Another machine's subagents are not bridged.)
                subagents: Vec::new(),
                age_secs: (now - pressure.ts).max(0.0),
                session: m.envelope.session_id,
                host,
                pressure,
            })
        })
        .collect()
}

const HEADER: [&str; 13] = [
    "MACHINE",
    "AGENT",
    "PROJECT",
    "MODEL",
    "LEVEL",
    "CONTEXT",
    "TOKENS",
    "TO COMPACT",
    "CALLS",
    "WARNED",
    "UPDATED",
    "MARKS",
    "SESSION",
];

/// What the MARKS column's signs mean.
const LEGEND: &str =
    "marks: ✎ a memory note is saved · ⟳ compacting is advised, with the agent's own command";

fn cells(s: &Session) -> [String; 13] {
    [
        s.host.clone(),
        s.agent()
            .map_or_else(|| "-".to_owned(), |h| h.as_str().to_owned()),
        or_dash(&s.project),
        or_dash(&s.model),
        if s.pressure.ended_at.is_some() {
            "ENDED".to_owned()
        } else {
            interpulse::dashboard::level_text(&s.pressure)
        },
        s.used_share(),
        s.used(),
        s.to_compact(),
        s.pressure.calls.map_or("-".into(), |c| c.to_string()),
        s.warned_ago().map_or("-".into(), age),
        age(s.age_secs),
        s.markers(),
        s.session.chars().take(8).collect(),
    ]
}

/// A subagent's row, under its session's: who it is (in PROJECT), its
/// model, its own figure, its calls and age; no level (it never moves its
/// parent's).
fn subagent_cells(s: &Session, a: &SubagentContext) -> [String; 13] {
    let share = a
        .used_tokens
        .zip(a.window)
        .map(|(u, w)| 100.0 * u as f64 / w.max(1) as f64);
    let who = format!(
        "└ {} {}",
        a.agent_type.as_deref().unwrap_or("subagent"),
        a.agent.chars().take(6).collect::<String>()
    );
    [
        String::new(),
        String::new(),
        who,
        a.model.clone().unwrap_or_else(|| "-".into()),
        "agent".into(),
        match share {
            Some(u) => format!("{} {:>4}", gauge(u, 10), interband::context::pct_text(u)),
            None => format!("{}    ?", "·".repeat(10)),
        },
        match (a.used_tokens, a.window) {
            (Some(u), Some(w)) => format!("{}/{}", tokens_text(u), tokens_text(w)),
            (Some(u), None) => tokens_text(u),
            _ => "-".into(),
        },
        "-".into(),
        a.calls.to_string(),
        "-".into(),
        age(s.ago(a.ts)),
        String::new(),
        String::new(),
    ]
}

/// Every row of the table: each session's, then its subagents'.
fn all_rows(list: &[Session]) -> Vec<[String; 13]> {
    list.iter()
        .flat_map(|s| {
            std::iter::once(cells(s)).chain(s.subagents.iter().map(|a| subagent_cells(s, a)))
        })
        .collect()
}

impl Top {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        if self.once || self.json {
            let list = snapshot_of(
                &bus,
                super::pulse::now(),
                self.sort,
                self.filter.as_deref(),
                self.all,
            );
            if self.json {
                say_json!(Value::Array(list.iter().map(Session::json).collect()));
            } else {
                print_table(&list);
                if list.is_empty() {
                    say!("{}", empty_view(&bus, self.filter.as_deref()));
                }
            }
            return Ok(exit::OK);
        }
        live(&bus, self.sort, self.filter.unwrap_or_default())
    }
}

/// The snapshot as aligned columns, every field terminal-safe.
fn print_table(list: &[Session]) {
    let rows = all_rows(list);
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |fields: Vec<&str>| {
        let cols: Vec<String> = fields
            .iter()
            .zip(&widths)
            .map(|(f, w)| format!("{f:<w$}"))
            .collect();
        say!("{}", cols.join("  ").trim_end());
    };
    line(HEADER.to_vec());
    for r in &rows {
        line(r.iter().map(String::as_str).collect());
    }
    if list.iter().any(|s| !s.markers().is_empty()) {
        say!("{LEGEND}");
    }
}

/// What an empty table means: no session at all, or none the filter matches.
fn empty_view(bus: &Bus, filter: Option<&str>) -> String {
    let all = match filter {
        Some(_) => snapshot(bus, super::pulse::now(), Sort::Urgency, None).len(),
        None => 0,
    };
    match filter {
        Some(f) if all > 0 => format!(
            "no session matches --filter {f:?} ({all} session{} in all; the filter looks at session id, host, project and model)",
            if all == 1 { "" } else { "s" }
        ),
        _ => super::install::doctor::no_sessions_yet(),
    }
}

/// What the live view is showing.
struct Ui {
    sort: Sort,
    filter: String,
    editing_filter: bool,
    details: bool,
    table: TableState,
    color: bool,
}

fn level_style(level: Level, color: bool) -> Style {
    if !color {
        return Style::default().add_modifier(Modifier::BOLD);
    }
    let c = match level {
        Level::Green => Color::Green,
        Level::Yellow => Color::Yellow,
        Level::Orange => Color::Indexed(208),
        Level::Red => Color::Red,
    };
    Style::default().fg(c).add_modifier(Modifier::BOLD)
}

fn live(bus: &Bus, sort: Sort, filter: String) -> Result<u8> {
    let mut sub = interband::Subscription::new(
        bus,
        &PATTERNS,
        interband::WatchOptions {
            initial: false,
            ..Default::default()
        },
    )?;
    // Other machines' values, as the bridge keeps them: outside the
    // channels, so watched apart (never through a link).
    let (remote_tx, remote) = std::sync::mpsc::channel();
    let _remote_watch = bus
        .dir(&[interband_bridge::REMOTE], true)
        .ok()
        .and_then(|d| {
            use notify::Watcher as _;
            let config = notify::Config::default().with_follow_symlinks(false);
            let mut w = notify::RecommendedWatcher::new(remote_tx, config).ok()?;
            w.watch(d.path(), notify::RecursiveMode::Recursive).ok()?;
            Some(w)
        });
    let mut ui = Ui {
        sort,
        filter,
        editing_filter: false,
        details: false,
        table: TableState::default().with_selected(Some(0)),
        color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let mut terminal = ratatui::init();
    let result = (|| -> Result<()> {
        let mut dirty = true;
        let mut drawn = Instant::now();
        let mut list = Vec::new();
        loop {
            if dirty || drawn.elapsed() >= Duration::from_secs(1) {
                let f = (!ui.filter.is_empty()).then_some(ui.filter.as_str());
                list = snapshot(bus, super::pulse::now(), ui.sort, f);
                terminal.draw(|frame| draw(frame, &list, &mut ui))?;
                drawn = Instant::now();
                dirty = false;
            }
            // Keys, for at most a tenth of a second; then whatever the bus said meanwhile.
            if event::poll(Duration::from_millis(100))?
                && let Event::Key(k) = event::read()?
                && k.kind == KeyEventKind::Press
            {
                dirty = true;
                if ui.editing_filter {
                    match k.code {
                        KeyCode::Enter | KeyCode::Esc => ui.editing_filter = false,
                        KeyCode::Backspace => {
                            ui.filter.pop();
                        }
                        KeyCode::Char(c) => ui.filter.push(c),
                        _ => {}
                    }
                    continue;
                }
                match k.code {
                    KeyCode::Char('q') => return Ok(()),
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(());
                    }
                    KeyCode::Esc if ui.details => ui.details = false,
                    KeyCode::Esc => return Ok(()),
                    KeyCode::Char('/') => ui.editing_filter = true,
                    KeyCode::Char('s') => ui.sort = ui.sort.next(),
                    KeyCode::Enter => ui.details = !ui.details,
                    KeyCode::Down | KeyCode::Char('j') => {
                        let n = list.len().max(1);
                        ui.table
                            .select(Some(ui.table.selected().map_or(0, |i| (i + 1) % n)));
                    }
                    KeyCode::Up | KeyCode::Char('k') => {
                        let n = list.len().max(1);
                        ui.table
                            .select(Some(ui.table.selected().map_or(0, |i| (i + n - 1) % n)));
                    }
                    _ => {}
                }
            }
            while sub.next(Duration::ZERO)?.is_some() {
                dirty = true;
            }
            while remote.try_recv().is_ok() {
                dirty = true;
            }
        }
    })();
    ratatui::restore();
    result.map(|()| exit::OK)
}

fn draw(frame: &mut ratatui::Frame, list: &[Session], ui: &mut Ui) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(if ui.details { 12 } else { 1 }),
    ])
    .areas(frame.area());
    // An ended session's level is its last: the counts are the live ones'.
    let live = |s: &&Session| s.pressure.ended_at.is_none();
    let count = |l: Level| list.iter().filter(live).filter(|s| s.level() == l).count();
    let ended = list.len() - list.iter().filter(live).count();
    let summary = format!(
        " interband top · {} sessions · {} red · {} orange · {} yellow{} · sort: {}{}",
        list.len(),
        count(Level::Red),
        count(Level::Orange),
        count(Level::Yellow),
        if ended > 0 {
            format!(" · {ended} ended")
        } else {
            String::new()
        },
        ui.sort.name(),
        if ui.filter.is_empty() {
            String::new()
        } else {
            format!(" · filter: {}", ui.filter)
        }
    );
    frame.render_widget(Paragraph::new(safe(&summary)), head);
    let rows = list.iter().flat_map(|s| {
        let own = cells(s);
        let row = Row::new(own.into_iter().enumerate().map(|(i, text)| {
            let span = Span::raw(safe(&text));
            if i == 4 {
                span.style(level_style(s.level(), ui.color))
            } else {
                span
            }
        }));
        std::iter::once(row).chain(
            s.subagents
                .iter()
                .map(|a| Row::new(subagent_cells(s, a).map(|t| Span::raw(safe(&t))))),
        )
    });
    // The selection is a session's: its row, past the subagents' above it.
    let row_of = |i: usize| {
        i + list
            .iter()
            .take(i)
            .map(|s| s.subagents.len())
            .sum::<usize>()
    };
    let mut shown = TableState::default().with_selected(ui.table.selected().map(row_of));
    let widths = [
        Constraint::Length(10),
        Constraint::Length(7),
        Constraint::Length(16),
        Constraint::Length(24),
        Constraint::Length(7),
        Constraint::Length(16),
        Constraint::Length(12),
        Constraint::Length(10),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(14),
        Constraint::Length(9),
    ];
    let highlight = if ui.color {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default().add_modifier(Modifier::UNDERLINED)
    };
    let table = Table::new(rows, widths)
        .header(Row::new(HEADER).style(Style::default().add_modifier(Modifier::BOLD)))
        .row_highlight_style(highlight);
    frame.render_stateful_widget(table, body, &mut shown);
    if ui.details {
        let selected = ui.table.selected().and_then(|i| list.get(i));
        let text: Vec<Line> = match selected {
            Some(s) => vec![
                Line::from(safe(&format!("session     {}", s.session))),
                Line::from(safe(&format!(
                    "project     {}",
                    s.pressure.cwd.as_deref().unwrap_or("-")
                ))),
                Line::from(safe(&format!(
                    "transcript  {}",
                    s.pressure.transcript_path.as_deref().unwrap_or("-")
                ))),
                Line::from(safe(&format!(
                    "figure      {} ({})",
                    s.figure(),
                    s.pressure.source.as_deref().unwrap_or("estimate")
                ))),
                Line::from(safe(&format!(
                    "latest note {}",
                    s.note.as_ref().map_or("-", |n| n.path.as_str())
                ))),
            ]
            .into_iter()
            .chain(s.events().iter().take(5).map(|(ts, what)| {
                Line::from(safe(&format!("{:>10}  {what}", age(s.ago(*ts)) + " ago")))
            }))
            .collect(),
            None => vec![Line::from("no session selected")],
        };
        frame.render_widget(
            Paragraph::new(text)
                .block(Block::bordered().title(" details (Enter or Esc to close) ")),
            foot,
        );
    } else {
        let keys = if ui.editing_filter {
            format!(" filter: {}▏ (Enter to apply)", ui.filter)
        } else {
            format!(" q quit · / filter · s sort · ↑↓ select · Enter details · {LEGEND}")
        };
        frame.render_widget(Paragraph::new(safe(&keys)), foot);
    }
}

/// Text from the bus, with its control characters shown escaped.
fn safe(text: &str) -> String {
    interband::text::terminal(text).into_owned()
}
