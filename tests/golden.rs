//! Golden v1 envelopes: `interband validate` and the committed JSON Schemas
//! accept every valid file and reject every invalid one, and the schemas are
//! what the code generates.

mod common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let dir = repo().join("tests/fixtures/v1").join(kind);
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    assert!(v.len() > 20, "fixtures for {kind} are there");
    v
}

#[test]
fn validate_accepts_every_valid_golden_file() {
    let w = World::new();
    let dir = repo().join("tests/fixtures/v1/valid");
    let o = w.run(&["validate", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn validate_rejects_each_invalid_golden_file_with_one_line_naming_it() {
    let w = World::new();
    for f in fixtures("invalid") {
        let o = w.run(&["validate", f.to_str().unwrap()]);
        assert_eq!(
            code(&o),
            1,
            "{} was not rejected as invalid: {}",
            f.display(),
            stdout(&o)
        );
        let out = stdout(&o);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with(f.to_str().unwrap()), "{out}");
    }
}

#[test]
fn validate_json_report_counts_a_whole_folder() {
    let w = World::new();
    let dir = repo().join("tests/fixtures/v1");
    let o = w.run(&["validate", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let (valid, invalid) = (fixtures("valid").len(), fixtures("invalid").len());
    assert_eq!(report["checked"], valid + invalid);
    assert_eq!(report["valid"], valid);
    assert_eq!(report["invalid"].as_array().unwrap().len(), invalid);
}

fn message_schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("schemas/envelope.schema.json")).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
}

#[test]
fn the_committed_schema_agrees_with_the_validator_on_every_golden_file() {
    let schema = message_schema();
    for f in fixtures("valid") {
        let v: Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", f.display());
    }
    for f in fixtures("invalid") {
        let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(&f).unwrap()) else {
            continue; // not JSON at all
        };
        assert!(!schema.is_valid(&v), "schema accepts {}", f.display());
    }
}

#[test]
fn messages_the_bus_writes_pass_the_schema() {
    use interband::payloads::*;
    let w = World::new();
    let bus = w.bus();
    let p = bus
        .publish_typed(
            "s",
            "s",
            &Pressure {
                level: Level::Orange,
                pressure: 12.5,
                est_tokens: 100.0,
                ts: 1.0,
                context_usable: Some(18.0),
                used_tokens: Some(150_000),
                window: Some(200_000),
                source: Some("transcript".into()),
                calls: Some(40),
                ..Default::default()
            },
        )
        .unwrap();
    let c = bus
        .publish_typed(
            "s",
            "s",
            &ContextWindow {
                window: 1_000_000,
                used_tokens: Some(31_700),
                ts: 2.0,
                ..Default::default()
            },
        )
        .unwrap();
    let r = bus
        .publish_typed(
            "s",
            "s",
            &CompactionRecord {
                trigger: "auto".into(),
                note: "/n/s-pre_compact_auto.md".into(),
                tokens_before: Some(168_000),
                tokens_after: Some(18_000),
                summary_read: Some(true),
                settled: true,
                facts: vec![Fact {
                    kind: FactKind::FailedCommand,
                    text: "cargo test -p parser".into(),
                    kept: Kept::Lost,
                }],
                ts: 3.0,
                ..Default::default()
            },
        )
        .unwrap();
    let schema = message_schema();
    for path in [p.path, c.path, r.path] {
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(schema.is_valid(&v), "{}", path.display());
        assert_eq!(v["version"], "1.1.0");
    }
}

#[test]
fn committed_schemas_match_the_code() {
    let stale = interband::schema::stale(&repo().join("schemas"));
    assert!(
        stale.is_empty(),
        "stale schemas {stale:?}: run `cargo run -- schema --out schemas`"
    );
    let w = World::new();
    let o = w.cmd(&["schema", "--check"]).current_dir(repo()).finish();
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // And --check notices drift.
    let tmp = tempfile::tempdir().unwrap();
    let o = w.run(&["schema", "--out", tmp.path().to_str().unwrap()]);
    assert_eq!(code(&o), 0);
    std::fs::write(tmp.path().join("envelope.schema.json"), "{}").unwrap();
    let o = w.run(&["schema", "--check", tmp.path().to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("envelope.schema.json"));
    // A schema no contract generates any more is drift too.
    w.run(&["schema", "--out", tmp.path().to_str().unwrap()]);
    std::fs::write(tmp.path().join("payloads/gone.old_type.schema.json"), "{}").unwrap();
    let o = w.run(&["schema", "--check", tmp.path().to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("payloads/gone.old_type.schema.json"));
    // No folder at all: an I/O error, not drift.
    let o = w.run(&["schema", "--check", "/does/not/exist"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// What the real v1 readers said of each golden file (`readers.tsv`, from
/// running `lib/interband.sh` and `interband.go` on them): the models in
/// `bus/src/v1.rs` say the same, and `interband read` accepts a file exactly
/// when either v1 reader does, with a warning when interband's own rules
/// reject it.
#[test]
fn readers_accept_what_either_v1_reader_accepts_and_say_so() {
    let table = std::fs::read_to_string(repo().join("tests/fixtures/v1/readers.tsv")).unwrap();
    let mut rows = 0;
    let w = World::new();
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [file, shell, go] = cols[..] else {
            panic!("a row of three columns: {line}")
        };
        rows += 1;
        let path = repo().join("tests/fixtures/v1").join(file);
        let value: Option<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).ok();
        let model = value.as_ref().map_or((false, false), |v| {
            (
                interband::v1::shell_accepts(v),
                interband::v1::go_accepts(v),
            )
        });
        assert_eq!(
            (model.0, model.1),
            (shell == "accept", go == "accept"),
            "{file}: the models (shell, Go) differ from the real readers"
        );
        let o = w.run(&["read", path.to_str().unwrap()]);
        let either = shell == "accept" || go == "accept";
        assert_eq!(code(&o) == 0, either, "{file}: {}", stderr(&o));
        let warned = stderr(&o).contains("tolerated:");
        assert_eq!(
            warned,
            either && file.starts_with("invalid/"),
            "{file}: {}",
            stderr(&o)
        );
    }
    assert_eq!(rows, fixtures("valid").len() + fixtures("invalid").len());
}
