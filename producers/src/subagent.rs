//! A session's subagents' own contexts, published beside the session's
//! (`interpulse/subagent/<session>--<agent>`): each figure at its latest
//! tool call, read from the subagent's own transcript where the host keeps
//! one, and again at its parent's turn's end (a host writes an answer's
//! line just after the calls it makes, so a call's own hook reads the one
//! before). A subagent's figure never moves its parent's level.

use std::path::Path;

use interband::payloads::{Pressure, SubagentContext};
use interband_hosts::Known;
use interband_hosts::input::HookInput;

use crate::Error;
use crate::hook::Hook;

/// How long after its end a subagent's figure is read again at its
/// session's turn's end, seconds.
const RECENTLY_ENDED: f64 = 15.0 * 60.0;

/// What `agent`'s own transcript says now: its tokens, window and model.
struct Figure {
    used_tokens: u64,
    window: u64,
    model: Option<String>,
}

fn measure(h: &Hook, input: &HookInput, agent: &str) -> Option<Figure> {
    let host = input.host();
    let figure = host.profile().subagent_figure?;
    let u = figure(
        Path::new(input.transcript_path.as_deref()?),
        input.session_id.trim(),
        agent,
    )?;
    // A subagent on its session's model (or whose transcript names none:
    // Qwen Code's) runs in its session's window, where that one is certain
    // (Qwen Code states it only in the session's `Stop`).
    let session = u
        .window
        .is_none()
        .then(|| h.bus.read_typed::<Pressure>(input.session_id.trim()).ok())
        .flatten()
        .map(|e| e.payload)
        .filter(|p| p.window_other.is_none() && (u.model.is_none() || p.model == u.model));
    let model = u
        .model
        .clone()
        .or_else(|| session.as_ref().and_then(|p| p.model.clone()));
    let window = session.and_then(|p| p.window).unwrap_or_else(|| {
        host.limits(
            &Known {
                transcript: u.window,
                configured: h.settings.value.window,
                model: u.model.as_deref(),
                version: u.version.as_deref(),
                used: u.used_tokens,
                project: h.project,
                ..Default::default()
            },
            h.env,
        )
        .window
    });
    Some(Figure {
        used_tokens: u.used_tokens,
        window,
        model,
    })
}

/// `c` with the figure its transcript gives now, if any.
fn measured(h: &Hook, input: &HookInput, c: SubagentContext) -> SubagentContext {
    match measure(h, input, &c.agent) {
        Some(f) => SubagentContext {
            used_tokens: Some(f.used_tokens),
            window: Some(f.window),
            model: f.model.or(c.model.clone()),
            ..c
        },
        None => c,
    }
}

/// The record of the subagent `input` names (a new one where there is
/// none), changed by `change`, with the figure its transcript gives now,
/// published. Nothing where the input names no subagent.
fn update(
    h: &Hook,
    input: &HookInput,
    change: impl FnOnce(SubagentContext) -> SubagentContext,
) -> Result<(), Error> {
    let agent = input.agent_id.as_deref().filter(|a| !a.trim().is_empty());
    let (Some(agent), session) = (agent, input.session_id.trim()) else {
        return Ok(());
    };
    if session.is_empty() {
        return Ok(());
    }
    let key = SubagentContext::key(session, agent);
    let before = h
        .bus
        .read_typed::<SubagentContext>(&key)
        .ok()
        .map(|e| e.payload)
        .unwrap_or_default();
    let context = change(SubagentContext {
        session: session.to_owned(),
        agent: agent.to_owned(),
        agent_type: input.agent_type.clone().or(before.agent_type.clone()),
        ts: h.now,
        ..before
    });
    h.bus
        .publish_typed(&key, session, &measured(h, input, context))?;
    Ok(())
}

/// At a tool call inside a subagent: its figure, from its own transcript
/// (the calls are counted where it has none).
pub fn seen(h: &Hook, input: &HookInput) -> Result<(), Error> {
    update(h, input, |c| SubagentContext {
        calls: c.calls + 1,
        ended_at: None,
        ..c
    })
}

/// When a subagent has finished (its host says so): its last figure, and
/// its end. One never seen at a call is published all the same, ended, with
/// no calls.
pub fn finished(h: &Hook, input: &HookInput) -> Result<(), Error> {
    let now = h.now.max(0.0).floor() as u64;
    update(h, input, |c| SubagentContext {
        ended_at: Some(now),
        ..c
    })
}

/// At the parent's turn's end (or its session's end, `all`): each
/// subagent's figure read again, and those its host no longer lists running
/// (`background_tasks`), or whose records say they finished
/// (`Profile::subagent_done`), marked ended. A host that tells neither ends
/// them all at the session's end only. One that ended in the last quarter
/// of an hour is read again too.
pub fn ended(h: &Hook, input: &HookInput, all: bool) -> Result<(), Error> {
    let session = input.session_id.trim();
    let done = input.host().profile().subagent_done;
    let transcript = input.transcript_path.as_deref().map(Path::new);
    let running: Option<Vec<&str>> = input
        .background_tasks
        .as_ref()
        .and_then(|t| t.as_array())
        .map(|tasks| {
            tasks
                .iter()
                .filter(|t| t["status"] == "running")
                .filter_map(|t| t["id"].as_str())
                .collect()
        });
    let prefix = SubagentContext::key(session, "");
    for k in h.bus.keys("interpulse", "subagent")? {
        if !k.starts_with(&prefix) {
            continue;
        }
        let Ok(e) = h.bus.read_typed::<SubagentContext>(&k) else {
            continue;
        };
        if let Some(at) = e.payload.ended_at {
            // One that ended a short while ago is read once more: a host
            // may write its last answer's figure after its end's hook ran
            // (Copilot CLI writes its log some hundreds of milliseconds
            // late, seen live: tests/fixtures/qwen-copilot-subagents/verified/).
            if h.now - at as f64 <= RECENTLY_ENDED {
                let before = (e.payload.used_tokens, e.payload.window);
                let c = measured(h, input, e.payload);
                if c.used_tokens.is_some() && (c.used_tokens, c.window) != before {
                    h.bus.publish_typed(&k, session, &c)?;
                }
            }
            continue;
        }
        let c = measured(h, input, e.payload);
        let still = !all
            && match (&running, done, transcript) {
                (Some(r), _, _) => r.contains(&c.agent.as_str()),
                (None, Some(done), Some(t)) => !done(t, session, &c.agent),
                _ => true,
            };
        let c = SubagentContext {
            ended_at: (!still).then(|| h.now.max(0.0).floor() as u64),
            ..c
        };
        h.bus.publish_typed(&k, session, &c)?;
    }
    Ok(())
}
