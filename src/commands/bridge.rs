//! `interband bridge`: the bus shared with other machines through NATS JetStream.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::Args;
use interband::Bus;
use interband::settings::{Files, Layered, ProcessEnv};
use interband_bridge::Options;

use crate::exit;

/// `interband bridge`
#[derive(Args)]
pub struct Bridge {
    /// NATS server URLs, comma-separated (default: `[bridge] url`, `INTERBAND_BRIDGE_URL`).
    #[arg(long)]
    url: Option<String>,
    /// The JetStream key-value bucket, created when missing (default `interband`).
    #[arg(long)]
    bucket: Option<String>,
    /// This machine's name, as others see it (default: the host name).
    #[arg(long)]
    host: Option<String>,
    /// A NATS credentials file.
    #[arg(long, value_name = "FILE")]
    creds: Option<PathBuf>,
    /// A file holding an nkey seed.
    #[arg(long, value_name = "FILE")]
    nkey: Option<PathBuf>,
    /// A CA certificate (PEM): the connection then requires TLS.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// Channels applied into the local bus (NAMESPACE/CHANNEL, repeatable;
    /// default: interphase/bead, clavain/dispatch, interlock/coordination).
    #[arg(long, value_name = "NS/CHANNEL")]
    shared: Vec<String>,
    /// Channels kept apart for the views (default: pressure, checkpoints, notes,
    /// statusline context, pending compactions).
    #[arg(long, value_name = "NS/CHANNEL")]
    observed: Vec<String>,
    /// Print what the running bridge last said of itself, and exit.
    #[arg(long)]
    status: bool,
}

/// The `[bridge]` settings: the user's file, a trusted project's, `INTERBAND_BRIDGE_*`.
pub fn settings(files: &Files) -> Layered<interband_bridge::Settings> {
    interband::settings::load_from(files, "bridge", &ProcessEnv, &[])
}

/// The bridge's options from the settings, when they name a server.
pub fn configured() -> Result<Option<Options>> {
    let project = std::env::current_dir().ok();
    let files = Files::read(project.as_deref(), &ProcessEnv);
    let s = settings(&files);
    for p in &s.problems {
        tell!("interband: {p}");
    }
    s.value
        .options(&interband_bridge::host_name())
        .map_err(anyhow::Error::msg)
}

impl Bridge {
    pub fn run(self) -> Result<u8> {
        let bus = Bus::from_env()?;
        if self.status {
            let Some(s) = interband_bridge::status(&bus) else {
                say!("no bridge has run on this bus ({})", bus.root().display());
                return Ok(exit::INVALID);
            };
            say_json!(serde_json::to_string_pretty(&s)?);
            return Ok(if s.connected { exit::OK } else { exit::INVALID });
        }
        let project = std::env::current_dir().ok();
        let files = Files::read(project.as_deref(), &ProcessEnv);
        let mut s = settings(&files).value;
        let text = |p: &PathBuf| p.to_string_lossy().into_owned();
        if let Some(u) = self.url {
            s.url = u;
        }
        if let Some(b) = self.bucket {
            s.bucket = b;
        }
        if let Some(h) = self.host {
            s.host = h;
        }
        if let Some(c) = &self.creds {
            s.creds = text(c);
        }
        if let Some(n) = &self.nkey {
            s.nkey = text(n);
        }
        if let Some(t) = &self.tls_ca {
            s.tls_ca = text(t);
        }
        if !self.shared.is_empty() {
            s.shared = self.shared;
        }
        if !self.observed.is_empty() {
            s.observed = self.observed;
        }
        let Some(opts) = s
            .options(&interband_bridge::host_name())
            .map_err(anyhow::Error::msg)?
        else {
            anyhow::bail!("no server: give --url, or set [bridge] url (INTERBAND_BRIDGE_URL)");
        };
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [libc::SIGINT, libc::SIGTERM] {
            signal_hook::flag::register(sig, stop.clone())?;
        }
        tell!(
            "interband bridge: {} as {}, bucket {}; shared {}; observed {}",
            interband_bridge::without_login(&opts.url),
            opts.host,
            opts.bucket,
            opts.shared.join(" "),
            opts.observed.join(" ")
        );
        say_changes(&bus, stop.clone());
        interband_bridge::run(&bus, &opts, stop)?;
        Ok(exit::OK)
    }
}

/// Says on stderr, as it happens, when the bridge connects, loses its
/// server, or meets a new problem (it retries for as long as it runs, so
/// without this a wrong URL would look like a bridge that works).
fn say_changes(bus: &Bus, stop: Arc<AtomicBool>) {
    let bus = bus.clone();
    std::thread::spawn(move || {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut said: (bool, Option<String>) = (false, None);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(250));
            // This run's status, not the one an earlier run left.
            let Some(s) = interband_bridge::status(&bus).filter(|s| s.updated >= started) else {
                continue;
            };
            let now = (s.connected, s.problem.clone());
            if now == said {
                continue;
            }
            match (&now, &said) {
                ((true, _), (false, _)) => tell!("interband bridge: connected"),
                ((false, Some(p)), _) => tell!("interband bridge: not connected: {p} (retrying)"),
                ((true, Some(p)), _) => tell!("interband bridge: {p}"),
                _ => {}
            }
            said = now;
        }
    });
}
