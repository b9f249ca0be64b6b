//! `interband bridge`: the bus shared with other machines through NATS JetStream.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::Args;
use interband::Bus;
use interband_bridge::Options;

use crate::exit;

/// `interband bridge`
#[derive(Args)]
pub struct Bridge {
    /// NATS server URLs, comma-separated.
    #[arg(
        long,
        env = "INTERBAND_BRIDGE_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    url: String,
    /// The JetStream key-value bucket (created when missing).
    #[arg(long, env = "INTERBAND_BRIDGE_BUCKET", default_value = "interband")]
    bucket: String,
    /// This machine's name, as others see it (default: the host name).
    #[arg(long, env = "INTERBAND_BRIDGE_HOST")]
    host: Option<String>,
    /// A NATS credentials file.
    #[arg(long, env = "INTERBAND_BRIDGE_CREDS", value_name = "FILE")]
    creds: Option<PathBuf>,
    /// A file holding an nkey seed.
    #[arg(long, env = "INTERBAND_BRIDGE_NKEY", value_name = "FILE")]
    nkey: Option<PathBuf>,
    /// A CA certificate (PEM): the connection then requires TLS.
    #[arg(long, env = "INTERBAND_BRIDGE_TLS_CA", value_name = "FILE")]
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
        let host = self.host.unwrap_or_else(|| {
            rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned()
        });
        let mut opts = Options::new(&self.url, &host);
        opts.bucket = self.bucket;
        opts.creds = self.creds;
        opts.tls_ca = self.tls_ca;
        if let Some(f) = self.nkey {
            let seed =
                std::fs::read_to_string(&f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
            opts.nkey = Some(seed.trim().to_owned());
        }
        if !self.shared.is_empty() {
            opts.shared = self.shared;
        }
        if !self.observed.is_empty() {
            opts.observed = self.observed;
        }
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let _ = signal_hook_flag(sig, stop.clone());
        }
        tell!(
            "interband bridge: {} as {host}, bucket {}; shared {}; observed {}",
            opts.url,
            opts.bucket,
            opts.shared.join(" "),
            opts.observed.join(" ")
        );
        interband_bridge::run(&bus, &opts, stop)?;
        Ok(exit::OK)
    }
}

/// Sets `flag` when `sig` arrives.
fn signal_hook_flag(sig: i32, flag: Arc<AtomicBool>) -> std::io::Result<()> {
    signal_hook::flag::register(sig, flag).map(|_| ())
}
