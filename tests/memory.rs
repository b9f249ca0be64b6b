//! What a hook call costs in memory for a large input, measured from the
//! outside (the child's peak resident set, which the kernel reports when it
//! is waited on): a few times the input, whatever the host's input shape.
//! One test in this binary, so the peak is this child's alone.

mod common;

use common::*;
use serde_json::{Value, json};

/// The peak resident set of the children waited on so far, in bytes.
fn children_peak() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn a_large_hook_input_or_settings_file_costs_a_few_times_its_size() {
    let w = World::new();
    // A tool result of 14 MB in many small values, in Copilot's camelCase
    // shape (1.0.30 to 1.0.49), which the profile reshapes: the case that
    // cost 40x. Written to a file and dropped before the hook starts, so
    // the child's peak (which counts from the fork) is the hook's own.
    let input_file = w.dir.path().join("input.json");
    let size = {
        let mut camel: Value = serde_json::from_slice(
            &std::fs::read(
                repo().join("tests/fixtures/copilot-cli-1.0.30/camel.postToolUse.input.json"),
            )
            .unwrap(),
        )
        .unwrap();
        camel["toolResult"]["textResultForLlm"] = json!("@BIG@");
        camel["cwd"] = json!(w.dir.path());
        let mut list = String::from("[");
        for i in 0..200_000 {
            if i > 0 {
                list.push(',');
            }
            list.push_str(&format!(
                r#"{{"line":{i},"text":"some output of a tool, in a list of many small values"}}"#
            ));
        }
        list.push(']');
        let text = camel.to_string().replace("\"@BIG@\"", &list);
        std::fs::write(&input_file, &text).unwrap();
        text.len() as u64
    };
    assert!(size > 14_000_000, "{size}");
    let o = w
        .cmd(&["hook", "--host", "copilot"])
        .stdin(std::fs::File::open(&input_file).unwrap())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let peak = children_peak();
    assert!(
        peak < 6 * size,
        "the hook's peak resident set was {} MB for a {} MB input",
        peak >> 20,
        size >> 20
    );
    // install on a settings file of 15 MB (compact, as a script writes
    // it): bounded too, however the file is laid out.
    let settings = w.dir.path().join("settings.json");
    let allow: Vec<String> = (0..700_000).map(|i| format!("Bash(tool-{i}:*)")).collect();
    let text =
        serde_json::to_string(&json!({"model": "opus", "permissions": {"allow": allow}})).unwrap();
    std::fs::write(&settings, &text).unwrap();
    let size = text.len() as u64;
    drop((allow, text));
    let o = w
        .cmd(&["install", "--settings", settings.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let peak = children_peak();
    assert!(
        peak < 24 * size,
        "install's peak resident set was {} MB for a {} MB settings file",
        peak >> 20,
        size >> 20
    );
    // And it was handled: the call counted for the session.
    let session = "c926bb6f-7b34-4332-a869-d84319338e17";
    let p = w.bus().read("interpulse", "pressure", session).unwrap();
    assert_eq!(
        serde_json::to_value(p.envelope.payload).unwrap()["calls"],
        1
    );
}
