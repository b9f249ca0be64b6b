//! Folding what a window's lines say (each host's `digest::Item`s) into a digest.

use super::*;

/// The most task-list changes kept (the older half dropped past it).
const MAX_TASK_EVENTS: usize = 4096;

/// What one window yields, line by line.
pub(crate) struct Scan<'a> {
    pub(crate) limits: &'a Limits,
    /// The host's reader of a line.
    pub(crate) reader: Reader,
    /// Its items, one line's at a time (kept to reuse the room).
    pub(crate) items: Vec<Item>,
    /// Whether the host writes a record again as it grows.
    pub(crate) rewrites: bool,
    pub(crate) first_prompt: Option<String>,
    pub(crate) latest_prompt: Option<String>,
    pub(crate) last_prompt_record: Option<String>,
    /// Prompts since the last compaction summary this scan saw (all of
    /// them when it saw none), chronological.
    pub(crate) prompts: Vec<String>,
    /// Whether this scan saw a compaction summary.
    pub(crate) compacted: bool,
    pub(crate) todos: Option<Vec<Todo>>,
    /// Changes to the task list kept one task at a time, chronological.
    pub(crate) task_events: Vec<interband_hosts::digest::TaskEvent>,
    /// Changed paths, chronological, repeats included.
    pub(crate) files: Vec<String>,
    /// `Bash` calls, chronological: tool_use id and command.
    pub(crate) commands: Vec<(Option<String>, String)>,
    /// Tool name by tool_use id.
    pub(crate) tool_names: HashMap<String, String>,
    /// tool_use ids whose result is an error.
    pub(crate) failed_ids: HashSet<String>,
    /// Error results, chronological: tool_use id and message.
    pub(crate) errors: Vec<(Option<String>, String)>,
    pub(crate) last_assistant: Option<String>,
    pub(crate) compaction_summary: Option<String>,
    pub(crate) cwd: Option<String>,
    pub(crate) git_branch: Option<String>,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(limits: &'a Limits, host: Host) -> Self {
        Scan {
            limits,
            reader: host.profile().digest,
            items: Vec::new(),
            rewrites: host.profile().rewrites_lines,
            first_prompt: None,
            latest_prompt: None,
            last_prompt_record: None,
            prompts: Vec::new(),
            compacted: false,
            todos: None,
            task_events: Vec::new(),
            files: Vec::new(),
            commands: Vec::new(),
            tool_names: HashMap::new(),
            failed_ids: HashSet::new(),
            errors: Vec::new(),
            last_assistant: None,
            compaction_summary: None,
            cwd: None,
            git_branch: None,
        }
    }

    /// Takes in one line, through its host's reader.
    pub(crate) fn line(&mut self, raw: &[u8]) {
        let mut items = std::mem::take(&mut self.items);
        (self.reader)(raw, &mut items);
        for item in items.drain(..) {
            self.take(item);
        }
        self.items = items;
    }

    /// Takes in one thing a line said.
    pub(crate) fn take(&mut self, item: Item) {
        match item {
            Item::Cwd(cwd) => self.cwd = Some(cwd),
            Item::Branch(branch) => self.git_branch = Some(branch),
            Item::Prompt(text) => self.prompt(&text),
            Item::PromptRecord(text) => self.last_prompt_record = Some(self.cut(&text)),
            Item::Reply(text) => self.last_assistant = Some(self.cut(&text)),
            Item::Summary(text) => {
                self.compaction_summary = Some(text);
                self.compacted();
            }
            Item::Task(event) => {
                // (Bounded as it goes: a list is rebuilt from the latest.)
                if self.task_events.len() >= MAX_TASK_EVENTS {
                    self.task_events.drain(..MAX_TASK_EVENTS / 2);
                }
                self.task_events.push(event);
            }
            Item::Failed { id, message } => {
                if let Some(id) = &id {
                    self.failed_ids.insert(id.clone());
                }
                let message = self.cut(&message);
                self.errors.push((id, message));
            }
            Item::Call(call) => {
                // A call written again counts once (where the host writes
                // records again: another host's repeated id is its own).
                if let Some(id) = &call.id {
                    if self.rewrites && self.tool_names.contains_key(id) {
                        return;
                    }
                    self.tool_names.insert(id.clone(), call.name);
                    if call.failed {
                        self.failed_ids.insert(id.clone());
                    }
                }
                if let Some(command) = call.command {
                    let command = self.cut(&command);
                    self.commands.push((call.id, command));
                }
                self.files.extend(call.files);
                if let Some(todos) = call.todos {
                    let todos = todos
                        .into_iter()
                        .map(|t| Todo {
                            content: self.cut(&t.content),
                            status: t.status,
                        })
                        .collect();
                    self.todos = Some(todos);
                }
            }
        }
    }

    /// This scan followed by `later`'s, of the lines right after: what one
    /// scan of both stretches in order gives (a later value wins, lists run
    /// on). Not for Gemini, whose reader looks back at what it has seen.
    pub(crate) fn then(mut self, later: Scan<'a>) -> Scan<'a> {
        // Every field named: a new one has to say how it joins.
        let Scan {
            limits: _,
            reader: _,
            items: _,
            rewrites: _,
            first_prompt,
            latest_prompt,
            last_prompt_record,
            prompts,
            compacted,
            todos,
            task_events,
            files,
            commands,
            tool_names,
            failed_ids,
            errors,
            last_assistant,
            compaction_summary,
            cwd,
            git_branch,
        } = later;
        self.first_prompt = self.first_prompt.or(first_prompt);
        self.latest_prompt = latest_prompt.or(self.latest_prompt);
        self.last_prompt_record = last_prompt_record.or(self.last_prompt_record);
        if compacted {
            self.prompts = prompts;
            self.compacted = true;
        } else {
            self.prompts.extend(prompts);
        }
        self.todos = todos.or(self.todos);
        self.task_events.extend(task_events);
        self.files.extend(files);
        self.commands.extend(commands);
        self.tool_names.extend(tool_names);
        self.failed_ids.extend(failed_ids);
        self.errors.extend(errors);
        self.last_assistant = last_assistant.or(self.last_assistant);
        self.compaction_summary = compaction_summary.or(self.compaction_summary);
        self.cwd = cwd.or(self.cwd);
        self.git_branch = git_branch.or(self.git_branch);
        self
    }

    /// A real user prompt.
    pub(crate) fn prompt(&mut self, text: &str) {
        let prompt = self.cut(text);
        self.first_prompt.get_or_insert_with(|| prompt.clone());
        // (Bounded as it goes: only the last ones are kept.)
        if self.prompts.len() >= self.limits.prompts.max(1) * 2 {
            self.prompts.drain(..self.limits.prompts);
        }
        self.prompts.push(prompt.clone());
        self.latest_prompt = Some(prompt);
    }

    /// A compaction summary: the prompts before it are in it.
    pub(crate) fn compacted(&mut self) {
        self.prompts.clear();
        self.compacted = true;
    }

    /// `text` trimmed and truncated to the text limit.
    pub(crate) fn cut(&self, text: &str) -> String {
        truncate(text.trim(), self.limits.text)
    }

    /// The digest, with `first_prompt` from wherever the caller found it.
    pub(crate) fn finish(self, first_prompt: Option<String>) -> Digest {
        let limits = self.limits;

        let mut seen = HashSet::new();
        let files_changed = self
            .files
            .into_iter()
            .rev()
            .filter(|p| seen.insert(p.clone()))
            .take(limits.files)
            .collect();

        // Each command line once, where it last ran, with its count.
        let failed_ids = &self.failed_ids;
        let mut runs: HashMap<&str, (usize, usize, bool)> = HashMap::new();
        for (i, (id, command)) in self.commands.iter().enumerate() {
            let failed = id.as_ref().is_some_and(|id| failed_ids.contains(id));
            let e = runs.entry(command.as_str()).or_insert((i, 0, failed));
            *e = (i, e.1 + 1, failed);
        }
        let mut latest: Vec<(usize, usize, bool, &str)> = runs
            .into_iter()
            .map(|(c, (at, n, failed))| (at, n, failed, c))
            .collect();
        latest.sort_unstable();
        let skip = latest.len().saturating_sub(limits.commands);
        let commands = latest
            .into_iter()
            .skip(skip)
            .map(|(_, runs, failed, command)| Command {
                command: command.to_owned(),
                failed,
                runs,
            })
            .collect();

        let skip = self.errors.len().saturating_sub(limits.errors);
        let tool_names = &self.tool_names;
        let tool_errors = self
            .errors
            .into_iter()
            .skip(skip)
            .map(|(id, message)| ToolError {
                tool: id
                    .and_then(|id| tool_names.get(&id).cloned())
                    .unwrap_or_else(|| "?".to_owned()),
                message,
            })
            .collect();

        let skip = self.prompts.len().saturating_sub(limits.prompts);
        let prompts = self.prompts.into_iter().skip(skip).collect();

        Digest {
            first_prompt,
            prompts,
            latest_prompt: self.latest_prompt.or(self.last_prompt_record),
            // The list the todo tool set, then the tasks the task tools keep.
            todos: self
                .todos
                .unwrap_or_default()
                .into_iter()
                .chain(
                    interband_hosts::digest::tasks(&self.task_events)
                        .into_iter()
                        .map(|t| Todo {
                            content: truncate(t.subject.trim(), limits.text),
                            status: t.status,
                        }),
                )
                .collect(),
            files_changed,
            commands,
            tool_errors,
            last_assistant: self.last_assistant,
            compaction_summary: self.compaction_summary,
            cwd: self.cwd,
            git_branch: self.git_branch,
        }
    }
}
