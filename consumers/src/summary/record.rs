//! The record of a compaction on the bus (`intermem/compaction/<session>`):
//! begun before it, every fact pending ([`begin`]); each fact checked
//! against the host's summary when that is read ([`judge_summary`]); the
//! rest checked against the note that comes back ([`settle`]). Its one line
//! for people is [`line`].

use interband::Bus;
use interband::context::tokens_text;
use interband::payloads::{CompactionRecord, Fact, FactKind, Kept};

use super::Text;
use crate::Error;

/// The session's latest compaction record, if any can be read.
pub fn read(bus: &Bus, session: &str) -> Option<CompactionRecord> {
    bus.read_typed::<CompactionRecord>(session)
        .ok()
        .map(|e| e.payload)
}

fn publish(bus: &Bus, session: &str, record: &mut CompactionRecord) -> Result<(), Error> {
    record.ts = crate::now_secs();
    bus.publish_typed(session, session, record)?;
    Ok(())
}

/// Begins the record of the compaction about to happen: the working state's
/// `facts`, all pending, the note written for it, the context's tokens now
/// and the host's summary before it (to tell the new one from).
pub fn begin(
    bus: &Bus,
    session: &str,
    trigger: &str,
    note: &str,
    tokens_before: Option<u64>,
    summary_before: Option<&str>,
    facts: Vec<Fact>,
) -> Result<CompactionRecord, Error> {
    let mut record = CompactionRecord {
        trigger: trigger.to_owned(),
        note: note.to_owned(),
        tokens_before,
        summary_before: summary_before.map(super::fingerprint),
        facts,
        ..Default::default()
    };
    publish(bus, session, &mut record)?;
    Ok(record)
}

/// Checks each fact of the session's record the summary has not been
/// checked for against the host's `summary`, once, whether the note came
/// back before it or not (hosts differ in which comes first). `summary` is
/// `None` where the host gives none a hook can read, or where the one read
/// is the summary from before this compaction: then the record says the
/// summary could not be read when `last` (no later event will hand it
/// over), and waits otherwise. Returns the record, when there is one.
pub fn judge_summary(
    bus: &Bus,
    session: &str,
    summary: Option<&str>,
    last: bool,
) -> Result<Option<CompactionRecord>, Error> {
    let Some(mut record) = read(bus, session) else {
        return Ok(None);
    };
    if record.summary_read == Some(true) {
        return Ok(Some(record));
    }
    let summary = summary.filter(|s| {
        !s.trim().is_empty() && record.summary_before.as_deref() != Some(&super::fingerprint(s))
    });
    match summary {
        Some(s) => {
            let text = Text::new(s);
            for f in record.facts.iter_mut().filter(|f| f.kept != Kept::Summary) {
                if text.holds(f) {
                    f.kept = Kept::Summary;
                }
            }
            record.summary_read = Some(true);
        }
        None if last => record.summary_read = Some(false),
        None => return Ok(Some(record)),
    }
    publish(bus, session, &mut record)?;
    Ok(Some(record))
}

/// Records `tokens`, a figure published after the note came back, as the
/// context's size after the compaction, once. Returns the record when it
/// took the figure.
pub fn figure_after(
    bus: &Bus,
    session: &str,
    tokens: u64,
) -> Result<Option<CompactionRecord>, Error> {
    let Some(mut record) = read(bus, session).filter(|r| r.settled && r.tokens_after.is_none())
    else {
        return Ok(None);
    };
    record.tokens_after = Some(tokens);
    publish(bus, session, &mut record)?;
    Ok(Some(record))
}

/// The facts the summary did not keep (all, when it was not read), the
/// step in progress first: what the note brings back first.
pub fn dropped(record: &CompactionRecord) -> Vec<&Fact> {
    let mut out: Vec<&Fact> = record
        .facts
        .iter()
        .filter(|f| f.kept == Kept::Pending)
        .collect();
    out.sort_by_key(|f| f.kind);
    out
}

/// The facts a compaction's summary dropped ([`dropped`]), as the section
/// the note that comes back leads with: at most `max` bytes, whole lines,
/// each text once; empty when none fits.
pub fn lead(dropped: &[&Fact], max: usize) -> String {
    const HEAD: &str = "## What the compaction's summary left out (brought back first)\n\n";
    match fact_lines(dropped, max.saturating_sub(HEAD.len() + 1)) {
        lines if lines.is_empty() => String::new(),
        lines => format!("{HEAD}{lines}\n"),
    }
}

/// `facts` as a list, a line each (`- a failed command: `cargo test``), at
/// most `max` bytes of whole lines, each text once (a todo in progress is
/// the step itself).
pub fn fact_lines(facts: &[&Fact], max: usize) -> String {
    use crate::framing::{code, inline};
    let mut out = String::new();
    let mut said = std::collections::HashSet::new();
    for f in facts.iter().filter(|f| said.insert(f.text.as_str())) {
        let text = match f.kind {
            FactKind::File | FactKind::FailedCommand => code(&f.text),
            _ => inline(&f.text),
        };
        let line = format!("- {}: {text}\n", f.kind.name());
        if out.len() + line.len() <= max {
            out += &line;
        }
    }
    out
}

/// Settles the record: each fact still pending is checked against `back`,
/// the text that came back after the compaction (brought back, or lost).
pub fn settle(
    bus: &Bus,
    session: &str,
    mut record: CompactionRecord,
    back: &str,
) -> Result<CompactionRecord, Error> {
    let text = Text::new(back);
    for f in record.facts.iter_mut().filter(|f| f.kept == Kept::Pending) {
        f.kept = if text.holds(f) {
            Kept::Note
        } else {
            Kept::Lost
        };
    }
    record.settled = true;
    publish(bus, session, &mut record)?;
    Ok(record)
}

/// The record in one line, for people: what the compaction kept, and what
/// was lost, never more than was checked.
///
/// ```
/// use interband::payloads::{CompactionRecord, Fact, FactKind, Kept};
/// let fact = |kind, kept| Fact { kind, text: "cargo test -p parser".into(), kept };
/// let record = CompactionRecord {
///     tokens_before: Some(168_000),
///     summary_read: Some(true),
///     settled: true,
///     facts: vec![
///         fact(FactKind::Request, Kept::Summary),
///         fact(FactKind::File, Kept::Note),
///         fact(FactKind::FailedCommand, Kept::Lost),
///     ],
///     ..Default::default()
/// };
/// assert_eq!(
///     interband_consumers::summary::record::line(&record),
///     "compacted at 168k: the summary kept 1 of 3 facts, the note brought back 1, 1 lost: a failed command (cargo test -p parser)"
/// );
/// ```
pub fn line(record: &CompactionRecord) -> String {
    let total = record.facts.len();
    let at = match (record.tokens_before, record.tokens_after) {
        (Some(b), Some(a)) => format!(" {} -> {}", tokens_text(b), tokens_text(a)),
        (Some(b), None) => format!(" at {}", tokens_text(b)),
        (None, Some(a)) => format!(" to {}", tokens_text(a)),
        (None, None) => String::new(),
    };
    if total == 0 {
        return format!("compacted{at}: no working state was recorded before it");
    }
    let (kept, back, lost) = (
        record.count(Kept::Summary),
        record.count(Kept::Note),
        record.count(Kept::Lost),
    );
    let facts = if total == 1 {
        "1 fact".to_owned()
    } else {
        format!("{total} facts")
    };
    let summary = match record.summary_read {
        Some(true) => format!("the summary kept {kept} of {facts}"),
        Some(false) => format!("the host's summary could not be read ({facts})"),
        None => format!("the summary is not read yet ({facts})"),
    };
    if !record.settled {
        return format!("compacted{at}: {summary}; the note comes back next");
    }
    if record.summary_read.is_none() {
        let back = record.count(Kept::Note);
        return format!(
            "compacted{at}: the note brought back {back} of {facts}; the summary is not read yet"
        );
    }
    let lost_text = match lost {
        0 => "none lost".to_owned(),
        n => {
            let first = record
                .facts
                .iter()
                .filter(|f| f.kept == Kept::Lost)
                .min_by_key(|f| f.kind)
                .expect("one lost");
            // (Shown on a terminal: a control character as a visible escape.)
            let text = crate::truncate(&crate::framing::first_line(&first.text), 60);
            let text = interband::text::terminal(&text);
            format!("{n} lost: {} ({text})", first.kind.name())
        }
    };
    format!("compacted{at}: {summary}, the note brought back {back}, {lost_text}")
}

#[cfg(test)]
mod tests {
    use super::super::fact;
    use super::*;

    fn bus() -> (tempfile::TempDir, Bus) {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("root"));
        (dir, bus)
    }

    #[test]
    fn a_record_goes_from_pending_to_summary_note_and_lost() {
        let (_d, bus) = bus();
        let facts = vec![
            fact(FactKind::Step, "stream the parser tokens"),
            fact(FactKind::File, "/r/src/lex.rs"),
            fact(FactKind::FailedCommand, "cargo test -p parser"),
        ];
        begin(
            &bus,
            "s",
            "manual",
            "/n.md",
            Some(168_000),
            Some("old summary"),
            facts,
        )
        .unwrap();
        let r = read(&bus, "s").unwrap();
        assert_eq!(r.count(Kept::Pending), 3);
        assert_eq!(
            line(&r),
            "compacted at 168k: the summary is not read yet (3 facts); the note comes back next"
        );
        // The summary from before this compaction is not this one's.
        let r = judge_summary(&bus, "s", Some("old summary"), true)
            .unwrap()
            .unwrap();
        assert_eq!(r.summary_read, Some(false));
        assert_eq!(r.count(Kept::Pending), 3);
        // Read once it is: the new summary judged, once.
        let (_d, bus) = self::bus();
        begin(&bus, "s", "manual", "/n.md", None, None, r.facts.clone()).unwrap();
        let r = judge_summary(&bus, "s", Some("We stream the parser tokens now."), true)
            .unwrap()
            .unwrap();
        assert_eq!(r.summary_read, Some(true));
        assert_eq!(r.facts[0].kept, Kept::Summary);
        assert_eq!(
            dropped(&r).iter().map(|f| f.kind).collect::<Vec<_>>(),
            [FactKind::FailedCommand, FactKind::File]
        );
        let r = settle(&bus, "s", r, "## Files changed\n- `src/lex.rs`").unwrap();
        assert_eq!(
            r.facts.iter().map(|f| f.kept).collect::<Vec<_>>(),
            [Kept::Summary, Kept::Note, Kept::Lost]
        );
        let published = read(&bus, "s").unwrap();
        assert_eq!(
            (published.facts, published.settled),
            (r.facts.clone(), true)
        );
        assert_eq!(
            line(&r),
            "compacted: the summary kept 1 of 3 facts, the note brought back 1, 1 lost: a failed command (cargo test -p parser)"
        );
        let again = judge_summary(&bus, "s", Some("lex.rs cargo parser"), true)
            .unwrap()
            .unwrap();
        assert_eq!(again.facts, r.facts, "a summary is judged once");
    }

    #[test]
    fn the_note_may_come_back_before_the_summary_is_read() {
        // Claude Code 2.1.332: SessionStart(compact), then PostCompact.
        let (_d, bus) = bus();
        let facts = vec![
            fact(FactKind::Step, "stream the parser tokens"),
            fact(FactKind::FailedCommand, "cargo test -p parser"),
            fact(FactKind::File, "/r/src/lex.rs"),
        ];
        begin(&bus, "s", "manual", "/n.md", Some(90_000), None, facts).unwrap();
        let waiting = judge_summary(&bus, "s", None, false).unwrap().unwrap();
        assert_eq!(waiting.summary_read, None, "its event is still to come");
        let r = settle(&bus, "s", waiting, "we stream the parser tokens").unwrap();
        assert_eq!(
            line(&r),
            "compacted at 90k: the note brought back 1 of 3 facts; the summary is not read yet"
        );
        let r = figure_after(&bus, "s", 18_000).unwrap().unwrap();
        assert_eq!(r.tokens_after, Some(18_000));
        assert!(
            figure_after(&bus, "s", 30_000).unwrap().is_none(),
            "the first figure only"
        );
        let r = judge_summary(&bus, "s", Some("cargo test -p parser failed"), true)
            .unwrap()
            .unwrap();
        assert_eq!(
            r.facts.iter().map(|f| f.kept).collect::<Vec<_>>(),
            [Kept::Note, Kept::Summary, Kept::Lost]
        );
        assert_eq!(
            line(&r),
            "compacted 90k -> 18k: the summary kept 1 of 3 facts, the note brought back 1, 1 lost: a changed file (/r/src/lex.rs)"
        );
        // A host that never hands it over: said so.
        let (_d, bus) = self::bus();
        begin(&bus, "s", "auto", "/n.md", None, None, r.facts.clone()).unwrap();
        let r = judge_summary(&bus, "s", None, true).unwrap().unwrap();
        assert_eq!(r.summary_read, Some(false));
    }

    #[test]
    fn a_lost_fact_s_text_reaches_no_terminal_raw() {
        let r = CompactionRecord {
            summary_read: Some(true),
            settled: true,
            facts: vec![Fact {
                kept: Kept::Lost,
                ..fact(FactKind::Request, "wipe \x1b]52;c;eA==\x07 it")
            }],
            ..Default::default()
        };
        let l = line(&r);
        assert!(!l.contains('\x1b') && !l.contains('\x07'), "{l}");
    }

    #[test]
    fn the_line_never_claims_what_was_not_checked() {
        let mut r = CompactionRecord {
            summary_read: Some(false),
            settled: true,
            facts: vec![Fact {
                kept: Kept::Note,
                ..fact(FactKind::Todo, "x")
            }],
            ..Default::default()
        };
        assert_eq!(
            line(&r),
            "compacted: the host's summary could not be read (1 fact), the note brought back 1, none lost"
        );
        r.facts.clear();
        assert_eq!(
            line(&r),
            "compacted: no working state was recorded before it"
        );
    }
}
