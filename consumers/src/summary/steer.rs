//! What a host's summary is told to keep, where a hook can add to its request.

use std::path::Path;

use crate::digest::Digest;
use crate::intermem::fair_shares;

/// The most of the agent's last message the step in progress quotes.
const STEP_CHARS: usize = 1_500;

/// What the summary of a compaction must keep, in at most `limit`
/// characters (a `<` or `>` counted as four: a host may escape them): the
/// user's latest request verbatim, the step in progress in the agent's own
/// words, the open todos, the files changed, the last command that failed
/// and the last tool error, and that the full note is at `note` and comes
/// back after the compaction. Each part is cut at a sentence or a word,
/// never within one; the user's own `/compact` instructions come before
/// these in the host's request and are never overridden.
///
/// ```
/// use interband_consumers::digest::Digest;
/// let d = Digest { latest_prompt: Some("Make the parser stream.".into()), ..Default::default() };
/// let text = interband_consumers::summary::instructions(&d, "/n/note.md".as_ref(), 4_000);
/// assert!(text.contains("verbatim: \"Make the parser stream.\""));
/// assert!(text.contains("/n/note.md"));
/// ```
pub fn instructions(d: &Digest, note: &Path, limit: usize) -> String {
    let head = format!(
        "interband (a context monitor) saved this session's full memory note at {}; it comes back \
         after this compaction. Beside any instructions above, which come first, the summary must keep:",
        note.display()
    );
    let tail = format!(
        "- the memory note's path, {}, so the work can go on from it.",
        note.display()
    );
    let saying = |p: &&String| !crate::compact::is_bare_follow_up(p);
    let latest = d
        .latest_prompt
        .as_ref()
        .filter(saying)
        .or_else(|| d.prompts.iter().rev().find(saying));
    let doing = d
        .todos
        .iter()
        .find(|t| t.status == "in_progress")
        .map(|t| t.content.as_str());
    let words = d
        .last_assistant
        .as_deref()
        .map(|m| cut(m.trim(), STEP_CHARS));
    let step = match (doing, words) {
        (Some(t), Some(w)) => Some(format!("{t} (the agent's last words: \"{w}\")")),
        (Some(t), None) => Some(t.to_owned()),
        (None, Some(w)) => Some(format!("\"{w}\"")),
        (None, None) => None,
    };
    let open: Vec<String> = d
        .todos
        .iter()
        .filter(|t| t.status != "completed")
        .map(|t| {
            let mark = if t.status == "in_progress" {
                "in progress"
            } else {
                "open"
            };
            format!("{} ({mark})", one_line(&t.content))
        })
        .collect();
    let failed = d.commands.iter().rev().find(|c| c.failed);
    let parts: Vec<(&str, Option<String>)> = vec![
        (
            "- the user's latest request, verbatim: ",
            latest.map(|p| format!("\"{}\"", p.trim())),
        ),
        ("- the step in progress, in the agent's own words: ", step),
        (
            "- the open todos: ",
            (!open.is_empty()).then(|| open.join("; ")),
        ),
        (
            "- the files changed: ",
            (!d.files_changed.is_empty()).then(|| d.files_changed.join(", ")),
        ),
        (
            "- the last command that failed: ",
            failed.map(|c| format!("`{}`", one_line(&c.command))),
        ),
        (
            "- the last tool error, word for word: ",
            d.tool_errors
                .last()
                .map(|e| format!("{}: {}", e.tool, one_line(&e.message))),
        ),
    ];
    let parts: Vec<(&str, String)> = parts
        .into_iter()
        .filter_map(|(label, body)| body.map(|b| (label, b)))
        .collect();
    let fixed =
        cost(&head) + cost(&tail) + 2 + parts.iter().map(|(l, _)| cost(l) + 1).sum::<usize>();
    let sizes: Vec<usize> = parts.iter().map(|(_, b)| cost(b)).collect();
    let shares = fair_shares(&sizes, limit.saturating_sub(fixed));
    let mut out = head;
    for ((label, body), share) in parts.iter().zip(shares) {
        let body = cut(body, share);
        if !body.is_empty() {
            out += &format!("\n{label}{body}");
        }
    }
    out += &format!("\n{tail}");
    // A host may show it on a terminal: a control character as a visible
    // escape (newlines stay), before the bound.
    let mut out = interband::text::terminal_block(&out).into_owned();
    if cost(&out) > limit {
        // A note path longer than the room itself: the start, cut.
        out = cut(&out, limit);
    }
    out
}

/// Characters as a host that escapes `<` and `>` (`&lt;`) counts them.
fn cost(text: &str) -> usize {
    text.chars()
        .map(|c| if matches!(c, '<' | '>') { 4 } else { 1 })
        .sum()
}

/// `text` on one line: its lines joined by spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` whole when it costs at most `max`, else cut at the last sentence
/// end that keeps at least half of the room, else at the last space, with
/// `…`; never within a word (a first word longer than the room is dropped).
pub(crate) fn cut(text: &str, max: usize) -> String {
    if cost(text) <= max {
        return text.to_owned();
    }
    if max < 2 {
        return String::new();
    }
    // The longest start that leaves room for the `…`.
    let mut end = 0;
    let mut spent = 0;
    for (i, c) in text.char_indices() {
        let c_cost = cost(c.encode_utf8(&mut [0; 4]));
        if spent + c_cost > max - 1 {
            break;
        }
        spent += c_cost;
        end = i + c.len_utf8();
    }
    let room = &text[..end];
    let sentence = room
        .char_indices()
        .filter(|&(i, c)| {
            matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
                && text[i + c.len_utf8()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        })
        .map(|(i, c)| i + c.len_utf8())
        .next_back()
        .filter(|&e| e * 2 >= end);
    let at = match sentence {
        Some(e) => e,
        None => match text[end..].chars().next() {
            // The room ends between words.
            Some(c) if c.is_whitespace() => end,
            _ => room.rfind(char::is_whitespace).unwrap_or(0),
        },
    };
    let kept = text[..at].trim_end();
    if kept.is_empty() {
        String::new()
    } else {
        format!("{kept}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{Command, Todo, ToolError};

    fn full() -> Digest {
        Digest {
            latest_prompt: Some("Make the <parser> stream tokens.".into()),
            prompts: vec!["Make the <parser> stream tokens.".into()],
            todos: vec![
                Todo {
                    content: "Stream tokens".into(),
                    status: "in_progress".into(),
                },
                Todo {
                    content: "Write the\nchangelog".into(),
                    status: "pending".into(),
                },
                Todo {
                    content: "Read the spec".into(),
                    status: "completed".into(),
                },
            ],
            files_changed: vec!["src/parse.rs".into(), "src/lex.rs".into()],
            commands: vec![Command {
                command: "cargo test -p parser\n--nocapture".into(),
                failed: true,
                runs: 2,
            }],
            tool_errors: vec![ToolError {
                tool: "Bash".into(),
                message: "test stream_eof failed: expected 3 tokens, got 2".into(),
            }],
            last_assistant: Some(
                "The lexer now yields tokens lazily. Next I fix the EOF case.".into(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn every_part_is_said_in_its_place() {
        let text = instructions(&full(), Path::new("/n/a-pre_compact_manual.md"), 10_000);
        insta::assert_snapshot!(text, @r#"
        interband (a context monitor) saved this session's full memory note at /n/a-pre_compact_manual.md; it comes back after this compaction. Beside any instructions above, which come first, the summary must keep:
        - the user's latest request, verbatim: "Make the <parser> stream tokens."
        - the step in progress, in the agent's own words: Stream tokens (the agent's last words: "The lexer now yields tokens lazily. Next I fix the EOF case.")
        - the open todos: Stream tokens (in progress); Write the changelog (open)
        - the files changed: src/parse.rs, src/lex.rs
        - the last command that failed: `cargo test -p parser --nocapture`
        - the last tool error, word for word: Bash: test stream_eof failed: expected 3 tokens, got 2
        - the memory note's path, /n/a-pre_compact_manual.md, so the work can go on from it.
        "#);
    }

    #[test]
    fn control_characters_reach_no_terminal() {
        let d = Digest {
            latest_prompt: Some("clear \x1b[2J the screen".into()),
            ..Default::default()
        };
        let text = instructions(&d, Path::new("/n"), 4_000);
        assert!(
            !text.contains('\x1b') && text.contains("clear \\x1b[2J the screen"),
            "{text}"
        );
    }

    #[test]
    fn an_empty_session_still_names_the_note() {
        let text = instructions(&Digest::default(), Path::new("/n/x.md"), 4_000);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.ends_with("/n/x.md, so the work can go on from it."));
    }

    #[test]
    fn a_bare_follow_up_is_not_the_request_the_one_before_it_is() {
        let d = Digest {
            latest_prompt: Some("continue".into()),
            prompts: vec!["Port the lexer to Rust".into(), "continue".into()],
            ..Default::default()
        };
        let text = instructions(&d, Path::new("/n"), 4_000);
        assert!(
            text.contains("verbatim: \"Port the lexer to Rust\""),
            "{text}"
        );
    }

    #[test]
    fn any_limit_is_kept_and_the_note_path_stays_whole_where_it_fits() {
        let mut d = full();
        let long = "This sentence is long enough to matter. ".repeat(400);
        d.latest_prompt = Some(long.clone());
        d.last_assistant = Some(long.clone());
        d.files_changed = (0..500).map(|i| format!("src/file{i}.rs")).collect();
        d.todos = (0..300)
            .map(|i| Todo {
                content: format!("todo <{i}>"),
                status: "pending".into(),
            })
            .collect();
        for limit in [0, 1, 50, 300, 700, 1_000, 4_000, 10_000] {
            let text = instructions(&d, Path::new("/notes/s-pre_compact_auto.md"), limit);
            assert!(cost(&text) <= limit, "{limit}: {} > {limit}", cost(&text));
            if limit >= 700 {
                assert!(
                    text.ends_with("/notes/s-pre_compact_auto.md, so the work can go on from it."),
                    "{limit}: {text}"
                );
                assert!(
                    text.contains("verbatim: \"This sentence"),
                    "{limit}: {text}"
                );
            }
        }
    }

    #[test]
    fn a_cut_ends_at_a_sentence_or_a_word_never_within_one() {
        let text = "First sentence here. Second one is longer than the room";
        assert_eq!(cut(text, 100), text);
        assert_eq!(cut(text, 40), "First sentence here.…");
        assert_eq!(cut("alpha beta gamma", 12), "alpha beta…");
        assert_eq!(cut("alpha beta gamma", 11), "alpha beta…");
        assert_eq!(cut("alpha beta gamma", 10), "alpha…");
        assert_eq!(cut("supercalifragilistic", 5), "");
        assert_eq!(
            cut("a.b c", 4),
            "a.b…",
            "a dot within a word ends no sentence"
        );
        assert_eq!(cut("<<<<", 9), "", "one word, costing 16");
        assert_eq!(cut("< < < <", 9), "<…");
        for max in 0..60 {
            let c = cut(text, max);
            assert!(cost(&c) <= max, "{max}: {c}");
            let body = c.trim_end_matches('…');
            assert!(text.starts_with(body), "{max}: {c}");
            let next = text[body.len()..].chars().next();
            assert!(
                next.is_none_or(|n| n.is_whitespace()) || body.is_empty(),
                "{max}: cut within a word: {c}"
            );
        }
    }
}
