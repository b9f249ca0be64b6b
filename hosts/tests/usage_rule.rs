//! The usage rule, read from the end (the hook) and forward (the replay),
//! against a reader written here from the hosts' documented formats, on
//! generated transcripts of every host: split responses, compactions with
//! and without a figure, noise, torn last lines, any chunking; counts
//! written as integers, floats or strings, and lines whose count is no
//! figure (text, a negative number, Codex's running total at a compaction).

use interband_hosts::Host;
use interband_hosts::tail::tail_of;
use proptest::prelude::*;
use serde_json::json;

/// One thing a transcript records, in host-neutral terms.
#[derive(Debug, Clone)]
enum Ev {
    /// A response written as one line per part, each with its own figure;
    /// `req`, the API request's id, where the host writes one (Claude Code;
    /// a backend can reuse one message id for every response).
    Response {
        id: u8,
        req: Option<u8>,
        parts: Vec<u64>,
    },
    /// A response's line whose count is no figure: it changes nothing.
    Junk(u8),
    /// A prompt: the next response is another.
    Prompt,
    /// A tool's result, which can come between one response's lines.
    ToolResult,
    /// A compaction, with the new context's figure when the host states one.
    Compaction { post: Option<u64> },
    /// Lines that say nothing of the main context.
    Noise(u8),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => (0u8..3, proptest::option::of(0u8..3), proptest::collection::vec(0u64..300_000, 1..4))
            .prop_map(|(id, req, parts)| Ev::Response { id, req, parts }),
        2 => Just(Ev::Prompt),
        2 => Just(Ev::ToolResult),
        1 => proptest::option::of(0u64..50_000).prop_map(|post| Ev::Compaction { post }),
        2 => (0u8..4).prop_map(Ev::Noise),
        1 => (0u8..3).prop_map(Ev::Junk),
    ]
}

/// A count as some backend writes it: an integer, a float a little off
/// the whole number, or a string (chosen by the number, so that every
/// spelling occurs).
fn spelled(t: u64) -> serde_json::Value {
    match t % 3 {
        0 => json!(t),
        1 => json!(t as f64 + 0.4),
        _ => json!(t.to_string()),
    }
}

/// A count that is no figure.
fn junk(k: u8) -> serde_json::Value {
    match k {
        0 => json!("lots"),
        1 => json!(-5),
        _ => json!({"n": 1}),
    }
}

/// The lines of `evs` in Claude Code's format.
fn claude(evs: &[Ev]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, e) in evs.iter().enumerate() {
        match e {
            Ev::Response { id, req, parts } => {
                for t in parts {
                    let mut line = json!({"type": "assistant", "isSidechain": false, "uuid": format!("u{n}"),
                        "message": {"id": format!("msg_{id}"), "model": "claude-x", "role": "assistant",
                        "usage": {"input_tokens": spelled(t / 4), "cache_creation_input_tokens": spelled(t / 4), "cache_read_input_tokens": spelled(t - 2 * (t / 4)), "output_tokens": 9}}});
                    if let Some(r) = req {
                        line["requestId"] = json!(format!("req_{r}"));
                    }
                    out.push(line.to_string());
                }
            }
            Ev::Junk(k) => out.push(json!({"type": "assistant", "requestId": format!("junk{n}"), "message": {"id": format!("junk{n}"), "model": "claude-x",
                "usage": {"input_tokens": junk(*k), "cache_read_input_tokens": 100, "output_tokens": 9}}}).to_string()),
            Ev::Prompt => out.push(json!({"type": "user", "message": {"role": "user", "content": "say \"assistant\" and \"tool_use_id\""}}).to_string()),
            Ev::ToolResult => out.push(json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "\"assistant\""}]}}).to_string()),
            Ev::Compaction { post } => {
                let mut meta = json!({"trigger": "auto", "preTokens": 170_000});
                if let Some(p) = post {
                    meta["postTokens"] = json!(p);
                }
                out.push(json!({"type": "system", "subtype": "compact_boundary", "uuid": format!("b{n}"), "compactMetadata": meta}).to_string());
            }
            Ev::Noise(k) => out.push(match k {
                0 => json!({"type": "assistant", "message": {"id": "syn", "model": "<synthetic>", "usage": {"input_tokens": 0}}}).to_string(),
                1 => json!({"type": "assistant", "isSidechain": true, "message": {"id": "side", "model": "m", "usage": {"input_tokens": 999_999}}}).to_string(),
                2 => json!({"type": "system", "subtype": "stop_hook_summary"}).to_string(),
                _ => json!({"type": "attachment", "attachment": {"type": "date"}}).to_string(),
            }),
        }
    }
    out
}

/// The lines of `evs` in Codex's rollout format (no message ids: each part
/// is a usage record, then the response's `token_count`).
fn codex(evs: &[Ev]) -> Vec<String> {
    let mut out = Vec::new();
    for e in evs {
        match e {
            Ev::Response { parts, .. } => {
                for t in parts {
                    out.push(json!({"type": "token_usage_record", "payload": {"usage": {"input_tokens": spelled(*t), "output_tokens": 0, "total_tokens": spelled(*t)}}}).to_string());
                }
                let last = parts.last().copied().unwrap_or(0);
                out.push(json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"total_tokens": spelled(last)}, "model_context_window": 258_400}}}).to_string());
            }
            Ev::Prompt => out.push(json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "token_count"}]}}).to_string()),
            Ev::ToolResult => out.push(json!({"type": "response_item", "payload": {"type": "function_call_output", "output": "token_count"}}).to_string()),
            Ev::Compaction { post } => {
                out.push(json!({"type": "compacted", "payload": {"message": "s"}}).to_string());
                // Codex's estimate of the new context, just after it.
                if let Some(p) = post {
                    out.push(json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": p}, "model_context_window": 258_400}}}).to_string());
                }
            }
            // Codex 0.104 at a compaction: no input, no output, the session's running total.
            Ev::Junk(0) => out.push(json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 940_499}, "model_context_window": 258_400}}}).to_string()),
            Ev::Junk(k) => out.push(json!({"type": "token_usage_record", "payload": {"usage": {"input_tokens": junk(*k), "output_tokens": 3}}}).to_string()),
            Ev::Noise(k) => out.push(match k {
                0 => json!({"type": "turn_context", "payload": {"model": "gpt-x"}}).to_string(),
                1 => json!({"type": "event_msg", "payload": {"type": "token_count", "info": null}}).to_string(),
                _ => json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "hi"}}).to_string(),
            }),
        }
    }
    out
}

/// The lines of `evs` in Gemini's chat-recording format.
fn gemini(evs: &[Ev]) -> Vec<String> {
    let mut out = Vec::new();
    for e in evs {
        match e {
            Ev::Response { id, parts, .. } => {
                for t in parts {
                    out.push(json!({"id": format!("g{id}"), "type": "gemini", "model": "gemini-2.5-pro", "content": "",
                        "tokens": {"input": spelled(*t), "output": 3, "total": t + 3}}).to_string());
                }
            }
            Ev::Junk(k) => out.push(json!({"id": "junk", "type": "gemini", "model": "gemini-2.5-pro", "content": "",
                "tokens": {"input": junk(*k), "output": 3}}).to_string()),
            Ev::Prompt => out.push(
                json!({"id": "u", "type": "user", "content": [{"text": "\"gemini\" \"functionResponse\""}]}).to_string(),
            ),
            Ev::ToolResult => out.push(
                json!({"id": "r", "type": "user", "content": [{"functionResponse": {"id": "c", "name": "read_file", "response": {"output": "\"gemini\""}}}]}).to_string(),
            ),
            Ev::Compaction { .. } => out.push(json!({"$set": {"messages": [{"id": "s", "type": "user", "content": [{"text": "<state_snapshot>"}]}]}}).to_string()),
            // Metadata, and the whole history at a session's start or on a resume.
            Ev::Noise(0) => out.push(json!({"$set": {"messages": [{"id": "c", "type": "user", "content": [{"text": "<session_context>"}]}]}}).to_string()),
            Ev::Noise(_) => {
                out.push(json!({"$set": {"lastUpdated": "2026-11-30T00:00:00Z"}}).to_string())
            }
        }
    }
    out
}

/// What the context holds after `evs`, by the hosts' documented rule, for
/// a host that writes message ids (`ids`), request ids (`reqs`) and states
/// a compaction's figure (`post`): the largest part of the latest response, a response's parts
/// merged until another response or a prompt (not a tool's result); a
/// compaction's figure or none.
fn expected(evs: &[Ev], ids: bool, reqs: bool, post: bool) -> Option<u64> {
    let mut used = None;
    let mut open: Option<(u8, Option<u8>)> = None;
    for e in evs {
        match e {
            Ev::Response { id, req, parts } => {
                let max = parts.iter().copied().max().unwrap_or(0);
                let last = parts.last().copied().unwrap_or(0);
                let key = (*id, if reqs { *req } else { None });
                used = Some(match (ids, open == Some(key), used) {
                    (true, true, Some(u)) => max.max(u),
                    (true, _, _) => max,
                    // Codex: every record replaces the last; the token_count is the last part.
                    (false, _, _) => last,
                });
                open = Some(key);
            }
            Ev::Prompt => open = None,
            Ev::ToolResult => {}
            Ev::Compaction { post: p } => {
                used = if post { *p } else { None };
                open = None;
            }
            Ev::Noise(_) | Ev::Junk(_) => {}
        }
    }
    used
}

fn bytes(lines: &[String], crlf: bool) -> Vec<u8> {
    let sep = if crlf { "\r\n" } else { "\n" };
    lines
        .iter()
        .map(|l| format!("{l}{sep}"))
        .collect::<String>()
        .into_bytes()
}

/// Gemini's records of `evs` as the one JSON document Gemini CLI wrote
/// before 0.39 (its `messages`; metadata lines have no record there),
/// pretty-printed as Gemini writes it, or on one line; each record's text
/// carries quotes, backslashes and braces.
fn gemini_document(evs: &[Ev], pretty: bool) -> Vec<u8> {
    let messages: Vec<serde_json::Value> = gemini(evs)
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("$set").is_none())
        .map(|mut v| {
            v["displayContent"] = json!("} { \\\" \\ \"]\" [{\"type\": \"gemini\"}");
            v
        })
        .collect();
    let doc = json!({"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z",
        "lastUpdated": "2026-01-01T00:00:00Z", "messages": messages, "kind": "main"});
    if pretty {
        serde_json::to_vec_pretty(&doc).unwrap()
    } else {
        serde_json::to_vec(&doc).unwrap()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_gemini_document_reads_as_its_lines_do(
        evs in proptest::collection::vec(ev(), 0..24),
        pretty in any::<bool>(),
        chunk in 1usize..300,
    ) {
        // A compression rewrites the document whole: none inside one.
        let evs: Vec<Ev> = evs.into_iter().filter(|e| !matches!(e, Ev::Compaction { .. })).collect();
        let doc = gemini_document(&evs, pretty);
        let want = expected(&evs, true, false, false);
        let got = interband_hosts::tail::document_tail_of(&doc, Host::Gemini);
        prop_assert_eq!(got.usage.as_ref().map(|u| u.used_tokens), want);
        let lines = tail_of(&bytes(&gemini(&evs), false), Host::Gemini);
        prop_assert_eq!(got.usage.as_ref().map(|u| &u.model), lines.usage.as_ref().map(|u| &u.model));
        let small = interband_hosts::tail::document_tail_of_with(&doc, u64::MAX, chunk, Host::Gemini);
        prop_assert_eq!(small, got, "any first window");
        // Torn (being rewritten): no figure, never a wrong one.
        let cut = &doc[..doc.len() * 2 / 3];
        let torn = interband_hosts::tail::document_tail_of(cut, Host::Gemini).usage.map(|u| u.used_tokens);
        prop_assert!(torn.is_none() || torn == want || evs.is_empty(), "{:?}", torn);
    }

    #[test]
    fn the_end_and_the_start_read_the_same_figure(
        evs in proptest::collection::vec(ev(), 0..24),
        crlf in any::<bool>(),
        torn in any::<prop::sample::Index>(),
    ) {
        let cases: [(Host, Vec<String>, bool, bool, bool); 3] = [
            (Host::Claude, claude(&evs), true, true, false),
            (Host::Codex, codex(&evs), false, false, true),
            (Host::Gemini, gemini(&evs), true, false, false),
        ];
        for (host, lines, ids, reqs, post) in cases {
            let mut b = bytes(&lines, crlf);
            let want = expected(&evs, ids, reqs, post);
            let back = tail_of(&b, host);
            let fwd = host.read_forward(&b);
            prop_assert_eq!(back.usage.as_ref().map(|u| u.used_tokens), want, "{:?} from the end", host);
            prop_assert_eq!(fwd.used(), want, "{:?} forward", host);
            prop_assert_eq!(&back.usage, &fwd.usage, "{:?}", host);
            prop_assert_eq!(&back.latest_boundary, &fwd.latest_boundary, "{:?}", host);
            // A half-written line at the end changes nothing.
            if let Some(last) = lines.last() {
                let cut = torn.index(last.len().max(1));
                b.extend_from_slice(&last.as_bytes()[..cut.min(last.len().saturating_sub(1))]);
                prop_assert_eq!(tail_of(&b, host).usage.map(|u| u.used_tokens), want, "{:?} torn", host);
            }
        }
    }
}

#[test]
fn one_response_split_over_lines_counts_its_largest_line() {
    // Seen with a non-Anthropic backend: the whole prompt on the first line,
    // a tiny figure on the last, one message id.
    let evs = [
        Ev::Prompt,
        Ev::Response {
            id: 1,
            req: Some(1),
            parts: vec![108_000, 2_000, 111],
        },
    ];
    let b = bytes(&claude(&evs), false);
    assert_eq!(
        tail_of(&b, Host::Claude).usage.unwrap().used_tokens,
        108_000
    );
    assert_eq!(Host::Claude.read_forward(&b).used(), Some(108_000));
}

#[test]
fn a_split_response_with_its_tool_results_between_its_lines_counts_its_largest_line() {
    // One response's two calls, each run and its result written before the
    // response's next line; the whole prompt on the first line.
    let evs = [
        Ev::Prompt,
        Ev::Response {
            id: 1,
            req: Some(1),
            parts: vec![165_000],
        },
        Ev::ToolResult,
        Ev::Response {
            id: 1,
            req: Some(1),
            parts: vec![1_000],
        },
        Ev::ToolResult,
    ];
    for (host, lines) in [(Host::Claude, claude(&evs)), (Host::Gemini, gemini(&evs))] {
        let b = bytes(&lines, false);
        assert_eq!(
            tail_of(&b, host).usage.unwrap().used_tokens,
            165_000,
            "{host:?}"
        );
        assert_eq!(host.read_forward(&b).used(), Some(165_000), "{host:?}");
    }
}

#[test]
fn a_line_that_does_not_parse_means_the_same_forward_and_from_the_end() {
    // Torn or glued lines, with the bytes that make a reader look closer,
    // between two lines of one response (where a break would matter).
    let torn: [&str; 4] = [
        r#"{"type":"user","message":{"role":"user","content":"half a prom"#,
        r#"{"type":"user","message":{"content":[{"tool_use_id":"t","type":"tool_res"#,
        r#"{"type":"assistant","message":{"id":"m","usage":{"input_tokens":5}}}{"type":"user"}"#,
        r#"{"id":"u","type":"user","content":[{"text":"hi"}]"#,
    ];
    let part = |t| Ev::Response {
        id: 1,
        req: Some(1),
        parts: vec![t],
    };
    for (host, write) in [
        (Host::Claude, claude as fn(&[Ev]) -> Vec<String>),
        (Host::Gemini, gemini),
    ] {
        for line in torn {
            let mut lines = write(&[part(150_000)]);
            lines.push(line.to_owned());
            lines.extend(write(&[part(1_000)]));
            let b = bytes(&lines, false);
            let mut fwd = interband_hosts::usage::Reading::default();
            let mut offset = 0;
            for l in b.split_inclusive(|&c| c == b'\n') {
                offset += l.len() as u64;
                if let Some(f) = host.forward(&l[..l.len() - 1], offset).fact {
                    fwd.apply(f, offset);
                }
            }
            let back = tail_of(&b, host);
            assert_eq!(fwd.usage, back.usage, "{host:?}: {line}");
        }
    }
}

#[test]
fn a_compaction_keeps_the_window_and_the_model() {
    // Codex states its window on `token_count` lines, written after the
    // hook of the response that asked for the tool; after a compaction the
    // first call sees only the response's usage record.
    let lines = [
        json!({"type": "turn_context", "payload": {"model": "gpt-5.5"}}),
        json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"total_tokens": 170_000}, "model_context_window": 190_000}}}),
        json!({"type": "compacted", "payload": {"message": "summary"}}),
        json!({"type": "token_usage_record", "payload": {"usage": {"input_tokens": 150_000, "output_tokens": 0, "total_tokens": 150_000}}}),
    ]
    .map(|l| l.to_string());
    let b = bytes(&lines, false);
    for u in [
        tail_of(&b, Host::Codex).usage,
        Host::Codex.read_forward(&b).usage,
    ] {
        let u = u.unwrap();
        assert_eq!((u.used_tokens, u.window), (150_000, Some(190_000)));
        assert_eq!(u.model.as_deref(), Some("gpt-5.5"));
    }
}

#[test]
fn a_byte_order_mark_before_the_first_line_changes_nothing() {
    let evs = [Ev::Response {
        id: 1,
        req: Some(1),
        parts: vec![150_000],
    }];
    for (host, lines) in [
        (Host::Claude, claude(&evs)),
        (Host::Codex, codex(&evs)),
        (Host::Gemini, gemini(&evs)),
    ] {
        let mut b = b"\xEF\xBB\xBF".to_vec();
        b.extend(bytes(&lines, false));
        assert_eq!(
            tail_of(&b, host).usage.unwrap().used_tokens,
            150_000,
            "{host:?}"
        );
        assert_eq!(host.read_forward(&b).used(), Some(150_000), "{host:?}");
    }
}

#[test]
fn a_backend_that_reuses_one_message_id_still_reads_each_response_alone() {
    // One message id for every response, each its own API request; the
    // context shrinks within the turn (old tool results cleared).
    let mut evs = vec![Ev::Prompt];
    for (req, t) in [
        (0u8, 120_000u64),
        (1, 140_000),
        (2, 150_000),
        (0, 90_000),
        (1, 95_000),
    ] {
        evs.push(Ev::Response {
            id: 7,
            req: Some(req),
            parts: vec![t],
        });
        evs.push(Ev::ToolResult);
    }
    let b = bytes(&claude(&evs), false);
    assert_eq!(tail_of(&b, Host::Claude).usage.unwrap().used_tokens, 95_000);
    assert_eq!(Host::Claude.read_forward(&b).used(), Some(95_000));
}

#[test]
fn a_compaction_without_a_figure_leaves_none() {
    let evs = [
        Ev::Response {
            id: 1,
            req: Some(1),
            parts: vec![166_896],
        },
        Ev::Compaction { post: None },
        Ev::Prompt,
    ];
    for (host, lines) in [
        (Host::Claude, claude(&evs)),
        (Host::Codex, codex(&evs)),
        (Host::Gemini, gemini(&evs)),
    ] {
        let t = tail_of(&bytes(&lines, false), host);
        assert_eq!(t.usage, None, "{host:?}");
        assert!(t.latest_boundary.is_some(), "{host:?}");
    }
}
