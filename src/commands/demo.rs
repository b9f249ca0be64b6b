//! `interband demo`: a realistic coding session played through the whole
//! loop, on built-in defaults, in a private temporary root and home.
//!
//! The demo writes a transcript in the real client's shapes (prompts, reads,
//! edits, shell runs, a todo list, a subagent, usage rising to the compaction
//! point) and invokes this very binary exactly as Claude Code would: `hook`
//! with each event's JSON on stdin, and `statusline` with the statusLine
//! input. It prints what each step showed and said. Nothing is left behind.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};

use interband_consumers::intermem;
use interpulse::synthetic::{self, Writer};

use crate::exit;

/// The demo's session is Claude Code's: its events are that profile's.
const CLAUDE: &interband_hosts::Profile = &interband_hosts::CLAUDE;

const SESSION: &str = "5e55a0de-d3m0-4c1d-9a7f-000000000001";
const WINDOW: u64 = 200_000;
const TASK: &str = "Add a retry with backoff to the uploader, with tests, and log each retry.";

/// `interband demo`
#[derive(Args)]
pub struct Demo {
    /// Keep the private folder (its path is printed) instead of removing it.
    #[arg(long)]
    keep: bool,
    /// Print only what the hooks did, as JSON (the calls numbered as
    /// `interband replay` numbers them, subagents' included).
    #[arg(long)]
    json: bool,
}

/// What the hooks did during the demo, read from their output and the bus.
#[derive(Debug, Default, serde::Serialize)]
struct Record {
    /// Each warning: the call it came with and its level.
    warnings: Vec<(u64, String)>,
    /// Each note written: the call it came with (or the last call before it) and its trigger.
    notes: Vec<(u64, String)>,
    /// The calls at which the project's directives came back.
    directives: Vec<u64>,
    /// Times the compaction trigger fired.
    trigger_firings: u64,
    /// Times the latest note came back.
    notes_back: u64,
    /// Tool calls, subagents' included.
    calls: u64,
    /// The transcript the demo wrote, when its folder is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    transcript: Option<PathBuf>,
}

/// Terminal styling: colour on a terminal unless `NO_COLOR` is set.
struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    fn level(&self, t: &str) -> String {
        let code = if t.contains("RED") {
            "1;31"
        } else if t.contains("ORANGE") {
            "38;5;208"
        } else if t.contains("YELLOW") {
            "33"
        } else {
            "32"
        };
        self.paint(code, t)
    }
}

/// The private world the demo runs in, and the transcript it writes.
struct World {
    dir: tempfile::TempDir,
    /// Set by Ctrl-C, a closed terminal or a kill: the demo ends at its
    /// next step, and its private folder goes with it.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    bin: PathBuf,
    t: Writer,
    project: PathBuf,
    used: u64,
    record: Record,
    note_seq: u64,
}

impl World {
    fn new() -> Result<Self> {
        // Watched for before the folder exists: a signal never finds it unwatched.
        let stop = super::stop_flag("the demo")?;
        let dir = tempfile::Builder::new()
            .prefix("interband-demo.")
            .tempdir()?;
        let project = dir.path().join("uploader");
        std::fs::create_dir_all(project.join(".interband"))?;
        std::fs::create_dir_all(dir.path().join("home"))?;
        std::fs::write(
            project.join(".interband/directives.md"),
            "- Run `cargo test` before every commit.\n- Never push to main without review.\n",
        )?;
        let transcript = dir
            .path()
            .join("home/.claude/projects/-uploader")
            .join(format!("{SESSION}.jsonl"));
        std::fs::create_dir_all(transcript.parent().expect("has a folder"))?;
        Ok(World {
            stop,
            bin: std::env::current_exe().context("cannot find this binary")?,
            t: Writer::new(transcript, SESSION, &project).branch("feature/retry"),
            project,
            dir,
            used: 0,
            record: Record::default(),
            note_seq: 0,
        })
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Runs this binary as the host would, with `stdin`; returns stdout.
    fn run(&self, args: &[&str], stdin: &Value, extra_env: &[(&str, &str)]) -> Result<String> {
        anyhow::ensure!(
            !self.stop.load(std::sync::atomic::Ordering::Relaxed),
            "stopped: nothing of the demo is left behind"
        );
        let mut cmd = Command::new(&self.bin);
        // Built-in defaults: none of the caller's interband or autocompact settings.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("INTERBAND_")
                || k.starts_with("CLAUDE_")
                || k == "DISABLE_AUTO_COMPACT"
                || k == "TMUX_PANE"
            {
                cmd.env_remove(&*k);
            }
        }
        cmd.args(args)
            .env("INTERBAND_ROOT", self.root())
            .env("HOME", self.dir.path().join("home"))
            .env("USERPROFILE", self.dir.path().join("home"))
            .env("CLAUDE_PROJECT_DIR", &self.project)
            .env("NO_COLOR", "1")
            .envs(extra_env.iter().copied())
            .env_remove("INTERBAND_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = crate::platform::spawn(&mut cmd)
            .with_context(|| format!("cannot run {}", self.bin.display()))?;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(stdin.to_string().as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!("interband {} exited with {}", args.join(" "), out.status);
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    }

    /// Runs one hook event and records what it did.
    fn hook(&mut self, event: &str, extra: Value) -> Result<String> {
        let out = self.run(&["hook"], &self.input(event, extra), &[])?;
        let r = &mut self.record;
        if CLAUDE.moment(event) == interband_hosts::Moment::ToolDone {
            r.calls += 1;
        }
        let said = context_of(&out).unwrap_or_default();
        for para in said.split("\n\n") {
            if let Some(rest) = para.strip_prefix("Context ") {
                let level = rest.split([' ', ':']).next().unwrap_or("").to_lowercase();
                r.warnings.push((r.calls, level));
            } else if para.starts_with("Project directives") {
                r.directives.push(r.calls);
            }
        }
        if serde_json::from_str::<Value>(&out).is_ok_and(|v| v["decision"] == "block") {
            r.trigger_firings += 1;
        }
        if said.contains("<interband-memory-note") {
            r.notes_back += 1;
        }
        let bus = interband::Bus::new(self.root());
        if let Ok(e) = bus.read_typed::<interband::payloads::MemoryNote>(SESSION)
            && e.seq > self.note_seq
        {
            self.note_seq = e.seq;
            self.record
                .notes
                .push((self.record.calls, e.payload.trigger));
        }
        Ok(out)
    }

    fn input(&self, event: &str, extra: Value) -> Value {
        let mut v = json!({"session_id": SESSION, "transcript_path": self.t.path(), "cwd": self.project,
            "hook_event_name": event, "permission_mode": "default"});
        for (k, val) in extra.as_object().expect("an object") {
            v[k] = val.clone();
        }
        v
    }

    fn statusline(&self) -> Result<String> {
        let usage = synthetic::usage(self.used);
        let input = json!({"session_id": SESSION, "transcript_path": self.t.path(), "cwd": self.project,
            "model": {"id": synthetic::MODEL, "display_name": "Sonnet 4.6"}, "workspace": {"current_dir": self.project, "project_dir": self.project},
            "version": "2.1.332", "context_window": {"context_window_size": WINDOW, "current_usage": usage,
            "used_percentage": self.used * 100 / WINDOW, "remaining_percentage": 100 - self.used * 100 / WINDOW}});
        self.run(&["statusline"], &input, &[])
    }
}

/// The additional context in a hook's output, if any.
fn context_of(out: &str) -> Option<String> {
    let v: Value = serde_json::from_str(out).ok()?;
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_owned)
}

fn indent(text: &str, prefix: &str, max_lines: usize) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .take(max_lines)
        .map(|l| format!("{prefix}{l}"))
        .collect();
    if text.lines().count() > max_lines {
        lines.push(format!("{prefix}…"));
    }
    lines.join("\n")
}

/// One scripted tool call: what the agent does, at which context usage.
struct Step {
    used_pct: u64,
    tool: &'static str,
    input: Value,
    result: &'static str,
    error: bool,
}

fn script() -> Vec<Step> {
    let step = |used_pct, tool, input, result, error| Step {
        used_pct,
        tool,
        input,
        result,
        error,
    };
    vec![
        step(
            9,
            "Read",
            json!({"file_path": "src/uploader.rs"}),
            "pub fn upload(...) { ... }",
            false,
        ),
        step(
            14,
            "Grep",
            json!({"pattern": "fn upload", "path": "src"}),
            "src/uploader.rs:12",
            false,
        ),
        step(
            19,
            "TodoWrite",
            json!({"todos": [
                {"content": "Add retry with exponential backoff to upload()", "status": "in_progress", "activeForm": "Adding retry"},
                {"content": "Cover retries with tests", "status": "pending", "activeForm": "Writing tests"},
                {"content": "Log each retry", "status": "pending", "activeForm": "Adding logging"}]}),
            "Todos updated",
            false,
        ),
        step(
            26,
            "Edit",
            json!({"file_path": "src/uploader.rs", "old_string": "send(req)", "new_string": "retry(|| send(req))"}),
            "ok",
            false,
        ),
        step(
            31,
            "Write",
            json!({"file_path": "src/retry.rs", "content": "pub fn retry<T>(...)"}),
            "ok",
            false,
        ),
        step(
            38,
            "Agent",
            json!({"description": "Survey existing retry helpers", "prompt": "Find retry helpers in the codebase"}),
            "None found; tokio-retry is not a dependency.",
            false,
        ),
        step(
            47,
            "Bash",
            json!({"command": "cargo test -p uploader"}),
            "test retry_gives_up ... FAILED",
            true,
        ),
        step(
            56,
            "Edit",
            json!({"file_path": "src/retry.rs", "old_string": "attempts <", "new_string": "attempts <="}),
            "ok",
            false,
        ),
        step(
            61,
            "Bash",
            json!({"command": "cargo test -p uploader"}),
            "test result: ok. 14 passed",
            false,
        ),
        step(
            68,
            "Write",
            json!({"file_path": "tests/retry.rs", "content": "#[test] fn backs_off() { ... }"}),
            "ok",
            false,
        ),
        step(
            73,
            "Read",
            json!({"file_path": "src/log.rs"}),
            "pub fn info(...)",
            false,
        ),
        step(
            78,
            "Edit",
            json!({"file_path": "src/retry.rs", "old_string": "sleep(d)", "new_string": "log::info(...); sleep(d)"}),
            "ok",
            false,
        ),
        step(
            81,
            "Bash",
            json!({"command": "cargo test"}),
            "test result: ok. 15 passed",
            false,
        ),
    ]
}

impl Demo {
    pub fn run(self) -> Result<u8> {
        // Private files, whatever the umask (children inherit it too).
        crate::platform::private_umask();
        match self.play() {
            // The reader went away (`| head`): stop, and clean up on the way out.
            Err(e)
                if e.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
            {
                Ok(exit::OK)
            }
            other => other,
        }
    }

    fn play(self) -> Result<u8> {
        let st = Style {
            on: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        };
        let quiet = self.json;
        // In --json mode only the record is printed.
        macro_rules! say_or_stop {
            () => {
                if !quiet {
                    writeln!(std::io::stdout())?
                }
            };
            ($($t:tt)*) => {
                if !quiet {
                    writeln!(
                        std::io::stdout(),
                        "{}",
                        interband::text::terminal_block(&format!($($t)*))
                    )?
                }
            };
        }
        let mut w = World::new()?;
        say_or_stop!(
            "{}",
            st.bold("interband demo: one coding session through the whole loop")
        );
        say_or_stop!(
            "{}",
            st.dim(&format!(
                "private root {}; a 200k-token window; built-in defaults",
                w.dir.path().display()
            ))
        );
        say_or_stop!();

        w.t.prompt(TASK)?;
        w.hook(
            CLAUDE.context_start,
            json!({"source": "startup", "model": synthetic::MODEL}),
        )?;
        say_or_stop!("{} {TASK}", st.bold("user ›"));
        say_or_stop!();
        say_or_stop!("{}", st.dim(" call  used  statusline"));

        for s in script() {
            w.used = WINDOW * s.used_pct / 100;
            let args = interpulse_summary(&s.input);
            // As Claude Code does, the response that called the tool is
            // written to the transcript just after the tool's hook ran: the
            // hook reads the figure one response old.
            let out = w.hook(CLAUDE.tool_events[0], json!({"tool_name": s.tool, "tool_input": s.input, "tool_response": {"stdout": s.result}}))?;
            w.t.tool(s.tool, s.input.clone(), s.result, s.error, w.used, false)?;
            let line = w.statusline()?;
            say_or_stop!(
                " {:>4}  {:>3}%  {}  {}",
                w.record.calls,
                s.used_pct,
                st.level(&line),
                st.dim(&format!("{} {args}", s.tool))
            );
            if s.tool == "Agent" {
                // The subagent works in its own context: its calls never move the parent's level.
                for (tool, input) in [
                    ("Grep", json!({"pattern": "retry"})),
                    ("Read", json!({"file_path": "src/net.rs"})),
                ] {
                    w.hook(CLAUDE.tool_events[0], json!({"tool_name": tool, "tool_input": input, "agent_id": "a1b2c3", "agent_type": "general-purpose", "tool_response": {"stdout": "…"}}))?;
                    w.t.tool(tool, input.clone(), "…", false, w.used, true)?;
                }
                say_or_stop!("{}", st.dim(&format!("       (calls {} and {}: the subagent's; counted, but they do not move the parent's level)", w.record.calls - 1, w.record.calls)));
            }
            if let Some(said) = context_of(&out) {
                let first = said.lines().next().unwrap_or("");
                if first.starts_with("Project directives") {
                    say_or_stop!(
                        "{}",
                        st.dim(&format!(
                            "       → to the agent: {}",
                            first.trim_end_matches(':')
                        ))
                    );
                } else {
                    say_or_stop!("{}", st.level(&format!("       → to the agent: {first}")));
                    if let Some(saved) = said
                        .split("\n\n")
                        .find(|p| p.starts_with("interband saved a memory note"))
                    {
                        say_or_stop!("{}", st.dim(&format!("         {saved}")));
                    }
                    if said.contains("Project directives") {
                        say_or_stop!(
                            "{}",
                            st.dim("         (and the project's directives, re-injected)")
                        );
                    }
                }
            }
        }
        w.t.say("Retry, tests and logging are in; all 15 tests pass. Next I would tidy the backoff constants.", w.used)?;
        say_or_stop!();

        // The turn ends: intermem writes the notes the checkpoints asked for; the trigger advises once.
        let out = w.hook(CLAUDE.end_of_turn, json!({"stop_hook_active": false, "last_assistant_message": "Retry, tests and logging are in."}))?;
        if let Ok(block) = serde_json::from_str::<Value>(&out) {
            say_or_stop!(
                "{} {}",
                st.bold("Stop ›"),
                st.level(&format!(
                    "blocked once (RED): {}",
                    block["reason"].as_str().unwrap_or("")
                ))
            );
        }
        // Read as the hook reads it: through the bus's verified folders.
        let bus = interband::Bus::new(w.root());
        let (note, text) = intermem::latest_note(&bus, SESSION).context("no note was written")?;
        say_or_stop!("{} {}", st.bold("note ›"), note.path);
        let body = text.find("## Task").map_or(text.as_str(), |i| &text[i..]);
        say_or_stop!("{}", st.dim(&indent(body, "       ", 22)));
        say_or_stop!();

        // The user runs /compact: PreCompact, the host compacts, SessionStart(compact).
        say_or_stop!("{} /compact", st.bold("user ›"));
        let steer = w.hook(
            CLAUDE.pre_compaction,
            json!({"trigger": "manual", "custom_instructions": null}),
        )?;
        say_or_stop!(
            "{}",
            st.dim("       PreCompact: a last note, and what the host's summary must keep:")
        );
        say_or_stop!("{}", st.dim(&indent(&steer, "       ", 8)));
        w.t.compact(w.used, 9_000, "Summary:\nThe user asked for a retry with backoff in the uploader; retry.rs and tests were added; all tests pass.")?;
        w.used = 9_000;
        let out = w.hook(
            CLAUDE.context_start,
            json!({"source": "compact", "model": synthetic::MODEL}),
        )?;
        match context_of(&out) {
            Some(ctx) => {
                say_or_stop!(
                    "{} the latest note comes back into the fresh context:",
                    st.bold("SessionStart(compact) ›")
                );
                say_or_stop!("{}", st.dim(&indent(&ctx, "       ", 8)));
            }
            None => bail!("SessionStart(compact) injected nothing"),
        }
        if let Some(r) = interband_consumers::summary::record::read(&bus, SESSION) {
            say_or_stop!(
                "{} {}",
                st.bold("record ›"),
                interband_consumers::summary::record::line(&r)
            );
        }
        say_or_stop!("       statusline: {}", st.level(&w.statusline()?));
        say_or_stop!();
        let info = intermem::SessionInfo {
            session: SESSION.into(),
            cwd: Some(w.project.clone()),
            ..Default::default()
        };
        let count = intermem::open_notes(&bus, &info, false)
            .and_then(|d| d.file_names(".md"))
            .map_or(0, |names| {
                names
                    .iter()
                    .filter(|n| *n != "latest.md" && !n.starts_with("session-summary"))
                    .count()
            });
        say_or_stop!(
            "{}",
            st.bold(&format!("done: {count} notes, every warning delivered through additionalContext, the note back after the compaction."))
        );
        if self.keep {
            let transcript = w.t.path().to_path_buf();
            w.record.transcript = Some(transcript.clone());
            let kept = w.dir.keep();
            say_or_stop!(
                "kept {} (replay it: interband replay {})",
                kept.display(),
                transcript.display()
            );
        }
        if quiet {
            say_json!(serde_json::to_string_pretty(&w.record)?);
        }
        // (The folder is removed when `w` goes, unless kept.)
        Ok(exit::OK)
    }
}

fn interpulse_summary(input: &Value) -> String {
    ["file_path", "command", "pattern", "description"]
        .iter()
        .find_map(|k| input[*k].as_str())
        .map(|s| s.chars().take(48).collect())
        .unwrap_or_default()
}
