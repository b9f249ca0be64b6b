//! Continuity: what survives a compaction. Over real Claude Code transcripts
//! with compactions (`benches/continuity/transcripts/`, and the `.jsonl`
//! files of `$INTERBAND_CONTINUITY_EXTRA`, see `benches/continuity/SOURCES.md`),
//! and, as a second set, every host's session files in `tests/fixtures/` that
//! hold a compaction (Claude Code's `isCompactSummary` line, Codex's
//! `compacted`, Qwen Code's `chat_compression`, Copilot CLI's
//! `session.compaction_complete`; captured from the real CLIs against a mock,
//! whose summary is a stock sentence; Gemini CLI's headless runs cannot
//! compress, so none of its files has one), for each compaction: the facts of
//! the context it replaced (every user request, the files changed, the
//! commands run, those that failed, the open todos, the step in progress),
//! and the share of them found in the host's own summary and in that summary
//! plus the note interband writes at `PreCompact` (from the session file as
//! it stood at the boundary, at the default settings, as it comes back: led
//! by the facts of interband's own compaction record that the summary
//! dropped, then the note, cut at `inject_max_bytes` in all).
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

#[path = "continuity/read.rs"]
mod read;
use read::Event;

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

/// The compactions of `host`'s session file: at each boundary, the facts of
/// the context it replaces (the open todos and the step in progress as they
/// stood); at the summary, one compaction. What happens between the two (the
/// agent works on while Copilot CLI compacts) counts towards the next.
fn compactions(bytes: &[u8], host: Host) -> Vec<Compaction> {
    let mut out = Vec::new();
    let mut facts: Vec<Fact> = Vec::new();
    let mut todos: Vec<(String, String)> = Vec::new();
    let mut tasks: Vec<Task> = Vec::new();
    let mut commands: HashMap<String, String> = HashMap::new();
    let mut pending: Option<(usize, Vec<Fact>)> = None;
    let mut offset = 0usize;
    for raw in bytes.split_inclusive(|&b| b == b'\n') {
        let start = offset;
        offset += raw.len();
        let Ok(line) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        for event in read::events(host, &line) {
            let fact = |kind, text: String| Fact { kind, text };
            match event {
                Event::Boundary => {
                    if pending.is_none() {
                        pending = Some((start, replaced(&mut facts, &open_work(&todos, &tasks))));
                    }
                }
                Event::Summary(summary) => {
                    let (before, facts) = pending.take().unwrap_or_else(|| {
                        (start, replaced(&mut facts, &open_work(&todos, &tasks)))
                    });
                    todos.clear();
                    commands.clear();
                    out.push(Compaction {
                        facts,
                        summary,
                        before,
                    });
                }
                Event::Request(t) => facts.push(fact(Kind::Request, t)),
                Event::File(p) => facts.push(fact(Kind::File, p)),
                Event::Command { id, text } => {
                    if let Some(id) = id {
                        commands.insert(id, text.clone());
                    }
                    facts.push(fact(Kind::Command, text));
                }
                Event::Failed(id) => {
                    if let Some(cmd) = commands.get(&id) {
                        facts.push(fact(Kind::Failed, cmd.clone()));
                    }
                }
                Event::Todos(list) => todos = list,
                Event::Task { call, subject } => tasks.push(Task {
                    call,
                    id: None,
                    subject,
                    status: "pending".into(),
                }),
                Event::TaskId { call, id } => {
                    if let Some(t) = tasks.iter_mut().find(|t| t.call == call) {
                        t.id = Some(id);
                    }
                }
                Event::TaskChange {
                    id,
                    status,
                    subject,
                } => {
                    if let Some(t) = tasks.iter_mut().find(|t| t.id.as_ref() == Some(&id)) {
                        t.status = status.unwrap_or(std::mem::take(&mut t.status));
                        t.subject = subject.unwrap_or(std::mem::take(&mut t.subject));
                    }
                }
            }
        }
    }
    out
}

/// A task kept with Claude Code's task tools.
struct Task {
    call: String,
    id: Option<String>,
    subject: String,
    status: String,
}

/// The todo list and the tasks, as (text, status) pairs (a deleted task is none).
fn open_work(todos: &[(String, String)], tasks: &[Task]) -> Vec<(String, String)> {
    let tasks = tasks
        .iter()
        .filter(|t| t.status != "deleted")
        .map(|t| (t.subject.clone(), t.status.clone()));
    todos.iter().cloned().chain(tasks).collect()
}

/// The facts of the context a compaction replaces: those read since the
/// last one, the open todos, and the step in progress (the todo in
/// progress, else the last request).
fn replaced(facts: &mut Vec<Fact>, todos: &[(String, String)]) -> Vec<Fact> {
    let mut all = std::mem::take(facts);
    for (content, status) in todos {
        if status == "in_progress" {
            all.push(Fact {
                kind: Kind::Step,
                text: content.clone(),
            });
        }
        if status != "completed" {
            all.push(Fact {
                kind: Kind::Todo,
                text: content.clone(),
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
    all
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
fn note(before: &[u8], host: Host, session: &str, summary: &str) -> (String, String) {
    let settings = intermem::Settings::default();
    let d = digest_as(before, &Limits::default(), host);
    let info = SessionInfo {
        session: session.to_owned(),
        cwd: d.cwd.as_deref().map(PathBuf::from),
        host,
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

/// The session files under `dir` (one level of folders below it), sorted.
fn files_in(dir: &Path, nested: bool) -> Vec<PathBuf> {
    let Ok(list) = std::fs::read_dir(dir) else {
        eprintln!("continuity: {} cannot be read", dir.display());
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in list.flatten().map(|e| e.path()) {
        if p.is_dir() && nested {
            out.extend(files_in(&p, false));
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// One set of session files measured together: a table per compaction,
/// then the totals per kind of fact.
struct Set {
    title: &'static str,
    files: Vec<PathBuf>,
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut real = files_in(&root.join("benches/continuity/transcripts"), false);
    if let Some(extra) = std::env::var_os("INTERBAND_CONTINUITY_EXTRA") {
        real.extend(files_in(Path::new(&extra), false));
    }
    let sets = [
        Set {
            title: "Real sessions (benches/continuity/transcripts, and $INTERBAND_CONTINUITY_EXTRA)",
            files: real,
        },
        Set {
            title: "Every host's compactions captured from its real CLI against a mock (tests/fixtures: the mock's summary is a stock sentence)",
            files: files_in(&root.join("tests/fixtures"), true),
        },
    ];
    for set in sets {
        measure(&set);
    }
}

fn measure(set: &Set) {
    println!("## {}", set.title);
    println!();
    println!(
        "| session file | host | compaction | facts | in the summary | in summary + note | note | comes back |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut total = Tally::default();
    let mut by_kind: HashMap<(Host, Kind), Tally> = HashMap::new();
    let mut hosts: BTreeSet<&'static str> = BTreeSet::new();
    let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
    let (mut largest, mut count, mut files) = (0usize, 0usize, 0usize);
    for f in &set.files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let Some(host) = read::host_of(&bytes) else {
            continue;
        };
        let found_here = compactions(&bytes, host);
        // A capture kept twice (a copy under another name) counts once.
        if found_here.is_empty() || !seen.insert(bytes.clone()) {
            continue;
        }
        files += 1;
        hosts.insert(host.as_str());
        let name = match f.parent().and_then(|p| p.file_name()) {
            Some(dir) if dir != "transcripts" => {
                format!(
                    "{}/{}",
                    dir.to_string_lossy(),
                    f.file_name().unwrap().to_string_lossy()
                )
            }
            _ => f.file_stem().unwrap().to_string_lossy().into_owned(),
        };
        for (i, c) in found_here.iter().enumerate() {
            count += 1;
            let (full, back) = note(&bytes[..c.before], host, &name, &c.summary);
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
                by_kind.entry((host, fact.kind)).or_default().add(one);
                if std::env::var_os("INTERBAND_CONTINUITY_LOST").is_some() && !b {
                    eprintln!("lost: {name} #{} {:?}: {}", i + 1, fact.kind, fact.text);
                }
            }
            total.add(t);
            println!(
                "| {name} | {} | {} | {} | {} | {} | {:.1} KB | {:.1} KB |",
                host.as_str(),
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
        "| **all** ({files} files) | {} | {count} | {} | **{}** | **{}** | at most {:.1} KB | |",
        hosts.into_iter().collect::<Vec<_>>().join(", "),
        total.facts,
        pct(total.summary, total.facts),
        pct(total.both, total.facts),
        largest as f64 / 1000.0
    );
    println!();
    println!("| host | facts | count | in the summary | in summary + note |");
    println!("|---|---|---|---|---|");
    let mut keys: Vec<_> = by_kind.keys().copied().collect();
    keys.sort_by_key(|(h, k)| (h.as_str(), *k));
    for key in keys {
        let t = by_kind[&key];
        println!(
            "| {} | {} | {} | {} | {} |",
            key.0.as_str(),
            key.1.name(),
            t.facts,
            pct(t.summary, t.facts),
            pct(t.both, t.facts)
        );
    }
    println!();
}
