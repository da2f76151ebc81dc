//! A registry's tags: Spring's `resilience4j.circuitbreaker.tags.<name>=<value>`, added to
//! every metric the registry exports.
//!
//! A tag comes from code ([`RegistryBuilder::tag`](crate::RegistryBuilder::tag)) or from a
//! file, whose text is not trusted; both pass [`check`], so a tag that reaches the exporter is
//! a valid Prometheus label:
//!
//! - the name is written as in the file, with every `-` and `.` made `_` (`app.version` is the
//!   label `app_version`, as Micrometer's Prometheus naming makes it), and must then be a
//!   Prometheus label name: an ASCII letter or `_`, then letters, digits and `_`; names
//!   starting with `__` (Prometheus's own) and the labels the breaker's metrics already carry
//!   are refused;
//! - the value is any text without control characters, not empty, and not a Spring
//!   placeholder (`${...}`), which breaker does not resolve;
//! - at most [`MAX_TAGS`] tags, names of at most [`MAX_NAME_LEN`] bytes and values of at most
//!   [`MAX_VALUE_LEN`] bytes.

/// Most tags a registry takes.
pub(crate) const MAX_TAGS: usize = 32;
/// Longest tag name, in bytes (after `-` and `.` became `_`).
pub(crate) const MAX_NAME_LEN: usize = 64;
/// Longest tag value, in bytes.
pub(crate) const MAX_VALUE_LEN: usize = 256;

/// Labels that Resilience4j's metric names already carry, and the histogram's: a tag of one of
/// these names would clash with them.
pub(crate) const RESERVED: [&str; 5] = ["name", "state", "kind", "le", "quantile"];

/// What is wrong with a tag: which part, and what it should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TagProblem {
    /// `name` or `value`.
    pub(crate) part: &'static str,
    /// What was expected, in words.
    pub(crate) expected: String,
}

/// A tag name as a label: every `-` and `.` made `_`.
pub(crate) fn label_name(raw: &str) -> String {
    raw.chars()
        .map(|c| if c == '-' || c == '.' { '_' } else { c })
        .collect()
}

/// Checks one tag; returns its label name and its value.
pub(crate) fn check(name: &str, value: &str) -> Result<(String, String), TagProblem> {
    let label = label_name(name);
    let name_rule = || TagProblem {
        part: "name",
        expected: format!(
            "a tag name of at most {MAX_NAME_LEN} ASCII letters, digits, `_`, `-` or `.`, \
             starting with a letter or `_` (not `__`), other than {}",
            RESERVED.join(", ")
        ),
    };
    let mut chars = label.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        || label.len() > MAX_NAME_LEN
        || label.starts_with("__")
        || RESERVED.contains(&label.as_str())
    {
        return Err(name_rule());
    }
    if value.is_empty()
        || value.len() > MAX_VALUE_LEN
        || value.chars().any(char::is_control)
        || value.contains("${")
    {
        return Err(TagProblem {
            part: "value",
            expected: format!(
                "a tag value of 1 to {MAX_VALUE_LEN} bytes without control characters \
                 (a Spring `${{...}}` placeholder is not resolved: write the value itself)"
            ),
        });
    }
    Ok((label, value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_prometheus_labels() {
        assert_eq!(
            check("app.version", "1.2"),
            Ok(("app_version".into(), "1.2".into()))
        );
        assert_eq!(check("env-name", "prod").unwrap().0, "env_name");
        assert_eq!(check("_x9", "é ✓").unwrap().0, "_x9");
        for bad in [
            "",
            "9lives",
            "a b",
            "__meta",
            "name",
            "le",
            "ümlaut",
            &"x".repeat(65),
        ] {
            assert_eq!(check(bad, "v").unwrap_err().part, "name", "{bad:?}");
        }
    }

    #[test]
    fn values_are_bounded_text() {
        for bad in ["", "a\nb", "\u{7}", "${HOSTNAME}", &"v".repeat(257)] {
            assert_eq!(check("env", bad).unwrap_err().part, "value", "{bad:?}");
        }
        assert!(check("env", &"v".repeat(256)).is_ok());
    }
}
