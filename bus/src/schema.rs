//! JSON Schemas (2020-12) of the envelope and every known payload, generated
//! from the Rust types.
//!
//! `envelope.schema.json` checks a whole message: the v1 envelope rules, and
//! for each known `(namespace, type)` its payload contract. Each payload also
//! has a file of its own under `payloads/`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::registry::CONTRACTS;
use crate::{Envelope, Error, Result};

/// Every schema file: its path relative to the schemas folder, and its text.
///
/// ```
/// let files = interband::schema::files();
/// assert!(files.iter().any(|(p, _)| p == "envelope.schema.json"));
/// assert!(files.iter().any(|(p, _)| p == "payloads/interpulse.context_pressure.schema.json"));
/// ```
pub fn files() -> Vec<(String, String)> {
    let mut out = vec![(
        "envelope.schema.json".to_owned(),
        render(&envelope_schema()),
    )];
    for c in CONTRACTS {
        let mut s = (c.schema)().to_value();
        s["description"] = json!(format!(
            "{} — payload of {}/{} messages on the {}/{} channel",
            c.about, c.namespace, c.msg_type, c.namespace, c.channel
        ));
        out.push((
            format!("payloads/{}.{}.schema.json", c.namespace, c.msg_type),
            render(&s),
        ));
    }
    out
}

/// The whole-message schema: envelope, plus one `if namespace/type then payload` per contract.
pub fn envelope_schema() -> Value {
    let mut root = schemars::schema_for!(Envelope<Value>).to_value();
    root["description"] = json!(
        "An interband message (protocol v1). Readers accept any version starting with 1. and \
         ignore unknown fields; known (namespace, type) pairs must carry their payload contract."
    );
    root["properties"]["payload"] = json!({"type": "object", "description": "The payload; its contract depends on namespace and type."});
    let mut defs: Map<String, Value> = Map::new();
    let mut rules = Vec::new();
    for c in CONTRACTS {
        let mut s = (c.schema)().to_value();
        if let Some(Value::Object(inner)) = s.as_object_mut().and_then(|o| o.remove("$defs")) {
            defs.extend(inner);
        }
        if let Some(o) = s.as_object_mut() {
            o.remove("$schema");
        }
        let name = format!("{}.{}", c.namespace, c.msg_type);
        defs.insert(name.clone(), s);
        rules.push(json!({
            "if": {"properties": {"namespace": {"const": c.namespace}, "type": {"const": c.msg_type}}},
            "then": {"properties": {"payload": {"$ref": format!("#/$defs/{name}")}}}
        }));
    }
    root["$defs"] = Value::Object(defs);
    root["allOf"] = Value::Array(rules);
    root
}

fn render(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("schemas serialize");
    s.push('\n');
    s
}

/// Writes every schema file under `dir`.
pub fn write_all(dir: &Path) -> Result<()> {
    for (rel, text) in files() {
        let path = dir.join(rel);
        let parent = path.parent().expect("schema files have a folder");
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

/// The schema files under `dir` that are missing or differ from the generated
/// ones, then the `*.schema.json` files there that are not generated at all
/// (a contract that is gone), each relative to `dir`.
pub fn stale(dir: &Path) -> Vec<String> {
    let generated = files();
    let mut out: Vec<String> = generated
        .iter()
        .filter(|(rel, text)| {
            std::fs::read_to_string(dir.join(rel)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(rel, _)| rel.clone())
        .collect();
    for sub in ["", "payloads"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        let mut extra: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".schema.json"))
            .map(|n| {
                if sub.is_empty() {
                    n
                } else {
                    format!("{sub}/{n}")
                }
            })
            .filter(|rel| !generated.iter().any(|(g, _)| g == rel))
            .collect();
        extra.sort();
        out.extend(extra);
    }
    out
}
