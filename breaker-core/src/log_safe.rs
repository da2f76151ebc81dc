//! Text from outside (breaker names and keys, file names and keys, values read from a file or
//! from Redis) written into log lines and error messages in a form that cannot carry a control
//! character: a name with a newline cannot forge a second log line, one with an escape
//! sequence cannot repaint a terminal.

use std::fmt;

/// `text` as it may appear in a log line: control characters (C0, DEL, C1), the Unicode line
/// and paragraph separators and the bidirectional-text controls are written as escapes
/// (`\n`, `\r`, `\t`, `\u{1b}`, ...). Any other text is written as it is.
///
/// Every log line and error message of breaker writes outside text (breaker names and keys,
/// file names, values from a file or from Redis) through it; code built on breaker (the
/// operations surface, a service's own logging of breaker names) can do the same.
///
/// ```
/// use breaker_core::LogSafe;
///
/// let name = "tenant\nINFO forged line";
/// assert_eq!(LogSafe(name).to_string(), "tenant\\nINFO forged line");
/// ```
#[derive(Clone, Copy)]
pub struct LogSafe<'a>(pub &'a str);

/// Whether `c` must not reach a log line as it is.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

impl fmt::Display for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if !text.chars().any(needs_escape) {
            return f.write_str(text);
        }
        for c in text.chars() {
            match c {
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if needs_escape(c) => write!(f, "{}", c.escape_unicode())?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::LogSafe;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        let cases = [
            ("productService", "productService"),
            ("tenant\nINFO forged line", "tenant\\nINFO forged line"),
            ("a\r\tb", "a\\r\\tb"),
            ("\u{1b}[31mred", "\\u{1b}[31mred"),
            ("back\\slash", "back\\slash"),
            ("rtl\u{202e}txt", "rtl\\u{202e}txt"),
            ("nel\u{85}", "nel\\u{85}"),
            ("łódź-東京", "łódź-東京"),
        ];
        for (raw, logged) in cases {
            let shown = LogSafe(raw).to_string();
            assert_eq!(shown, logged);
            assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        }
    }
}
