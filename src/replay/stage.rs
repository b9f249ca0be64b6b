//! The stage the hooks run on: a private home and root, the hooks' copy of the transcript, and each happening turned into the host's events.

use super::*;
use interband::payloads::{CompactionRecord, Kept};
use interband_consumers::summary::record;

/// A call waiting for its result.
pub(super) struct Pending {
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) input: Box<RawValue>,
    pub(super) subagent: bool,
}

/// The private world and the session being re-enacted.
pub(super) struct Stage {
    pub(super) host: Host,
    pub(super) bus: Bus,
    pub(super) env: Vars,
    pub(super) home: PathBuf,
    pub(super) session: String,
    pub(super) cwd: PathBuf,
    pub(super) copy_path: PathBuf,
    pub(super) copy: std::io::BufWriter<std::fs::File>,
    /// Bytes written to the copy.
    pub(super) copied: u64,
    /// Lines read but not yet in the copy, in order: a host that writes a
    /// response's calls only after their tool hooks ran
    /// ([`interband_hosts::Profile::writes_calls_after_their_hooks`]) has
    /// them written once those hooks are done.
    pub(super) held: Vec<u8>,
    /// The copy is given back up to here (see [`Stage::free_behind`]).
    pub(super) freed_to: u64,
    /// Keep the whole copy (`INTERBAND_REPLAY_KEEP_COPY`, for comparison).
    pub(super) keep_copy: bool,
    pub(super) strategy: String,
    pub(super) problems: RefCell<Vec<String>>,
    /// What the hooks published since the last look (the bus's tap).
    pub(super) published: std::sync::Arc<std::sync::Mutex<Vec<interband::Message>>>,
}

/// The replay's private folder: in memory (`/dev/shm`) when there is one,
/// and the user's alone (0700: it holds a copy of the transcript).
pub(super) fn private_dir() -> Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    let mut b = tempfile::Builder::new();
    b.prefix("interband-replay.");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let dir = if shm.is_dir() {
        b.tempdir_in(shm).or_else(|_| b.tempdir())
    } else {
        b.tempdir()
    };
    dir.context("cannot create a private folder for the replay")
}

/// A new file only the user can read (0600): a copy of a transcript.
pub(super) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    crate::platform::private_options(
        std::fs::OpenOptions::new().write(true).create_new(true),
        Default::default(),
    )
    .open(path)
}

impl Stage {
    pub(super) fn new(dir: &Path, host: Host, head: &Head, opts: &Options) -> Result<Stage> {
        let real = interband::settings::ProcessEnv;
        let root = dir.join("root");
        let home = dir.join("home");
        std::fs::create_dir_all(&home)?;
        let session = head
            .session
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "replay".to_owned());
        let project = match (&head.cwd, opts.defaults) {
            (Some(cwd), false) => cwd.clone(),
            // With the defaults, no project's files: a private, empty project.
            _ => dir.join("project"),
        };
        std::fs::create_dir_all(dir.join("project"))?;
        // The copy is named as the host names its transcripts, where it keeps them.
        let safe = interband::paths::safe_key(&session);
        let profile = host.profile();
        let folder = home.join(profile.settings_file.split('/').next().unwrap_or(""));
        let copy_path = (profile.transcript_at)(&folder, &project, &safe);
        std::fs::create_dir_all(copy_path.parent().expect("has a folder"))?;
        let copy = std::io::BufWriter::with_capacity(
            1 << 20,
            private_file(&copy_path)
                .with_context(|| format!("cannot write {}", copy_path.display()))?,
        );
        let mut vars: HashMap<String, String> = std::env::vars()
            .filter(|(k, _)| !(opts.defaults && k.starts_with("INTERBAND_")))
            .collect();
        for k in [
            "INTERBAND_ROOT",
            "INTERBAND_LOG",
            "TMUX_PANE",
            "TMUX",
            "CLAUDE_PROJECT_DIR",
            "ANTHROPIC_MODEL",
        ] {
            vars.remove(k);
        }
        // How the replayed session was started is not this process's start:
        // no `claude` process is looked for.
        vars.insert("CLAUDE_PID".into(), String::new());
        let set = |vars: &mut HashMap<String, String>, k: &str, v: &Path| {
            vars.insert(k.to_owned(), v.to_string_lossy().into_owned());
        };
        set(&mut vars, "INTERBAND_ROOT", &root);
        set(&mut vars, "HOME", &home);
        // Windows' home (interband::paths::home).
        set(&mut vars, "USERPROFILE", &home);
        // The user's settings and trusted files, where they are for the user.
        let (config, trust) = if opts.defaults {
            (dir.join("none.toml"), dir.join("none.json"))
        } else {
            (
                interband::settings::user_file(&real).unwrap_or_else(|| dir.join("none.toml")),
                interband::trust::store_path(&real).unwrap_or_else(|| dir.join("none.json")),
            )
        };
        set(&mut vars, "INTERBAND_CONFIG", &config);
        set(&mut vars, "INTERBAND_TRUST_FILE", &trust);
        // Hosts' own settings, where the user keeps them.
        if let Some(real_home) = interband::paths::home(&interband::settings::ProcessEnv) {
            if !vars.contains_key("CODEX_HOME") {
                set(&mut vars, "CODEX_HOME", &real_home.join(".codex"));
            }
            for f in ["settings.json", "trustedFolders.json"] {
                if let Ok(bytes) =
                    interband::fsio::read_regular(&real_home.join(".gemini").join(f), 1 << 20)
                {
                    std::fs::create_dir_all(home.join(".gemini"))?;
                    std::fs::write(home.join(".gemini").join(f), bytes)?;
                }
            }
        }
        let settings =
            interband_consumers::hooks::AllSettings::load(Some(&project), &Vars(vars.clone()));
        let strategy = format!("{:?}", settings.compact.value.strategy).to_lowercase();
        if strategy != "off" {
            // Never typed into a terminal nor run: the trigger advises.
            vars.insert("INTERBAND_COMPACT_STRATEGY".into(), "advise".into());
        }
        if let Some(w) = opts.window {
            vars.insert("INTERBAND_INTERPULSE_WINDOW".into(), w.to_string());
        }
        // Every message the hooks publish is told to the replay as written.
        let published = std::sync::Arc::<std::sync::Mutex<Vec<interband::Message>>>::default();
        let told = published.clone();
        let bus = Bus::new(&root).with_tap(move |m| {
            told.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(m.clone());
        });
        Ok(Stage {
            host,
            bus,
            env: Vars(vars),
            home,
            session,
            cwd: project,
            copy_path,
            copy,
            copied: 0,
            held: Vec::new(),
            freed_to: 0,
            keep_copy: std::env::var_os("INTERBAND_REPLAY_KEEP_COPY").is_some_and(|v| v == "1"),
            strategy,
            problems: RefCell::new(Vec::new()),
            published,
        })
    }

    /// One transcript line: what happens before it is written, the line, what after.
    pub(super) fn line(
        &mut self,
        p: &mut Play,
        bytes: &[u8],
        seen: Seen,
        offset: u64,
    ) -> Result<()> {
        if let Some(ts) = seen.timestamp.as_deref().and_then(parse_time) {
            p.now = ts;
            p.first_ts = Some(p.first_ts.map_or(ts, |f| f.min(ts)));
            p.last_ts = Some(p.last_ts.map_or(ts, |l| l.max(ts)));
        }
        let summary_next = seen
            .happenings
            .iter()
            .any(|h| matches!(h, Happening::CompactionSummary));
        if p.awaiting_start && !summary_next {
            self.start_after_compaction(p)?;
        }
        // Before the line.
        for h in &seen.happenings {
            match h {
                Happening::TurnEnded => self.end_turn(p)?,
                Happening::Compaction { trigger, .. } if p.answered => {
                    self.end_calls(p)?;
                    let event = self.host.profile().pre_compaction;
                    let trigger = trigger.clone().unwrap_or_else(|| "auto".into());
                    self.event(p, event, serde_json::json!({"trigger": trigger}))?;
                }
                _ => {}
            }
        }
        // A response that calls tools, and what follows it, wait for those
        // calls' hooks where the host writes them after.
        let calls = seen
            .happenings
            .iter()
            .any(|h| matches!(h, Happening::ToolCall { .. }));
        if self.host.profile().writes_calls_after_their_hooks
            && (calls || !self.held.is_empty())
            && self.held.len() < MAX_HELD
        {
            self.held.extend_from_slice(bytes);
            if !bytes.ends_with(b"\n") {
                self.held.push(b'\n');
            }
        } else {
            self.write_held()?;
            self.append(bytes)?;
            if !bytes.ends_with(b"\n") {
                self.append(b"\n")?;
            }
        }
        // The line's own figure.
        if let Some(fact) = seen.fact {
            let before = p.reading.clone();
            use interband_hosts::usage::Fact;
            let usage = matches!(fact, Fact::Usage { .. });
            let compaction = matches!(fact, Fact::Compaction { .. });
            let estimate = matches!(fact, Fact::Estimate { .. });
            p.reading.apply(fact, offset);
            if usage {
                p.out.summary.usage_lines += 1;
            }
            if (usage || compaction || estimate) && p.reading != before {
                self.point(p, compaction, &seen.happenings);
            }
        }
        // With the line.
        for h in seen.happenings {
            match h {
                Happening::Activity => {
                    p.turn_open = true;
                    p.answered = true;
                }
                Happening::Prompt => {
                    p.stop_blocked = false;
                    if let Some(event) = self.host.profile().turn_start {
                        self.event(p, event, serde_json::json!({"prompt": ""}))?;
                    }
                }
                Happening::EndsTurn => self.end_turn(p)?,
                Happening::ToolCall {
                    id,
                    name,
                    input,
                    subagent,
                } => {
                    // A host writes a call's record again as it goes on: once per id.
                    if id.is_some() && p.pending.iter().any(|c| c.id == id) {
                        continue;
                    }
                    p.pending.push_back(Pending {
                        id,
                        name,
                        input,
                        subagent,
                    });
                    if p.pending.len() > MAX_PENDING
                        && let Some(c) = p.pending.pop_front()
                    {
                        self.tool_event(p, c, None)?;
                    }
                }
                Happening::ToolResult { id, response, .. } => {
                    if let Some(i) = p.pending.iter().position(|c| c.id.as_deref() == Some(&id)) {
                        let c = p.pending.remove(i).expect("found");
                        self.tool_event(p, c, Some(response))?;
                    }
                }
                Happening::Compaction {
                    trigger,
                    pre_tokens,
                    post_tokens,
                } if p.answered => {
                    p.out.summary.compactions += 1;
                    self.record(
                        p,
                        What::Compaction {
                            trigger,
                            pre_tokens,
                            post_tokens,
                        },
                    );
                    if self.host.profile().start_after_compaction {
                        p.awaiting_start = true;
                    }
                }
                Happening::CompactionSummary if p.awaiting_start => {
                    self.start_after_compaction(p)?;
                }
                _ => {}
            }
        }
        // Every call of the held response had its hook: the host writes it.
        if p.pending.is_empty() {
            self.write_held()?;
        }
        Ok(())
    }

    /// Writes the lines held back (see [`Stage::held`]) to the copy.
    pub(super) fn write_held(&mut self) -> Result<()> {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.append(&held)?;
            self.held = held;
            self.held.clear();
        }
        Ok(())
    }

    /// Adds `bytes` to the copy of the transcript the hooks read.
    pub(super) fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.copy.write_all(bytes)?;
        self.copied += bytes.len() as u64;
        Ok(())
    }

    /// Gives back the part of the copy no hook reads: after the head every
    /// reader may read from the start (a note's head window) and before the
    /// furthest any reader reaches back from the end (the tail scan, a note's
    /// tail window). Its length stays. In `/dev/shm` the copy is memory, so a
    /// replay holds a few megabytes of it whatever the transcript's size.
    pub(super) fn free_behind(&mut self) {
        let limits = interband_consumers::digest::Limits::default();
        let back = interband_hosts::tail::DEFAULT_SCAN_CAP.max(limits.tail_cap) + FREE_MARGIN;
        let start = self
            .freed_to
            .max((limits.head_cap + FREE_MARGIN).div_ceil(FREE_STEP) * FREE_STEP);
        let end = self.copied.saturating_sub(back) / FREE_STEP * FREE_STEP;
        if self.keep_copy || end <= start {
            return;
        }
        punch_hole(self.copy.get_ref(), start, end - start);
        self.freed_to = end;
    }

    /// The calls still waiting for a result get none (their turn is over).
    pub(super) fn end_calls(&mut self, p: &mut Play) -> Result<()> {
        while let Some(c) = p.pending.pop_front() {
            self.tool_event(p, c, None)?;
        }
        Ok(())
    }

    /// The end of the main thread's turn, once.
    pub(super) fn end_turn(&mut self, p: &mut Play) -> Result<()> {
        self.end_calls(p)?;
        if !p.turn_open {
            return Ok(());
        }
        p.turn_open = false;
        p.out.summary.turns += 1;
        let event = self.host.profile().end_of_turn;
        let out = self.event(
            p,
            event,
            serde_json::json!({"stop_hook_active": p.stop_blocked}),
        )?;
        let blocked = out
            .as_deref()
            .and_then(|o| serde_json::from_str::<Value>(o).ok())
            .is_some_and(|v| v["decision"] == "block");
        if blocked {
            p.out.summary.trigger_firings += 1;
            let strategy = self.strategy.clone();
            self.record(p, What::CompactTrigger { strategy });
        }
        p.stop_blocked = blocked;
        Ok(())
    }

    pub(super) fn start_after_compaction(&mut self, p: &mut Play) -> Result<()> {
        p.awaiting_start = false;
        let event = self.host.profile().context_start;
        self.event(p, event, serde_json::json!({"source": "compact"}))?;
        Ok(())
    }

    /// A call's tool event.
    pub(super) fn tool_event(
        &mut self,
        p: &mut Play,
        c: Pending,
        response: Option<Box<RawValue>>,
    ) -> Result<()> {
        let response =
            response.unwrap_or_else(|| RawValue::from_string("null".into()).expect("JSON"));
        p.out.summary.calls += 1;
        p.out.summary.subagent_calls += u64::from(c.subagent);
        p.out.summary.tool_output_bytes += match response.get().as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(response.get()).map_or(0, |s| s.len()),
            Some(b'n') => 0,
            _ => response.get().len(),
        } as u64;
        let mut extra = serde_json::json!({"tool_name": c.name, "tool_use_id": c.id});
        if c.subagent {
            extra["agent_id"] = Value::from("replay-subagent");
        }
        let event = self.host.profile().tool_events[0];
        let input = format!(
            r#"{{"tool_input":{},"tool_response":{},{}"#,
            c.input.get(),
            response.get(),
            &self.input(p, event, extra)[1..]
        );
        let main = !c.subagent;
        self.dispatch(p, input.as_bytes())?;
        if main {
            p.out.summary.calls_at_level.add(p.level);
        }
        Ok(())
    }

    /// The JSON of an event's input (without the tool's input and response).
    pub(super) fn input(&self, p: &Play, event: &str, extra: Value) -> String {
        let mut v = serde_json::json!({
            "session_id": self.session,
            "transcript_path": self.copy_path,
            "cwd": self.cwd,
            "hook_event_name": event,
        });
        if self.host == Host::Gemini {
            v["timestamp"] = format_time(p.now).map_or(Value::Null, Value::from);
        }
        if self.host == Host::Codex {
            v["turn_id"] = Value::from("replay");
        }
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in e {
                o.insert(k.clone(), val.clone());
            }
        }
        v.to_string()
    }

    /// A non-tool event.
    pub(super) fn event(
        &mut self,
        p: &mut Play,
        event: &str,
        extra: Value,
    ) -> Result<Option<String>> {
        // Any event but a tool's comes once the host has written all it read.
        self.write_held()?;
        let input = self.input(p, event, extra);
        self.dispatch(p, input.as_bytes())
    }

    /// Runs one event through the hooks' code, and records what it did.
    pub(super) fn dispatch(&mut self, p: &mut Play, input: &[u8]) -> Result<Option<String>> {
        self.copy.flush()?;
        self.free_behind();
        let log = |what: &str| {
            let mut problems = self.problems.borrow_mut();
            if problems.len() < 100 {
                problems.push(what.to_owned());
            }
        };
        let out = crate::dispatch::dispatch(
            &crate::dispatch::Outside {
                bus: &self.bus,
                env: &self.env,
                host: Some(self.host),
                home: Some(self.home.clone()),
                now: p.now,
                log: &log,
                log_once: &log,
            },
            input,
        );
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                log(&format!("{e:#}"));
                None
            }
        };
        self.observe(p, out.as_deref());
        Ok(out)
    }

    /// The latest message of `P`'s channel for the session that the last
    /// event published, if any.
    pub(super) fn latest<P: interband::payloads::Payload>(
        &self,
        published: &[interband::Message],
    ) -> Option<interband::Envelope<P>> {
        let key = interband::paths::safe_key(&self.session);
        let m = published.iter().rev().find(|m| {
            m.address.as_ref().is_some_and(|a| {
                a.namespace == P::NAMESPACE && a.channel == P::CHANNEL && a.key == key
            })
        })?;
        interband::decode(m.clone()).ok()
    }

    /// What the last event did: its output, and what it published on the
    /// private bus (told by the bus as it was written).
    pub(super) fn observe(&mut self, p: &mut Play, out: Option<&str>) {
        let published =
            std::mem::take(&mut *self.published.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(e) = self.latest::<Pressure>(&published) {
            let level = e.payload.level;
            p.pressure = Some(e.payload);
            if level != p.level {
                let from = p.level;
                p.level = level;
                self.record(p, What::LevelChange { from, to: level });
            }
        }
        let said = out
            .and_then(|o| serde_json::from_str::<Value>(o).ok())
            .and_then(|v| {
                v["hookSpecificOutput"]["additionalContext"]
                    .as_str()
                    .map(str::to_owned)
            });
        for para in said.as_deref().unwrap_or("").split("\n\n") {
            if para.starts_with("Context: ") {
                // Told with both windows when the window is a guess: at the
                // level the smaller one would mean.
                let level = p
                    .pressure
                    .as_ref()
                    .and_then(|pr| pr.level_if_smaller)
                    .unwrap_or(Level::Yellow);
                p.out.summary.warnings.add(level);
                self.record(
                    p,
                    What::Warning {
                        level,
                        message: para.to_owned(),
                    },
                );
            } else if let Some(rest) = para.strip_prefix("Context ") {
                let level = ["GREEN", "YELLOW", "ORANGE", "RED"]
                    .iter()
                    .position(|l| rest.starts_with(l))
                    .map_or(Level::Green, |i| {
                        [Level::Green, Level::Yellow, Level::Orange, Level::Red][i]
                    });
                p.out.summary.warnings.add(level);
                self.record(
                    p,
                    What::Warning {
                        level,
                        message: para.to_owned(),
                    },
                );
            } else if para.starts_with("Project directives") {
                self.record(p, What::Directives);
            } else if para.starts_with("interband could not") {
                self.record(
                    p,
                    What::Notice {
                        message: para.to_owned(),
                    },
                );
            }
        }
        let checkpoint = self
            .latest::<Checkpoint>(&published)
            .filter(|e| e.seq > p.checkpoint_seq);
        if let Some(e) = checkpoint {
            p.checkpoint_seq = e.seq;
            p.out.summary.checkpoints += 1;
            let red = e.payload.trigger == "red_pressure";
            self.record(
                p,
                What::Checkpoint {
                    trigger: e.payload.trigger,
                },
            );
            if red {
                p.out.summary.checkpoint_files += 1;
                self.record(p, What::CheckpointFile);
            }
        }
        let note = self
            .latest::<MemoryNote>(&published)
            .filter(|e| e.seq > p.note_seq);
        if let Some(e) = note {
            p.note_seq = e.seq;
            p.out.summary.notes += 1;
            self.record(
                p,
                What::Note {
                    trigger: e.payload.trigger,
                },
            );
        }
        if let Some(text) = said
            .as_deref()
            .or(out)
            .filter(|t| t.contains("<interband-memory-note"))
        {
            p.out.summary.notes_back += 1;
            self.record(p, What::NoteBack { bytes: text.len() });
        }
        // The compaction's record, once settled, and again when it learns
        // more (the summary read at the turn's end).
        let record = self
            .latest::<CompactionRecord>(&published)
            .filter(|e| e.seq > p.record_seq && e.payload.settled);
        if let Some(e) = record {
            p.record_seq = e.seq;
            let line = record::line(&e.payload);
            if line != p.record_line {
                let r = &e.payload;
                let lost = r.count(Kept::Lost);
                if r.note == p.record_note {
                    // The same compaction, known better: its count replaces the last.
                    p.out.summary.lost_facts -= p.record_lost;
                } else {
                    p.out.summary.records += 1;
                    p.record_note.clone_from(&r.note);
                }
                p.out.summary.lost_facts += lost as u64;
                p.record_lost = lost as u64;
                p.record_line.clone_from(&line);
                self.record(
                    p,
                    What::Record {
                        line,
                        facts: r.facts.len(),
                        summary: r.count(Kept::Summary),
                        note: r.count(Kept::Note),
                        lost,
                        summary_read: r.summary_read,
                    },
                );
            }
        }
    }

    pub(super) fn record(&self, p: &mut Play, what: What) {
        let f = p.pressure.as_ref();
        let used = f.and_then(|f| f.used_tokens);
        let window = f.and_then(|f| f.window);
        p.out.events.push(Event {
            time: format_time(p.now),
            ts: p.now,
            call: p.out.summary.calls,
            used_tokens: used,
            window,
            used_pct: used.zip(window).map(|(u, w)| pct(u, w)),
            usable_pct: f.and_then(|f| f.context_usable),
            level: p.level,
            what,
        });
    }

    /// The window and compaction point for a figure, by the host's rules.
    pub(super) fn limits(&self, p: &Play, used: u64) -> (u64, u64, Option<WindowSource>) {
        // The hooks' window, unless the figure has passed what it assumed
        // (a guess's smaller window: the figure settles it now).
        if let Some(pr) = &p.pressure
            && let (Some(w), Some(c)) = (pr.window, pr.compact_at)
            && used <= w
            && pr.window_other.is_none_or(|o| used <= o)
        {
            let source = pr
                .window_source
                .as_ref()
                .and_then(|s| serde_json::from_value(serde_json::Value::String(s.clone())).ok());
            return (w, c, source);
        }
        let cfg = interpulse::config::Config::load(Some(&self.cwd), &self.env).value;
        let l = self.host.limits(
            &Known {
                transcript: p.reading.usage.as_ref().and_then(|u| u.window),
                configured: cfg.window,
                model: p.reading.usage.as_ref().and_then(|u| u.model.as_deref()),
                version: p.reading.usage.as_ref().and_then(|u| u.version.as_deref()),
                used,
                project: Some(&self.cwd),
                ..Default::default()
            },
            &self.env,
        );
        (l.window, l.compact_at, Some(l.source))
    }

    /// A point of the curve: the context as the transcript shows it now, at
    /// the calls made so far (this line's own included).
    pub(super) fn point(&self, p: &mut Play, after_compaction: bool, line: &[Happening]) {
        let started = p.pending.len() as u64
            + line
                .iter()
                .filter(|h| matches!(h, Happening::ToolCall { .. }))
                .count() as u64;
        let used = p.reading.used();
        let (window, autocompact_at, source) = self.limits(p, used.unwrap_or(0));
        let s = &mut p.out.summary;
        if let Some(u) = used
            && p.reading
                .usage
                .as_ref()
                .is_some_and(|x| x.kind == UsageKind::Assistant)
        {
            s.max_used_tokens = Some(s.max_used_tokens.unwrap_or(0).max(u));
            s.max_used_pct = Some(s.max_used_pct.unwrap_or(0.0).max(pct(u, window)));
        }
        // The session's window as last known: one the session settled (from
        // its statusline, its transcript, its own compaction) replaces a
        // guess, and a later one an earlier (a model switch).
        let guess = |w: Option<WindowSource>| w.is_none_or(|w| w == WindowSource::Guess);
        if !guess(source) || guess(s.window_source) {
            s.window = window;
            s.autocompact_at = autocompact_at;
            s.window_source = source;
        }
        if p.out.series.len() >= MAX_POINTS {
            // Flat in memory: every other point goes (the plot thins anyway).
            let mut i = 0;
            p.out.series.retain(|_| {
                i += 1;
                i % 2 == 0
            });
        }
        p.out.series.push(Point {
            call: s.calls + started,
            ts: p.now,
            after_compaction,
            used_tokens: used,
            window,
            autocompact_at,
            level: p.level,
        });
    }

    pub(super) fn finish(&mut self, p: &mut Play) -> Result<()> {
        if p.awaiting_start {
            self.start_after_compaction(p)?;
        }
        // A turn the file ends in, its last answer not waiting on a tool, ended.
        if p.pending.is_empty() {
            self.end_turn(p)?;
        } else {
            self.end_calls(p)?;
        }
        let (window, autocompact_at, source) = self.limits(p, 0);
        let s = &mut p.out.summary;
        s.final_level = p.level;
        s.first_time = p.first_ts.and_then(format_time);
        s.last_time = p.last_ts.and_then(format_time);
        s.found = s.calls > 0 || s.usage_lines > 0 || s.compactions > 0;
        if s.window == 0 {
            (s.window, s.autocompact_at, s.window_source) = (window, autocompact_at, source);
        }
        s.hook_problems = self.problems.borrow().clone();
        p.out.thresholds = interpulse::config::Config::load(Some(&self.cwd), &self.env)
            .value
            .thresholds;
        Ok(())
    }
}

pub(super) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 100.0).clamp(0.0, 100.0)
}
