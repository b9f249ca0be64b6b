//! What the agent is told as the context fills, through the real hook: it
//! informs and never orders (no "commit"), says "a compaction follows" only
//! where a strategy runs one, and speaks the user's own words when their
//! settings give a template.

mod common;

use common::*;
use serde_json::{Value, json};

const SESSION: &str = "2f6d1b0e-8c4a-4f5e-9d3b-7a1c0e2b4d68";

/// A session's tool calls at these used tokens (of a 200k window), and what
/// the agent was told after each.
fn told(w: &World, used: &[u64], env: &[(&str, &str)]) -> Vec<String> {
    let cwd = w.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let path = w.dir.path().join(format!("{SESSION}.jsonl"));
    let mut t = interpulse::synthetic::Writer::new(&path, SESSION, &cwd);
    t.prompt("Port the cache").unwrap();
    let mut out = Vec::new();
    for (i, u) in used.iter().enumerate() {
        let input = json!({"command": format!("step {i}")});
        t.tool("Bash", input.clone(), "ok", false, *u, false)
            .unwrap();
        let mut v: Value = serde_json::from_slice(&capture("PostToolUse.input.json")).unwrap();
        v["session_id"] = json!(SESSION);
        v["transcript_path"] = json!(path);
        v["cwd"] = json!(cwd);
        v["tool_name"] = json!("Bash");
        v["tool_input"] = input;
        let mut c = w.cmd(&["hook"]);
        c.envs(env.iter().copied());
        let o = with_stdin(&mut c, v.to_string().as_bytes());
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let said = serde_json::from_str::<Value>(&stdout(&o))
            .ok()
            .and_then(|v| {
                v["hookSpecificOutput"]["additionalContext"]
                    .as_str()
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        out.push(said);
    }
    out
}

/// Yellow, orange and red, each reached once.
const RISING: [u64; 4] = [20_000, 110_000, 140_000, 165_000];

#[test]
fn the_warnings_inform_and_never_order_a_commit() {
    let w = World::new();
    let said = told(&w, &RISING, &[]);
    // Each level says what is known, whole: the level, the share used, the
    // tokens, what is left to the compaction and where the figure came from.
    assert!(
        said[1].starts_with(
            "Context YELLOW: 55% used (110k of 200k tokens), 57k to compact (from the transcript). "
        ),
        "{said:?}"
    );
    assert!(said[1].contains("current task"), "{said:?}");
    assert!(said[2].contains("Context ORANGE"), "{said:?}");
    assert!(said[3].contains("Context RED"), "{said:?}");
    for s in &said {
        assert!(
            !s.to_lowercase().contains("commit"),
            "an order to commit: {s}"
        );
        assert!(
            !s.contains("compaction follows"),
            "promised under the default strategy (advise), which runs none: {s}"
        );
    }
    assert!(
        said[2].contains("work saved the way this project does"),
        "{}",
        said[2]
    );
    for s in &said {
        assert_eq!(orders(s), Vec::<&str>::new(), "an order: {s}");
    }
}

#[test]
fn a_compaction_is_said_to_follow_only_where_a_strategy_runs_one() {
    for (strategy, follows) in [("advise", false), ("off", false), ("tmux", true)] {
        let w = World::new();
        let said = told(&w, &RISING, &[("INTERBAND_COMPACT_STRATEGY", strategy)]);
        assert_eq!(
            said[3].contains("a compaction follows"),
            follows,
            "{strategy}: {}",
            said[3]
        );
        assert!(
            !said[2].contains("a compaction follows"),
            "{strategy}: not at orange (the trigger's level is red)"
        );
    }
}

#[test]
fn each_level_speaks_the_users_words_when_their_settings_say_so() {
    let w = World::new();
    let config = w.home().join(".config/interband/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        "[interpulse.warnings]\norange = \"Heads up ({level}): {used} of {window} used, {left} of the room left. {next}\"\n",
    )
    .unwrap();
    let said = told(&w, &RISING, &[]);
    assert!(
        said[2].starts_with(
            "Heads up (ORANGE): 140k of 200k used, 16% of the room left. A compaction is near"
        ),
        "{}",
        said[2]
    );
    assert!(
        said[3].starts_with("Context RED"),
        "the other levels keep the built-in text: {}",
        said[3]
    );
}
