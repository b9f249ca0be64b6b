//! The statusline's tests: parsing, rendering, publishing, wrapping.
use super::*;
use interband::payloads::MemoryNote;
use serde_json::json;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/claude-code-2.1.332"
);
const SESSION: &str = "3e48b9d6-e2b9-4536-a4a6-77ef838d7343";
const LEVEL_WORDS: [&str; 4] = ["GREEN", "YELLOW", "ORANGE", "RED"];

fn none(_: &str) -> Option<String> {
    None
}

fn fixture(name: &str) -> Input {
    let bytes = std::fs::read(format!("{FIXTURES}/{name}")).unwrap();
    Input::parse(&bytes)
}

fn plain() -> Settings {
    Settings {
        color: false,
        ..Settings::default()
    }
}

/// The view before 0.2 (the share of the usable room left), which most
/// of these tests were written in: it stays a setting.
fn usable() -> Settings {
    Settings {
        context_style: ContextStyle::Usable,
        ..plain()
    }
}

fn temp_bus() -> (tempfile::TempDir, Bus) {
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::new(dir.path().join("bus"));
    (dir, bus)
}

/// An input with a 200k window and `used` tokens in context.
fn used(used: u64) -> Input {
    Input {
        session_id: Some("s".into()),
        model_name: Some("Sonnet".into()),
        window: Some(200_000),
        usage: Some(Usage {
            input_tokens: used,
            ..Usage::default()
        }),
        ..Input::default()
    }
}

fn basis(bus: &Bus, input: &Input) -> Basis {
    let settings = plain();
    Ctx::new(bus, input, &settings, &none).view().unwrap().basis
}

fn context_seq(bus: &Bus, session: &str) -> u64 {
    bus.read(CONTEXT_CHANNEL.0, CONTEXT_CHANNEL.1, session)
        .unwrap()
        .envelope
        .seq
}

#[test]
fn channel_constants_match_the_payload_contracts() {
    use interband::payloads::Payload;
    assert_eq!(
        (ContextWindow::NAMESPACE, ContextWindow::CHANNEL),
        CONTEXT_CHANNEL
    );
    assert_eq!((Pressure::NAMESPACE, Pressure::CHANNEL), PRESSURE_CHANNEL);
    assert_eq!((MemoryNote::NAMESPACE, MemoryNote::CHANNEL), NOTE_CHANNEL);
}

#[test]
fn parses_the_real_input() {
    let i = fixture("statusLine.input.json");
    assert_eq!(i.session(), Some(SESSION));
    assert_eq!(i.window, Some(1_000_000));
    assert_eq!(i.used_tokens(), Some(31_700));
    assert_eq!(i.usage.unwrap().output_tokens, 25);
    assert_eq!(i.model_id.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(i.model_name.as_deref(), Some("Opus 5.5"));
    assert_eq!(i.project_dir.as_deref(), Some("/home/dev/work"));
    assert_eq!(i.used_percentage, Some(3.0));
    assert_eq!(i.remaining_percentage, Some(97.0));
    assert!(i.transcript_path.unwrap().ends_with(".jsonl"));
}

#[test]
fn parsing_is_tolerant() {
    assert_eq!(Input::parse(b"not json"), Input::default());
    assert_eq!(Input::parse(b""), Input::default());
    assert_eq!(Input::parse(b"[1,2]"), Input::default());
    let i = Input::parse(
        br#"{"session_id":" ","model":"opus","workspace":null,"extra":{"x":1},
             "context_window":{"context_window_size":"big","used_percentage":"3",
               "current_usage":{"input_tokens":1200.0,"cache_read_input_tokens":-5}}}"#,
    );
    assert_eq!(i.session(), None);
    assert_eq!(i.model_name, None);
    assert_eq!(i.window, None);
    assert_eq!(
        i.used_percentage,
        Some(3.0),
        "a numeric string is its number"
    );
    assert_eq!(
        i.used_tokens(),
        None,
        "a count that cannot be read is no figure, never a low one"
    );
    let i = Input::parse(
        br#"{"context_window":{"context_window_size":"1e6","used_percentage":"x",
               "current_usage":{"input_tokens":1.8e5,"cache_read_input_tokens":"20000","output_tokens":null}}}"#,
    );
    assert_eq!(
        (i.window, i.used_tokens()),
        (Some(1_000_000), Some(200_000))
    );
    assert_eq!(i.used_percentage, None);
    let empty_usage = Input::parse(br#"{"context_window":{"current_usage":{}}}"#);
    assert_eq!(empty_usage.usage, None);
}

#[test]
fn the_real_input_is_published_once_per_change() {
    let (_d, bus) = temp_bus();
    let mut input = fixture("statusLine.input.json");
    let out = render(&bus, &input, &usable(), &none, 100.0);
    assert!(out.published);
    let cw = bus.read_typed::<ContextWindow>(SESSION).unwrap();
    assert_eq!(cw.msg_type, "context_window");
    assert_eq!(cw.session_id, SESSION);
    assert_eq!(cw.seq, 1);
    let p = cw.payload;
    assert_eq!(p.window, 1_000_000);
    assert_eq!(p.used_tokens, Some(31_700));
    assert_eq!(p.used_percentage, Some(3.0));
    assert_eq!(p.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(p.transcript_path, input.transcript_path);
    assert_eq!(
        p.transcript_bytes, None,
        "the fixture's transcript is not here"
    );
    assert_eq!(p.ts, 100.0);
    assert!(
        out.line.starts_with("Opus 5.5 │ ctx 97% usable"),
        "{}",
        out.line
    );
    assert!(out.line.contains("GREEN"), "{}", out.line);

    let again = render(&bus, &input, &usable(), &none, 100.3);
    assert!(
        !again.published,
        "a redraw with the same figures rewrites nothing"
    );
    assert_eq!(context_seq(&bus, SESSION), 1);
    assert_eq!(again.line, out.line);

    input.usage.as_mut().unwrap().cache_read_input_tokens += 5_000;
    assert!(render(&bus, &input, &usable(), &none, 101.0).published);
    assert_eq!(context_seq(&bus, SESSION), 2);
    let p = bus.read_typed::<ContextWindow>(SESSION).unwrap().payload;
    assert_eq!((p.used_tokens, p.ts), (Some(36_700), 101.0));

    input.model_id = Some("claude-sonnet-5".into());
    assert!(render(&bus, &input, &usable(), &none, 102.0).published);
    assert_eq!(context_seq(&bus, SESSION), 3, "a model change publishes");
}

#[test]
fn transcript_bytes_give_the_position() {
    let (dir, bus) = temp_bus();
    let transcript = dir.path().join("t.jsonl");
    std::fs::write(&transcript, "x".repeat(1234)).unwrap();
    let mut input = used(10_000);
    input.transcript_path = Some(transcript.to_string_lossy().into_owned());
    assert!(render(&bus, &input, &usable(), &none, 1.0).published);
    let p = bus.read_typed::<ContextWindow>("s").unwrap().payload;
    assert_eq!(p.transcript_bytes, Some(1234));
    assert_eq!(p.used_percentage, None);
}

#[test]
fn nothing_is_published_without_a_window_a_session_or_permission() {
    let (_d, bus) = temp_bus();
    let mut input = used(10_000);
    input.window = None;
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(!out.published);
    assert!(
        out.line.contains("ctx 94% usable"),
        "200k assumed: {}",
        out.line
    );
    input.window = Some(0);
    assert!(!render(&bus, &input, &usable(), &none, 1.0).published);
    let mut input = used(10_000);
    input.session_id = None;
    assert!(!render(&bus, &input, &usable(), &none, 1.0).published);
    let off = Settings {
        publish: false,
        ..plain()
    };
    let out = render(&bus, &used(10_000), &off, &none, 1.0);
    assert!(!out.published);
    assert!(!out.timings.iter().any(|(n, _)| *n == "publish"));
    assert!(bus.read_typed::<ContextWindow>("s").is_err());
}

#[test]
fn before_the_first_response_shows_the_model_and_no_level() {
    let (_d, bus) = temp_bus();
    let input = fixture("statusLine.input.before_first_response.json");
    assert_eq!(input.usage, None);
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert_eq!(out.line, "Opus 5.5 │ ctx –");
    for w in LEVEL_WORDS {
        assert!(!out.line.contains(w), "{}", out.line);
    }
    // The window is known: it is published, without a usage figure.
    assert!(out.published);
    let p = bus.read_typed::<ContextWindow>(SESSION).unwrap().payload;
    assert_eq!((p.window, p.used_tokens), (1_000_000, None));
}

#[test]
fn after_a_compaction_the_context_is_unknown_never_0() {
    let (_d, bus) = temp_bus();
    let input = fixture("statusLine.input.after_compact.json");
    assert_eq!(input.used_tokens(), None, "zeros are no figure");
    assert!(input.just_compacted());
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert_eq!(out.line, "Opus 5.5 │ ctx ? since the compaction");
    // The zeros are the host's placeholder, not a figure: the bridge
    // publishes the window alone.
    let p = bus.read_typed::<ContextWindow>(SESSION).unwrap().payload;
    assert_eq!(
        (p.window, p.used_tokens, p.used_percentage),
        (1_000_000, None, None)
    );
    // Whatever the producer last published (the old context's red, or the
    // compaction's own summary size): the next answer tells, not these.
    for source in ["compaction", "transcript"] {
        let old = Pressure {
            level: Level::Red,
            context_usable: Some(3.0),
            used_tokens: Some(160_000),
            window: Some(1_000_000),
            source: Some(source.into()),
            ts: 1.0,
            ..Pressure::default()
        };
        bus.publish_typed(SESSION, SESSION, &old).unwrap();
        let out = render(&bus, &input, &usable(), &none, 1.0);
        assert_eq!(
            out.line, "Opus 5.5 │ ctx ? since the compaction",
            "{source}"
        );
    }
}

#[test]
fn the_level_comes_from_interpulse_when_it_is_current() {
    let (_d, bus) = temp_bus();
    let input = fixture("statusLine.input.json");
    let pressure = Pressure {
        level: Level::Orange,
        context_usable: Some(18.0),
        used_tokens: Some(31_700),
        window: Some(1_000_000),
        ts: 1.0,
        ..Pressure::default()
    };
    bus.publish_typed(SESSION, SESSION, &pressure).unwrap();
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(
        out.line.contains("ctx 18% usable ██░░░░░░░░ ORANGE"),
        "{}",
        out.line
    );
    assert_eq!(basis(&bus, &input), Basis::Pressure);

    // No usable figure in the pressure value: the input's.
    let bare = Pressure {
        context_usable: None,
        ..pressure.clone()
    };
    bus.publish_typed(SESSION, SESSION, &bare).unwrap();
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(out.line.contains("ctx 97% usable"), "{}", out.line);
    assert!(out.line.ends_with("ORANGE"), "{}", out.line);
}

#[test]
fn a_newer_input_beats_the_pressure_value() {
    let (_d, bus) = temp_bus();
    let input = fixture("statusLine.input.json");
    let stale = Pressure {
        level: Level::Orange,
        context_usable: Some(18.0),
        used_tokens: Some(800_000),
        ts: 1.0,
        ..Pressure::default()
    };
    bus.publish_typed(SESSION, SESSION, &stale).unwrap();
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(out.line.contains("ctx 97% usable"), "{}", out.line);
    assert!(out.line.contains("GREEN"), "{}", out.line);
    assert_eq!(basis(&bus, &input), Basis::Input);

    // Same tokens but the producer assumed another window: also stale.
    let wrong_window = Pressure {
        used_tokens: Some(31_700),
        window: Some(200_000),
        ..stale
    };
    bus.publish_typed(SESSION, SESSION, &wrong_window).unwrap();
    assert_eq!(basis(&bus, &input), Basis::Input);
}

#[test]
fn a_level_from_the_heuristic_alone_never_overrides_the_input() {
    let (_d, bus) = temp_bus();
    let input = fixture("statusLine.input.json");
    // A peer monitor's legacy value, and a pressure value without figures,
    // both red on call counts alone: the input says 97% usable, green.
    let legacy = interband::payloads::LegacyPressure {
        level: Level::Red,
        pressure: 130.0,
        est_tokens: 210_000.0,
        ts: 1.0,
    };
    bus.publish_typed(SESSION, SESSION, &legacy).unwrap();
    let heuristic = Pressure {
        level: Level::Red,
        pressure: 130.0,
        ts: 1.0,
        ..Pressure::default()
    };
    bus.publish_typed(SESSION, SESSION, &heuristic).unwrap();
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(out.line.contains("ctx 97% usable"), "{}", out.line);
    assert!(out.line.ends_with("GREEN"), "{}", out.line);
    assert_eq!(basis(&bus, &input), Basis::Input);
}

#[test]
fn the_level_is_computed_from_the_input_alone() {
    let (_d, bus) = temp_bus();
    // 200k window: autocompact at 167k. 150k used leaves 10.2% usable
    // (orange, red is below 10); 155k leaves 7.2% (red).
    let out = render(&bus, &used(150_000), &usable(), &none, 1.0);
    assert_eq!(out.line, "Sonnet │ ctx 10% usable █░░░░░░░░░ ORANGE");
    let out = render(&bus, &used(155_000), &usable(), &none, 1.0);
    assert_eq!(
        out.line,
        "Sonnet │ ctx 7% usable █░░░░░░░░░ RED │ ⟳ /compact advised"
    );
    let out = render(&bus, &used(190_000), &usable(), &none, 1.0);
    assert!(
        out.line.contains("ctx 0% usable ░░░░░░░░░░ RED"),
        "{}",
        out.line
    );
    // The host's settings move autocompact.
    let off = |k: &str| (k == "DISABLE_AUTO_COMPACT").then(|| "1".to_owned());
    let out = render(&bus, &used(150_000), &usable(), &off, 1.0);
    assert!(out.line.contains("ctx 25% usable"), "{}", out.line);
    assert!(out.line.contains("YELLOW"), "{}", out.line);
}

#[test]
fn colours_are_configurable_and_cleaned() {
    let (_d, bus) = temp_bus();
    let input = used(150_000);
    let mut s = Settings::default();
    s.colors.orange = "35\x1b[2J".into();
    let out = render(&bus, &input, &s, &|_: &str| None, 1.0);
    assert!(
        out.line.contains("\x1b[38;5;208m"),
        "an invalid code gives the default: {:?}",
        out.line
    );
    s.colors.orange = "35".into();
    let out = render(&bus, &input, &s, &|_: &str| None, 1.0);
    assert!(out.line.contains("\x1b[35m"), "{:?}", out.line);
    assert!(
        !out.line.contains("[2J"),
        "only SGR parameters get through: {:?}",
        out.line
    );
}

#[test]
fn colour_follows_the_settings_and_no_color() {
    let (_d, bus) = temp_bus();
    let input = used(150_000);
    let colour = Settings::default();
    let out = render(&bus, &input, &colour, &none, 1.0);
    assert!(out.line.contains("\x1b[38;5;208m"), "{:?}", out.line);
    assert!(out.line.contains("ORANGE\x1b[0m"), "{:?}", out.line);
    let no_color = |k: &str| (k == "NO_COLOR").then(String::new);
    let out = render(&bus, &input, &colour, &no_color, 1.0);
    assert!(!out.line.contains('\x1b'), "{:?}", out.line);
    assert!(out.line.contains("ORANGE"));
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(!out.line.contains('\x1b'), "{:?}", out.line);
    let red = render(&bus, &used(160_000), &colour, &none, 1.0);
    assert!(red.line.contains("\x1b[1;31m"), "{:?}", red.line);
    let green = render(&bus, &used(1_000), &colour, &none, 1.0);
    assert!(green.line.contains("\x1b[32m"), "{:?}", green.line);
}

#[test]
fn markers_show_a_saved_note_and_a_pending_compaction() {
    let (_d, bus) = temp_bus();
    let input = used(10_000);
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(!out.line.contains(NOTE_MARKER) && !out.line.contains(COMPACT_MARKER));

    let note = MemoryNote {
        path: "/tmp/note.md".into(),
        trigger: "checkpoint_needed".into(),
        bytes: 10,
        context_usable: Some(18.0),
        ts: 1.0,
    };
    bus.publish_typed("s", "s", &note).unwrap();
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(out.line.ends_with(" │ ✎ note saved"), "{}", out.line);
    assert!(!out.line.contains(COMPACT_MARKER));
    // Another session's note is not ours.
    let mut other = used(10_000);
    other.session_id = Some("other".into());
    let out = render(&bus, &other, &usable(), &none, 1.0);
    assert!(!out.line.contains(NOTE_MARKER), "{}", out.line);

    bus.publish(
        PENDING_CHANNEL.0,
        PENDING_CHANNEL.1,
        "s",
        "compact_pending",
        "s",
        json!({"ts": 1.0}),
    )
    .unwrap();
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(
        out.line.ends_with(" │ ✎ note saved │ ⟳ /compact advised"),
        "{}",
        out.line
    );
    assert!(out.line.contains("GREEN"), "pending alone, not the level");

    // Red from the producer alone also means a compaction is coming.
    let (_d2, bus2) = temp_bus();
    let red = Pressure {
        level: Level::Red,
        used_tokens: Some(10_000),
        ..Pressure::default()
    };
    bus2.publish_typed("s", "s", &red).unwrap();
    let out = render(&bus2, &input, &usable(), &none, 1.0);
    assert!(
        out.line.ends_with("RED │ ⟳ /compact advised"),
        "{}",
        out.line
    );
}

#[test]
fn segments_follow_the_configured_order_and_unknown_names_are_ignored() {
    let (_d, bus) = temp_bus();
    let settings = Settings {
        segments: ["context", "bogus", "model"].map(String::from).to_vec(),
        separator: " | ".into(),
        gauge_width: 4,
        ..plain()
    };
    let out = render(&bus, &used(50_000), &settings, &none, 1.0);
    // 50k of 200k: 25% used (the bar fills with it), 117k to Claude
    // Code's compaction point at 167k.
    assert_eq!(out.line, "ctx 25% used █░░░ 117k to compact GREEN | Sonnet");
    let names: Vec<_> = out.timings.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["publish", "context", "model"]);
    let report = timings_report(&out.timings);
    assert_eq!(report.lines().count(), 3);
    assert!(report.lines().nth(1).unwrap().starts_with("context  "));
    assert!(report.trim_end().ends_with("µs"), "{report}");

    let no_gauge = Settings {
        segments: vec!["context".into()],
        gauge_width: 0,
        ..plain()
    };
    let out = render(&bus, &used(50_000), &no_gauge, &none, 1.0);
    assert_eq!(out.line, "ctx 25% used 117k to compact GREEN");
    let old_view = Settings {
        context_style: ContextStyle::Usable,
        ..no_gauge.clone()
    };
    let out = render(&bus, &used(50_000), &old_view, &none, 1.0);
    assert_eq!(out.line, "ctx 70% usable GREEN");
    let huge = Settings {
        gauge_width: 10_000,
        ..no_gauge
    };
    let out = render(&bus, &used(50_000), &huge, &none, 1.0);
    assert_eq!(
        out.line.chars().filter(|c| *c == '█' || *c == '░').count(),
        100
    );
}

#[test]
fn the_percentage_is_the_tokens_share_and_the_bar_fills_as_the_context_fills() {
    let (_d, bus) = temp_bus();
    let mut fuller = Vec::new();
    for (tokens, host_says) in [
        (20_000, 10.0),
        (100_000, 50.0),
        (150_000, 75.0),
        (190_000, 95.0),
    ] {
        let input = Input {
            used_percentage: Some(host_says),
            ..used(tokens)
        };
        let out = render(&bus, &input, &plain(), &none, 1.0);
        assert!(
            out.line.contains(&format!("ctx {host_says:.0}% used")),
            "the share of the window: {}",
            out.line
        );
        fuller.push(out.line.chars().filter(|c| *c == '█').count());
    }
    assert!(fuller.windows(2).all(|p| p[0] < p[1]), "fills: {fuller:?}");
    let out = render(&bus, &used(150_000), &plain(), &none, 1.0);
    assert!(out.line.contains("17k to compact"), "{}", out.line);
    let out = render(&bus, &used(180_000), &plain(), &none, 1.0);
    assert!(
        out.line.contains(" 0 to compact RED"),
        "past the point: {}",
        out.line
    );
}

#[test]
fn unparseable_input_still_prints_a_line() {
    let (_d, bus) = temp_bus();
    let out = render(
        &bus,
        &Input::parse(b"{oops"),
        &Settings::default(),
        &none,
        1.0,
    );
    assert_eq!(out.line, FALLBACK_LINE);
    assert!(!out.published);
    let none_known = Settings {
        segments: vec!["nothing".into()],
        ..plain()
    };
    let input = fixture("statusLine.input.json");
    assert_eq!(
        render(&bus, &input, &none_known, &none, 1.0).line,
        FALLBACK_LINE
    );
}

#[test]
fn the_model_name_cannot_break_the_line() {
    let (_d, bus) = temp_bus();
    let mut input = used(10_000);
    input.model_name = Some("Evil\nname\r".into());
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(out.line.starts_with("Evil name │"), "{:?}", out.line);
    input.model_name = None;
    input.model_id = Some("claude-x".into());
    let out = render(&bus, &input, &usable(), &none, 1.0);
    assert!(out.line.starts_with("claude-x │"), "{:?}", out.line);
}

#[test]
fn settings_load_from_the_interline_table() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        "[interline]\nsegments = [\"context\", \"model\"]\ncolor = false\n",
    )
    .unwrap();
    let env = |k: &str| (k == "INTERBAND_INTERLINE_GAUGE_WIDTH").then(|| "6".to_owned());
    let s = interband::settings::load::<Settings>("interline", &[file], &env, &[]);
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    assert_eq!(s.value.segments, ["context", "model"]);
    assert!(!s.value.color);
    assert_eq!(s.value.gauge_width, 6);
    assert_eq!(s.value.separator, " │ ");
    assert_eq!((s.value.wrap_timeout_ms, s.value.publish), (2000, true));
}

#[test]
fn compose_joins_the_wrapped_line() {
    assert_eq!(compose(Some("a"), "b", " │ "), "a │ b");
    assert_eq!(compose(Some(""), "b", " │ "), "b");
    assert_eq!(compose(Some("a"), "", " │ "), "a");
    assert_eq!(compose(None, "b", " │ "), "b");
}

use crate::stand_in::command as stand_in;

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_late_wrapped_command_is_killed_with_its_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let pidfile_text = pidfile.display().to_string();
    let command = stand_in(json!([
        ["background", [["sleep", 30_000]], pidfile_text],
        ["sleep", 30_000]
    ]));
    // Time enough for the stand-in to start its child and say so (a
    // process starts slowly under Wine); the command itself never ends.
    assert_eq!(
        wrap(&command, b"", Duration::from_secs(5)).map_err(|e| e.contains("did not finish")),
        Err(true)
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the stand-in started its child within the timeout")
        .trim()
        .parse()
        .unwrap();
    let alive = || crate::stand_in::alive(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(), "the pipeline's sleep {pid} outlived the timeout");
}

#[test]
fn wrap_returns_every_line() {
    let t = Duration::from_secs(5);
    let out = wrap(&stand_in(json!([["drain"], ["print", "left\n"]])), b"{}", t);
    assert_eq!(out.as_deref(), Ok("left"));
    let out = wrap(&stand_in(json!([["print", "one\r\ntwo\n"]])), b"", t);
    assert_eq!(out.as_deref(), Ok("one\ntwo"));
    let out = wrap(&stand_in(json!([["print", "no newline"]])), b"", t);
    assert_eq!(out.as_deref(), Ok("no newline"));
    assert_eq!(
        wrap(&stand_in(json!([["exit", 0]])), b"", t).as_deref(),
        Ok("")
    );
    assert!(wrap(&[], b"", t).is_err());
    // Why there is no line, said: missing, or failing with nothing printed.
    let missing = wrap(&argv(&["/no/such/statusline"]), b"", t).unwrap_err();
    assert!(missing.contains("could not run"), "{missing}");
    let failing = wrap(&stand_in(json!([["exit", 3]])), b"", t).unwrap_err();
    assert!(
        failing.contains("failed") && failing.contains('3'),
        "{failing}"
    );
}

#[test]
fn wrap_passes_stdin_through_small_and_large() {
    let t = Duration::from_secs(5);
    let small = std::fs::read(format!("{FIXTURES}/statusLine.input.json")).unwrap();
    let out = wrap(&stand_in(json!([["count"]])), &small, t).unwrap();
    assert_eq!(out.trim().parse::<usize>().unwrap(), small.len());
    let large = vec![b'x'; 300_000];
    let out = wrap(&stand_in(json!([["count"]])), &large, t).unwrap();
    assert_eq!(out.trim(), "300000");
}

#[test]
fn wrap_kills_a_late_command() {
    let start = Instant::now();
    let out = wrap(
        &stand_in(json!([["sleep", 5000], ["print", "late\n"]])),
        b"{}",
        Duration::from_millis(200),
    );
    assert!(out.is_err());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    // A command that never reads a stdin larger than a pipe holds: still bounded.
    let start = Instant::now();
    let big = vec![b'x'; 1 << 20];
    let out = wrap(
        &stand_in(json!([["sleep", 5000]])),
        &big,
        Duration::from_millis(200),
    );
    assert!(out.is_err());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn wrap_is_not_stalled_by_a_background_child_holding_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let held = dir.path().join("pid").display().to_string();
    let start = Instant::now();
    let out = wrap(
        &stand_in(json!([
            ["background", [["sleep", 3000]], held],
            ["print", "partial"]
        ])),
        b"",
        Duration::from_secs(1),
    );
    assert_eq!(out.as_deref(), Ok("partial"));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn wrap_works_with_pipes_alone() {
    let dir = tempfile::tempdir().unwrap();
    let held = dir.path().join("pid").display().to_string();
    let t = Duration::from_secs(5);
    let out = run_wrapped(
        &stand_in(json!([["drain"], ["print", "left\n"]])),
        b"{}",
        t,
        false,
    );
    assert_eq!(out.as_deref(), Ok("left"));
    let out = run_wrapped(&stand_in(json!([["count"]])), &[b'x'; 10_000], t, false);
    assert_eq!(out.as_deref().map(str::trim), Ok("10000"));
    // A background child holding the pipe does not keep us past the command.
    let start = Instant::now();
    let out = run_wrapped(
        &stand_in(json!([
            ["print", "hi\n"],
            ["background", [["sleep", 30_000]], held]
        ])),
        b"",
        t,
        false,
    );
    assert_eq!(out.as_deref(), Ok("hi"));
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let start = Instant::now();
    let out = run_wrapped(
        &stand_in(json!([["sleep", 5000], ["print", "late\n"]])),
        b"{}",
        Duration::from_millis(200),
        false,
    );
    assert!(out.is_err(), "{out:?}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn wrap_of_a_missing_program_says_so() {
    let out = wrap(
        &argv(&["/nonexistent/interline-no-such-program"]),
        b"{}",
        Duration::from_secs(1),
    );
    assert!(out.is_err(), "{out:?}");
}

#[test]
fn a_window_nobody_states_shows_what_the_smaller_one_would_mean() {
    let (_d, bus) = temp_bus();
    // Copilot CLI's statusline without its limit: 128k assumed, 64k possible.
    let input = Input {
        window: None,
        model_name: Some("GPT".into()),
        host: interband_hosts::Host::Copilot,
        ..used(50_000)
    };
    let out = render(&bus, &input, &plain(), &none, 1.0);
    assert_eq!(
        out.line,
        "GPT │ ctx 39% used ████░░░░░░ 52k to compact (window not known: 78% used if 64k) GREEN"
    );
    // A window stated: nothing of the kind.
    let out = render(&bus, &used(50_000), &plain(), &none, 1.0);
    assert!(!out.line.contains("not known"), "{}", out.line);
}
