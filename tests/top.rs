//! `interband top`: the snapshot forms (`--once`, `--json`), and the live view in a real
//! terminal (tmux): it shows the sessions, follows the bus as it changes, and obeys its keys.
//! Without tmux, the live view's test reports itself ignored, with the reason.

mod common;

use std::process::Command;

use common::*;
use serde_json::{Value, json};

/// Publishes a session's pressure as the hook does.
fn pressure(w: &World, session: &str, level: &str, usable: f64, used: u64, cwd: &str) {
    let payload = json!({"level": level, "pressure": 10, "est_tokens": used, "ts": now(),
        "context_usable": usable, "used_tokens": used, "window": 200_000,
        "source": "transcript", "calls": 12, "cwd": cwd});
    publish(
        w,
        "interpulse/pressure",
        "context_pressure",
        session,
        payload,
    );
}

fn publish(w: &World, channel: &str, kind: &str, session: &str, payload: Value) {
    let (ns, ch) = channel.split_once('/').unwrap();
    let o = w.run(&[
        "publish",
        ns,
        ch,
        session,
        "--type",
        kind,
        "--session",
        session,
        "--payload",
        &payload.to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn a_snapshot_lists_every_session_most_urgent_first() {
    let w = World::new();
    pressure(&w, "s-green", "green", 80.0, 20_000, "/work/alpha");
    pressure(&w, "s-red", "red", 4.0, 160_000, "/work/beta");
    pressure(&w, "s-orange", "orange", 15.0, 140_000, "/work/gamma");
    let o = w.run(&["top", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let order: Vec<&str> = list
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["s-red", "s-orange", "s-green"]);
    assert_eq!(list[0]["project"], "beta");
    assert_eq!(list[0]["level"], "red");
    assert!(list[0]["host"].as_str().is_some_and(|h| !h.is_empty()));

    let o = w.run(&["top", "--once", "--filter", "gamma"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "header and one row: {out}");
    assert!(out.contains("ORANGE") && out.contains("140k/200k"), "{out}");
}

fn the_age_of_the_last_warning_and_the_last_events_are_shown() {
    let w = World::new();
    let t = now();
    let payload = json!({"level": "red", "pressure": 10, "est_tokens": 160_000, "ts": t,
        "context_usable": 4.0, "used_tokens": 160_000, "window": 200_000, "calls": 40,
        "cwd": "/work/beta", "warned_at": t - 180, "warned_level": "red"});
    publish(
        &w,
        "interpulse/pressure",
        "context_pressure",
        "s-red",
        payload,
    );
    publish(
        &w,
        "interpulse/checkpoint",
        "checkpoint_needed",
        "s-red",
        json!({"trigger": "red_pressure", "ts": t - 170}),
    );
    pressure(&w, "s-calm", "green", 80.0, 20_000, "/work/alpha");
    let o = w.run(&["top", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let ago = list[0]["warned_secs_ago"].as_f64().unwrap();
    assert!((180.0..240.0).contains(&ago), "{ago}");
    assert_eq!(list[1]["warned_secs_ago"], Value::Null, "never warned");
    let events: Vec<&str> = list[0]["last_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "pressure red",
            "checkpoint requested (red_pressure)",
            "warned (red)"
        ],
        "newest first"
    );
    let o = w.run(&["top", "--once"]);
    let out = stdout(&o);
    let header = out.lines().next().unwrap();
    let row = out.lines().find(|l| l.contains("beta")).unwrap();
    // Columns are aligned by characters (the gauge's are not one byte each).
    let col = header[..header.find("WARNED").expect("a WARNED column")]
        .chars()
        .count();
    let cell: String = row.chars().skip(col).take(2).collect();
    assert_eq!(cell, "3m", "{out}");
}

/// What a person reads in `top --once`: the machine and the agent apart, the
/// model whole (`[1m]` too), the level counts of live sessions only, and
/// what the marks mean.
fn the_table_says_what_it_shows() {
    let w = World::new();
    let t = now();
    let home = w.home().to_string_lossy().into_owned();
    let session =
        |name: &str, level: &str, used: u64, window: u64, transcript: String, extra: Value| {
            let mut payload = json!({"level": level, "pressure": 10, "est_tokens": used, "ts": t,
            "context_usable": 4.0, "used_tokens": used, "window": window,
            "compact_at": window * 967 / 1000, "source": "transcript", "calls": 40,
            "cwd": format!("/work/{name}"), "transcript_path": transcript});
            payload
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            publish(&w, "interpulse/pressure", "context_pressure", name, payload);
        };
    session(
        "alpha",
        "red",
        940_000,
        1_000_000,
        format!("{home}/.claude/projects/-work-alpha/alpha.jsonl"),
        json!({"model": "claude-opus-4-5[1m]"}),
    );
    session(
        "beta",
        "red",
        180_000,
        200_000,
        format!("{home}/.codex/sessions/2026/12/04/rollout-2026-12-04T00-00-00-beta.jsonl"),
        json!({"model": "gpt-5.1-codex", "ended_at": t}),
    );
    session(
        "gamma",
        "green",
        20_000,
        1_048_576,
        format!("{home}/.gemini/tmp/gamma/chats/session-2026-12-04T00-00-gamma.jsonl"),
        json!({"model": "gemini-2.5-flash"}),
    );
    let o = w.run(&["top", "--once"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let machine = regex_escape(&interband_bridge_host(&w));
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&format!("(?m)^{machine} +"), "[MACHINE]  ");
    settings.add_filter(r"(?m)^MACHINE +", "MACHINE    ");
    settings.add_filter(r"\b\ds\b", "Ns");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("top", stdout(&o)));
}

/// The machine's name as `top` shows it (its JSON says it).
fn interband_bridge_host(w: &World) -> String {
    let o = w.run(&["top", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    list[0]["machine"].as_str().unwrap().to_owned()
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

/// A tmux server of the test's own (its socket in the temp folder).
struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .finish()
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "top"]).stdout).into_owned()
    }
    fn wait_for(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        poll(20, what, || {
            let s = self.screen();
            f(&s).then_some(s)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn the_live_view_follows_the_bus_and_its_keys_in_a_real_terminal() {
    let w = World::new();
    pressure(&w, "s-one", "yellow", 30.0, 115_000, "/work/alpha");
    let tmux = Tmux {
        socket: w.dir.path().join("tmux.sock"),
    };
    let launch = format!(
        "env INTERBAND_ROOT='{}' HOME='{}' NO_COLOR=1 '{}' top",
        w.root().display(),
        w.home().display(),
        BIN
    );
    let o = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "150",
        "-y",
        "30",
        &launch,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    tmux.wait_for("the first session", |s| {
        s.contains("YELLOW") && s.contains("alpha")
    });

    // A new session and a change of level appear without a key pressed.
    pressure(&w, "s-two", "red", 3.0, 162_000, "/work/beta");
    let s = tmux.wait_for("the red session", |s| {
        s.contains("RED") && s.contains("beta")
    });
    // Most urgent first: beta's row above alpha's.
    assert!(s.find("beta").unwrap() < s.find("alpha").unwrap(), "{s}");
    pressure(&w, "s-one", "orange", 16.0, 140_000, "/work/alpha");
    tmux.wait_for("alpha at orange", |s| s.contains("ORANGE"));

    // Keys: filter, details, quit.
    tmux.cmd(&["send-keys", "-t", "top", "/", "alpha", "Enter"]);
    tmux.wait_for("the filter", |s| {
        s.contains("filter: alpha") && !s.contains("beta")
    });
    tmux.cmd(&["send-keys", "-t", "top", "Enter"]);
    tmux.wait_for("the details", |s| {
        s.contains("details") && s.contains("/work/alpha") && s.contains("pressure orange")
    });
    tmux.cmd(&["send-keys", "-t", "top", "Escape"]);
    tmux.cmd(&["send-keys", "-t", "top", "q"]);
    poll(20, "top to quit", || {
        (!tmux.cmd(&["has-session", "-t", "top"]).status.success()).then_some(())
    });
}

fn main() -> std::process::ExitCode {
    let tmux = trials::runs("tmux", "-V")
        .then_some(())
        .ok_or_else(|| "no tmux to be the terminal (apt install tmux)".to_owned());
    trials::run(vec![
        (
            "a_snapshot_lists_every_session_most_urgent_first",
            Ok(a_snapshot_lists_every_session_most_urgent_first),
        ),
        (
            "the_age_of_the_last_warning_and_the_last_events_are_shown",
            Ok(the_age_of_the_last_warning_and_the_last_events_are_shown),
        ),
        (
            "the_table_says_what_it_shows",
            Ok(the_table_says_what_it_shows),
        ),
        (
            "the_live_view_follows_the_bus_and_its_keys_in_a_real_terminal",
            tmux.map(|()| the_live_view_follows_the_bus_and_its_keys_in_a_real_terminal as fn()),
        ),
    ])
}
