//! Each host's headless signal, read from what the real CLIs gave a hook
//! (`tests/fixtures/headless/`: the hook's environment and parent chain,
//! and Codex's rollout head, headless and interactive, newest and oldest
//! releases): `Host::headless`'s rules say headless exactly where the run was.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use interband_hosts::{Host, claude, codex, gemini};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/headless")
}

/// A captured hook log's `=== NAME:` section, its lines.
fn section(log: &str, name: &str) -> Vec<String> {
    let head = format!("=== {name}:");
    log.lines()
        .skip_while(|l| !l.starts_with(&head))
        .skip(1)
        .take_while(|l| !l.starts_with("=== "))
        .map(str::to_owned)
        .collect()
}

fn log(name: &str) -> String {
    std::fs::read_to_string(dir().join(format!("{name}.hook.log"))).unwrap()
}

#[test]
fn claude_codes_environment_tells_headless_from_interactive() {
    for (name, headless) in [
        ("claude-1.0.128.headless", true),
        ("claude-2.1.332.headless", true),
        ("claude-2.1.332.interactive", false),
    ] {
        let env: HashMap<String, String> = section(&log(name), "ENV")
            .into_iter()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.into(), v.into())))
            .collect();
        assert!(env.contains_key("CLAUDE_CODE_ENTRYPOINT"), "{name}");
        let var = |k: &str| env.get(k).cloned();
        assert_eq!(claude::headless(&var).is_some(), headless, "{name}");
    }
}

#[test]
fn codexs_rollout_head_tells_headless_from_interactive() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, headless) in [
        ("codex-0.145.0.headless", true),
        ("codex-0.145.0.interactive", false),
        ("codex-0.171.0.headless", true),
        ("codex-0.171.0.interactive", false),
    ] {
        let head = std::fs::read(dir().join(format!("{name}.rollout-head.jsonl"))).unwrap();
        let rollout = tmp.path().join(format!("rollout-{name}.jsonl"));
        std::fs::write(&rollout, &head).unwrap();
        assert_eq!(codex::headless(&rollout).is_some(), headless, "{name}");
        assert_eq!(
            Host::Codex
                .headless(Some(&rollout), &|_: &str| None)
                .is_some(),
            headless
        );
    }
}

#[test]
fn geminis_command_line_tells_headless_from_interactive() {
    for (name, headless) in [
        ("gemini-0.26.0.headless", true),
        ("gemini-0.61.0.headless", true),
        ("gemini-0.61.0.interactive", false),
    ] {
        // `pid: argv…`, the hook itself first, then its parent.
        let parents: Vec<Vec<String>> = section(&log(name), "PARENTS")
            .iter()
            .filter_map(|l| l.split_once(": "))
            .map(|(_, argv)| argv.split_whitespace().map(str::to_owned).collect())
            .collect();
        let parent = &parents[1];
        assert!(
            parent.iter().any(|a| a.ends_with("/gemini")),
            "the hook's parent is gemini itself: {parent:?}"
        );
        assert_eq!(gemini::headless_args(parent).is_some(), headless, "{name}");
        // The hook itself is no gemini process.
        assert_eq!(gemini::headless_args(&parents[0]), None);
    }
}
