//! What a session's own history says of its window, when nothing states it.
//!
//! Where a host leaves two windows possible (Claude Code's 200k or 1M,
//! Qwen Code's, Copilot CLI's), the session itself settles it over time:
//!
//! * **usage past the smaller window** (a response's own figure, never an
//!   estimate) means the larger one;
//! * **an automatic compaction below the larger window's compaction point**
//!   means the smaller one: the host compacted where only the smaller
//!   window compacts. A compaction's own figure (Claude Code's `preTokens`)
//!   is the host's estimate and may pass the smaller window (a large tool
//!   result arriving): it settles the smaller window, never the larger.
//!
//! Each is kept per model (a `/model` switch starts over), for the few
//! latest models. The transcript is searched forward, once, from where the
//! last search ended ([`History::scan`]): only the lines that name a
//! compaction ([`crate::Profile::compaction_marks`]) are parsed, and for
//! each, the context before it is read backwards from it by the host's own
//! reader. So the cost of a call is the bytes written since the last one.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Host;
use crate::usage::Fact;

/// How many models' evidence a session keeps.
pub const MODELS_KEPT: usize = 4;

/// At most this much is searched in one call: a first look at a session with
/// a long history reads only its latest part.
pub const SCAN_CAP: u64 = 64 << 20;

/// How far back from a compaction its context's figure is looked for.
const BEFORE_CAP: u64 = 4 << 20;

/// At most this many compactions are read back from in one search, the
/// latest: each costs a read of what came before it, and a transcript (a
/// file anyone could have written) may hold any number.
pub const COMPACTIONS_READ: usize = 32;

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// A line longer than this is not searched (no compaction line is).
const LONGEST_LINE: usize = 16 << 20;

/// What one model's part of the session showed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Evidence {
    /// The model (`None`: a figure no model was named with).
    pub model: Option<String>,
    /// The largest figure a response stated, tokens.
    pub peak: u64,
    /// The lowest figure an automatic compaction happened at, tokens.
    pub auto_compacted_at: Option<u64>,
}

impl Evidence {
    /// Which of two windows this evidence settles, and from what: usage past
    /// `smaller` settles `larger` (`Usage`); else an automatic compaction
    /// below `larger_compacts_at` settles `smaller` (`Compaction`).
    ///
    /// ```
    /// use interband_hosts::history::Evidence;
    /// use interband::context::WindowSource;
    /// let e = Evidence { auto_compacted_at: Some(171_000), ..Default::default() };
    /// assert_eq!(e.settles(1_000_000, 200_000, 967_000), Some((200_000, WindowSource::Compaction)));
    /// let e = Evidence { peak: 230_000, ..e };
    /// assert_eq!(e.settles(1_000_000, 200_000, 967_000), Some((1_000_000, WindowSource::Usage)));
    /// assert_eq!(Evidence::default().settles(1_000_000, 200_000, 967_000), None);
    /// ```
    pub fn settles(
        &self,
        larger: u64,
        smaller: u64,
        larger_compacts_at: u64,
    ) -> Option<(u64, interband::context::WindowSource)> {
        use interband::context::WindowSource as From;
        if self.peak > smaller {
            Some((larger, From::Usage))
        } else if self
            .auto_compacted_at
            .is_some_and(|at| at < larger_compacts_at)
        {
            Some((smaller, From::Compaction))
        } else {
            None
        }
    }
}

/// A session's evidence of its window, and how far its transcript was read
/// for it. Constant size: a few models, a few numbers each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct History {
    /// The transcript searched (a new one starts over).
    pub path: Option<String>,
    /// Searched up to here: just past a whole line.
    pub scanned_to: u64,
    /// Per model, the latest last.
    pub models: Vec<Evidence>,
}

impl History {
    /// The evidence for `model`, if any was seen.
    pub fn of(&self, model: Option<&str>) -> Option<&Evidence> {
        self.models.iter().find(|e| e.model.as_deref() == model)
    }

    fn entry(&mut self, model: Option<&str>) -> &mut Evidence {
        let i = match self.models.iter().position(|e| e.model.as_deref() == model) {
            Some(i) => i,
            None => {
                if self.models.len() >= MODELS_KEPT {
                    self.models.remove(0);
                }
                self.models.push(Evidence {
                    model: model.map(str::to_owned),
                    ..Evidence::default()
                });
                self.models.len() - 1
            }
        };
        &mut self.models[i]
    }

    /// A response's figure: the peak rises.
    ///
    /// ```
    /// let mut h = interband_hosts::history::History::default();
    /// h.saw_usage(Some("m"), 150_000);
    /// h.saw_usage(Some("m"), 90_000);
    /// assert_eq!(h.of(Some("m")).unwrap().peak, 150_000);
    /// assert!(h.of(Some("other")).is_none());
    /// ```
    pub fn saw_usage(&mut self, model: Option<&str>, tokens: u64) {
        let e = self.entry(model);
        e.peak = e.peak.max(tokens);
    }

    /// A compaction at `tokens` (the host's own figure for the context
    /// before it, else the last response's); only an automatic one is
    /// evidence.
    pub fn saw_compaction(&mut self, model: Option<&str>, tokens: u64, automatic: bool) {
        if !automatic || tokens == 0 {
            return;
        }
        let e = self.entry(model);
        e.auto_compacted_at = Some(e.auto_compacted_at.map_or(tokens, |a| a.min(tokens)));
    }

    /// Takes in what another reading of the same session found (the
    /// larger peak, the lower compaction, the further search).
    pub fn merge(&mut self, other: &History) {
        if other.path != self.path {
            if other.scanned_to > 0 || self.path.is_none() {
                *self = other.clone();
            }
            return;
        }
        self.scanned_to = self.scanned_to.max(other.scanned_to);
        for e in &other.models {
            let mine = self.entry(e.model.as_deref());
            mine.peak = mine.peak.max(e.peak);
            mine.auto_compacted_at = match (mine.auto_compacted_at, e.auto_compacted_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }

    /// Searches the transcript at `path` from where the last search ended
    /// for the compactions written since, each with the context before it
    /// (read backwards by the host's reader). A transcript that is not the
    /// one searched before, or that is shorter now (rewritten), is searched
    /// from its start; at most [`SCAN_CAP`] bytes, the latest.
    pub fn scan(&mut self, path: &Path, host: Host) -> io::Result<()> {
        let marks = host.profile().compaction_marks;
        let name = path.to_string_lossy().into_owned();
        if self.path.as_deref() != Some(name.as_str()) {
            self.path = Some(name);
            self.scanned_to = 0;
        }
        if marks.is_empty() {
            return Ok(());
        }
        let (file, len) = crate::open_transcript(path)?;
        if len < self.scanned_to {
            self.scanned_to = 0;
        }
        let from = self.scanned_to.max(len.saturating_sub(SCAN_CAP));
        if from >= len {
            return Ok(());
        }
        let read = |at: u64, buf: &mut [u8]| interband::fsio::read_exact_at(&file, buf, at);
        // Where the last search ended is a line's start; a capped first
        // look may start inside one.
        let inside = from > self.scanned_to;
        let (found, done_to) = compactions(from, inside, len, marks, host, read)?;
        let skip = found.len().saturating_sub(COMPACTIONS_READ);
        for (line_start, fact) in found.into_iter().skip(skip) {
            let Fact::Compaction {
                before, automatic, ..
            } = fact
            else {
                continue;
            };
            let prior = crate::tail::read_tail_until(path, line_start, BEFORE_CAP, host)
                .ok()
                .and_then(|t| t.usage)
                .filter(|u| u.kind == crate::usage::UsageKind::Assistant);
            let model = prior.as_ref().and_then(|u| u.model.clone());
            if let Some(u) = &prior {
                self.saw_usage(model.as_deref(), u.used_tokens);
            }
            let tokens = before.or(prior.map(|u| u.used_tokens)).unwrap_or(0);
            self.saw_compaction(model.as_deref(), tokens, automatic == Some(true));
        }
        self.scanned_to = done_to;
        Ok(())
    }
}

/// The compaction lines in `[from, len)` (each line's start and fact), and
/// where the whole lines searched end; `inside`: `from` may be inside a line
/// (then the search starts at the next).
fn compactions<R>(
    from: u64,
    inside: bool,
    len: u64,
    marks: &[&[u8]],
    host: Host,
    mut read: R,
) -> io::Result<(Vec<(u64, Fact)>, u64)>
where
    R: FnMut(u64, &mut [u8]) -> io::Result<()>,
{
    let reader = host.reader();
    let mut found = Vec::new();
    // `buf` holds [base, base + buf.len()): a partial line carried, then new bytes.
    let mut buf: Vec<u8> = Vec::new();
    let mut base = from;
    let mut pos = from;
    let mut done_to = from;
    // A search that starts inside a line (a capped first look) skips to the next.
    let mut skip_first = inside;
    if skip_first {
        let mut b = [0u8; 1];
        read(from - 1, &mut b)?;
        skip_first = b[0] != b'\n';
    }
    while pos < len {
        let n = (CHUNK as u64).min(len - pos) as usize;
        let old = buf.len();
        buf.resize(old + n, 0);
        read(pos, &mut buf[old..])?;
        pos += n as u64;
        let Some(last_nl) = memchr::memrchr(b'\n', &buf) else {
            if buf.len() > LONGEST_LINE {
                // One enormous line: none of it is searched.
                base += buf.len() as u64;
                buf.clear();
                skip_first = true;
            }
            continue;
        };
        let whole = &buf[..=last_nl];
        let mut start = 0;
        if skip_first {
            start = memchr::memchr(b'\n', whole).map_or(whole.len(), |i| i + 1);
            skip_first = false;
        }
        let mut seen_line = usize::MAX;
        for mark in marks {
            for at in memchr::memmem::find_iter(&whole[start..], mark) {
                let at = start + at;
                let line_start = memchr::memrchr(b'\n', &whole[..at]).map_or(0, |i| i + 1);
                let line_end = at + memchr::memchr(b'\n', &whole[at..]).unwrap_or(whole.len() - at);
                if line_start == seen_line || line_start < start {
                    continue;
                }
                seen_line = line_start;
                let offset = base + line_end as u64 + 1;
                if let Some(fact @ Fact::Compaction { .. }) =
                    reader(&whole[line_start..line_end], offset)
                {
                    found.push((base + line_start as u64, fact));
                    if found.len() >= 2 * COMPACTIONS_READ {
                        found.drain(..COMPACTIONS_READ);
                    }
                }
            }
        }
        done_to = base + last_nl as u64 + 1;
        buf.drain(..=last_nl);
        base = done_to;
    }
    found.sort_by_key(|(at, _)| *at);
    found.dedup_by_key(|(at, _)| *at);
    Ok((found, done_to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use interband::context::WindowSource;
    use std::io::Write;

    fn assistant(id: &str, model: &str, tokens: u64) -> String {
        serde_json::json!({"type": "assistant", "isSidechain": false, "requestId": format!("r{id}"),
            "message": {"id": id, "model": model, "usage": {"input_tokens": 10, "cache_read_input_tokens": tokens - 10, "output_tokens": 5}},
            "version": "2.1.92"})
        .to_string()
    }

    fn boundary(uuid: &str, trigger: &str, pre: u64) -> String {
        serde_json::json!({"type": "system", "subtype": "compact_boundary", "uuid": uuid, "isSidechain": false,
            "compactMetadata": {"trigger": trigger, "preTokens": pre}, "version": "2.1.92"})
        .to_string()
    }

    fn write(path: &Path, lines: &[String]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    #[test]
    fn an_automatic_compaction_settles_the_smaller_window_per_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        write(
            &path,
            &[
                assistant("a", "claude-haiku-4-5-20251001", 150_000),
                assistant("b", "claude-haiku-4-5-20251001", 168_000),
                boundary("c1", "auto", 171_234),
            ],
        );
        let mut h = History::default();
        h.scan(&path, Host::Claude).unwrap();
        let e = h.of(Some("claude-haiku-4-5-20251001")).unwrap();
        assert_eq!((e.peak, e.auto_compacted_at), (168_000, Some(171_234)));
        assert_eq!(
            e.settles(1_000_000, 200_000, 967_000),
            Some((200_000, WindowSource::Compaction))
        );
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(h.scanned_to, len);
        // Only what was written since is searched again; a manual one is no evidence.
        write(
            &path,
            &[
                assistant("d", "claude-sonnet-4-5", 120_000),
                boundary("c2", "manual", 121_000),
            ],
        );
        h.scan(&path, Host::Claude).unwrap();
        let s = h.of(Some("claude-sonnet-4-5")).unwrap();
        assert_eq!((s.peak, s.auto_compacted_at), (120_000, None));
        assert_eq!(
            h.of(Some("claude-haiku-4-5-20251001"))
                .unwrap()
                .auto_compacted_at,
            Some(171_234),
            "what was learned stands"
        );
    }

    #[test]
    fn a_half_written_line_is_searched_once_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        write(&path, &[assistant("a", "m", 160_000)]);
        let b = boundary("c1", "auto", 170_000);
        let (head, rest) = b.split_at(40);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(head.as_bytes())
            .unwrap();
        let mut h = History::default();
        h.scan(&path, Host::Claude).unwrap();
        assert!(h.of(Some("m")).and_then(|e| e.auto_compacted_at).is_none());
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(format!("{rest}\n").as_bytes())
            .unwrap();
        h.scan(&path, Host::Claude).unwrap();
        assert_eq!(h.of(Some("m")).unwrap().auto_compacted_at, Some(170_000));
    }

    #[test]
    fn a_rewritten_or_other_transcript_is_searched_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        write(
            &a,
            &[
                assistant("a", "m", 160_000),
                boundary("c1", "auto", 170_000),
            ],
        );
        write(&b, &[assistant("a", "m", 50_000)]);
        let mut h = History::default();
        h.scan(&a, Host::Claude).unwrap();
        h.scan(&b, Host::Claude).unwrap();
        assert_eq!(h.scanned_to, std::fs::metadata(&b).unwrap().len());
        let mut merged = History::default();
        merged.merge(&h);
        assert_eq!(merged, h);
    }

    #[test]
    fn a_transcript_of_many_compactions_is_read_back_from_its_latest_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut lines = Vec::new();
        for i in 0..200u64 {
            lines.push(assistant(&format!("a{i}"), "m", 150_000 + i));
            lines.push(boundary(&format!("c{i}"), "auto", 160_000 + i));
        }
        write(&path, &lines);
        let mut h = History::default();
        h.scan(&path, Host::Claude).unwrap();
        let e = h.of(Some("m")).unwrap();
        // The latest 32 alone: the lowest of them, and their peak.
        assert_eq!(
            e.auto_compacted_at,
            Some(160_000 + 200 - COMPACTIONS_READ as u64)
        );
        assert_eq!(e.peak, 150_199);
        assert_eq!(h.scanned_to, std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn the_models_kept_are_bounded() {
        let mut h = History::default();
        for i in 0..10 {
            h.saw_usage(Some(&format!("m{i}")), i);
        }
        assert_eq!(h.models.len(), MODELS_KEPT);
        assert!(h.of(Some("m9")).is_some() && h.of(Some("m0")).is_none());
    }
}
