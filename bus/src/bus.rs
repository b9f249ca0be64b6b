//! Publishing and reading messages: validate, then write atomically; read
//! bounded, never through a symlink, and validated.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{WRITE_VERSION, check_envelope, now_timestamp};
use crate::fsio::{Dir, MAX_MESSAGE_BYTES, read_capped};
use crate::lock::{DEFAULT_WAIT, lock_name, with_lock};
use crate::paths::{MAX_NAME_BYTES, check_segment, root_from_env, safe_key};
use crate::payloads::Payload;
use crate::registry::{channel_policy, check_payload};
use crate::{Envelope, Error, Result, retention};

/// How long a checked root handle is used without checking it again.
const RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A handle on one bus root folder.
///
/// ```
/// use interband::{Bus, payloads::{Checkpoint, Payload}};
/// # let dir = tempfile::tempdir().unwrap();
/// let bus = Bus::new(dir.path());
/// let cp = Checkpoint { trigger: "orange_pressure".into(), ts: 1.0, context_usable: Some(18.0),
///                       transcript_path: None, cwd: None };
/// let first = bus.publish_typed("sess-1", "sess-1", &cp).unwrap();
/// let second = bus.publish_typed("sess-1", "sess-1", &cp).unwrap();
/// assert_eq!((first.seq, second.seq), (1, 2));
/// let back = bus.read_typed::<Checkpoint>("sess-1").unwrap();
/// assert_eq!(back.seq, 2);
/// assert_eq!(back.payload.context_usable, Some(18.0));
/// ```
#[derive(Debug, Clone)]
pub struct Bus {
    root: PathBuf,
    /// The root's verified handle and when it was last checked: opened
    /// once, checked again (an `fstat` and a `stat`: still the user's, still
    /// the root) when it is used a second or more after the last check.
    handle: std::sync::Arc<std::sync::Mutex<Option<(Dir, std::time::Instant)>>>,
    /// Folders under the root opened before, by their names joined with
    /// `/`, with when each was last checked: reused as the root's handle is.
    folders: std::sync::Arc<std::sync::Mutex<HashMap<String, Cached>>>,
    /// The channels whose retention this process checked, and when: checked
    /// again (a `stat` of the channel's stamp) at most once a minute.
    pruned: std::sync::Arc<std::sync::Mutex<HashMap<(String, String), std::time::Instant>>>,
    /// Told of every message this handle (or a clone) publishes.
    tap: Option<Tap>,
}

/// What [`Bus::with_tap`] is given.
#[derive(Clone)]
struct Tap(std::sync::Arc<dyn Fn(&Message) + Send + Sync>);

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

/// A folder under the root as last opened, and when it was last checked.
#[derive(Debug, Clone)]
struct Cached {
    dir: Dir,
    checked: std::time::Instant,
}

/// What a publish wrote.
#[derive(Debug, Clone)]
pub struct Published {
    /// The message file.
    pub path: PathBuf,
    /// The sequence number it got.
    pub seq: u64,
}

/// A message read from the bus, with where it came from.
#[derive(Debug, Clone)]
pub struct Message<P = Value> {
    /// The file it was read from.
    pub path: PathBuf,
    /// `namespace/channel/key`, when the file is at a channel path under the root.
    pub address: Option<Address>,
    /// The envelope.
    pub envelope: Envelope<P>,
    /// The rules it breaks that a v1 reader tolerates (see [`crate::v1`]):
    /// accepted, and said. Empty for a message that follows every rule.
    pub flags: Vec<String>,
    /// The file it was read from, as it was then: tells one value from the
    /// next when the envelope cannot (a v1 writer has no `seq`).
    pub file: Option<FileId>,
}

/// A message file's identity when it was read: which file (a rewrite makes
/// a new one), its size and its modification time in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileId {
    /// The device.
    pub dev: u64,
    /// The inode.
    pub ino: u64,
    /// The size in bytes.
    pub len: u64,
    /// The modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

impl FileId {
    /// The identity of the file `stat` described.
    pub fn of(meta: &crate::fsio::Meta) -> Self {
        FileId {
            dev: meta.dev,
            ino: meta.ino,
            len: meta.len,
            mtime_ns: meta
                .mtime
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        }
    }
}

/// Where a message lives: namespace, channel folder and (safe) key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    /// The namespace folder.
    pub namespace: String,
    /// The channel folder.
    pub channel: String,
    /// The key (the file name without `.json`).
    pub key: String,
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.namespace, self.channel, self.key)
    }
}

impl Bus {
    /// A bus rooted at `root` (nothing is created until the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Bus {
            root: root.into(),
            handle: Default::default(),
            folders: Default::default(),
            pruned: Default::default(),
            tap: None,
        }
    }

    /// This bus, telling `tap` of every message it (or a clone of it)
    /// publishes, once written, as a reader would read it: how a replay
    /// learns what the hooks it runs published, without reading it back.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use interband::{Bus, payloads::Checkpoint};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let told = seen.clone();
    /// let bus = Bus::new(dir.path()).with_tap(move |m| told.lock().unwrap().push(m.envelope.seq));
    /// let cp = Checkpoint { trigger: "orange_pressure".into(), ts: 1.0, context_usable: None,
    ///                       transcript_path: None, cwd: None };
    /// bus.clone().publish_typed("s", "s", &cp).unwrap();
    /// bus.publish_typed("s", "s", &cp).unwrap();
    /// assert_eq!(*seen.lock().unwrap(), [1, 2]);
    /// ```
    pub fn with_tap(mut self, tap: impl Fn(&Message) + Send + Sync + 'static) -> Bus {
        self.tap = Some(Tap(std::sync::Arc::new(tap)));
        self
    }

    /// The bus at `$INTERBAND_ROOT`, else `~/.interband` (made absolute, so
    /// paths in messages name the same files from any working folder).
    pub fn from_env() -> Result<Self> {
        let root = root_from_env()?;
        Ok(Bus::new(std::path::absolute(&root).unwrap_or(root)))
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root folder as a verified handle (see [`Dir::root`]): created
    /// 0700 when `create` and missing, refused when it is not the user's.
    pub fn root_dir(&self, create: bool) -> Result<Dir> {
        self.with_root(create, Dir::try_clone)
    }

    /// Runs `f` on the root's verified handle: the one opened before when it
    /// is still the user's folder and still the folder the root's path names
    /// (not removed, moved or re-pointed since), else a fresh one.
    fn with_root<T>(&self, create: bool, f: impl FnOnce(&Dir) -> Result<T>) -> Result<T> {
        let mut cached = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((dir, checked)) = cached.as_mut() {
            // Checked again at most every second: a hook's process lives
            // less; a long-running watch notices a moved root within one.
            if checked.elapsed() < RECHECK {
                return f(dir);
            }
            if dir.still_at(&self.root) {
                *checked = std::time::Instant::now();
                return f(dir);
            }
        }
        *cached = None;
        let dir = Dir::root(&self.root, create)?;
        let (dir, _) = cached.insert((dir, std::time::Instant::now()));
        f(dir)
    }

    /// A folder under the root, `names` one plain name each, never through a
    /// link, each checked to be the user's; created 0700 when `create`.
    ///
    /// ```
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let bus = interband::Bus::new(tmp.path().join("root"));
    /// let state = bus.dir(&[".state", "mytool"], true).unwrap();
    /// state.write("s.json", b"{}", false).unwrap();
    /// assert!(bus.dir(&["..", "x"], true).is_err());
    /// ```
    pub fn dir(&self, names: &[&str], create: bool) -> Result<Dir> {
        let root = self.root_dir(create)?;
        let mut folders = self.folders.lock().unwrap_or_else(|p| p.into_inner());
        let mut dir = root;
        let mut key = String::new();
        for name in names {
            if !key.is_empty() {
                key.push('/');
            }
            key.push_str(name);
            // Reused, and checked again at most every second, as the root
            // is. (A missing folder is looked for every time: another
            // process may have just made it.)
            let fresh = folders.get_mut(&key).and_then(|c| {
                if c.checked.elapsed() < RECHECK {
                    return Some(c.dir.clone());
                }
                c.dir.still_at(&self.root.join(&key)).then(|| {
                    c.checked = std::time::Instant::now();
                    c.dir.clone()
                })
            });
            dir = match fresh {
                Some(d) => d,
                None => {
                    folders.remove(&key);
                    let d = dir.sub(name, create)?;
                    let checked = std::time::Instant::now();
                    folders.insert(
                        key.clone(),
                        Cached {
                            dir: d.clone(),
                            checked,
                        },
                    );
                    d
                }
            };
        }
        Ok(dir)
    }

    /// `<root>/<namespace>/<channel>`, after checking both are plain names.
    /// (The path only: open it with [`Bus::channel`].)
    pub fn channel_dir(&self, namespace: &str, channel: &str) -> Result<PathBuf> {
        check_segment("namespace", namespace)?;
        check_segment("channel", channel)?;
        Ok(self.root.join(namespace).join(channel))
    }

    /// The channel folder as a verified handle, created when `create`.
    /// A namespace or channel folder that is a link is refused: the bus
    /// never reads, writes or prunes through one (the root itself may be a link).
    pub fn channel(&self, namespace: &str, channel: &str, create: bool) -> Result<Dir> {
        check_segment("namespace", namespace)?;
        check_segment("channel", channel)?;
        self.dir(&[namespace, channel], create)
    }

    /// The channel folder of a message about to be read: a missing folder is
    /// a missing message.
    fn existing_channel(&self, namespace: &str, channel: &str, file: &str) -> Result<Dir> {
        self.channel(namespace, channel, false)
            .map_err(|e| match e {
                Error::NotFound { .. } => Error::NotFound {
                    path: self.root.join(namespace).join(channel).join(file),
                },
                e => e,
            })
    }

    /// The file name a key is published at: `<safe key>.json`. A key whose
    /// safe form starts with `.` is refused (the bus's own files there start
    /// with `.`), and so is one over 200 bytes (its lock's name must fit).
    pub fn file_name(key: &str) -> Result<String> {
        let key = safe_key(key);
        let refuse = |reason: &str| Error::InvalidName {
            what: "key",
            value: key.clone(),
            reason: reason.into(),
        };
        if key.starts_with('.') {
            return Err(refuse(
                "must not start with '.' (those names are the bus's own files)",
            ));
        }
        if key.len() > MAX_NAME_BYTES {
            return Err(refuse("must be at most 200 bytes"));
        }
        Ok(format!("{key}.json"))
    }

    /// `<root>/<namespace>/<channel>/<safe key>.json` (see [`Bus::file_name`]).
    pub fn path(&self, namespace: &str, channel: &str, key: &str) -> Result<PathBuf> {
        let dir = self.channel_dir(namespace, channel)?;
        Ok(dir.join(Self::file_name(key)?))
    }

    /// Validates and publishes a payload: assigns the key's next `seq` under
    /// its lock, writes the envelope atomically (fsynced on durable channels),
    /// then prunes the channel if its throttle allows.
    pub fn publish(
        &self,
        namespace: &str,
        channel: &str,
        key: &str,
        msg_type: &str,
        session_id: &str,
        payload: Value,
    ) -> Result<Published> {
        let path = self.path(namespace, channel, key)?;
        let file = Self::file_name(key)?;
        let address = || format!("{namespace}/{channel}/{}", safe_key(key));
        let invalid = |reason: String| Error::InvalidPayload {
            channel: address(),
            reason,
        };
        if msg_type.trim().is_empty() {
            return Err(invalid("type must not be empty".into()));
        }
        check_payload(namespace, msg_type, &payload).map_err(invalid)?;
        let policy = channel_policy(namespace, channel);
        let mut envelope = Envelope {
            version: WRITE_VERSION.to_owned(),
            namespace: namespace.to_owned(),
            msg_type: msg_type.to_owned(),
            session_id: session_id.to_owned(),
            // As long as any real timestamp and seq: sized before anything is written.
            timestamp: "0000-00-00T00:00:00Z".into(),
            seq: u64::MAX,
            payload,
        };
        let size = serde_json::to_vec(&envelope).map_or(0, |b| b.len() as u64 + 1);
        if size > MAX_MESSAGE_BYTES {
            return Err(Error::TooLarge {
                path,
                size,
                limit: MAX_MESSAGE_BYTES,
            });
        }
        let dir = self.channel(namespace, channel, true)?;
        let seq = with_lock(&dir, &lock_name(&file), DEFAULT_WAIT, |lock| {
            envelope.seq = last_seq(&dir, &file, lock).saturating_add(1);
            envelope.timestamp = now_timestamp();
            let mut bytes = serde_json::to_vec(&envelope).map_err(|e| Error::Json {
                path: path.clone(),
                source: e,
            })?;
            bytes.push(b'\n');
            store_seq(&dir, &file, lock, envelope.seq)?;
            dir.write(&file, &bytes, policy.durable)?;
            Ok(envelope.seq)
        })?;
        if let Some(Tap(tap)) = &self.tap {
            tap(&Message {
                path: path.clone(),
                address: Some(Address {
                    namespace: namespace.to_owned(),
                    channel: channel.to_owned(),
                    key: safe_key(key),
                }),
                envelope,
                flags: Vec::new(),
                file: None,
            });
        }
        // Retention is housekeeping: it must never fail a publish. Its
        // throttle is looked at once a minute per channel in this process.
        let due = {
            let mut pruned = self.pruned.lock().unwrap_or_else(|p| p.into_inner());
            let key = (namespace.to_owned(), channel.to_owned());
            let due = pruned
                .get(&key)
                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60));
            if due {
                pruned.insert(key, std::time::Instant::now());
            }
            due
        };
        if due {
            let _ = retention::prune_live(self, &dir, namespace, channel, false, &|k| {
                std::env::var(k).ok()
            });
        }
        Ok(Published { path, seq })
    }

    /// Publishes a typed payload on its contract's channel.
    pub fn publish_typed<P: Payload>(
        &self,
        key: &str,
        session_id: &str,
        payload: &P,
    ) -> Result<Published> {
        let value = serde_json::to_value(payload).map_err(|e| Error::InvalidPayload {
            channel: format!("{}/{}/{}", P::NAMESPACE, P::CHANNEL, safe_key(key)),
            reason: e.to_string(),
        })?;
        self.publish(P::NAMESPACE, P::CHANNEL, key, P::TYPE, session_id, value)
    }

    /// Removes the message at `namespace/channel/key` (under its lock).
    /// Returns whether there was one.
    pub fn remove(&self, namespace: &str, channel: &str, key: &str) -> Result<bool> {
        let file = Self::file_name(key)?;
        let dir = match self.channel(namespace, channel, false) {
            Ok(dir) => dir,
            Err(Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        if !dir.exists(&file) {
            return Ok(false);
        }
        with_lock(&dir, &lock_name(&file), DEFAULT_WAIT, |_| dir.remove(&file))
    }

    /// Reads and validates the message at `namespace/channel/key`.
    /// Any key a v1 writer may have used is read, including those interband
    /// never publishes (starting with `.`, longer than 200 bytes).
    pub fn read(&self, namespace: &str, channel: &str, key: &str) -> Result<Message> {
        let file = format!("{}.json", safe_key(key));
        let dir = self.existing_channel(namespace, channel, &file)?;
        let mut msg = read_in(&dir, &file)?;
        msg.address = Some(Address {
            namespace: namespace.to_owned(),
            channel: channel.to_owned(),
            key: safe_key(key),
        });
        Ok(msg)
    }

    /// Reads a typed payload from its contract's channel.
    pub fn read_typed<P: Payload>(&self, key: &str) -> Result<Envelope<P>> {
        let msg = self.read(P::NAMESPACE, P::CHANNEL, key)?;
        decode(msg)
    }

    /// Reads a message file and fills in its address when it lies under this
    /// root (then through the channel's verified handle; a file elsewhere is
    /// read bounded, never through a link at its name).
    pub fn read_file(&self, path: &Path) -> Result<Message> {
        let Some(address) = self.address_of(path) else {
            return read_path(path);
        };
        let file = format!("{}.json", address.key);
        let dir = self.existing_channel(&address.namespace, &address.channel, &file)?;
        let mut msg = read_in(&dir, &file)?;
        msg.address = Some(address);
        Ok(msg)
    }

    /// The keys of the messages in a channel folder, sorted (none when the folder is missing).
    pub fn keys(&self, namespace: &str, channel: &str) -> Result<Vec<String>> {
        let dir = match self.channel(namespace, channel, false) {
            Ok(dir) => dir,
            Err(Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(dir
            .file_names(".json")?
            .into_iter()
            .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
            .filter(|k| !k.is_empty())
            .collect())
    }

    /// The address of a message file under this root, if it is one.
    pub fn address_of(&self, path: &Path) -> Option<Address> {
        crate::paths::split_message_path(&self.root, path).map(|(namespace, channel, key)| {
            Address {
                namespace,
                channel,
                key,
            }
        })
    }
}

/// Reads and validates the message file `name` in a channel folder.
fn read_in(dir: &Dir, name: &str) -> Result<Message> {
    let (bytes, meta) = dir.read_meta(name, MAX_MESSAGE_BYTES)?;
    let mut msg = parse_message(&dir.join(name), &bytes)?;
    msg.file = Some(FileId::of(&meta));
    Ok(msg)
}

/// Decodes a validated message's payload into a typed one.
pub fn decode<P: DeserializeOwned>(msg: Message) -> Result<Envelope<P>> {
    let Message { path, envelope, .. } = msg;
    let payload = serde_json::from_value(envelope.payload).map_err(|e| Error::Decode {
        path: path.clone(),
        source: e,
    })?;
    Ok(Envelope {
        version: envelope.version,
        namespace: envelope.namespace,
        msg_type: envelope.msg_type,
        session_id: envelope.session_id,
        timestamp: envelope.timestamp,
        seq: envelope.seq,
        payload,
    })
}

/// Reads one message file: at most 1 MiB, never through a symlink, never
/// blocking, the envelope and (for known contracts) the payload validated.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("m.json");
/// std::fs::write(&path, "").unwrap();
/// let err = interband::read_path(&path).unwrap_err();
/// assert!(err.is_invalid_data());
/// assert!(err.to_string().contains("m.json"));
/// ```
pub fn read_path(path: &Path) -> Result<Message> {
    let bytes = read_capped(path, MAX_MESSAGE_BYTES)?;
    parse_message(path, &bytes)
}

/// Validates message bytes that came from `path`, as a reader: a message
/// that breaks a rule either v1 reader tolerates (see [`crate::v1`]) is
/// accepted with the rule in [`Message::flags`]; `interband validate` and
/// publishing accept no flag.
pub fn parse_message(path: &Path, bytes: &[u8]) -> Result<Message> {
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| Error::Json {
        path: path.into(),
        source: e,
    })?;
    let mut flags = Vec::new();
    if let Err(reason) = check_message(&value) {
        if !crate::v1::accepts(&value) {
            return Err(Error::Invalid {
                path: path.into(),
                reason,
            });
        }
        flags.push(reason);
        // What the v1 readers ignore or leave empty, read as they do.
        if let Some(o) = value.as_object_mut() {
            if o.get("seq").is_some_and(|s| s.as_u64().is_none()) {
                o.remove("seq");
            }
            if !o.get("session_id").is_some_and(Value::is_string) {
                o.insert("session_id".into(), Value::String(String::new()));
            }
        }
    }
    let envelope: Envelope = serde_json::from_value(value).map_err(|e| Error::Decode {
        path: path.into(),
        source: e,
    })?;
    flags.extend(crate::envelope::implausible(
        envelope.seq,
        &envelope.timestamp,
    ));
    Ok(Message {
        path: path.into(),
        address: None,
        envelope,
        flags,
        file: None,
    })
}

/// The strict rules: the envelope's, then the payload's contract.
pub fn check_message(value: &Value) -> std::result::Result<(), String> {
    check_envelope(value)?;
    check_payload(
        value["namespace"].as_str().unwrap_or_default(),
        value["type"].as_str().unwrap_or_default(),
        &value["payload"],
    )
}

/// The last seq the key had. The lock file remembers it (20 digits, written
/// in place: truncating would make ext4 flush); when the lock file is new or
/// was removed, the current message file says (0 for a v1 writer's file).
/// A count past any real one ([`crate::envelope::MAX_PLAUSIBLE_SEQ`], a
/// planted lock or file) is not believed: the next source is asked, and
/// when none is believable the key starts again from 0, so its seq keeps
/// counting instead of sticking at `u64::MAX`.
fn last_seq(dir: &Dir, file: &str, lock: &File) -> u64 {
    let plausible = |n: &u64| *n <= crate::envelope::MAX_PLAUSIBLE_SEQ;
    let mut buf = [0u8; 20];
    let remembered = crate::fsio::read_exact_at(lock, &mut buf, 0)
        .ok()
        .and_then(|_| std::str::from_utf8(&buf).ok()?.trim().parse::<u64>().ok());
    remembered
        .filter(plausible)
        .or_else(|| {
            read_in(dir, file)
                .ok()
                .map(|m| m.envelope.seq)
                .filter(plausible)
        })
        .unwrap_or(0)
}

/// Remembers `seq` in the lock file. Done before the message is renamed into
/// place, so a crash in between skips a number but never reuses one.
fn store_seq(dir: &Dir, file: &str, lock: &File, seq: u64) -> Result<()> {
    crate::fsio::write_all_at(lock, format!("{seq:020}").as_bytes(), 0)
        .map_err(|e| Error::io(dir.join(&lock_name(file)), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn publish_rejects_bad_payloads_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let err = bus
            .publish(
                "intercheck",
                "pressure",
                "s",
                "context_pressure",
                "s",
                json!({"level":"purple"}),
            )
            .unwrap_err();
        assert!(matches!(err, Error::InvalidPayload { .. }));
        assert!(err.to_string().contains("intercheck/pressure/s"), "{err}");
        assert!(!dir.path().join("intercheck").exists());
        assert!(bus.publish("../x", "c", "k", "t", "", json!({})).is_err());
        assert!(bus.publish("n", "c", "k", "t", "", json!([])).is_err());
    }

    #[test]
    #[cfg_attr(
        all(windows, target_env = "gnu"),
        ignore = "Wine 8 shows a link as what it names, never as a link (docs/hosts.md, Platforms); runs on the release workflow's Windows"
    )]
    fn a_symlinked_namespace_or_channel_folder_is_never_used() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("root"));
        let outside = dir.path().join("project");
        std::fs::create_dir_all(&outside).unwrap();
        // A valid message, so only the link can stop a read of it.
        let valid = br#"{"version":"1.0.0","namespace":"ns","type":"t","session_id":"s","timestamp":"2026-11-30T00:00:00Z","payload":{}}"#;
        std::fs::write(outside.join("package.json"), valid).unwrap();
        let old = std::fs::File::options()
            .write(true)
            .open(outside.join("package.json"))
            .unwrap();
        old.set_modified(
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1e9 as u64),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("root/ns")).unwrap();
        crate::fsio::tests::link(&outside, &dir.path().join("root/ns/ch"));
        crate::fsio::tests::link(&outside, &dir.path().join("root/linked"));
        for (ns, ch) in [("ns", "ch"), ("linked", "x")] {
            let err = bus.publish(ns, ch, "k", "t", "", json!({})).unwrap_err();
            assert!(matches!(err, Error::Symlink { .. }), "{err}");
            let err = bus.read(ns, ch, "package").unwrap_err();
            assert!(matches!(err, Error::Symlink { .. }), "{err}");
        }
        assert!(crate::retention::prune_channel(&bus, "ns", "ch", true).is_err());
        let left: Vec<_> = std::fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left,
            ["package.json"],
            "nothing written or removed outside the root"
        );
    }

    #[test]
    fn a_refused_publish_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let big = json!({"blob": "x".repeat(MAX_MESSAGE_BYTES as usize)});
        let err = bus.publish("ns", "ch", "k", "t", "", big).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        assert!(!dir.path().join("ns").exists(), "no folder, no lock");
        let long = "k".repeat(201);
        let err = bus
            .publish("ns", "ch", &long, "t", "", json!({}))
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidName { what: "key", .. }),
            "{err}"
        );
        assert!(
            bus.publish("ns", "ch", &"k".repeat(200), "t", "", json!({}))
                .is_ok()
        );
        let err = bus
            .publish(&"n".repeat(201), "ch", "k", "t", "", json!({}))
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidName {
                    what: "namespace",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn keys_that_would_hide_among_the_bus_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        for key in [".x", ".interband-tmp.a", "..", "."] {
            let err = bus.publish("n", "c", key, "t", "", json!({})).unwrap_err();
            assert!(
                matches!(err, Error::InvalidName { what: "key", .. }),
                "{key}: {err}"
            );
            assert!(bus.read("n", "c", key).is_err());
        }
        assert!(!dir.path().join("n/c").exists(), "nothing written");
        bus.publish("n", "c", "x.y", "t", "", json!({})).unwrap();
    }

    #[test]
    fn remove_takes_a_message_away_and_its_seq_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        assert!(!bus.remove("n", "c", "k").unwrap());
        bus.publish("n", "c", "k", "t", "", json!({})).unwrap();
        assert!(bus.remove("n", "c", "k").unwrap());
        assert!(matches!(
            bus.read("n", "c", "k"),
            Err(Error::NotFound { .. })
        ));
        assert_eq!(
            bus.publish("n", "c", "k", "t", "", json!({})).unwrap().seq,
            2
        );
    }

    #[test]
    fn seq_survives_a_v1_writer_and_a_lost_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path());
        let p = bus.publish("n", "c", "k", "t", "", json!({})).unwrap();
        assert_eq!(p.seq, 1);
        // A v1 writer overwrites the file without a seq.
        std::fs::write(
            &p.path,
            r#"{"version":"1.0.0","namespace":"n","type":"t","session_id":"","timestamp":"x","payload":{}}"#,
        )
        .unwrap();
        assert_eq!(
            bus.publish("n", "c", "k", "t", "", json!({})).unwrap().seq,
            2
        );
        std::fs::remove_file(crate::lock::lock_path_for(&p.path)).unwrap();
        assert_eq!(
            bus.publish("n", "c", "k", "t", "", json!({})).unwrap().seq,
            3
        );
        // A planted lock past any real count: the file's seq goes on.
        let lock = crate::lock::lock_path_for(&p.path);
        std::fs::write(&lock, format!("{:020}", u64::MAX)).unwrap();
        assert_eq!(
            bus.publish("n", "c", "k", "t", "", json!({})).unwrap().seq,
            4
        );
        // Both past it: the key counts again from 1.
        std::fs::write(&lock, format!("{:020}", u64::MAX)).unwrap();
        let v = format!(
            r#"{{"version":"1.0.0","namespace":"n","type":"t","session_id":"","timestamp":"x","seq":{},"payload":{{}}}}"#,
            u64::MAX
        );
        std::fs::write(&p.path, v).unwrap();
        assert_eq!(
            bus.publish("n", "c", "k", "t", "", json!({})).unwrap().seq,
            1
        );
    }

    #[test]
    fn folders_are_private_and_oversized_messages_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("root"));
        let p = bus.publish("n", "c", "k", "t", "", json!({})).unwrap();
        for d in [
            bus.root().to_path_buf(),
            bus.root().join("n"),
            bus.root().join("n/c"),
        ] {
            assert_eq!(
                crate::fsio::metadata(&d, crate::fsio::Links::Follow)
                    .unwrap()
                    .mode
                    & 0o777,
                0o700,
                "{d:?}"
            );
        }
        let big = json!({"blob": "x".repeat(MAX_MESSAGE_BYTES as usize)});
        assert!(matches!(
            bus.publish("n", "c", "k", "t", "", big),
            Err(Error::TooLarge { .. })
        ));
        assert_eq!(
            bus.read("n", "c", "k").unwrap().envelope.seq,
            p.seq,
            "old value kept"
        );
    }
}
