//! What a hint is in Redis: its key, made from the breaker's name, and its value.

use crate::log_safe::LogSafe;

/// The longest hint value read; a longer value is ignored (and never transferred whole).
pub const MAX_HINT_VALUE: usize = 256;
/// How a hint value starts: the value is `open` or `open <origin>`.
pub const HINT_VALUE_TAG: &str = "open";

/// The longest `origin` accepted, so that a value always fits [`MAX_HINT_VALUE`].
pub(super) const MAX_ORIGIN: usize = MAX_HINT_VALUE - HINT_VALUE_TAG.len() - 1;

/// The Redis key of the hint for the breaker `name` under `prefix`.
///
/// Bytes outside `A-Z a-z 0-9 - . _ :` are percent-encoded (`%` itself included), so distinct
/// names always get distinct keys, and no name can add a glob character, a cluster hash tag
/// (`{...}`), whitespace or a control character to a key: `llm:openai/gpt-4` becomes
/// `cb:hint:llm:openai%2Fgpt-4`.
pub fn encode_key(prefix: &str, name: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut key = String::with_capacity(prefix.len() + name.len());
    key.push_str(prefix);
    for &b in name.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':') {
            key.push(char::from(b));
        } else {
            key.push('%');
            key.push(char::from(HEX[usize::from(b >> 4)]));
            key.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    key
}

/// The value every hint of a process with this `origin` carries: `open <origin>`, or `open`
/// for an empty origin.
pub(super) fn value_for(origin: &str) -> String {
    if origin.is_empty() {
        HINT_VALUE_TAG.to_owned()
    } else {
        format!("{HINT_VALUE_TAG} {origin}")
    }
}

/// A hint value as read: `Ok(origin)` for `open` / `open <origin>`, else why it is ignored.
pub(super) fn parse_value(value: &[u8]) -> Result<String, String> {
    if value.len() > MAX_HINT_VALUE {
        return Err(format!("value longer than {MAX_HINT_VALUE} bytes"));
    }
    let rest = value
        .strip_prefix(HINT_VALUE_TAG.as_bytes())
        .ok_or_else(|| format!("value does not start with `{HINT_VALUE_TAG}`"))?;
    match rest {
        [] => Ok(String::new()),
        // The origin is text from Redis, written only into log lines: escaped here, so that
        // no control character from another process (or an attacker with Redis access) reaches
        // the log.
        [b' ', origin @ ..] => Ok(LogSafe(&String::from_utf8_lossy(origin)).to_string()),
        _ => Err(format!("value does not start with `{HINT_VALUE_TAG}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_origin_reaches_the_log_without_control_characters() {
        let mut value = format!("{HINT_VALUE_TAG} replica-a").into_bytes();
        value.extend_from_slice(b"\r\nINFO forged\x1b[31m");
        let origin = parse_value(&value).unwrap();
        assert!(!origin.chars().any(char::is_control), "{origin:?}");
        assert_eq!(origin, "replica-a\\r\\nINFO forged\\u{1b}[31m");
    }

    #[test]
    fn keys_encode_names_injectively_and_safely() {
        assert_eq!(
            encode_key("cb:hint:", "productService"),
            "cb:hint:productService"
        );
        assert_eq!(
            encode_key("cb:hint:", "llm:openai/gpt-4"),
            "cb:hint:llm:openai%2Fgpt-4"
        );
        assert_eq!(encode_key("p:", "a b*{x}\n%"), "p:a%20b%2A%7Bx%7D%0A%25");
        assert_eq!(encode_key("p:", "é"), "p:%C3%A9");
        // `%` is escaped, so an encoded-looking name cannot collide with the name it encodes.
        assert_ne!(encode_key("p:", "a/b"), encode_key("p:", "a%2Fb"));
        let key = encode_key("p:", "*?[]{} \r\n\"'\\");
        assert!(key[2..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:%".contains(&b)));
    }

    #[test]
    fn values_are_parsed_strictly() {
        assert_eq!(parse_value(b"open"), Ok(String::new()));
        assert_eq!(parse_value(b"open pod-a"), Ok("pod-a".to_owned()));
        assert!(parse_value(b"opened").is_err());
        assert!(parse_value(b"1").is_err());
        assert!(parse_value(b"").is_err());
        let long = [b"open ".as_slice(), &[b'x'; MAX_HINT_VALUE]].concat();
        assert!(parse_value(&long).unwrap_err().contains("longer"));
    }

    #[test]
    fn every_written_value_parses_back_to_its_origin() {
        assert_eq!(value_for(""), "open");
        assert_eq!(value_for("pod-a"), "open pod-a");
        let longest = "x".repeat(MAX_ORIGIN);
        assert_eq!(value_for(&longest).len(), MAX_HINT_VALUE);
        assert_eq!(parse_value(value_for(&longest).as_bytes()), Ok(longest));
    }
}
