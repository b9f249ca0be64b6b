//! Telling the person when they must act, beyond the host's window: when a
//! session reaches red at a turn's end (a compaction is advised), when a
//! compaction happened (its record), and when a headless session ended at
//! red. Through the terminal the session runs in (where the host lets a
//! hook reach it: Claude Code's `terminalSequence`, from 2.1.141), the
//! desktop, or the person's own command (`[notify]`); each moment once.

use std::time::Duration;

use interband::Bus;
use interband::settings::Env;
use serde::{Deserialize, Serialize};

use crate::compact::{Overrun, run};

/// The most a notification's command may take before it is killed.
pub const MAX_TIMEOUT_MS: u64 = 5000;

/// `[notify]`: how the person is told. A project's file sets none of it
/// unless trusted (it runs commands).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The terminal's own notification, for an interactive session whose
    /// host lets a hook reach its terminal (OSC 9, OSC 99 or OSC 777 by the
    /// terminal; a bell where none is known).
    pub terminal: bool,
    /// A desktop notification (`notify-send`, `osascript`, a Windows toast).
    pub desktop: bool,
    /// The person's own command: its `{title}` and `{message}` words are
    /// replaced; it never runs through a shell.
    pub command: Vec<String>,
    /// How long the desktop's or the person's command may run, ms.
    pub timeout_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            terminal: true,
            desktop: false,
            command: Vec::new(),
            timeout_ms: 2000,
        }
    }
}

/// Something the person must hear of, once.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// Its session.
    pub session: String,
    /// What makes it one moment (`red-3`, `compacted-<ts>`, `ended`): told
    /// once.
    pub moment: String,
    /// The heading.
    pub title: String,
    /// The words.
    pub body: String,
}

/// Whether `moment` of `session` is told for the first time (and marks it
/// told). A root that cannot say tells nothing: never twice is the promise.
pub fn first_time(bus: &Bus, session: &str, moment: &str) -> bool {
    let name = format!(
        "{}--{}",
        interband::paths::safe_key(session),
        interband::paths::safe_key(moment)
    );
    bus.dir(&[".state", "notify"], true)
        .and_then(|d| d.write_new(&name, b""))
        .unwrap_or(false)
}

/// The escape sequence that makes the terminal the session runs in show a
/// notification, by what its environment says it is: OSC 9 (iTerm2,
/// WezTerm, Windows Terminal), OSC 99 (kitty), OSC 777 (Ghostty, foot,
/// rxvt), else a bell. Control characters in the words are dropped.
///
/// ```
/// let env = |k: &str| (k == "TERM_PROGRAM").then(|| "iTerm.app".to_owned());
/// let s = interband_consumers::notify::terminal_sequence(&env, "interband", "red\x07now");
/// assert_eq!(s, "\x1b]9;interband: rednow\x07");
/// ```
pub fn terminal_sequence(env: &dyn Env, title: &str, body: &str) -> String {
    let clean = |t: &str| -> String {
        t.chars()
            .filter(|c| !c.is_control())
            .collect::<String>()
            .replace(';', ",")
    };
    let (title, body) = (clean(title), clean(body));
    let var = |k: &str| env.var(k).unwrap_or_default();
    let set = |k: &str| !var(k).is_empty();
    let program = var("TERM_PROGRAM").to_lowercase();
    let term = var("TERM").to_lowercase();
    // Inside tmux (`TERM_PROGRAM=tmux`) the terminal around it is told by
    // the variables it gave the shell tmux started from.
    if term.contains("kitty") || set("KITTY_WINDOW_ID") {
        return format!("\x1b]99;;{title}: {body}\x1b\\");
    }
    if program == "ghostty"
        || set("GHOSTTY_RESOURCES_DIR")
        || term.starts_with("foot")
        || term.starts_with("rxvt")
    {
        return format!("\x1b]777;notify;{title};{body}\x07");
    }
    if program == "iterm.app"
        || program == "wezterm"
        || set("ITERM_SESSION_ID")
        || set("WEZTERM_PANE")
        || set("WT_SESSION")
    {
        // (A body opening with a digit would read as another OSC 9 form.)
        return format!("\x1b]9;{title}: {body}\x07");
    }
    "\x07".to_owned()
}

/// Tells the person of `notice` by the desktop and their own command, as
/// set, each bounded in time; what fails goes to `problem`. The terminal's
/// part is the caller's (it rides on the host's answer).
pub fn outside(settings: &Settings, notice: &Notice, problem: &dyn Fn(&str)) {
    let wait = Duration::from_millis(settings.timeout_ms.min(MAX_TIMEOUT_MS));
    let env = [
        ("INTERBAND_NOTIFY_TITLE", notice.title.clone()),
        ("INTERBAND_NOTIFY_MESSAGE", notice.body.clone()),
    ];
    if settings.desktop
        && let Err(e) = run(&desktop(notice), &env, wait, Overrun::Kill)
    {
        problem(&format!("notify: desktop: {e}"));
    }
    if !settings.command.is_empty() {
        let argv: Vec<String> = settings
            .command
            .iter()
            .map(|w| {
                w.replace("{title}", &notice.title)
                    .replace("{message}", &notice.body)
            })
            .collect();
        if let Err(e) = run(&argv, &env, wait, Overrun::Kill) {
            problem(&format!("notify: command: {e}"));
        }
    }
}

/// The desktop's notifier: `notify-send` takes the words as arguments;
/// macOS's and Windows' scripts read them from the environment
/// (`INTERBAND_NOTIFY_TITLE`, `INTERBAND_NOTIFY_MESSAGE`), so that nothing in
/// them is ever read as code.
fn desktop(notice: &Notice) -> Vec<String> {
    let argv: &[&str] = if cfg!(target_os = "macos") {
        &[
            "osascript",
            "-e",
            "display notification (system attribute \"INTERBAND_NOTIFY_MESSAGE\") with title (system attribute \"INTERBAND_NOTIFY_TITLE\")",
        ]
    } else if cfg!(windows) {
        &[
            "powershell.exe",
            "-NoProfile",
            "-NonInteractive",
            "-Command",
            "[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] > $null; \
             $t = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent([Windows.UI.Notifications.ToastTemplateType]::ToastText02); \
             $x = $t.GetElementsByTagName('text'); \
             $x.Item(0).AppendChild($t.CreateTextNode($env:INTERBAND_NOTIFY_TITLE)) > $null; \
             $x.Item(1).AppendChild($t.CreateTextNode($env:INTERBAND_NOTIFY_MESSAGE)) > $null; \
             [Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\\WindowsPowerShell\\v1.0\\powershell.exe').Show([Windows.UI.Notifications.ToastNotification]::new($t))",
        ]
    } else {
        return vec![
            "notify-send".into(),
            "-a".into(),
            "interband".into(),
            "--".into(),
            notice.title.clone(),
            notice.body.clone(),
        ];
    };
    argv.iter().map(|s| (*s).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The desktop's own notifier, for real, where the suite runs on that
    /// desktop's system: macOS's `osascript` and Windows' PowerShell toast
    /// (the release workflow's macOS and Windows runners; Wine's PowerShell
    /// is a stub, and Linux's `notify-send` needs a session bus). Words a
    /// shell or AppleScript would read as code arrive as words: the scripts
    /// read them from the environment.
    #[test]
    #[cfg(any(target_os = "macos", all(windows, target_env = "msvc")))]
    fn the_desktop_s_own_notifier_shows_a_notice() {
        let problems = std::cell::RefCell::new(Vec::new());
        let notice = Notice {
            session: "s1".into(),
            moment: "red-1".into(),
            title: "interband test".into(),
            body: "red: \"run /compact\" $(x) `y` ' & | ; %PATH%".into(),
        };
        let settings = Settings {
            terminal: false,
            desktop: true,
            // Its longest: this is no test of its speed.
            timeout_ms: MAX_TIMEOUT_MS,
            ..Settings::default()
        };
        outside(&settings, &notice, &|p| {
            problems.borrow_mut().push(p.to_owned())
        });
        assert_eq!(problems.into_inner(), Vec::<String>::new());
    }

    #[test]
    fn each_terminal_gets_its_own_sequence_and_the_rest_a_bell() {
        let of = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let s = |env: &dyn Env| terminal_sequence(env, "interband", "a; b");
        assert_eq!(
            s(&of(&[("TERM", "xterm-kitty")])),
            "\x1b]99;;interband: a, b\x1b\\"
        );
        assert_eq!(
            s(&of(&[("TERM_PROGRAM", "ghostty")])),
            "\x1b]777;notify;interband;a, b\x07"
        );
        assert_eq!(
            s(&of(&[("TERM", "foot")])),
            "\x1b]777;notify;interband;a, b\x07"
        );
        assert_eq!(
            s(&of(&[("TERM_PROGRAM", "WezTerm")])),
            "\x1b]9;interband: a, b\x07"
        );
        assert_eq!(s(&of(&[("WT_SESSION", "x")])), "\x1b]9;interband: a, b\x07");
        assert_eq!(s(&of(&[("TERM", "xterm-256color")])), "\x07");
        // tmux inside WezTerm: the terminal around it, by its own variable.
        assert_eq!(
            s(&of(&[("TERM_PROGRAM", "tmux"), ("WEZTERM_PANE", "3")])),
            "\x1b]9;interband: a, b\x07"
        );
    }

    #[test]
    fn a_moment_is_told_once() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(dir.path().join("bus"));
        assert!(first_time(&bus, "s", "red-1"));
        assert!(!first_time(&bus, "s", "red-1"));
        assert!(first_time(&bus, "s", "red-2"));
        assert!(first_time(&bus, "t", "red-1"));
    }
}
