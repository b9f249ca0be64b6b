//! Text for a terminal: whatever a message, a file name, a setting or a
//! transcript says, nothing printed for a person can move the cursor, set the
//! window title, clear the screen or reorder what is shown.
//!
//! [`terminal`] neutralizes C0 and C1 control characters, DEL, and the Unicode
//! bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
//! U+061C) and line separators, writing each as a visible escape. Colour
//! codes reach a terminal only through [`sgr`], which accepts SGR numbers and
//! nothing else.
//!
//! ```
//! use interband::text::{terminal, sgr};
//! assert_eq!(terminal("ok"), "ok");
//! assert_eq!(terminal("\x1b]0;owned\x07"), "\\x1b]0;owned\\x07");
//! assert_eq!(terminal("abc\u{202e}fed"), "abc\\u{202e}fed");
//! assert_eq!(sgr("38;5;208"), Some("38;5;208"));
//! assert_eq!(sgr("31m\x1b[2J"), None);
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for a character that must never reach a terminal raw.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) || keep(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// One field or line for a terminal: every control character (newlines and
/// tabs included), DEL and bidirectional control written as a visible escape.
pub fn terminal(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// A block of lines for a terminal: as [`terminal`], but newlines and tabs stay.
///
/// ```
/// assert_eq!(interband::text::terminal_block("a\n\tb\x1b[2J"), "a\n\tb\\x1b[2J");
/// ```
pub fn terminal_block(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// Serialized JSON for a terminal: any character that must not reach one
/// raw (inside a string: JSON escapes C0 controls but leaves DEL, C1 and the
/// bidirectional controls as they are) written as a `\uXXXX` escape, so the
/// JSON stays valid and means the same.
///
/// ```
/// let v = serde_json::json!({"type": "a\u{202e}b\u{9b}"});
/// let out = interband::text::json(&v.to_string()).into_owned();
/// assert_eq!(out, r#"{"type":"a\u202eb\u009b"}"#);
/// assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap(), v);
/// ```
pub fn json(serialized: &str) -> Cow<'_, str> {
    if !serialized.chars().any(|c| is_unsafe(c) && c != '\n') {
        return Cow::Borrowed(serialized);
    }
    let mut out = String::with_capacity(serialized.len() + 8);
    for c in serialized.chars() {
        if is_unsafe(c) && c != '\n' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", u);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An ANSI SGR parameter string (`32`, `1;31`, `38;5;208`): numbers of at
/// most three digits separated by `;`, nothing else. `None` for anything
/// else, so a setting can never smuggle another escape sequence.
pub fn sgr(code: &str) -> Option<&str> {
    let ok = !code.is_empty()
        && code.len() <= 32
        && code
            .split(';')
            .all(|n| !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()));
    ok.then_some(code)
}

/// Another program's line for a terminal (the statusline `--wrap` runs):
/// its colours stay, nothing else that could drive the terminal does. An
/// SGR sequence (`ESC [ <numbers> m`, numbers as [`sgr`] takes them) is
/// kept; every other escape sequence (cursor moves, screen clears, OSC
/// clipboard writes and titles, hyperlinks, DCS, 8-bit CSI) is dropped
/// whole, and so is every other control character but newline and tab,
/// DEL and the bidirectional controls.
///
/// ```
/// use interband::text::keep_sgr;
/// assert_eq!(keep_sgr("\x1b[1;32mok\x1b[0m"), "\x1b[1;32mok\x1b[0m");
/// assert_eq!(keep_sgr("a\x1b]52;c;cGF5bG9hZA==\x07b"), "ab", "no clipboard write");
/// assert_eq!(keep_sgr("\x1b[2J\x1b[Hx\u{202e}y"), "xy");
/// ```
pub fn keep_sgr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            if !is_unsafe(c) || c == '\n' || c == '\t' {
                out.push(c);
            }
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte.
                let mut params = String::new();
                let mut fin = None;
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        fin = Some(c);
                        break;
                    }
                    if !('\x20'..='\x3f').contains(&c) {
                        break;
                    }
                    params.push(c);
                }
                if fin == Some('m') && (params.is_empty() || sgr(&params).is_some()) {
                    out.push_str("\x1b[");
                    out.push_str(&params);
                    out.push('m');
                }
            }
            // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \\).
            Some(']' | 'P' | 'X' | '^' | '_') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || c == '\u{9c}' {
                        break;
                    }
                    if c == '\x1b' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            // A two-character escape (`ESC c` resets the terminal): dropped.
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_and_bidi_character_is_escaped() {
        for c in (0u32..0x20).chain(0x7f..0xa0) {
            let c = char::from_u32(c).unwrap();
            let s = c.to_string();
            assert!(!terminal(&s).contains(c), "{c:?}");
        }
        for c in [
            '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{200f}', '\u{2028}',
        ] {
            assert!(!terminal(&c.to_string()).contains(c), "{c:?}");
        }
        assert_eq!(terminal("héllo │ ✓"), "héllo │ ✓", "ordinary text is kept");
        assert_eq!(terminal_block("a\nb\r"), "a\nb\\x0d");
    }

    #[test]
    fn only_colours_pass_from_another_program() {
        let attacks = [
            "\x1b]52;c;cGF5bG9hZA==\x07",
            "\x1b]52;c;cGF5bG9hZA==\x1b\\",
            "\x1b]0;title\x07",
            "\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\",
            "\x1b[2J",
            "\x1b[H",
            "\x1b[6n",
            "\x1b[31;1\x07m",
            "\x1bc",
            "\x1bP1$r\x1b\\",
            "\u{9b}2J",
            "\r",
            "\x08",
            "\x1b[38;5;2000m",
            "\x1b[",
        ];
        for a in attacks {
            let out = keep_sgr(&format!("ok{a}"));
            assert!(
                !out.chars().any(|c| is_unsafe(c) && c != '\x1b')
                    && !out.contains("\x1b]")
                    && !out.contains("[2J"),
                "{a:?} -> {out:?}"
            );
            assert!(out.starts_with("ok"), "{a:?} -> {out:?}");
        }
        for colour in [
            "\x1b[m",
            "\x1b[0m",
            "\x1b[1;31m",
            "\x1b[38;5;208m",
            "\x1b[48;2;1;2;3m",
        ] {
            assert_eq!(keep_sgr(colour), colour);
        }
        assert_eq!(keep_sgr("line one\nline\ttwo"), "line one\nline\ttwo");
    }

    #[test]
    fn only_sgr_numbers_pass() {
        for good in ["0", "1;31", "38;5;208", "48;2;10;20;30"] {
            assert_eq!(sgr(good), Some(good));
        }
        for bad in ["", ";", "1;", "31m", "\x1b[31m", "1234", "3 1", "31;\x07"] {
            assert_eq!(sgr(bad), None, "{bad:?}");
        }
    }
}
