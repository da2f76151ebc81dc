//! Enum names read from a request as Spring Boot reads them: `updateState` in the write
//! operation's body, and the `{eventType}` of the event and stream paths.
//!
//! Spring Boot converts an actuator operation's text parameter to an enum with its lenient
//! converter (the one `ApplicationConversionService` registers for `String` to `Enum`): the
//! text is trimmed (every character up to U+0020 at either end), an empty result is no value,
//! an exact constant name wins, and otherwise the text names the constant whose canonical form
//! it has: its letters and digits only, lower-cased. So `force_open`, `Force-Open`,
//! ` FORCE_OPEN ` and `forceOpen` all name `FORCE_OPEN`, and `force open!` does too.
//!
//! Resilience4j's event endpoints read `{eventType}` with `Type.valueOf(eventType.toUpperCase())`
//! instead; [`event_type`] takes what either rule takes, so every path Resilience4j answers is
//! answered here, and a few more spellings besides.

/// What a candidate's name is compared as: its canonical form, or a sign that it cannot match.
#[derive(Debug, PartialEq, Eq)]
enum Canonical {
    /// Letters and digits, lower-cased, all ASCII.
    Ascii(String),
    /// The text keeps a letter or digit that lower-cases to no ASCII letter: no constant name
    /// (all ASCII) has this canonical form.
    Other,
}

/// The canonical form of `text`: Spring keeps the characters that Java's
/// `Character.isLetterOrDigit` accepts and lower-cases each with `Character.toLowerCase`.
///
/// Java walks UTF-16 code units, and a surrogate is neither a letter nor a digit, so a character
/// outside the Basic Multilingual Plane is dropped, as here. Inside it, Rust's
/// `char::is_alphanumeric` is a little wider than Java's test (it also takes numbers such as
/// `²` and some combining marks, which Java drops); such a character is kept here and the text
/// then names nothing. The difference can only refuse a text Spring would take, never pick
/// another constant. Of the characters outside ASCII, only `İ` (U+0130) and the Kelvin sign
/// (U+212A) lower-case to an ASCII letter in Java (`i`, `k`).
fn canonical(text: &str) -> Canonical {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if c == '\u{130}' {
            out.push('i');
        } else if c == '\u{212A}' {
            out.push('k');
        } else if u32::from(c) <= 0xFFFF && c.is_alphanumeric() {
            return Canonical::Other;
        }
    }
    Canonical::Ascii(out)
}

/// Java's `String.trim()`: every character up to U+0020 gone from both ends.
fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

/// The one of `candidates` that `given` names as Spring Boot's lenient converter reads it,
/// `name` giving each candidate's constant name; `None` when it names none, or when it is empty
/// after trimming (Spring's "no value").
pub(crate) fn spring_enum<T: Copy>(
    given: &str,
    candidates: impl IntoIterator<Item = T> + Clone,
    name: impl Fn(T) -> &'static str,
) -> Option<T> {
    let value = java_trim(given);
    if value.is_empty() {
        return None;
    }
    if let Some(exact) = candidates.clone().into_iter().find(|c| name(*c) == value) {
        return Some(exact);
    }
    let Canonical::Ascii(wanted) = canonical(value) else {
        return None;
    };
    candidates
        .into_iter()
        .find(|c| matches!(canonical(name(*c)), Canonical::Ascii(n) if n == wanted))
}

/// The one of `candidates` that a path's `{eventType}` names: what Resilience4j takes (the
/// segment upper-cased, then the exact name), or what Spring's lenient converter takes.
pub(crate) fn event_type<T: Copy>(
    given: &str,
    candidates: impl IntoIterator<Item = T> + Clone,
    name: impl Fn(T) -> &'static str,
) -> Option<T> {
    let upper = given.to_uppercase();
    candidates
        .clone()
        .into_iter()
        .find(|c| name(*c) == upper)
        .or_else(|| spring_enum(given, candidates, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 4] = ["CLOSE", "FORCE_OPEN", "DISABLE", "METRICS_ONLY"];

    fn spring(given: &str) -> Option<&'static str> {
        spring_enum(given, NAMES, |n| n)
    }

    /// The cases of Spring Boot's own tests for its lenient converter (exact, any case, `_`
    /// `-` or nothing between words, camel case), on `UpdateState`'s names.
    #[test]
    fn spring_takes_any_case_and_any_separator() {
        for given in [
            "FORCE_OPEN",
            "force_open",
            "Force-Open",
            "fOrCe_oPeN",
            "forceopen",
            "forceOpen",
            "force open",
            " FORCE_OPEN ",
            "\tforce-open\n",
            "FORCE__OPEN",
            "_force_open_",
            "force.open!",
        ] {
            assert_eq!(spring(given), Some("FORCE_OPEN"), "{given:?}");
        }
        assert_eq!(spring("metrics-only"), Some("METRICS_ONLY"));
        assert_eq!(spring("Close"), Some("CLOSE"));
        // Java's `İ` lower-cases to `i`.
        assert_eq!(spring("D\u{130}SABLE"), Some("DISABLE"));
    }

    #[test]
    fn spring_refuses_other_names_and_blank_text() {
        for given in [
            "",
            "   ",
            "\n",
            "___",
            "OPEN",
            "CLOSED",
            "FORCED_OPEN",
            "force_opened",
            "forc_open",
            "DISABLED",
        ] {
            assert_eq!(spring(given), None, "{given:?}");
        }
        // A letter outside ASCII stays in the canonical form: it names nothing.
        assert_eq!(spring("FORCE_ÖPEN"), None);
        assert_eq!(spring("ＦＯＲＣＥ_ＯＰＥＮ"), None);
    }

    #[test]
    fn characters_java_does_not_see_as_letters_are_dropped() {
        // Outside the Basic Multilingual Plane Java sees two surrogates, neither a letter.
        assert_eq!(spring("FORCE\u{1F600}_OPEN"), Some("FORCE_OPEN"));
        assert_eq!(spring("FORCE\u{00A0}OPEN"), Some("FORCE_OPEN"));
    }

    #[test]
    fn an_event_type_is_read_as_resilience4j_and_as_spring_read_it() {
        let types = ["STATE_TRANSITION", "IGNORED_ERROR", "SUCCESS"];
        let read = |given: &str| event_type(given, types, |n| n);
        assert_eq!(read("state_transition"), Some("STATE_TRANSITION"));
        assert_eq!(read("stateTransition"), Some("STATE_TRANSITION"));
        assert_eq!(read("state-transition"), Some("STATE_TRANSITION"));
        // Java's `toUpperCase` makes `ı` an `I` and `ſ` an `S`: Resilience4j takes these.
        assert_eq!(read("\u{131}gnored_error"), Some("IGNORED_ERROR"));
        assert_eq!(read("\u{17F}uccess"), Some("SUCCESS"));
        assert_eq!(read("OPEN"), None);
        assert_eq!(read(""), None);
    }
}
