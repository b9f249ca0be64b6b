//! The bridge: mirrors chosen channels between the local bus and a NATS
//! JetStream key-value bucket, both ways, so agents on several machines share
//! one bus.
//!
//! Every value a bridge sends is stored under `<host>/<namespace>/<channel>/<key>`
//! (its origin first), holding the envelope as the local bus has it. A bridge
//! never applies what its own host sent, so nothing echoes back.
//!
//! Remote values are validated exactly as a local publish is (size, envelope,
//! contract); anything else is dropped and counted. Then, by channel:
//!
//! - **shared** channels (coordination, dispatch, bead phases: by default
//!   [`SHARED`]) are published into the local bus at the same address, for the
//!   local plugins to act on;
//! - **observed** channels (pressure, checkpoints, notes, statusline context:
//!   [`OBSERVED`]) are kept apart, under `<root>/.remote/<host>/...`, for the
//!   views (`interband top`, `interband pressure --all`). No consumer watches
//!   there: a checkpoint from another machine never makes this machine write
//!   a note from a transcript it does not have.
//!
//! While the server is unreachable the bridge keeps reading the local bus and
//! holds the latest value per key (memory bounded by the number of keys),
//! reconnects with backoff, and resumes the bucket's watch from the last
//! revision it applied (kept in `<root>/.state/bridge.json` with its status).
//!
//! Retention: the values kept apart age out by their channel's retention and
//! count, as the channel's own do ([`prune_remote`], once a minute); the
//! bucket the bridge creates forgets a value after the longest retention of
//! the channels bridged, so a machine joining late does not replay the bus's
//! whole past.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use interband::fsio::MAX_MESSAGE_BYTES;
use interband::paths::{check_segment, safe_key};
use interband::{Bus, Message, Subscription, WatchOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Channels applied into the local bus by default: what agents on several
/// machines coordinate through.
pub const SHARED: &[&str] = &[
    "interphase/bead",
    "clavain/dispatch",
    "interlock/coordination",
];

/// Channels kept apart by default, for the views only: each session's own state.
pub const OBSERVED: &[&str] = &[
    "interpulse/pressure",
    "interpulse/checkpoint",
    "intermem/note",
    "interline/context",
    "compact/pending",
];

/// How often the bridge applies retention to the values it keeps apart
/// (each folder still at most once per prune interval).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// The folder, under the root, where observed remote values are kept.
pub const REMOTE: &str = ".remote";

/// What can stop the bridge.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A channel given is not `NAMESPACE/CHANNEL`.
    #[error("{channel:?}: expected NAMESPACE/CHANNEL")]
    Channel {
        /// What was given.
        channel: String,
    },
    /// The host name cannot name a folder or a key.
    #[error("host {host:?}: {reason}")]
    Host {
        /// What was given.
        host: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The bus failed.
    #[error(transparent)]
    Bus(#[from] interband::Error),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// How to reach the server, what to mirror, and as whom.
#[derive(Debug, Clone)]
pub struct Options {
    /// Server URLs, comma-separated (`nats://host:4222`, `tls://...`).
    pub url: String,
    /// The key-value bucket (created, with one value per key, when missing).
    pub bucket: String,
    /// This machine's name: the origin of what it sends, the folder of what
    /// others see of it. `A-Za-z0-9._-`.
    pub host: String,
    /// A credentials file (`.creds`).
    pub creds: Option<PathBuf>,
    /// An nkey seed.
    pub nkey: Option<String>,
    /// A CA certificate (PEM): the connection then requires TLS.
    pub tls_ca: Option<PathBuf>,
    /// Channels applied into the local bus (`NAMESPACE/CHANNEL`).
    pub shared: Vec<String>,
    /// Channels kept apart for the views.
    pub observed: Vec<String>,
}

impl Options {
    /// The defaults for `url`, as `host`: bucket `interband`, [`SHARED`] and [`OBSERVED`].
    pub fn new(url: &str, host: &str) -> Self {
        Options {
            url: url.to_owned(),
            bucket: "interband".to_owned(),
            host: host.to_owned(),
            creds: None,
            nkey: None,
            tls_ca: None,
            shared: SHARED.iter().map(|s| (*s).to_owned()).collect(),
            observed: OBSERVED.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn check(&self) -> Result<(), Error> {
        check_segment("host", &self.host).map_err(|e| Error::Host {
            host: self.host.clone(),
            reason: e.to_string(),
        })?;
        for c in self.shared.iter().chain(&self.observed) {
            let ok = c.split_once('/').is_some_and(|(n, ch)| {
                check_segment("n", n).is_ok() && check_segment("c", ch).is_ok()
            });
            if !ok {
                return Err(Error::Channel { channel: c.clone() });
            }
        }
        Ok(())
    }
}

/// The `[bridge]` settings (also `INTERBAND_BRIDGE_<KEY>`). A project's file
/// sets them only once trusted: they send this machine's sessions to a server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Server URLs, comma-separated; empty: no bridge.
    pub url: String,
    /// The bucket (default `interband`).
    pub bucket: String,
    /// This machine's name (default: the host name).
    pub host: String,
    /// A credentials file.
    pub creds: String,
    /// A file holding an nkey seed.
    pub nkey: String,
    /// A CA certificate (PEM); TLS is then required.
    pub tls_ca: String,
    /// Channels applied into the local bus (default [`SHARED`]).
    pub shared: Vec<String>,
    /// Channels kept apart for the views (default [`OBSERVED`]).
    pub observed: Vec<String>,
}

impl Settings {
    /// The options these settings make, for a machine named `default_host`
    /// unless `host` is set; `None` without a URL. Reads the nkey file.
    pub fn options(&self, default_host: &str) -> Result<Option<Options>, String> {
        if self.url.trim().is_empty() {
            return Ok(None);
        }
        let host = if self.host.is_empty() {
            default_host
        } else {
            &self.host
        };
        let mut o = Options::new(self.url.trim(), host);
        if !self.bucket.is_empty() {
            o.bucket = self.bucket.clone();
        }
        let path = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
        o.creds = path(&self.creds);
        o.tls_ca = path(&self.tls_ca);
        if let Some(f) = path(&self.nkey) {
            o.nkey = Some(secret_file(&f)?.trim().to_owned());
        }
        if !self.shared.is_empty() {
            o.shared = self.shared.clone();
        }
        if !self.observed.is_empty() {
            o.observed = self.observed.clone();
        }
        Ok(Some(o))
    }
}

/// The most bytes read from a credentials or nkey file.
const SECRET_MAX: u64 = 64 << 10;

/// A credentials or nkey file's text: a regular file only (a FIFO or a
/// device named in the settings never blocks the bridge), bounded.
fn secret_file(path: &std::path::Path) -> Result<String, String> {
    let bytes = interband::fsio::read_regular(path, SECRET_MAX)
        .map_err(|e| format!("{}: {}", path.display(), e.into_io()))?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// This machine's host name.
pub fn host_name() -> String {
    gethostname::gethostname()
        .into_string()
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| {
            ["HOSTNAME", "COMPUTERNAME"]
                .iter()
                .find_map(|v| std::env::var(v).ok())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

/// What a running bridge says of itself (`<root>/.state/bridge.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    /// This machine's name.
    #[serde(default)]
    pub host: String,
    /// The server URLs.
    #[serde(default)]
    pub url: String,
    /// The bucket.
    #[serde(default)]
    pub bucket: String,
    /// Whether the server is reachable now.
    #[serde(default)]
    pub connected: bool,
    /// The last bucket revision applied or skipped: the watch resumes after it.
    #[serde(default)]
    pub last_revision: u64,
    /// Values sent since the bridge started.
    #[serde(default)]
    pub sent: u64,
    /// Remote values applied (shared) or kept (observed).
    #[serde(default)]
    pub applied: u64,
    /// Remote values dropped as invalid, or from origins past [`MAX_ORIGINS`].
    #[serde(default)]
    pub dropped: u64,
    /// Local values dropped while the server was unreachable, past [`MAX_PENDING_BYTES`].
    #[serde(default)]
    pub dropped_local: u64,
    /// Addresses forgotten from the bridge's memory of its own writes, past
    /// [`MAX_REMEMBERED`].
    #[serde(default)]
    pub forgotten: u64,
    /// Local values waiting for the server.
    #[serde(default)]
    pub pending: usize,
    /// Values in the bucket not yet applied here, as the server counted when
    /// the last one arrived (0: caught up).
    #[serde(default)]
    pub behind: u64,
    /// Other machines' values removed by their channel's retention since
    /// the bridge started.
    #[serde(default)]
    pub pruned: u64,
    /// The last problem, if any.
    #[serde(default)]
    pub problem: Option<String>,
    /// When this was written, Unix seconds.
    #[serde(default)]
    pub updated: u64,
}

/// How many recent writes per address the bridge remembers as its own: a
/// local watch lagging behind a key rewritten faster than it reads still
/// recognises each of them.
const RECENT: usize = 64;

/// The most addresses whose recent writes are remembered (the oldest
/// address is forgotten first): what another machine can make the bridge
/// remember is bounded, however many keys it floods a shared channel with.
/// A forgotten one costs at most an echo of a value the bridge wrote.
pub const MAX_REMEMBERED: usize = 4096;

/// The most values from the server held before they are applied (the
/// client's own default is 65,536: some 60 MB under a flood of small values).
const SUBSCRIPTION_CAPACITY: usize = 4096;

/// The most other machines kept apart under [`REMOTE`]: values from more
/// origins are dropped (and counted), so a flood of made-up host names
/// cannot make a folder apiece.
pub const MAX_ORIGINS: usize = 128;

/// The most bytes of local values held while the server is unreachable
/// (the latest per key): a value of a new key past it is dropped and counted.
pub const MAX_PENDING_BYTES: usize = 16 << 20;

const STATE: &str = ".state";
const STATUS_FILE: &str = "bridge.json";

/// The status the bridge last wrote, if any.
pub fn status(bus: &Bus) -> Option<Status> {
    let dir = bus.dir(&[STATE], false).ok()?;
    serde_json::from_slice(&dir.read(STATUS_FILE, MAX_MESSAGE_BYTES).ok()?).ok()
}

fn save_status(bus: &Bus, s: &Status) -> Result<(), Error> {
    let bytes = serde_json::to_vec_pretty(s).expect("status serializes");
    Ok(bus.dir(&[STATE], true)?.write(STATUS_FILE, &bytes, false)?)
}

/// Applies each observed channel's retention (age and count, with the same
/// `INTERBAND_RETENTION_*` / `INTERBAND_MAX_FILES_*` overrides as the
/// channel) to the other machines' values kept under [`REMOTE`], so a
/// machine that went quiet drops out of the views as its own values would.
/// Unless `force`, each folder at most once per prune interval. Returns the
/// values removed.
pub fn prune_remote(bus: &Bus, force: bool) -> Vec<std::path::PathBuf> {
    prune_remote_with(bus, force, &|k| std::env::var(k).ok())
}

/// [`prune_remote`] with the environment given as a function.
pub fn prune_remote_with(
    bus: &Bus,
    force: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<std::path::PathBuf> {
    // The names in a folder under the remote one (none when it is not one).
    let names = |parts: &[&str]| -> Vec<String> {
        let parts: Vec<&str> = std::iter::once(REMOTE)
            .chain(parts.iter().copied())
            .collect();
        bus.dir(&parts, false)
            .and_then(|d| d.entries())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| e.name.into_string().ok())
            .collect()
    };
    let mut removed = Vec::new();
    // A folder left with no value goes (it fails while anything is in it).
    let empty = |parts: &[&str], name: &str| {
        let parts: Vec<&str> = std::iter::once(REMOTE)
            .chain(parts.iter().copied())
            .collect();
        if let Ok(d) = bus.dir(&parts, false) {
            let _ = d.remove(interband::retention::STAMP);
            let _ = d.remove_dir(name);
        }
    };
    for host in names(&[]) {
        for ns in names(&[&host]) {
            for ch in names(&[&host, &ns]) {
                if let Ok(dir) = bus.dir(&[REMOTE, &host, &ns, &ch], false)
                    && let Ok(r) = interband::retention::prune_dir(&dir, &ns, &ch, force, env)
                {
                    removed.extend(r.removed);
                    let left = dir.entries().unwrap_or_default();
                    if left
                        .iter()
                        .all(|e| e.name_str() == Some(interband::retention::STAMP))
                    {
                        let _ = dir.remove(interband::retention::STAMP);
                        empty(&[&host, &ns], &ch);
                    }
                }
            }
            empty(&[&host], &ns);
        }
        empty(&[], &host);
    }
    removed
}

/// Every observed remote value of `namespace/channel`, with the host it came from.
pub fn remote_messages(bus: &Bus, namespace: &str, channel: &str) -> Vec<(String, Message)> {
    let Ok(remote) = bus.dir(&[REMOTE], false) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for host in remote.entries().unwrap_or_default() {
        let Some(host) = host.name_str().map(str::to_owned) else {
            continue;
        };
        let Ok(dir) = bus.dir(&[REMOTE, &host, namespace, channel], false) else {
            continue;
        };
        for name in dir.file_names(".json").unwrap_or_default() {
            let Ok(bytes) = dir.read(&name, MAX_MESSAGE_BYTES) else {
                continue;
            };
            if let Ok(m) = interband::parse_message(&dir.join(&name), &bytes) {
                out.push((host.clone(), m));
            }
        }
    }
    out
}

/// The URLs without a `user:password@` part, and that login: given to the
/// client apart, and never written to the status file.
fn split_login(urls: &str) -> (String, Option<(String, String)>) {
    let mut login = None;
    let clean: Vec<String> = urls
        .split(',')
        .map(|u| {
            let u = u.trim();
            let (scheme, rest) = u.split_once("://").unwrap_or(("nats", u));
            match rest.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let (user, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                    login = Some((user.to_owned(), pass.to_owned()));
                    format!("{scheme}://{host}")
                }
                None => format!("{scheme}://{rest}"),
            }
        })
        .collect();
    (clean.join(","), login)
}

/// The URLs without any `user:password@` part, for showing.
pub fn without_login(urls: &str) -> String {
    split_login(urls).0
}

/// The key a value is stored under in the bucket.
fn kv_key(host: &str, ns: &str, ch: &str, key: &str) -> String {
    format!("{host}/{ns}/{ch}/{key}")
}

/// The parts of a bucket key, each a plain name.
fn parse_kv_key(k: &str) -> Option<(&str, &str, &str, &str)> {
    let mut parts = k.splitn(4, '/');
    let (host, ns, ch, key) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let plain = |s: &str| check_segment("part", s).is_ok();
    (plain(host) && plain(ns) && plain(ch) && plain(key) && safe_key(key) == key)
        .then_some((host, ns, ch, key))
}

/// A digest of what a value says (type and payload), to know the bridge's
/// own writes when the local watch sees them.
fn digest(msg_type: &str, payload: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(msg_type.as_bytes());
    h.update([0]);
    h.update(payload.to_string().as_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs the bridge until `stop` is set. Problems with the server are
/// retried for as long as it runs; only bad options and a bus that cannot be
/// used end it.
pub fn run(bus: &Bus, opts: &Options, stop: Arc<AtomicBool>) -> Result<(), Error> {
    opts.check()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    rt.block_on(Bridge::new(bus, opts).run(stop))
}

struct Bridge<'a> {
    bus: &'a Bus,
    opts: &'a Options,
    status: Status,
    /// Local values not yet stored in the bucket: the latest per bucket key.
    pending: HashMap<String, Vec<u8>>,
    /// Their bytes, at most [`MAX_PENDING_BYTES`].
    pending_bytes: usize,
    /// What the bridge recently wrote into the local bus per address (shared
    /// channels), newest last: the local watch's sight of any of them, however
    /// late, is not sent back. At most [`MAX_REMEMBERED`] addresses.
    written: HashMap<String, std::collections::VecDeque<String>>,
    /// The addresses in `written`, oldest first.
    written_order: std::collections::VecDeque<String>,
    /// Other machines' values written into each folder since it was last
    /// pruned: past the channel's count, the folder is pruned at once, so a
    /// flood of keys never outgrows it (nor the local watch's memory of it).
    since_prune: HashMap<(String, String, String), usize>,
    /// The other machines kept apart, at most [`MAX_ORIGINS`].
    origins: std::collections::HashSet<String>,
}

type Watch = async_nats::jetstream::kv::Watch;
type Store = async_nats::jetstream::kv::Store;

async fn next_entry(
    w: &mut Option<Watch>,
) -> Option<Result<async_nats::jetstream::kv::Entry, async_nats::jetstream::kv::WatcherError>> {
    match w {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

impl<'a> Bridge<'a> {
    fn new(bus: &'a Bus, opts: &'a Options) -> Self {
        let last =
            status(bus).filter(|s| s.bucket == opts.bucket && s.url == split_login(&opts.url).0);
        Bridge {
            bus,
            opts,
            status: Status {
                host: opts.host.clone(),
                url: split_login(&opts.url).0,
                bucket: opts.bucket.clone(),
                last_revision: last.map_or(0, |s| s.last_revision),
                ..Status::default()
            },
            pending: HashMap::new(),
            pending_bytes: 0,
            written: HashMap::new(),
            written_order: Default::default(),
            since_prune: HashMap::new(),
            origins: Default::default(),
        }
        .with_present_origins()
    }

    fn with_present_origins(mut self) -> Self {
        self.origins = self
            .present_origins()
            .into_iter()
            .take(MAX_ORIGINS)
            .collect();
        self
    }

    /// The other machines with a folder under [`REMOTE`] now.
    fn present_origins(&self) -> std::collections::HashSet<String> {
        self.bus
            .dir(&[REMOTE], false)
            .and_then(|d| d.entries())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| e.name.into_string().ok())
            .collect()
    }

    async fn run(mut self, stop: Arc<AtomicBool>) -> Result<(), Error> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Message>();
        let patterns: Vec<String> = self
            .opts
            .shared
            .iter()
            .chain(&self.opts.observed)
            .map(|c| format!("{c}/*"))
            .collect();
        let mut sub = Subscription::new(self.bus, &patterns, WatchOptions::default())?;
        let watching = stop.clone();
        // The local bus is watched by its own thread (file events block).
        std::thread::spawn(move || {
            while !watching.load(Ordering::Relaxed) {
                match sub.next(Duration::from_millis(200)) {
                    Ok(Some(m)) => {
                        if tx.send(m).is_err() {
                            break;
                        }
                    }
                    Ok(None) => {}
                    Err(_) => std::thread::sleep(Duration::from_millis(200)),
                }
            }
        });
        let mut client: Option<async_nats::Client> = None;
        let mut store: Option<Store> = None;
        let mut watch: Option<Watch> = None;
        let mut backoff = Duration::from_millis(100);
        let mut next_try = Instant::now();
        let mut saved = Instant::now() - Duration::from_secs(10);
        let mut pruned = Instant::now() - PRUNE_EVERY;
        while !stop.load(Ordering::Relaxed) {
            if store.is_none() && Instant::now() >= next_try {
                match self.connect().await {
                    Ok((c, s, w)) => {
                        client = Some(c);
                        store = Some(s);
                        watch = Some(w);
                        backoff = Duration::from_millis(100);
                        self.status.connected = true;
                        self.status.problem = None;
                    }
                    Err(e) => {
                        self.status.connected = false;
                        self.status.problem = Some(e);
                        next_try = Instant::now() + backoff;
                        backoff = (backoff * 2).min(Duration::from_secs(10));
                    }
                }
            }
            tokio::select! {
                Some(m) = rx.recv() => {
                    // Everything already waiting, so one flush sends it together.
                    self.outgoing(&m);
                    while let Ok(m) = rx.try_recv() {
                        self.outgoing(&m);
                    }
                }
                entry = next_entry(&mut watch) => match entry {
                    Some(Ok(e)) => self.incoming(e),
                    Some(Err(e)) => {
                        self.status.problem = Some(format!("watch: {e}"));
                        watch = None;
                    }
                    None => watch = None,
                },
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
            // A connection that dropped is started afresh (after the backoff),
            // its watch resumed from the last revision applied.
            let lost = client
                .as_ref()
                .is_some_and(|c| c.connection_state() != async_nats::connection::State::Connected);
            if lost || (store.is_some() && watch.is_none()) {
                (client, store, watch) = (None, None, None);
                self.status.connected = false;
                next_try = Instant::now() + backoff;
            }
            if let Some(s) = &store
                && !self.flush(s).await
            {
                (client, store, watch) = (None, None, None);
                self.status.connected = false;
                next_try = Instant::now() + backoff;
            }
            if pruned.elapsed() >= PRUNE_EVERY {
                self.status.pruned += prune_remote(self.bus, false).len() as u64;
                // Machines whose values all aged out make room for others.
                let present = self.present_origins();
                self.origins.retain(|o| present.contains(o));
                pruned = Instant::now();
            }
            self.status.pending = self.pending.len();
            if saved.elapsed() >= Duration::from_millis(500) {
                self.status.updated = now();
                save_status(self.bus, &self.status)?;
                saved = Instant::now();
            }
        }
        self.status.connected = false;
        save_status(self.bus, &self.status)?;
        Ok(())
    }

    async fn connect(&self) -> Result<(async_nats::Client, Store, Watch), String> {
        let o = self.opts;
        let (urls, login) = split_login(&o.url);
        let mut co = async_nats::ConnectOptions::new()
            // The bucket's values waiting to be applied: a bound on what a
            // flood from the server can make the bridge hold (the server
            // waits, with flow control, while it is full).
            .subscription_capacity(SUBSCRIPTION_CAPACITY)
            .connection_timeout(Duration::from_secs(3))
            .request_timeout(Some(Duration::from_secs(3)));
        if let Some((user, password)) = login {
            co = co.user_and_password(user, password);
        }
        if let Some(c) = &o.creds {
            co = co
                .credentials(&secret_file(c)?)
                .map_err(|e| format!("{}: {e}", c.display()))?;
        }
        if let Some(seed) = &o.nkey {
            co = co.nkey(seed.clone());
        }
        if let Some(ca) = &o.tls_ca {
            // The client reads it itself: a regular file, or no connection.
            interband::fsio::open_regular(ca, interband::fsio::Links::Follow)
                .map_err(|e| format!("{}: {}", ca.display(), e.into_io()))?;
            co = co.add_root_certificates(ca.clone()).require_tls(true);
        }
        let client = co
            .connect(urls.as_str())
            .await
            .map_err(|e| format!("{urls}: {e}"))?;
        let js = async_nats::jetstream::new(client.clone());
        let store = match js.get_key_value(&o.bucket).await {
            Ok(s) => s,
            Err(_) => js
                .create_key_value(async_nats::jetstream::kv::Config {
                    bucket: o.bucket.clone(),
                    history: 1,
                    max_value_size: MAX_MESSAGE_BYTES as i32,
                    // The server forgets a value once every channel bridged
                    // would have pruned it, so a new machine does not catch
                    // up on the bus's whole past.
                    max_age: self.longest_retention(),
                    ..Default::default()
                })
                .await
                .map_err(|e| format!("bucket {}: {e}", o.bucket))?,
        };
        let watch = store
            .watch_all_from_revision(self.status.last_revision + 1)
            .await
            .map_err(|e| format!("bucket {}: watch: {e}", o.bucket))?;
        Ok((client, store, watch))
    }

    /// The longest retention of the channels bridged (with the environment's overrides).
    fn longest_retention(&self) -> Duration {
        let env = |k: &str| std::env::var(k).ok();
        let secs = self
            .opts
            .shared
            .iter()
            .chain(&self.opts.observed)
            .filter_map(|c| c.split_once('/'))
            .map(|(ns, ch)| interband::retention::limits(ns, ch, env).0)
            .max()
            .unwrap_or(0);
        Duration::from_secs(secs)
    }

    /// A local value: queued for the bucket, unless the bridge wrote it itself.
    fn outgoing(&mut self, m: &Message) {
        let Some(a) = &m.address else { return };
        if a.key.starts_with('.') || safe_key(&a.key) != a.key {
            return;
        }
        let said = digest(&m.envelope.msg_type, &m.envelope.payload);
        if self
            .written
            .get(&a.to_string())
            .is_some_and(|recent| recent.contains(&said))
        {
            return;
        }
        let Ok(bytes) = serde_json::to_vec(&m.envelope) else {
            return;
        };
        let k = kv_key(&self.opts.host, &a.namespace, &a.channel, &a.key);
        if self.pending_bytes + bytes.len() > MAX_PENDING_BYTES && !self.pending.contains_key(&k) {
            self.status.dropped_local += 1;
            self.status.problem = Some(format!(
                "{} bytes of values wait for the server: {k} dropped",
                self.pending_bytes
            ));
            return;
        }
        self.pending_bytes += bytes.len();
        if let Some(old) = self.pending.insert(k, bytes) {
            self.pending_bytes -= old.len();
        }
    }

    /// Remembers that the bridge wrote `said` at `address`, forgetting the
    /// oldest address past [`MAX_REMEMBERED`].
    fn remember(&mut self, address: String, said: String) {
        if !self.written.contains_key(&address) {
            if self.written_order.len() >= MAX_REMEMBERED
                && let Some(old) = self.written_order.pop_front()
            {
                self.written.remove(&old);
                self.status.forgotten += 1;
            }
            self.written_order.push_back(address.clone());
        }
        let recent = self.written.entry(address).or_default();
        recent.push_back(said);
        if recent.len() > RECENT {
            recent.pop_front();
        }
    }

    /// Counts a remote value written into a folder, and prunes the folder
    /// once the values written since reach the channel's count.
    fn written_into(&mut self, origin: Option<&str>, ns: &str, ch: &str) {
        let env = |k: &str| std::env::var(k).ok();
        let max = interband::retention::limits(ns, ch, env)
            .1
            .unwrap_or(usize::MAX);
        let at = (
            origin.unwrap_or_default().to_owned(),
            ns.to_owned(),
            ch.to_owned(),
        );
        let n = self.since_prune.entry(at).or_default();
        *n += 1;
        if *n < max {
            return;
        }
        *n = 0;
        let removed = match origin {
            Some(o) => self
                .bus
                .dir(&[REMOTE, o, ns, ch], false)
                .and_then(|d| interband::retention::prune_dir(&d, ns, ch, true, &env)),
            None => interband::retention::prune_channel(self.bus, ns, ch, true),
        };
        self.status.pruned += removed.map_or(0, |r| r.removed.len() as u64);
    }

    /// Stores the pending values, all at once (one value per key, so their
    /// order does not matter); false when the server failed. A value that
    /// failed waits for the next try, unless a newer one for its key came.
    async fn flush(&mut self, store: &Store) -> bool {
        if self.pending.is_empty() {
            return true;
        }
        let batch: Vec<(String, Vec<u8>)> = self.pending.drain().collect();
        let puts = batch
            .iter()
            .map(|(k, v)| store.put(k.as_str(), v.clone().into()));
        let results = futures_util::future::join_all(puts).await;
        let mut ok = true;
        for ((k, v), r) in batch.into_iter().zip(results) {
            match r {
                Ok(_) => self.status.sent += 1,
                Err(e) => {
                    self.status.problem = Some(format!("put {k}: {e}"));
                    self.pending.entry(k).or_insert(v);
                    ok = false;
                }
            }
        }
        self.pending_bytes = self.pending.values().map(Vec::len).sum();
        ok
    }

    /// A value from the bucket: dropped, or applied by its channel's kind.
    fn incoming(&mut self, e: async_nats::jetstream::kv::Entry) {
        self.status.last_revision = self.status.last_revision.max(e.revision);
        self.status.behind = e.delta;
        if e.operation != async_nats::jetstream::kv::Operation::Put {
            return;
        }
        let Some((origin, ns, ch, key)) = parse_kv_key(&e.key) else {
            self.status.dropped += 1;
            return;
        };
        if origin == self.opts.host {
            return;
        }
        match self.apply(origin, ns, ch, key, &e.value) {
            Ok(true) => self.status.applied += 1,
            Ok(false) => {}
            Err(why) => {
                self.status.dropped += 1;
                self.status.problem = Some(format!("dropped {}: {why}", e.key));
            }
        }
    }

    fn apply(
        &mut self,
        origin: &str,
        ns: &str,
        ch: &str,
        key: &str,
        bytes: &[u8],
    ) -> Result<bool, String> {
        if bytes.len() as u64 > MAX_MESSAGE_BYTES {
            return Err(format!("{} bytes, over the limit", bytes.len()));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        interband::check_message(&value)?;
        if value["namespace"] != ns {
            return Err("its namespace is not its channel's".into());
        }
        let channel = format!("{ns}/{ch}");
        let env: interband::Envelope = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if self.opts.shared.contains(&channel) {
            self.remember(
                format!("{ns}/{ch}/{key}"),
                digest(&env.msg_type, &env.payload),
            );
            self.bus
                .publish(ns, ch, key, &env.msg_type, &env.session_id, env.payload)
                .map_err(|e| e.to_string())?;
            self.written_into(None, ns, ch);
            Ok(true)
        } else if self.opts.observed.contains(&channel) {
            if !self.origins.contains(origin) {
                if self.origins.len() >= MAX_ORIGINS {
                    return Err(format!(
                        "{MAX_ORIGINS} other machines are kept apart already"
                    ));
                }
                self.origins.insert(origin.to_owned());
            }
            let dir = self
                .bus
                .dir(&[REMOTE, origin, ns, ch], true)
                .map_err(|e| e.to_string())?;
            dir.write(&format!("{key}.json"), bytes, false)
                .map_err(|e| e.to_string())?;
            self.written_into(Some(origin), ns, ch);
            Ok(true)
        } else {
            Ok(false)
        }
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_name_is_the_machines_own() {
        let name = host_name();
        // What the system says, read another way: Linux's kernel file,
        // Windows' COMPUTERNAME (its NetBIOS form: upper case, at most 15).
        #[cfg(target_os = "linux")]
        assert_eq!(
            name,
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap()
                .trim()
        );
        #[cfg(windows)]
        {
            let netbios = std::env::var("COMPUTERNAME").unwrap();
            assert!(
                name.to_uppercase().starts_with(&netbios.to_uppercase()),
                "{name} / {netbios}"
            );
        }
        assert!(
            !name.is_empty() && !name.contains(char::is_whitespace),
            "{name:?}"
        );
    }

    #[test]
    fn other_machines_values_age_out_by_their_channels_retention() {
        let tmp = tempfile::tempdir().unwrap();
        let bus = Bus::new(tmp.path());
        let put = |host: &str, ns: &str, ch: &str, key: &str, ago_secs: u64| {
            let dir = bus.dir(&[REMOTE, host, ns, ch], true).unwrap();
            dir.write(&format!("{key}.json"), b"{}", false).unwrap();
            let f = std::fs::File::options()
                .write(true)
                .open(dir.join(&format!("{key}.json")))
                .unwrap();
            f.set_modified(std::time::SystemTime::now() - Duration::from_secs(ago_secs))
                .unwrap();
        };
        // Pressure and checkpoints keep 24 h by default, notes 7 days.
        put("b", "interpulse", "pressure", "old", 25 * 3600);
        put("b", "interpulse", "pressure", "new", 60);
        put("c", "interpulse", "checkpoint", "old", 25 * 3600);
        put("c", "intermem", "note", "kept", 25 * 3600);
        let mut removed: Vec<String> = prune_remote_with(&bus, true, &|_| None)
            .iter()
            .map(|p| {
                // (`/` between the parts on every system.)
                let parts: Vec<_> = p.strip_prefix(bus.root()).unwrap().iter().collect();
                parts
                    .join(std::ffi::OsStr::new("/"))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            [
                ".remote/b/interpulse/pressure/old.json",
                ".remote/c/interpulse/checkpoint/old.json"
            ]
        );
        assert!(
            prune_remote_with(&bus, true, &|_| None).is_empty(),
            "nothing more to remove"
        );
        assert!(
            bus.root()
                .join(".remote/b/interpulse/pressure/new.json")
                .exists()
        );
        assert!(
            bus.root()
                .join(".remote/c/intermem/note/kept.json")
                .exists()
        );
    }

    #[test]
    fn a_key_file_that_is_a_fifo_or_a_folder_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("seed.fifo");
        // (Windows has no FIFO in a folder: the folder alone there.)
        #[cfg(unix)]
        {
            let made = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap();
            assert!(made.success());
        }
        let bads = if cfg!(unix) {
            vec![fifo.as_path(), tmp.path()]
        } else {
            vec![tmp.path()]
        };
        for bad in bads {
            let s = Settings {
                url: "nats://127.0.0.1:4222".into(),
                nkey: bad.to_string_lossy().into_owned(),
                ..Settings::default()
            };
            let e = s.options("h").unwrap_err();
            assert!(e.contains(&*bad.to_string_lossy()), "{e}");
        }
    }

    #[test]
    fn bucket_keys_name_the_origin_and_plain_parts_only() {
        assert_eq!(kv_key("a", "n", "c", "k"), "a/n/c/k");
        assert_eq!(parse_kv_key("a/n/c/k"), Some(("a", "n", "c", "k")));
        for bad in [
            "a/n/c",
            "a/../c/k",
            "a/n/c/.k",
            "a/n/c/k/x",
            "/n/c/k",
            "a/n/c/k k",
        ] {
            assert_eq!(parse_kv_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_login_in_the_url_is_taken_apart() {
        assert_eq!(
            split_login("nats://u:p@h:4222,tls://h2:4222"),
            (
                "nats://h:4222,tls://h2:4222".to_owned(),
                Some(("u".into(), "p".into()))
            )
        );
        assert_eq!(split_login("nats://h:1"), ("nats://h:1".to_owned(), None));
    }

    #[test]
    fn options_refuse_a_host_or_channel_that_is_not_plain() {
        assert!(Options::new("nats://x", "laptop-1").check().is_ok());
        assert!(Options::new("nats://x", "a/b").check().is_err());
        let mut o = Options::new("nats://x", "h");
        o.shared.push("bad".into());
        assert!(o.check().is_err());
    }
}
