//! # interband — the bus
//!
//! A typed, file-based message bus for AI coding-agent hooks, wire-compatible
//! with interband protocol v1 (the shell and Go libraries).
//!
//! A message is a JSON envelope in one file per key,
//! `<root>/<namespace>/<channel>/<key>.json`, replaced atomically on every
//! publish. This crate gives you:
//!
//! - [`Bus`]: validated, atomic [`Bus::publish`] with a per-key `seq`, and
//!   bounded, validated [`Bus::read`] that never follows a symlink;
//! - [`payloads`] and [`registry`]: a typed payload for every known contract
//!   and each channel's retention and durability;
//! - [`retention`]: pruning by age and count, as v1;
//! - [`lock`]: locked read-modify-write of small state files;
//! - [`Subscription`]: new values by file watch (or polling), once per `(key, seq)`;
//! - [`Consumer`] with [`consumer::drain`] and [`consumer::watch`]: plug in a
//!   handler that acts once per value across processes;
//! - [`schema`]: the JSON Schemas of the envelope and every payload.
//!
//! ```
//! use interband::Bus;
//! use serde_json::json;
//! # let dir = tempfile::tempdir().unwrap();
//! let bus = Bus::new(dir.path());
//! bus.publish("myplugin", "status", "sess-1", "status", "sess-1", json!({"ok": true})).unwrap();
//! let msg = bus.read("myplugin", "status", "sess-1").unwrap();
//! assert_eq!(msg.envelope.payload["ok"], true);
//! assert_eq!(msg.envelope.seq, 1);
//! ```
#![deny(missing_docs)]

mod bus;
pub mod consumer;
pub mod context;
pub mod envelope;
mod error;
pub mod fsio;
pub mod journal;
pub mod lock;
pub mod notice;
pub mod paths;
pub mod payloads;
pub mod registry;
pub mod retention;
pub mod schema;
pub mod settings;
pub mod text;
pub mod trust;
pub mod v1;
pub mod watch;

pub use bus::{
    Address, Bus, FileId, Message, Published, check_message, decode, parse_message, read_path,
};
pub use consumer::Consumer;
pub use envelope::Envelope;
pub use error::{Error, Result, is_transient_io};
pub use watch::{Subscription, WatchOptions};
