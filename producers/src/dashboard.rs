//! `interband pressure`: each session's level, the share of its window used,
//! tokens, the room left before compaction, source, calls and age, from the `interpulse/pressure` channel.

use interband::Bus;
use interband::context::tokens_text;
use interband::payloads::{Payload, Pressure};
use serde_json::{Value, json};

/// One session's row.
#[derive(Debug, Clone)]
pub struct Row {
    /// The session.
    pub session: String,
    /// Its last published pressure.
    pub pressure: Pressure,
    /// Seconds since it was published.
    pub age_secs: f64,
}

/// Every session's latest pressure, most recent first.
pub fn rows(bus: &Bus, now: f64) -> Vec<Row> {
    let keys = bus
        .keys(Pressure::NAMESPACE, Pressure::CHANNEL)
        .unwrap_or_default();
    let mut rows: Vec<Row> = keys
        .iter()
        .filter_map(|key| {
            let env = bus.read_typed::<Pressure>(key).ok()?;
            Some(Row {
                session: env.session_id,
                age_secs: (now - env.payload.ts).max(0.0),
                pressure: env.payload,
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        a.age_secs
            .total_cmp(&b.age_secs)
            .then_with(|| a.session.cmp(&b.session))
    });
    rows
}

/// A 20-cell bar of `pct`.
pub fn bar(pct: f64) -> String {
    let full = ((pct.clamp(0.0, 100.0) / 5.0).round()) as usize;
    format!("[{}{}]", "█".repeat(full), "░".repeat(20 - full))
}

fn age(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{s:.0}s ago"),
        s if s < 5400.0 => format!("{:.0}m ago", s / 60.0),
        s => format!("{:.1}h ago", s / 3600.0),
    }
}

/// One line for a row: the share of the window used with a bar that fills as
/// the context fills, tokens used of the window, and the tokens left before
/// the host compacts (the statusline's words).
///
/// ```
/// use interband::payloads::{Level, Pressure};
/// let p = Pressure { level: Level::Orange, context_usable: Some(16.0), used_tokens: Some(140_000),
///     window: Some(200_000), compact_at: Some(167_000), source: Some("transcript".into()),
///     calls: Some(42), heavy_calls: Some(12), ..Default::default() };
/// let row = interpulse::dashboard::Row { session: "abc".into(), pressure: p, age_secs: 3.0 };
/// let line = interpulse::dashboard::line(&row);
/// assert!(line.contains("ORANGE") && line.contains(" 70% used [██████████████░░░░░░]"), "{line}");
/// assert!(line.contains("140k/200k") && line.contains("27k to compact"), "{line}");
/// assert!(line.contains("42 calls (12 heavy)") && line.contains("3s ago"));
/// let evil = interpulse::dashboard::Row { session: "\x1b[31mX\r".into(), ..row };
/// assert!(interpulse::dashboard::line(&evil).starts_with("?[31mX?"));
/// ```
pub fn line(r: &Row) -> String {
    let p = &r.pressure;
    let used = match used_share(p) {
        Some(u) => format!("{:>4} used {}", interband::context::pct_text(u), bar(u)),
        None => format!("   ? used {}", "[....................]"),
    };
    let tokens = used_of_window(p);
    let left = to_compact(p).map_or("? to compact".to_owned(), |t| {
        format!("{} to compact", tokens_text(t))
    });
    format!(
        "{:<12} {:<6} {used} {tokens:>11} {left:>15} {:<10} {} calls ({} heavy), pressure {:.0}, {}",
        short(&r.session),
        if p.ended_at.is_some() {
            "ENDED".to_owned()
        } else {
            level_text(p)
        },
        short(p.source.as_deref().unwrap_or("?")),
        p.calls.unwrap_or(0),
        p.heavy_calls.unwrap_or(0),
        p.pressure,
        age(r.age_secs)
    )
}

/// The share of the window used, percent, when the figures are known.
///
/// ```
/// use interband::payloads::Pressure;
/// let p = Pressure { used_tokens: Some(155_377), window: Some(200_000), ..Default::default() };
/// assert_eq!(interpulse::dashboard::used_share(&p).map(|u| u.round()), Some(78.0));
/// assert_eq!(interpulse::dashboard::used_share(&Pressure::default()), None);
/// ```
pub fn used_share(p: &Pressure) -> Option<f64> {
    Some(interband::context::used_share(p.used_tokens?, p.window?))
}

/// The tokens left before the host compacts, when the figures are known.
///
/// ```
/// use interband::payloads::Pressure;
/// let p = Pressure { used_tokens: Some(155_377), compact_at: Some(167_000), ..Default::default() };
/// assert_eq!(interpulse::dashboard::to_compact(&p), Some(11_623));
/// ```
pub fn to_compact(p: &Pressure) -> Option<u64> {
    Some(p.compact_at?.saturating_sub(p.used_tokens?))
}

/// Tokens used of the window (`140k/200k`; a window that is a guess shows
/// both, `175k/200k or 1M`, or is marked `?`), else the heuristic's estimate.
///
/// ```
/// use interband::payloads::Pressure;
/// let mut p = Pressure { used_tokens: Some(175_000), window: Some(1_000_000), ..Default::default() };
/// assert_eq!(interpulse::dashboard::used_of_window(&p), "175k/1M");
/// p.window_source = Some("guess".into());
/// assert_eq!(interpulse::dashboard::used_of_window(&p), "175k/1M?");
/// p.window_other = Some(200_000);
/// assert_eq!(interpulse::dashboard::used_of_window(&p), "175k/200k or 1M");
/// ```
pub fn used_of_window(p: &interband::payloads::Pressure) -> String {
    let guess = p.window_source.as_deref() == Some("guess");
    match (p.used_tokens, p.window) {
        (Some(u), Some(w)) if guess && p.window_other.is_some_and(|o| o != w) => {
            format!(
                "{}/{} or {}",
                tokens_text(u),
                tokens_text(p.window_other.unwrap_or(w)),
                tokens_text(w)
            )
        }
        (Some(u), Some(w)) => format!(
            "{}/{}{}",
            tokens_text(u),
            tokens_text(w),
            if guess { "?" } else { "" }
        ),
        _ => format!("~{} est.", tokens_text(p.est_tokens as u64)),
    }
}

/// The level as a word, with the level the smaller window would mean when
/// the window is a guess and that one is higher: `GREEN (RED if 200k)`.
///
/// ```
/// use interband::payloads::{Level, Pressure};
/// let mut p = Pressure { level: Level::Green, window_other: Some(200_000), ..Default::default() };
/// assert_eq!(interpulse::dashboard::level_text(&p), "GREEN");
/// p.level_if_smaller = Some(Level::Red);
/// assert_eq!(interpulse::dashboard::level_text(&p), "GREEN (RED if 200k)");
/// ```
pub fn level_text(p: &interband::payloads::Pressure) -> String {
    let word = |l: interband::payloads::Level| l.as_str().to_uppercase();
    match (p.level_if_smaller, p.window_other) {
        (Some(l), Some(o)) if l > p.level => {
            format!("{} ({} if {})", word(p.level), word(l), tokens_text(o))
        }
        _ => word(p.level),
    }
}

/// The first 12 characters, control and bidirectional characters shown as `?`: a session id
/// comes from the bus and must not drive the terminal.
fn short(s: &str) -> String {
    s.chars()
        .take(12)
        .map(|c| {
            if interband::text::is_unsafe(c) {
                '?'
            } else {
                c
            }
        })
        .collect()
}

/// A row as JSON: at least `session`, `level`, `calls`, `source`.
pub fn json(r: &Row) -> Value {
    let p = &r.pressure;
    json!({
        "session": r.session, "level": p.level, "calls": p.calls.unwrap_or(0),
        "heavy_calls": p.heavy_calls.unwrap_or(0), "source": p.source.as_deref().unwrap_or("heuristic"),
        "used_pct": used_share(p).map(interband::context::percent), "to_compact_tokens": to_compact(p),
        "usable_pct": p.context_usable, "raw_remaining_pct": p.context_raw, "used_tokens": p.used_tokens,
        "window": p.window, "compact_at": p.compact_at, "window_source": p.window_source, "window_other": p.window_other,
        "compact_at_other": p.compact_at_other, "level_if_smaller": p.level_if_smaller,
        "pressure": p.pressure, "est_tokens": p.est_tokens, "age_secs": r.age_secs.round(),
        "ended_at": p.ended_at,
    })
}
