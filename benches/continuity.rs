//! Continuity: what survives a compaction. Over real Claude Code transcripts
//! with compactions (`benches/continuity/transcripts/`, and the `.jsonl`
//! files of `$INTERBAND_CONTINUITY_EXTRA`, see `benches/continuity/SOURCES.md`),
//! for each compaction: the facts of the context it replaced (every user
//! request, the files changed, the commands run, those that failed, the open
//! todos, the step in progress), and the share of them found in the host's
//! own summary (the `isCompactSummary` line after the boundary) and in that
//! summary plus the note interband writes at `PreCompact` (from the
//! transcript as it stood at the boundary, at the default settings, as it
//! comes back: led by the facts of interband's own compaction record that
//! the summary dropped, then the note, cut at `inject_max_bytes` in all).
//!
//! A fact is found in a text when the file's name is in it (a changed file),
//! or when at least [`FOUND`] of the fact's words are (anything else): words
//! are lower-cased runs of three or more letters or digits, and each pair of
//! adjacent CJK characters. The facts are read from the transcript here, not
//! by interband's own reader, so the note is measured against what happened,
//! not against what interband looks for.
//!
//! A benchmark, not a test: it prints a table and exits 0 unless a file cannot
//! be read. Run: `cargo bench --bench continuity`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use interband_consumers::digest::{Limits, digest_as};
use interband_consumers::intermem::{self, SessionInfo, Trigger};
use interband_consumers::summary::{self, record};
use interband_hosts::Host;
use serde_json::Value;

/// The share of a fact's words a text must hold for the fact to be found in it.
const FOUND: f64 = 0.6;
/// The most words of a fact that count (a long prompt is found by its start).
const MAX_WORDS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Request,
    File,
    Command,
    Failed,
    Todo,
    Step,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Request,
        Kind::File,
        Kind::Command,
        Kind::Failed,
        Kind::Todo,
        Kind::Step,
    ];
    fn name(self) -> &'static str {
        match self {
            Kind::Request => "user requests",
            Kind::File => "files changed",
            Kind::Command => "commands run",
            Kind::Failed => "commands that failed",
            Kind::Todo => "open todos",
            Kind::Step => "step in progress",
        }
    }
}

#[derive(Debug)]
struct Fact {
    kind: Kind,
    text: String,
}

/// One compaction: the facts of the context it replaced, the summary, and
/// the transcript's bytes up to its boundary.
struct Compaction {
    facts: Vec<Fact>,
    summary: String,
    before: usize,
}

fn words(text: &str) -> BTreeSet<String> {
    let lower = text.to_lowercase();
    let mut out = BTreeSet::new();
    let mut word = String::new();
    let mut prev_cjk: Option<char> = None;
    for c in lower.chars() {
        let cjk = matches!(c as u32, 0x3400..=0x9FFF | 0xF900..=0xFAFF | 0x3040..=0x30FF | 0xAC00..=0xD7AF);
        if cjk {
            if let Some(p) = prev_cjk {
                out.insert(format!("{p}{c}"));
            }
            prev_cjk = Some(c);
        } else {
            prev_cjk = None;
        }
        if c.is_alphanumeric() && !cjk {
            word.push(c);
        } else {
            if word.chars().count() >= 3 {
                out.insert(std::mem::take(&mut word));
            }
            word.clear();
        }
    }
    if word.chars().count() >= 3 {
        out.insert(word);
    }
    out
}

fn found(fact: &Fact, text: &str, text_words: &BTreeSet<String>) -> bool {
    if fact.kind == Kind::File {
        let name = Path::new(&fact.text)
            .file_name()
            .map_or(fact.text.clone(), |n| n.to_string_lossy().into_owned());
        return text.to_lowercase().contains(&name.to_lowercase());
    }
    let mut w: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for x in words_in_order(&fact.text) {
        if seen.insert(x.clone()) {
            w.push(x);
        }
        if w.len() == MAX_WORDS {
            break;
        }
    }
    if w.is_empty() {
        return text.contains(fact.text.trim());
    }
    let hits = w.iter().filter(|x| text_words.contains(*x)).count();
    hits as f64 / w.len() as f64 >= FOUND
}

/// The words of `text` in the order they come (see [`words`]).
fn words_in_order(text: &str) -> Vec<String> {
    let set = words(text);
    // Order by first position; a word's position is where it first occurs.
    let lower = text.to_lowercase();
    let mut v: Vec<(usize, String)> = set
        .into_iter()
        .map(|w| (lower.find(&w).unwrap_or(usize::MAX), w))
        .collect();
    v.sort();
    v.into_iter().map(|(_, w)| w).collect()
}

/// A user line's prompt text, when it is a person's request.
fn prompt(line: &Value) -> Option<String> {
    if line["isMeta"] == true || line["isCompactSummary"] == true || line["isSidechain"] == true {
        return None;
    }
    let content = &line["message"]["content"];
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            if blocks.iter().any(|b| b["type"] == "tool_result") {
                return None;
            }
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => return None,
    };
    let t = text.trim();
    let echo = [
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "Caveat:",
        "[Request interrupted",
        "<system-reminder>",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
    ];
    if t.is_empty() || echo.iter().any(|e| t.starts_with(e)) {
        return None;
    }
    Some(t.chars().take(600).collect())
}

fn summary_text(line: &Value) -> String {
    match &line["message"]["content"] {
        Value::String(s) => s.clone(),
        Value::Array(b) => b
            .iter()
            .filter_map(|x| x["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The compactions of a Claude Code transcript.
fn compactions(bytes: &[u8]) -> Vec<Compaction> {
    let mut out = Vec::new();
    let mut facts: Vec<Fact> = Vec::new();
    let mut todos: Vec<(String, String)> = Vec::new();
    let mut commands: HashMap<String, String> = HashMap::new();
    let mut boundary: Option<usize> = None;
    let mut offset = 0usize;
    for raw in bytes.split_inclusive(|&b| b == b'\n') {
        let start = offset;
        offset += raw.len();
        let Ok(line) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        let kind = line["type"].as_str().unwrap_or("");
        if kind == "system" && line["subtype"] == "compact_boundary" {
            boundary = Some(start);
            continue;
        }
        if kind == "user" && line["isCompactSummary"] == true {
            let before = boundary.take().unwrap_or(start);
            let mut all = std::mem::take(&mut facts);
            for (content, status) in std::mem::take(&mut todos) {
                if status == "in_progress" {
                    all.push(Fact {
                        kind: Kind::Step,
                        text: content.clone(),
                    });
                }
                if status != "completed" {
                    all.push(Fact {
                        kind: Kind::Todo,
                        text: content,
                    });
                }
            }
            if !all.iter().any(|f| f.kind == Kind::Step)
                && let Some(last) = all.iter().rev().find(|f| f.kind == Kind::Request)
            {
                all.push(Fact {
                    kind: Kind::Step,
                    text: last.text.clone(),
                });
            }
            dedup(&mut all);
            out.push(Compaction {
                facts: all,
                summary: summary_text(&line),
                before,
            });
            commands.clear();
            continue;
        }
        if line["isSidechain"] == true {
            continue;
        }
        if kind == "user" {
            if let Some(p) = prompt(&line) {
                facts.push(Fact {
                    kind: Kind::Request,
                    text: p,
                });
            }
            if let Some(blocks) = line["message"]["content"].as_array() {
                for b in blocks {
                    let failed = b["type"] == "tool_result" && b["is_error"] == true;
                    if let (true, Some(cmd)) = (
                        failed,
                        b["tool_use_id"].as_str().and_then(|id| commands.get(id)),
                    ) {
                        facts.push(Fact {
                            kind: Kind::Failed,
                            text: cmd.clone(),
                        });
                    }
                }
            }
        }
        if kind == "assistant"
            && let Some(blocks) = line["message"]["content"].as_array()
        {
            for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                let input = &b["input"];
                match b["name"].as_str().unwrap_or("") {
                    "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
                        if let Some(p) = input["file_path"]
                            .as_str()
                            .or(input["notebook_path"].as_str())
                        {
                            facts.push(Fact {
                                kind: Kind::File,
                                text: p.to_owned(),
                            });
                        }
                    }
                    "Bash" => {
                        if let Some(c) = input["command"].as_str() {
                            let first: String =
                                c.lines().next().unwrap_or("").chars().take(200).collect();
                            if let Some(id) = b["id"].as_str() {
                                commands.insert(id.to_owned(), first.clone());
                            }
                            facts.push(Fact {
                                kind: Kind::Command,
                                text: first,
                            });
                        }
                    }
                    "TodoWrite" => {
                        todos = input["todos"]
                            .as_array()
                            .map(|l| {
                                l.iter()
                                    .map(|t| {
                                        (
                                            t["content"].as_str().unwrap_or("").to_owned(),
                                            t["status"].as_str().unwrap_or("").to_owned(),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// Each fact once (a file edited ten times is one fact).
fn dedup(facts: &mut Vec<Fact>) {
    let mut seen = BTreeSet::new();
    facts.retain(|f| !f.text.trim().is_empty() && seen.insert((f.kind, f.text.clone())));
}

/// The note interband's `PreCompact` writes from the transcript as it stood
/// at the boundary, and what of it comes back (the default settings): led
/// by the facts of interband's own record that `summary` dropped, then the
/// note, within the same bound.
fn note(before: &[u8], session: &str, summary: &str) -> (String, String) {
    let settings = intermem::Settings::default();
    let d = digest_as(before, &Limits::default(), Host::Claude);
    let info = SessionInfo {
        session: session.to_owned(),
        cwd: d.cwd.as_deref().map(PathBuf::from),
        host: Host::Claude,
        ..Default::default()
    };
    let trigger = Trigger {
        name: "pre_compact_auto".into(),
        context_usable: None,
        figure: None,
        id: None,
        again: false,
    };
    let full = intermem::render(&info, &trigger, &d, &[], settings.max_bytes);
    let held = summary::Text::new(summary);
    let facts = summary::facts(&d);
    let dropped: Vec<&interband::payloads::Fact> =
        facts.iter().filter(|f| !held.holds(f)).collect();
    let lead = record::lead(&dropped, settings.inject_max_bytes / 3);
    let mut cut = settings
        .inject_max_bytes
        .saturating_sub(lead.len())
        .min(full.len());
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    let back = lead + &full[..cut];
    (full, back)
}

#[derive(Default, Clone, Copy)]
struct Tally {
    facts: usize,
    summary: usize,
    both: usize,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.facts += o.facts;
        self.summary += o.summary;
        self.both += o.both;
    }
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.0}%", 100.0 * n as f64 / d as f64)
    }
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/continuity/transcripts");
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![dir];
    if let Some(extra) = std::env::var_os("INTERBAND_CONTINUITY_EXTRA") {
        dirs.push(PathBuf::from(extra));
    }
    for d in &dirs {
        let Ok(list) = std::fs::read_dir(d) else {
            eprintln!("continuity: {} cannot be read", d.display());
            continue;
        };
        files.extend(
            list.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl")),
        );
    }
    files.sort();
    println!(
        "| transcript | compaction | facts | in the summary | in summary + note | note | comes back |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut total = Tally::default();
    let mut by_kind: HashMap<Kind, Tally> = HashMap::new();
    let mut largest = 0usize;
    let mut count = 0usize;
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        for (i, c) in compactions(&bytes).iter().enumerate() {
            count += 1;
            let (full, back) = note(&bytes[..c.before], &name, &c.summary);
            largest = largest.max(full.len());
            let summary_words = words(&c.summary);
            let both_text = format!("{}\n{}", c.summary, back);
            let both_words = words(&both_text);
            let mut t = Tally::default();
            for fact in &c.facts {
                let s = found(fact, &c.summary, &summary_words);
                let b = s || found(fact, &both_text, &both_words);
                let one = Tally {
                    facts: 1,
                    summary: s as usize,
                    both: b as usize,
                };
                t.add(one);
                by_kind.entry(fact.kind).or_default().add(one);
                if std::env::var_os("INTERBAND_CONTINUITY_LOST").is_some() && !b {
                    eprintln!("lost: {name} #{} {:?}: {}", i + 1, fact.kind, fact.text);
                }
            }
            total.add(t);
            println!(
                "| {name} | {} | {} | {} | {} | {:.1} KB | {:.1} KB |",
                i + 1,
                t.facts,
                pct(t.summary, t.facts),
                pct(t.both, t.facts),
                full.len() as f64 / 1000.0,
                back.len() as f64 / 1000.0
            );
        }
    }
    println!(
        "| **all** ({} files) | {count} | {} | **{}** | **{}** | at most {:.1} KB | |",
        files.len(),
        total.facts,
        pct(total.summary, total.facts),
        pct(total.both, total.facts),
        largest as f64 / 1000.0
    );
    println!();
    println!("| facts | count | in the summary | in summary + note |");
    println!("|---|---|---|---|");
    for k in Kind::ALL {
        let t = by_kind.get(&k).copied().unwrap_or_default();
        println!(
            "| {} | {} | {} | {} |",
            k.name(),
            t.facts,
            pct(t.summary, t.facts),
            pct(t.both, t.facts)
        );
    }
}
