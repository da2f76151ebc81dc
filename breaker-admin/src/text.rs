//! Text as Resilience4j's actuator prints it (Java's `Float.toString`, a `ZonedDateTime` in
//! a UTC JVM), and outside text cut for an error message.

use std::fmt::Write;

use breaker_core::Timestamp;

/// A percentage as Resilience4j's actuator writes it: Java's `Float.toString` of the value, then
/// `%` (`"50.0%"`, `"-1.0%"`, `"33.333332%"`).
pub(crate) fn percent(value: f32) -> String {
    let mut text = java_float(value);
    text.push('%');
    text
}

/// Java's `Float.toString`: the shortest decimal that reads back as the same `f32`, written
/// with at least one digit after the point, in plain notation from 10^-3 up to 10^7 and in
/// Java's scientific notation (`1.0E-4`, `1.5E7`) outside it.
pub(crate) fn java_float(value: f32) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    // Rust's `{:e}` gives the same shortest digits: `d[.ddd]e[-]n`.
    let sci = format!("{:e}", value.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if value < 0.0 {
        out.push('-');
    }
    if (-3..7).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        } else {
            let whole = exponent as usize + 1;
            if digits.len() > whole {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            } else {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
                out.push_str(".0");
            }
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        let _ = write!(out, "E{exponent}");
    }
    out
}

/// A timestamp as Java's `ZonedDateTime.toString()` prints it in a JVM whose zone is UTC, which
/// is how Resilience4j's event DTOs write `creationTime` (the event's `ZonedDateTime.now()` in
/// the JVM's zone): `2023-11-14T22:13:20Z[UTC]`, `2023-11-14T22:13:20.250Z[UTC]`. The zone is
/// the region `UTC` (what `ZoneId.systemDefault()` is with `TZ=UTC`), not the offset
/// `ZoneOffset.UTC`, so the offset `Z` is followed by the zone's name in brackets. As Java's
/// `LocalTime` does, the seconds are left out when they and the fraction are zero (`22:13Z`),
/// and the fraction has 3, 6 or 9 digits, the fewest that hold it.
pub(crate) fn zoned_utc(at: Timestamp) -> String {
    let nanos = at.unix_nanos();
    let seconds = nanos / 1_000_000_000;
    let fraction = (nanos % 1_000_000_000) as u32;
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    let mut out = String::with_capacity(36);
    let _ = write!(out, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}");
    if second > 0 || fraction > 0 {
        let _ = write!(out, ":{second:02}");
        if fraction > 0 {
            if fraction.is_multiple_of(1_000_000) {
                let _ = write!(out, ".{:03}", fraction / 1_000_000);
            } else if fraction.is_multiple_of(1_000) {
                let _ = write!(out, ".{:06}", fraction / 1_000);
            } else {
                let _ = write!(out, ".{fraction:09}");
            }
        }
    }
    out.push_str("Z[UTC]");
    out
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// At most this many characters of outside text go into an error message.
pub(crate) const ECHO_CHARS: usize = 200;

/// `text` cut to [`ECHO_CHARS`] characters (with `...` when cut), for an error message that
/// names what the request sent; serde_json escapes it in the body.
pub(crate) fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_java_prints_them() {
        let cases = [
            (-1.0, "-1.0"),
            (0.0, "0.0"),
            (50.0, "50.0"),
            (100.0, "100.0"),
            (33.333_332, "33.333332"),
            (66.66667, "66.66667"),
            (12.5, "12.5"),
            (0.001, "0.001"),
            (0.012_5, "0.0125"),
            (1.0e-4, "1.0E-4"),
            (1.25e-5, "1.25E-5"),
            (1.0e7, "1.0E7"),
            (9_999_999.0, "9999999.0"),
            (1.5e10, "1.5E10"),
        ];
        for (value, java) in cases {
            assert_eq!(java_float(value), java, "{value:?}");
        }
        assert_eq!(percent(-1.0), "-1.0%");
        assert_eq!(percent(50.0), "50.0%");
    }

    #[test]
    fn timestamps_read_as_java_prints_a_zoned_date_time_in_a_utc_jvm() {
        let at = |ms: u64| Timestamp::from_unix_millis(ms);
        assert_eq!(
            zoned_utc(at(1_700_000_000_000)),
            "2023-11-14T22:13:20Z[UTC]"
        );
        assert_eq!(
            zoned_utc(at(1_700_000_000_250)),
            "2023-11-14T22:13:20.250Z[UTC]"
        );
        assert_eq!(zoned_utc(at(1_699_999_980_000)), "2023-11-14T22:13Z[UTC]");
        assert_eq!(zoned_utc(at(0)), "1970-01-01T00:00Z[UTC]");
        assert_eq!(zoned_utc(at(951_782_400_000)), "2000-02-29T00:00Z[UTC]");
        assert_eq!(
            zoned_utc(at(4_107_542_399_999)),
            "2100-02-28T23:59:59.999Z[UTC]"
        );
        let nanos = |n: u64| Timestamp::from_unix_nanos(n);
        // A whole second with a fraction of zero keeps its seconds only when they are not 0.
        assert_eq!(zoned_utc(nanos(1_000_000_000)), "1970-01-01T00:00:01Z[UTC]");
        assert_eq!(zoned_utc(nanos(60_000_000_000)), "1970-01-01T00:01Z[UTC]");
        // 0 seconds with a fraction: the seconds are written.
        assert_eq!(
            zoned_utc(nanos(60_100_000_000)),
            "1970-01-01T00:01:00.100Z[UTC]"
        );
        assert_eq!(
            zoned_utc(nanos(1_000_001_000)),
            "1970-01-01T00:00:01.000001Z[UTC]"
        );
        assert_eq!(
            zoned_utc(nanos(1_000_000_001)),
            "1970-01-01T00:00:01.000000001Z[UTC]"
        );
        assert_eq!(
            zoned_utc(nanos(1_120_000_000)),
            "1970-01-01T00:00:01.120Z[UTC]"
        );
        assert_eq!(
            zoned_utc(nanos(1_123_400_000)),
            "1970-01-01T00:00:01.123400Z[UTC]"
        );
    }

    #[test]
    fn echoed_text_is_cut() {
        assert_eq!(echo("short"), "short");
        let long = "é".repeat(ECHO_CHARS + 5);
        assert_eq!(echo(&long), format!("{}...", "é".repeat(ECHO_CHARS)));
    }
}
