//! A compaction seen from both sides: what the host's own summary must keep
//! (said to the hosts whose summary request a hook can add to), and the
//! record of what it kept, what the note brought back and what was lost.
//!
//! Both start from the session's working state, as facts ([`facts`]): the
//! step in progress, the user's requests, the open todos, the commands that
//! failed and the files changed, read from the same digest the note is
//! written from. A fact is held by a text ([`Text::holds`]) when the file's
//! name is in it (a changed file), or when at least [`FOUND`] of the fact's
//! first [`MAX_WORDS`] words are (anything else).

pub mod record;
mod steer;

pub use steer::instructions;

use std::collections::BTreeSet;

use interband::payloads::{Fact, FactKind, Kept};

use crate::digest::Digest;

/// The share of a fact's words a text must hold for the fact to be held.
pub const FOUND: f64 = 0.6;
/// The most words of a fact that count (a long request is found by its start).
pub const MAX_WORDS: usize = 40;

/// The most facts of each kind a record keeps (newest first where a kind
/// has more).
const MOST: &[(FactKind, usize)] = &[
    (FactKind::Step, 1),
    (FactKind::Request, 12),
    (FactKind::Todo, 15),
    (FactKind::FailedCommand, 8),
    (FactKind::File, 20),
];
/// The most characters of a fact's text a record keeps.
const FACT_CHARS: usize = 300;

/// The session's working state in `d`, as facts, each once: the step in
/// progress (the todo being worked on, else the latest request that says
/// something), the requests of the context, the open todos, the commands
/// whose latest run failed, and the files changed.
///
/// ```
/// use interband_consumers::digest::{Digest, Todo};
/// use interband::payloads::FactKind;
/// let d = Digest {
///     latest_prompt: Some("make the parser stream".into()),
///     prompts: vec!["make the parser stream".into()],
///     todos: vec![Todo { content: "Stream tokens".into(), status: "in_progress".into() }],
///     files_changed: vec!["src/parse.rs".into()],
///     ..Default::default()
/// };
/// let facts = interband_consumers::summary::facts(&d);
/// let kinds: Vec<FactKind> = facts.iter().map(|f| f.kind).collect();
/// assert_eq!(kinds, [FactKind::Step, FactKind::Request, FactKind::Todo, FactKind::File]);
/// assert_eq!(facts[0].text, "Stream tokens");
/// ```
pub fn facts(d: &Digest) -> Vec<Fact> {
    let saying = |p: &&String| !crate::compact::is_bare_follow_up(p);
    let open = || d.todos.iter().filter(|t| t.status != "completed");
    let step = open()
        .find(|t| t.status == "in_progress")
        .map(|t| t.content.clone())
        .or_else(|| d.latest_prompt.as_ref().filter(saying).cloned())
        .or_else(|| d.prompts.iter().rev().find(saying).cloned());
    let mut requests: Vec<&String> = d.prompts.iter().filter(saying).collect();
    if let Some(latest) = d.latest_prompt.as_ref().filter(saying)
        && !requests.contains(&latest)
    {
        requests.push(latest);
    }
    let failed = d.commands.iter().rev().filter(|c| c.failed);
    let of = |kind: FactKind, texts: Vec<String>| {
        let most = MOST.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
        texts.into_iter().take(most).map(move |t| (kind, t))
    };
    let mut all: Vec<(FactKind, String)> = Vec::new();
    all.extend(of(FactKind::Step, step.into_iter().collect()));
    all.extend(of(
        FactKind::Request,
        requests.into_iter().rev().cloned().collect(),
    ));
    all.extend(of(
        FactKind::Todo,
        open().map(|t| t.content.clone()).collect(),
    ));
    all.extend(of(
        FactKind::FailedCommand,
        failed
            .map(|c| {
                c.command
                    .trim()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect(),
    ));
    all.extend(of(FactKind::File, d.files_changed.clone()));
    let mut seen = BTreeSet::new();
    all.into_iter()
        .map(|(kind, text)| (kind, crate::truncate(text.trim(), FACT_CHARS)))
        .filter(|(kind, text)| !text.is_empty() && seen.insert((*kind, text.clone())))
        .map(|(kind, text)| Fact {
            kind,
            text,
            kept: Kept::Pending,
        })
        .collect()
}

/// A text facts are looked for in: its lower-cased form and its words,
/// made once.
pub struct Text {
    lower: String,
    words: BTreeSet<String>,
}

impl Text {
    /// `text`, ready to look facts up in.
    pub fn new(text: &str) -> Self {
        Text {
            lower: text.to_lowercase(),
            words: words(text).into_iter().collect(),
        }
    }

    /// Whether this text holds `fact`: a changed file's name, or at least
    /// [`FOUND`] of the fact's first [`MAX_WORDS`] distinct words.
    ///
    /// ```
    /// use interband::payloads::{Fact, FactKind, Kept};
    /// use interband_consumers::summary::Text;
    /// let fact = |kind, text: &str| Fact { kind, text: text.into(), kept: Kept::Pending };
    /// let summary = Text::new("We edited Parse.rs; the streaming parser is half done.");
    /// assert!(summary.holds(&fact(FactKind::File, "/repo/src/parse.rs")));
    /// assert!(summary.holds(&fact(FactKind::Request, "make the parser streaming")));
    /// assert!(!summary.holds(&fact(FactKind::Todo, "write the changelog entry")));
    /// ```
    pub fn holds(&self, fact: &Fact) -> bool {
        if fact.kind == FactKind::File {
            // Its last part, whichever system wrote the path.
            let name = fact.text.rsplit(['/', '\\']).next().unwrap_or(&fact.text);
            return !name.is_empty() && self.lower.contains(&name.to_lowercase());
        }
        let mut seen = BTreeSet::new();
        let first: Vec<String> = words(&fact.text)
            .into_iter()
            .filter(|w| seen.insert(w.clone()))
            .take(MAX_WORDS)
            .collect();
        if first.is_empty() {
            return self.lower.contains(&fact.text.trim().to_lowercase());
        }
        let hits = first.iter().filter(|w| self.words.contains(*w)).count();
        hits as f64 / first.len() as f64 >= FOUND
    }
}

/// The words of `text` in the order they come: lower-cased runs of three
/// or more letters or digits, and each pair of adjacent CJK characters
/// (which are not split by spaces).
fn words(text: &str) -> Vec<String> {
    let cjk = |c: char| matches!(c as u32, 0x3400..=0x9FFF | 0xF900..=0xFAFF | 0x3040..=0x30FF | 0xAC00..=0xD7AF);
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if word.chars().count() >= 3 {
            out.push(std::mem::take(word));
        }
        word.clear();
    };
    for c in text.to_lowercase().chars() {
        if cjk(c) {
            flush(&mut word, &mut out);
            if let Some(p) = prev {
                out.push(format!("{p}{c}"));
            }
            prev = Some(c);
            continue;
        }
        prev = None;
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A fingerprint of a host's summary, to tell a new one from the one before.
pub fn fingerprint(summary: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    summary.trim().hash(&mut h);
    format!("{:016x}-{}", h.finish(), summary.trim().len())
}

/// A pending fact, for tests.
#[cfg(test)]
pub(crate) fn fact(kind: FactKind, text: &str) -> Fact {
    Fact {
        kind,
        text: text.into(),
        kept: Kept::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{Command, Todo};

    #[test]
    fn the_step_is_the_todo_in_progress_else_the_latest_request_that_says_something() {
        let mut d = Digest {
            prompts: vec!["port the parser".into(), "continue".into()],
            latest_prompt: Some("continue".into()),
            ..Default::default()
        };
        let step = |d: &Digest| facts(d).into_iter().find(|f| f.kind == FactKind::Step);
        assert_eq!(step(&d).unwrap().text, "port the parser");
        d.todos = vec![
            Todo {
                content: "done thing".into(),
                status: "completed".into(),
            },
            Todo {
                content: "write the lexer".into(),
                status: "in_progress".into(),
            },
        ];
        assert_eq!(step(&d).unwrap().text, "write the lexer");
        let todos: Vec<String> = facts(&d)
            .into_iter()
            .filter(|f| f.kind == FactKind::Todo)
            .map(|f| f.text)
            .collect();
        assert_eq!(todos, ["write the lexer"], "completed todos are not open");
        let requests: Vec<String> = facts(&d)
            .into_iter()
            .filter(|f| f.kind == FactKind::Request)
            .map(|f| f.text)
            .collect();
        assert_eq!(
            requests,
            ["port the parser"],
            "a bare follow-up is no request"
        );
        assert_eq!(step(&Digest::default()), None);
    }

    #[test]
    fn each_kind_is_bounded_newest_first_and_each_fact_is_once() {
        let d = Digest {
            prompts: (0..30).map(|i| format!("request number {i}")).collect(),
            commands: (0..20)
                .map(|i| Command {
                    command: format!("cargo test case{i}\nsecond line"),
                    failed: i % 2 == 0,
                    runs: 1,
                })
                .collect(),
            files_changed: vec!["a.rs".into(), "a.rs".into(), "b.rs".into()],
            ..Default::default()
        };
        let f = facts(&d);
        let of = |k| f.iter().filter(|x| x.kind == k).collect::<Vec<_>>();
        assert_eq!(of(FactKind::Request).len(), 12);
        assert_eq!(of(FactKind::Request)[0].text, "request number 29");
        assert_eq!(of(FactKind::FailedCommand).len(), 8);
        assert_eq!(of(FactKind::FailedCommand)[0].text, "cargo test case18");
        assert_eq!(of(FactKind::File).len(), 2);
    }

    #[test]
    fn a_text_holds_a_fact_by_its_words_or_a_file_by_its_name() {
        let t = Text::new("The user wants the LEXER rewritten; 修改解析器 is next. See lexer.rs.");
        assert!(t.holds(&fact(
            FactKind::Request,
            "Rewrite the lexer, the user wants"
        )));
        assert!(t.holds(&fact(FactKind::Request, "修改解析器")));
        assert!(t.holds(&fact(FactKind::File, "C:\\src\\Lexer.rs")));
        assert!(t.holds(&fact(FactKind::File, "/src/lexer.rs")));
        assert!(!t.holds(&fact(FactKind::File, "/src/parser.rs")));
        assert!(!t.holds(&fact(FactKind::Todo, "publish the crate to the registry")));
        // Two of three words: held; one of three: not.
        assert!(t.holds(&fact(FactKind::Todo, "lexer wants cake")));
        assert!(!t.holds(&fact(FactKind::Todo, "lexer pies cake")));
        // Short words alone: the text itself.
        assert!(t.holds(&fact(FactKind::Todo, "is")));
    }

    #[test]
    fn fingerprints_tell_summaries_apart() {
        assert_eq!(fingerprint("a summary\n"), fingerprint("a summary"));
        assert_ne!(fingerprint("a summary"), fingerprint("another summary"));
    }
}
