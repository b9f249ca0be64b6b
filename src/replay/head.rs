//! The transcript's head: its host, session, folder and times, read before the re-enactment; the environment the hooks see.

use super::*;

/// An environment of a fixed set of variables.
pub(super) struct Vars(pub(super) HashMap<String, String>);

impl Env for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
    fn may_have_prefix(&self, prefix: &str) -> bool {
        self.0.keys().any(|k| k.starts_with(prefix))
    }
}

/// The session's id, project folder and model, from the first lines.
#[derive(Debug, Default)]
pub(super) struct Head {
    pub(super) session: Option<String>,
    pub(super) cwd: Option<PathBuf>,
    pub(super) model: Option<String>,
    pub(super) host: Option<Host>,
}

/// Reads up to 1000 lines (each at most 1 MiB held) for the session's head.
pub(super) fn head(path: &Path) -> Head {
    use std::io::Read as _;
    let mut h = Head::default();
    let Ok(f) = interband::fsio::open_regular(path, interband::fsio::Links::Follow) else {
        return h;
    };
    let mut reader = std::io::BufReader::new(f.take(64 << 20));
    let mut line = ReadLine::Held(Vec::new());
    for _ in 0..1000 {
        match read_line(&mut reader, &mut line, 1 << 20) {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
        let ReadLine::Held(bytes) = &line else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            continue;
        };
        let p = &v["payload"];
        if v["type"] == "session_meta" || v["type"] == "turn_context" {
            h.host.get_or_insert(Host::Codex);
        } else if v.get("projectHash").is_some() || v["type"] == "gemini" {
            h.host.get_or_insert(Host::Gemini);
        }
        let s = |x: &Value| x.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        h.session = h.session.take().or_else(|| {
            s(&v["sessionId"])
                .or_else(|| s(&v["session_id"]))
                .or_else(|| (v["type"] == "session_meta").then(|| s(&p["id"])).flatten())
        });
        h.cwd = h
            .cwd
            .take()
            .or_else(|| s(&v["cwd"]).or_else(|| s(&p["cwd"])).map(PathBuf::from));
        h.model = h.model.take().or_else(|| {
            s(&v["message"]["model"])
                .filter(|m| m != "<synthetic>")
                .or_else(|| {
                    (v["type"] == "turn_context")
                        .then(|| s(&p["model"]))
                        .flatten()
                })
                .or_else(|| (v["type"] == "gemini").then(|| s(&v["model"])).flatten())
        });
        if h.session.is_some() && h.cwd.is_some() && h.model.is_some() {
            break;
        }
    }
    h
}

/// Unix seconds of an RFC 3339 timestamp.
pub(super) fn parse_time(s: &str) -> Option<f64> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
}

/// RFC 3339 UTC to the second, `None` for 0 (unknown).
pub fn format_time(ts: f64) -> Option<String> {
    if ts <= 0.0 {
        return None;
    }
    let t = time::OffsetDateTime::from_unix_timestamp(ts.floor() as i64).ok()?;
    t.format(&time::format_description::well_known::Rfc3339)
        .ok()
}
