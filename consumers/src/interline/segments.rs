//! What a render reads from the bus (`Ctx`), and the segments it draws from it.

use super::*;

/// What one render produced.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The statusline (one line, no newline).
    pub line: String,
    /// Whether the context window was published this time.
    pub published: bool,
    /// Time taken, in order: `publish` (the bridge: compare and publish,
    /// when publishing is on), then each segment rendered, by name.
    pub timings: Vec<(&'static str, Duration)>,
}

/// Where the level shown came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The producer's `interpulse/pressure`, from the same figures or better ones.
    Pressure,
    /// The statusline input itself.
    Input,
}

/// The context as shown: how full, the room left, the level, and where the level came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    /// Used, percent of the whole window, from the tokens (as every other
    /// output computes it, so one figure reads the same everywhere).
    pub used_pct: f64,
    /// Tokens left before the host compacts (0 once past it).
    pub to_compact: u64,
    /// Usable context remaining (up to autocompact), percent.
    pub usable: f64,
    /// The level.
    pub level: Level,
    /// Where the level came from.
    pub basis: Basis,
    /// When the window is a guess between two: the smaller one, and the
    /// tokens used (the view above is the larger's).
    pub either: Option<(u64, u64)>,
}

/// What segments render from: the input, the settings, and the bus values
/// for the session, read lazily (once, by the first segment that needs them).
pub struct Ctx<'a> {
    bus: &'a Bus,
    input: &'a Input,
    settings: &'a Settings,
    env: &'a dyn Env,
    color: bool,
    view: OnceCell<Option<View>>,
}

impl<'a> Ctx<'a> {
    /// A context for rendering `input` against `bus`.
    pub fn new(bus: &'a Bus, input: &'a Input, settings: &'a Settings, env: &'a dyn Env) -> Self {
        Ctx {
            bus,
            input,
            settings,
            env,
            color: settings.color && env.var("NO_COLOR").is_none(),
            view: OnceCell::new(),
        }
    }

    /// The statusline input.
    pub fn input(&self) -> &Input {
        self.input
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        self.settings
    }

    /// The bus.
    pub fn bus(&self) -> &Bus {
        self.bus
    }

    /// The session, when the input names one.
    pub fn session(&self) -> Option<&str> {
        self.input.session()
    }

    /// Whether to colour (the settings allow it and `NO_COLOR` is not set).
    pub fn color(&self) -> bool {
        self.color
    }

    /// The context to show; `None` before the first response (no usage yet).
    ///
    /// The input's usage is the truth, so it decides unless the producer
    /// (`interpulse/pressure`) saw the same figures (then its level counts:
    /// its thresholds may be configured) or better ones: right after a
    /// compaction the host reports zeros while the producer read the
    /// compaction's own figure from the transcript. A level from the
    /// heuristic alone (a pressure value without figures, the legacy
    /// `intercheck/pressure`) never overrides the truth.
    pub fn view(&self) -> Option<View> {
        *self.view.get_or_init(|| self.compute_view())
    }

    /// The level shown, if any.
    pub fn level(&self) -> Option<Level> {
        self.view().map(|v| v.level)
    }

    fn compute_view(&self) -> Option<View> {
        // Right after a compaction the host reports zeros: unknown until the
        // next answer states a figure (never 0, never the summary's size).
        let own = self.input.figures(self.env)?;
        let usable = own.usable_remaining();
        let pct_of = |used: u64, window: u64| used as f64 * 100.0 / window.max(1) as f64;
        let mine = View {
            used_pct: pct_of(own.used_tokens, own.window),
            to_compact: own.autocompact_at.saturating_sub(own.used_tokens),
            usable,
            level: Thresholds::default().usable.below(usable),
            basis: Basis::Input,
            either: own.either().map(|(w, _)| (w, own.used_tokens)),
        };
        let Some(p) = self
            .session()
            .and_then(|s| read_as::<Pressure>(self.bus, PRESSURE_CHANNEL, s))
        else {
            return Some(mine);
        };
        let same =
            p.used_tokens == Some(own.used_tokens) && p.window.is_none_or(|w| w == own.window);
        Some(if same {
            View {
                usable: p.context_usable.unwrap_or(usable),
                level: p.level,
                basis: Basis::Pressure,
                ..mine
            }
        } else {
            mine
        })
    }

    /// Whether a valid message exists at `channel/<session>`.
    fn exists(&self, (namespace, channel): (&str, &str)) -> bool {
        self.session()
            .is_some_and(|s| self.bus.read(namespace, channel, s).is_ok())
    }

    /// `text` in the level's colour, when colouring.
    fn paint(&self, level: Level, text: &str) -> String {
        if !self.color {
            return text.to_owned();
        }
        let code = self.settings.colors.code(level);
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// Reads and decodes the message at `channel/<key>`, `None` when missing or invalid.
pub(crate) fn read_as<P: DeserializeOwned>(
    bus: &Bus,
    (ns, ch): (&str, &str),
    key: &str,
) -> Option<P> {
    let msg = bus.read(ns, ch, key).ok()?;
    decode::<P>(msg).ok().map(|e| e.payload)
}

/// One named segment of the line.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// The name used in [`Settings::segments`].
    pub name: &'static str,
    /// Renders it; `None` (or an empty string) leaves it out.
    pub render: fn(&Ctx) -> Option<String>,
}

/// Every segment, by name.
pub const SEGMENTS: &[Segment] = &[
    Segment {
        name: "model",
        render: model_segment,
    },
    Segment {
        name: "context",
        render: context_segment,
    },
    Segment {
        name: "agents",
        render: agents_segment,
    },
    Segment {
        name: "note",
        render: note_segment,
    },
    Segment {
        name: "compact",
        render: compact_segment,
    },
];

/// The segment called `name`, if there is one.
pub fn segment(name: &str) -> Option<&'static Segment> {
    SEGMENTS.iter().find(|s| s.name == name.trim())
}

/// `model`: the model's display name (else its id).
pub(crate) fn model_segment(ctx: &Ctx) -> Option<String> {
    let input = ctx.input();
    let name = input.model_name.as_deref().or(input.model_id.as_deref())?;
    // The host's text must not break the line nor drive the terminal.
    Some(
        name.chars()
            .map(|c| {
                if interband::text::is_unsafe(c) {
                    ' '
                } else {
                    c
                }
            })
            .collect::<String>()
            .trim()
            .to_owned(),
    )
}

/// `context`: `ctx 88% used ████████▉░ 21k to compact ORANGE` (the share
/// of the window used, a bar that fills with it, the tokens left before the
/// host compacts), or with `context_style = "usable"` `ctx 10% usable
/// █░░░░░░░░░ ORANGE`; `ctx –` before the first response, `ctx ? since the
/// compaction` after one until an answer states the figure (never 0%).
pub(crate) fn context_segment(ctx: &Ctx) -> Option<String> {
    let Some(view) = ctx.view() else {
        if ctx.input().just_compacted() {
            return Some("ctx ? since the compaction".to_owned());
        }
        return ctx.input().window.map(|_| "ctx –".to_owned());
    };
    let width = ctx.settings().gauge_width.min(MAX_GAUGE);
    let word = view.level.as_str().to_ascii_uppercase();
    let (text, fill) = match ctx.settings().context_style {
        ContextStyle::Used => {
            let used = view.used_pct.clamp(0.0, 100.0);
            (format!("{} used", interband::context::pct_text(used)), used)
        }
        ContextStyle::Usable => {
            let usable = view.usable.clamp(0.0, 100.0);
            (
                format!("{} usable", interband::context::pct_text(usable)),
                usable,
            )
        }
    };
    let mut body = format!("{text} ");
    if width > 0 {
        let filled = ((fill / 100.0 * width as f64).round() as usize).min(width);
        body.extend(std::iter::repeat_n('█', filled));
        body.extend(std::iter::repeat_n('░', width - filled));
        body.push(' ');
    }
    if ctx.settings().context_style == ContextStyle::Used {
        body.push_str(&format!(
            "{} to compact ",
            interband::context::tokens_text(view.to_compact)
        ));
    }
    // A window nobody states, of two possible: what the smaller would mean.
    if let Some((smaller, used)) = view.either {
        body.push_str(&format!(
            "(window not known: {} if {}) ",
            interband::context::used_text(used, smaller),
            interband::context::tokens_text(smaller)
        ));
    }
    body.push_str(&word);
    Some(format!("ctx {}", ctx.paint(view.level, &body)))
}

/// `agents`: the session's subagents running, and the fullest's share of
/// its own window ("⑂ 2 agents, fullest 45%"); nothing when none runs.
pub(crate) fn agents_segment(ctx: &Ctx) -> Option<String> {
    use interband::payloads::SubagentContext;
    let session = ctx.session()?;
    let running = SubagentContext::running(ctx.bus(), session, crate::now_secs());
    if running.is_empty() {
        return None;
    }
    let fullest = running
        .iter()
        .filter_map(|a| Some(100.0 * a.used_tokens? as f64 / a.window?.max(1) as f64))
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let n = running.len();
    let agents = if n == 1 {
        "1 agent".to_owned()
    } else {
        format!("{n} agents")
    };
    Some(match fullest {
        Some(p) => format!("⑂ {agents}, fullest {}", interband::context::pct_text(p)),
        None => format!("⑂ {agents}"),
    })
}

/// `note`: a memory note was saved for this session.
pub(crate) fn note_segment(ctx: &Ctx) -> Option<String> {
    ctx.exists(NOTE_CHANNEL).then(|| NOTE_MARKER.to_owned())
}

/// `compact`: a compaction is pending (red level, or a `compact/pending` message).
pub(crate) fn compact_segment(ctx: &Ctx) -> Option<String> {
    let pending = ctx.level() == Some(Level::Red) || ctx.exists(PENDING_CHANNEL);
    let command = ctx.input().host.profile().compact_command;
    pending.then(|| format!("⟳ {command} {COMPACT_MARKER}"))
}
