//! Subscription by file watch: new values of the keys matching some patterns,
//! each `(key, seq)` delivered once.
//!
//! The root is watched recursively with `notify`. A matching file is re-read on
//! any event whatever its kind (an atomic rename shows up as a rename, not a
//! write); a new folder is scanned; an overflow or watcher error triggers a
//! full rescan, and so does a periodic timer. Where file events do not work
//! (some network or container filesystems), a polling mode rescans on a short
//! interval. Rescans are cheap: a file whose inode, size and mtime are
//! unchanged is not re-read.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use notify::Watcher as _;

use crate::consumer::Cursor;
use crate::{Bus, Error, Message, Result};

/// How a subscription watches.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Poll instead of using file events.
    pub poll: bool,
    /// How often polling mode rescans.
    pub poll_interval: Duration,
    /// How often event mode rescans anyway, as a safety net.
    pub rescan_interval: Duration,
    /// Deliver the values present at start (else only values that arrive later).
    pub initial: bool,
}

impl Default for WatchOptions {
    /// Events, with polling when `INTERBAND_WATCH_POLL` is set to anything but `0`;
    /// 100 ms polls, a 30 s safety rescan, existing values delivered.
    fn default() -> Self {
        WatchOptions {
            poll: std::env::var("INTERBAND_WATCH_POLL").is_ok_and(|v| !v.is_empty() && v != "0"),
            poll_interval: Duration::from_millis(100),
            rescan_interval: Duration::from_secs(30),
            initial: true,
        }
    }
}

/// Compiles `namespace/channel/key` glob patterns (`*` stays within one part).
///
/// ```
/// let set = interband::watch::compile_patterns(&["interpulse/*/s1", "intermem/**"]).unwrap();
/// assert!(set.is_match("interpulse/pressure/s1"));
/// assert!(set.is_match("intermem/note/x"));
/// assert!(!set.is_match("interpulse/pressure/s2"));
/// ```
pub fn compile_patterns<S: AsRef<str>>(patterns: &[S]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let p = p.as_ref();
        let glob = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::InvalidName {
                what: "pattern",
                value: p.to_owned(),
                reason: e.kind().to_string(),
            })?;
        b.add(glob);
    }
    b.build().map_err(|e| Error::InvalidName {
        what: "pattern",
        value: patterns
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(" "),
        reason: e.to_string(),
    })
}

/// The message files of the channel folders a set of patterns can match:
/// exact folders when every pattern names its namespace and channel
/// literally, else every folder. Listed through verified handles: a linked
/// folder gives nothing.
pub(crate) fn candidate_files<S: AsRef<str>>(bus: &Bus, patterns: &[S]) -> Vec<PathBuf> {
    let is_literal = |s: &str| !s.contains(['*', '?', '[', '{', '\\']);
    let mut channels = Vec::new();
    for p in patterns {
        let mut parts = p.as_ref().splitn(3, '/');
        match (parts.next(), parts.next()) {
            (Some(ns), Some(ch)) if is_literal(ns) && is_literal(ch) => {
                channels.push((ns.to_owned(), ch.to_owned()))
            }
            _ => {
                channels = crate::retention::channels(bus).unwrap_or_default();
                break;
            }
        }
    }
    channels.sort();
    channels.dedup();
    let mut files: Vec<PathBuf> = channels
        .iter()
        .filter_map(|(ns, ch)| bus.channel(ns, ch, false).ok())
        .flat_map(|d| {
            d.entries()
                .unwrap_or_default()
                .into_iter()
                .map(move |e| d.path().join(e.name))
        })
        .collect();
    files.sort();
    files
}

fn watch_events(
    root: &Path,
) -> notify::Result<(
    notify::RecommendedWatcher,
    Receiver<notify::Result<notify::Event>>,
)> {
    let (tx, rx) = channel();
    // A link under the root is never followed: one to `/` would otherwise
    // make the watcher walk and watch the whole file system.
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut w = notify::RecommendedWatcher::new(tx, config)?;
    w.watch(root, notify::RecursiveMode::Recursive)?;
    Ok((w, rx))
}

/// File events taken in before the files they name are read.
const MAX_BATCH: usize = 1024;

/// A live subscription. Call [`Subscription::next`] in a loop.
///
/// ```no_run
/// use std::time::Duration;
/// let bus = interband::Bus::from_env().unwrap();
/// let mut sub = interband::Subscription::new(&bus, &["interpulse/checkpoint/*"], Default::default()).unwrap();
/// while let Some(msg) = sub.next(Duration::from_secs(60)).unwrap() {
///     println!("{} seq {}", msg.path.display(), msg.envelope.seq);
/// }
/// ```
pub struct Subscription {
    bus: Bus,
    patterns: Vec<String>,
    set: GlobSet,
    opts: WatchOptions,
    events: Option<(
        notify::RecommendedWatcher,
        Receiver<notify::Result<notify::Event>>,
    )>,
    stamps: HashMap<PathBuf, (u64, u64, u64, std::time::SystemTime)>,
    delivered: HashMap<PathBuf, Cursor>,
    queue: VecDeque<Message>,
    last_scan: Instant,
    /// A full rescan due shortly: a new folder appeared, and a folder made in
    /// it before the watcher watched it would give no event of its own.
    soon: Option<Instant>,
}

impl Subscription {
    /// Starts watching the bus root (created if missing) for `patterns`, and
    /// scans once. Falls back to polling when file events are unavailable.
    pub fn new<S: AsRef<str>>(bus: &Bus, patterns: &[S], opts: WatchOptions) -> Result<Self> {
        let set = compile_patterns(patterns)?;
        bus.root_dir(true)?;
        // Where file events cannot be had (no inotify, its limits reached), poll instead.
        let events = if opts.poll {
            None
        } else {
            watch_events(bus.root()).ok()
        };
        let mut sub = Subscription {
            bus: bus.clone(),
            patterns: patterns.iter().map(|p| p.as_ref().to_owned()).collect(),
            set,
            opts,
            events,
            stamps: HashMap::new(),
            delivered: HashMap::new(),
            queue: VecDeque::new(),
            last_scan: Instant::now(),
            soon: None,
        };
        sub.scan();
        if !sub.opts.initial {
            sub.queue.clear();
        }
        Ok(sub)
    }

    /// True when events are used, false when polling.
    pub fn uses_events(&self) -> bool {
        self.events.is_some()
    }

    /// The next new value, waiting at most `timeout`; `None` on timeout.
    pub fn next(&mut self, timeout: Duration) -> Result<Option<Message>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(m) = self.queue.pop_front() {
                return Ok(Some(m));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let interval = if self.events.is_some() {
                self.opts.rescan_interval
            } else {
                self.opts.poll_interval
            };
            let next_scan = (self.last_scan + interval).min(self.soon.unwrap_or(deadline));
            if now >= next_scan {
                self.scan();
                continue;
            }
            let wait = deadline.min(next_scan) - now;
            match &self.events {
                None => std::thread::sleep(wait),
                Some((_, rx)) => match rx.recv_timeout(wait) {
                    Ok(ev) => {
                        // Take whatever else is already queued, then read each
                        // file named once (one write gives several events).
                        let mut touched = Vec::new();
                        self.on_event(ev, &mut touched);
                        // (Bounded: a writer never keeps the files unread.)
                        for _ in 0..MAX_BATCH {
                            let Some((_, rx)) = &self.events else { break };
                            match rx.try_recv() {
                                Ok(ev) => self.on_event(ev, &mut touched),
                                Err(_) => break,
                            }
                        }
                        let mut seen = std::collections::HashSet::new();
                        for path in touched {
                            if seen.insert(path.clone()) {
                                self.offer(&path, Read::Always);
                            }
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => {
                        // The watcher died: fall back to polling.
                        self.events = None;
                    }
                },
            }
        }
    }

    /// Takes in one file event: message files it names are added to
    /// `touched` (the caller reads each once), new folders are scanned, a lost event rescans.
    fn on_event(&mut self, ev: notify::Result<notify::Event>, touched: &mut Vec<PathBuf>) {
        match ev {
            // Opening and reading files (our own reads included) changes nothing.
            Ok(ev) if matches!(ev.kind, notify::EventKind::Access(_)) => {}
            Ok(ev) if !ev.need_rescan() => {
                for path in ev.paths {
                    if self.bus.address_of(&path).is_some() {
                        touched.push(path);
                        continue;
                    }
                    // Writers' temp and lock files, stamps, the bus's own
                    // folders: never a message, nor a namespace or channel.
                    if path
                        .file_name()
                        .is_none_or(|n| n.as_encoded_bytes().starts_with(b"."))
                    {
                        continue;
                    }
                    // (Only what kind of thing it is: a link is no folder.)
                    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                        self.scan_dir(&path);
                    }
                }
            }
            _ => self.scan(),
        }
    }

    /// Rescans every folder the patterns can match.
    fn scan(&mut self) {
        self.last_scan = Instant::now();
        self.soon = None;
        for f in candidate_files(&self.bus, &self.patterns) {
            self.offer(&f, Read::IfChanged);
        }
    }

    fn scan_dir(&mut self, dir: &Path) {
        self.soon = Some(Instant::now() + Duration::from_millis(100));
        // A new namespace or channel folder: its files may predate our watch
        // on it. Listed through verified handles, never through a link.
        let Ok(rel) = dir.strip_prefix(self.bus.root()) else {
            return;
        };
        let parts: Option<Vec<&str>> = rel.iter().map(|p| p.to_str()).collect();
        let channels: Vec<(String, String)> = match parts.as_deref() {
            Some([ns, ch]) => vec![((*ns).to_owned(), (*ch).to_owned())],
            Some([ns]) => self
                .bus
                .dir(&[ns], false)
                .and_then(|d| d.entries())
                .unwrap_or_default()
                .into_iter()
                .filter(|e| e.kind == crate::fsio::Kind::Dir)
                .filter_map(|e| e.name.into_string().ok())
                .map(|ch| ((*ns).to_owned(), ch))
                .collect(),
            _ => return,
        };
        for (ns, ch) in channels {
            let Ok(d) = self.bus.channel(&ns, &ch, false) else {
                continue;
            };
            for e in d.entries().unwrap_or_default() {
                self.offer(&d.path().join(e.name), Read::IfChanged);
            }
        }
    }

    /// Reads a file if it is a matching message (on a rescan, only if its
    /// stamp changed), and queues it if its value is new.
    fn offer(&mut self, path: &Path, read: Read) {
        let Some(addr) = self.bus.address_of(path) else {
            return;
        };
        if !self.set.is_match(addr.to_string()) {
            return;
        }
        let meta = self
            .bus
            .channel(&addr.namespace, &addr.channel, false)
            .and_then(|d| d.stat(&format!("{}.json", addr.key)));
        let Ok(Some(meta)) = meta else {
            // Gone (pruned): forget it, so memory stays bounded by the keys that exist.
            self.stamps.remove(path);
            self.delivered.remove(path);
            return;
        };
        let stamp = (meta.dev, meta.ino, meta.len, meta.mtime);
        if read == Read::IfChanged && self.stamps.get(path) == Some(&stamp) {
            return;
        }
        let Ok(mut msg) = self.bus.read_file(path) else {
            // Corrupt or vanished: treat as absent, but look again next time.
            return;
        };
        self.stamps.insert(path.to_owned(), stamp);
        let cursor = Cursor::of_message(&msg);
        if self
            .delivered
            .get(path)
            .is_some_and(|c| !cursor.is_newer_than(c))
        {
            return;
        }
        self.delivered.insert(path.to_owned(), cursor);
        msg.address = Some(addr);
        self.queue.push_back(msg);
    }
}

/// When [`Subscription::offer`] reads a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// On a file event: always. An atomic replace can reuse an inode, a
    /// length and a coarse mtime, so the stamp alone could hide a new value.
    Always,
    /// On a rescan: when the file's stamp changed.
    IfChanged,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("root", &self.bus.root())
            .field("patterns", &self.patterns)
            .field("events", &self.events.is_some())
            .finish()
    }
}
