//! The replay drawn as a standalone SVG document.

use std::fmt::Write as _;

use interband::context::Thresholds;
use interband::payloads::Level;

use super::{Event, Point, Replay, What};

/// Escapes text for SVG (XML) content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The raw used % of a window at which the usable share left is `usable` %:
/// `autocompact_at × (1 − usable/100) / window × 100`.
pub fn used_pct_at_usable(usable: f64, window: u64, autocompact_at: u64) -> f64 {
    if window == 0 {
        return 0.0;
    }
    (autocompact_at as f64 * (1.0 - usable / 100.0) / window as f64 * 100.0).clamp(0.0, 100.0)
}

/// A round step near `span / n` (1, 2 or 5 times a power of ten), at least 1.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn tokens_k(t: u64) -> String {
    if t >= 1_000_000 && t.is_multiple_of(1_000_000) {
        format!("{}M", t / 1_000_000)
    } else {
        format!("{}k", (t as f64 / 1000.0).round() as u64)
    }
}

/// Draws the replay as a standalone SVG document.
///
/// The x axis is the tool call number; the y axis is the raw used % of the
/// largest window the replay assumed ([`Summary::window`]). Behind the curve,
/// horizontal bands show where each level starts for that window (the usable
/// `thresholds` converted with [`used_pct_at_usable`]) and a dashed line
/// where autocompact starts. Vertical markers show warnings (coloured by level),
/// checkpoint requests, compactions and compaction-trigger firings; a legend
/// names them. Long sessions are thinned to at most two points per pixel
/// column (the lowest and highest), and markers to one per kind and column.
pub fn svg(r: &Replay, thresholds: &Thresholds) -> String {
    const W: f64 = 960.0;
    const H: f64 = 500.0;
    let (left, right, top, bottom) = (64.0, 200.0, 60.0, 56.0);
    let (pw, ph) = (W - left - right, H - top - bottom);
    let window = r.summary.window.max(1);
    let ac = r.summary.autocompact_at;
    let xmax = r
        .series
        .iter()
        .map(Point::x)
        .chain(r.events.iter().map(event_x))
        .fold(0.5f64, f64::max)
        + 0.5;
    let sx = |x: f64| left + x / xmax * pw;
    let sy = |pct: f64| top + (1.0 - pct.clamp(0.0, 100.0) / 100.0) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        "<title>{}</title>",
        escape("interband replay: context used over the session")
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>"#
    );

    // Threshold bands, in used % of the window.
    let u = thresholds.usable;
    let at = |usable: f64| used_pct_at_usable(usable, window, ac);
    let bands = [
        ("green", "#dff3df", 0.0, at(u.yellow)),
        ("yellow", "#fff4c4", at(u.yellow), at(u.orange)),
        ("orange", "#ffe1bd", at(u.orange), at(u.red)),
        ("red", "#ffd3d3", at(u.red), 100.0),
    ];
    s.push_str("<g class=\"bands\">\n");
    for (name, color, lo, hi) in bands {
        if hi > lo {
            let _ = writeln!(
                s,
                r#"<rect class="band-{name}" x="{left:.1}" y="{:.1}" width="{pw:.1}" height="{:.1}" fill="{color}"><title>{name}: {lo:.1}–{hi:.1}% used</title></rect>"#,
                sy(hi),
                sy(lo) - sy(hi)
            );
        }
    }
    let acp = at(0.0);
    // The label sits on its own white box (no halo that a renderer ignoring
    // `paint-order` would draw over the text).
    let label = format!("autocompact {acp:.1}%");
    let lw = label.len() as f64 * 6.6 + 8.0;
    let _ = writeln!(
        s,
        r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#555" stroke-dasharray="6 4"/><rect class="label-box" x="{:.1}" y="{:.1}" width="{lw:.1}" height="16" fill="white" fill-opacity="0.9"/><text class="label" x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{label}</text>"##,
        left + pw,
        left + pw - 4.0 - lw,
        sy(acp) - 18.0,
        left + pw - 8.0,
        sy(acp) - 6.0,
        y = sy(acp)
    );
    s.push_str("</g>\n");

    // Grid and axes.
    s.push_str("<g class=\"axes\" stroke=\"#999\" fill=\"#333\">\n");
    for pct in (0..=100).step_by(20) {
        let y = sy(pct as f64);
        let _ = writeln!(
            s,
            r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ccc" stroke-width="0.5"/><text x="{:.1}" y="{:.1}" text-anchor="end" stroke="none">{pct}%</text>"##,
            left + pw,
            left - 6.0,
            y + 4.0
        );
    }
    let step = nice_step(xmax, 8.0);
    let mut x = 0.0;
    while x <= xmax + 1e-9 {
        let px = sx(x);
        let _ = writeln!(
            s,
            r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" stroke="none">{x}</text>"#,
            top + ph,
            top + ph + 5.0,
            top + ph + 18.0
        );
        x += step;
    }
    let _ = writeln!(
        s,
        r#"<rect x="{left:.1}" y="{top:.1}" width="{pw:.1}" height="{ph:.1}" fill="none"/>"#
    );
    s.push_str("</g>\n");
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        H - 14.0,
        escape("tool call #")
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + ph / 2.0,
        escape(&format!(
            "context used, % of the {} window",
            tokens_k(window)
        ))
    );
    let sm = &r.summary;
    let _ = writeln!(
        s,
        r#"<text x="{left:.1}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        escape("interband replay: context used over the session")
    );
    let _ = writeln!(
        s,
        r##"<text x="{left:.1}" y="44" fill="#444">{}</text>"##,
        escape(&format!(
            "{} tool calls ({} in subagents) · {} warnings · {} checkpoints · {} notes · {} compactions · {} trigger firings",
            sm.calls,
            sm.subagent_calls,
            sm.warnings.total(),
            sm.checkpoints,
            sm.notes,
            sm.compactions,
            sm.trigger_firings
        ))
    );

    // Markers.
    s.push_str("<g class=\"markers\">\n");
    let mut seen = std::collections::HashSet::new();
    for (i, e) in r.events.iter().enumerate() {
        let (kind, color, dash, width) = match &e.what {
            What::Warning { level, .. } => ("warning", level_color(*level), "", 1.0),
            What::Checkpoint { .. } => ("checkpoint", "#6a1b9a", "4 3", 1.5),
            What::Compaction { .. } => ("compaction", "#111111", "", 2.5),
            What::CompactTrigger { .. } => ("trigger", "#d81b60", "2 2", 2.0),
            _ => continue,
        };
        let px = sx(event_x(e));
        if !seen.insert((kind, color, px.round() as i64)) {
            continue;
        }
        let dash = if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        };
        // A compaction's title is its record's last line, where interband made one.
        let record = matches!(e.what, What::Compaction { .. })
            .then(|| {
                r.events[i + 1..]
                    .iter()
                    .take_while(|n| !matches!(n.what, What::Compaction { .. }))
                    .filter_map(|n| match &n.what {
                        What::Record { line, .. } => Some(format!(": {line}")),
                        _ => None,
                    })
                    .last()
            })
            .flatten()
            .unwrap_or_default();
        let _ = writeln!(
            s,
            r#"<line class="marker-{kind}" x1="{px:.1}" y1="{top:.1}" x2="{px:.1}" y2="{:.1}" stroke="{color}" stroke-width="{width}" stroke-opacity="0.8"{dash}><title>{}</title></line>"#,
            top + ph,
            escape(&format!("{kind} at call {}{record}", e.call))
        );
    }
    s.push_str("</g>\n");

    // The curve: one polyline per run of points with a usage figure.
    s.push_str("<g class=\"series\" fill=\"none\" stroke=\"#1f4e9c\" stroke-width=\"1.8\" stroke-linejoin=\"round\">\n");
    let mut run: Vec<(f64, f64)> = Vec::new();
    let mut runs = Vec::new();
    for p in &r.series {
        match p.used_tokens {
            Some(t) => {
                let x = sx(p.x());
                // A compaction is a step down at its own x, not a slope from the call before.
                if let (true, Some(&(_, y))) = (p.after_compaction, run.last()) {
                    run.push((x, y));
                }
                run.push((x, sy(t as f64 / window as f64 * 100.0)));
            }
            None if !run.is_empty() => runs.push(std::mem::take(&mut run)),
            None => {}
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    for run in runs {
        let pts = thin(&run);
        if pts.len() == 1 {
            let _ = writeln!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#1f4e9c" stroke="none"/>"##,
                pts[0].0, pts[0].1
            );
        }
        let list: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(s, r#"<polyline class="used" points="{}"/>"#, list.join(" "));
    }
    s.push_str("</g>\n");

    // Legend: (colour, dash, width or 0 for a filled box, label).
    let lx = left + pw + 16.0;
    let mut legend: Vec<(&str, &str, f64, String)> =
        vec![("#1f4e9c", "", 1.8, "context used".to_owned())];
    for (name, color, _, _) in bands {
        legend.push((color, "", 0.0, format!("{name} zone")));
    }
    legend.push(("#555", "6 4", 1.0, "autocompact".to_owned()));
    for level in [Level::Yellow, Level::Orange, Level::Red] {
        legend.push((
            level_color(level),
            "",
            1.0,
            format!("{} warning", level.as_str()),
        ));
    }
    legend.push(("#6a1b9a", "4 3", 1.5, "checkpoint".to_owned()));
    legend.push(("#111111", "", 2.5, "compaction".to_owned()));
    legend.push(("#d81b60", "2 2", 2.0, "compaction trigger".to_owned()));
    s.push_str("<g class=\"legend\">\n");
    for (i, (color, dash, width, label)) in legend.iter().enumerate() {
        let y = top + 4.0 + i as f64 * 20.0;
        if *width == 0.0 {
            let _ = write!(
                s,
                r##"<rect x="{lx:.1}" y="{:.1}" width="22" height="12" fill="{color}" stroke="#999" stroke-width="0.5"/>"##,
                y - 6.0
            );
        } else {
            let dash = if dash.is_empty() {
                String::new()
            } else {
                format!(r#" stroke-dasharray="{dash}""#)
            };
            let _ = write!(
                s,
                r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="{width}"{dash}/>"#,
                lx + 22.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 28.0,
            y + 4.0,
            escape(label)
        );
    }
    s.push_str("</g>\n</svg>\n");
    s
}

fn level_color(level: Level) -> &'static str {
    match level {
        Level::Green => "#2e7d32",
        Level::Yellow => "#b59b00",
        Level::Orange => "#e07b00",
        Level::Red => "#c62828",
    }
}

fn event_x(e: &Event) -> f64 {
    e.call as f64
        + if matches!(e.what, What::Compaction { .. }) {
            0.5
        } else {
            0.0
        }
}

/// At most the first, lowest, highest and last point per pixel column, in order.
fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let col = points[i].0.round();
        let mut j = i;
        while j < points.len() && points[j].0.round() == col {
            j += 1;
        }
        let group = &points[i..j];
        if group.len() <= 4 {
            out.extend_from_slice(group);
        } else {
            let lo = (0..group.len())
                .min_by(|&a, &b| group[a].1.total_cmp(&group[b].1))
                .unwrap_or(0);
            let hi = (0..group.len())
                .max_by(|&a, &b| group[a].1.total_cmp(&group[b].1))
                .unwrap_or(0);
            let mut keep = vec![0, lo, hi, group.len() - 1];
            keep.sort_unstable();
            keep.dedup();
            out.extend(keep.into_iter().map(|k| group[k]));
        }
        i = j;
    }
    out
}
