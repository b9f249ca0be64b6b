//! A session's subagents' own contexts, published beside the session's
//! (`interpulse/subagent/<session>--<agent>`): each figure at its latest
//! tool call, read from the subagent's own transcript where the host keeps
//! one. A subagent's figure never moves its parent's level.

use std::path::Path;

use interband::Bus;
use interband::paths::safe_key;
use interband::payloads::SubagentContext;
use interband_hosts::Known;
use interband_hosts::input::HookInput;

use crate::Error;
use crate::config::Config;
use crate::hook::Hook;

/// The key of `agent`'s context, under its `session`.
pub fn key(session: &str, agent: &str) -> String {
    safe_key(&format!("{session}--{agent}"))
}

/// At a tool call inside a subagent: its figure, from its own transcript
/// (the calls are counted where it has none).
pub fn seen(h: &Hook, input: &HookInput, cfg: &Config) -> Result<(), Error> {
    let (Some(agent), session) = (input.agent_id.as_deref(), input.session_id.trim()) else {
        return Ok(());
    };
    let host = input.host();
    let key = key(session, agent);
    let before = h
        .bus
        .read_typed::<SubagentContext>(&key)
        .ok()
        .map(|e| e.payload);
    let usage = input.transcript_path.as_deref().and_then(|parent| {
        let figure = host.profile().subagent_figure?;
        figure(Path::new(parent), agent)
    });
    let window = usage.as_ref().map(|u| {
        host.limits(
            &Known {
                transcript: u.window,
                configured: cfg.window,
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
    let context = SubagentContext {
        session: session.to_owned(),
        agent: agent.to_owned(),
        agent_type: input
            .agent_type
            .clone()
            .or_else(|| before.as_ref().and_then(|b| b.agent_type.clone())),
        used_tokens: usage.as_ref().map(|u| u.used_tokens),
        window,
        model: usage.and_then(|u| u.model),
        calls: before.map_or(0, |b| b.calls) + 1,
        ended_at: None,
        ts: h.now,
    };
    h.bus.publish_typed(&key, session, &context)?;
    Ok(())
}

/// At the parent's turn's end (or its session's end, `all`): the subagents
/// its host no longer lists running (`background_tasks`) are marked ended.
/// A host that lists none ends them all at the session's end only.
pub fn ended(bus: &Bus, input: &HookInput, now: f64, all: bool) -> Result<(), Error> {
    let session = input.session_id.trim();
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
    if running.is_none() && !all {
        return Ok(());
    }
    let prefix = key(session, "");
    for k in bus.keys("interpulse", "subagent")? {
        if !k.starts_with(&prefix) {
            continue;
        }
        let Ok(e) = bus.read_typed::<SubagentContext>(&k) else {
            continue;
        };
        let c = e.payload;
        let still = !all
            && running
                .as_ref()
                .is_some_and(|r| r.contains(&c.agent.as_str()));
        if c.ended_at.is_some() || still {
            continue;
        }
        let c = SubagentContext {
            ended_at: Some(now.max(0.0).floor() as u64),
            ..c
        };
        bus.publish_typed(&k, session, &c)?;
    }
    Ok(())
}
