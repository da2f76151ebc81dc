//! Values as written in a file, and what each key accepts.

use std::borrow::Cow;
use std::time::Duration;

use crate::config::table::{self, Value, ValueKind, MAX_DURATION};
use crate::config::SlidingWindowType;
use crate::state::State;

/// A value as the file wrote it. Properties give only text; TOML gives types.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Raw {
    Text(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    /// A TOML array of strings, or a properties list written with indexes (`key[0]=a`).
    List(Vec<String>),
}

impl Raw {
    /// The value as it reads in the file, for error messages.
    pub(crate) fn display(&self) -> String {
        match self {
            Raw::Text(s) => s.clone(),
            Raw::Integer(i) => i.to_string(),
            Raw::Float(f) => f.to_string(),
            Raw::Bool(b) => b.to_string(),
            Raw::List(items) => format!("[{}]", items.join(", ")),
        }
    }
}

/// What a kind of value accepts, in words.
pub(crate) fn expected(kind: ValueKind) -> Cow<'static, str> {
    let words = match kind {
        ValueKind::WindowType => "COUNT_BASED or TIME_BASED",
        ValueKind::Count => "a whole number (for example 10)",
        ValueKind::Percent => return format!("{} (for example 50 or 62.5)", table::PERCENT).into(),
        ValueKind::Decimal => "a decimal number (for example 1.5)",
        ValueKind::Duration => {
            "a duration such as 500ms, 10s, 2m, 1h or PT10S \
             (a bare number is milliseconds, as in Spring)"
        }
        ValueKind::Bool => "true or false",
        ValueKind::OpenOrClosed => "OPEN or CLOSED",
        ValueKind::Kinds => {
            "a list of error kind names registered in code \
             (comma-separated or indexed in .properties, a list or a comma-separated string \
             in YAML, an array of strings in TOML)"
        }
        ValueKind::Name => "the name of a shared config (configs.<name>)",
    };
    words.into()
}

/// Why a value does not fit its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Misfit {
    /// Not a value of the kind at all (the caller reports [`expected`]).
    NotOfKind,
    /// A value of the kind, too large for any key of it: a whole number past `u32`, a duration
    /// past [`MAX_DURATION`] (the caller reports the key's largest value).
    TooLarge,
}

/// Checks `raw` against `kind`.
pub(crate) fn interpret(kind: ValueKind, raw: &Raw) -> Result<Value, Misfit> {
    use Misfit::NotOfKind;
    match kind {
        ValueKind::Count => match raw {
            Raw::Integer(i) if *i < 0 => Err(NotOfKind),
            Raw::Integer(i) => u32::try_from(*i)
                .map(Value::Count)
                .map_err(|_| Misfit::TooLarge),
            Raw::Text(s) => parse_u32(s.trim()).map(Value::Count),
            _ => Err(NotOfKind),
        },
        ValueKind::Duration => match raw {
            Raw::Integer(ms) => {
                let ms = u64::try_from(*ms).map_err(|_| NotOfKind)?;
                bounded(u128::from(ms) * 1_000_000).map(Value::Duration)
            }
            Raw::Text(s) => parse_duration(s).map(Value::Duration),
            _ => Err(NotOfKind),
        },
        other => interpret_other(other, raw).ok_or(NotOfKind),
    }
}

/// The kinds that are never too large.
fn interpret_other(kind: ValueKind, raw: &Raw) -> Option<Value> {
    match kind {
        ValueKind::WindowType => match lenient_enum(text(raw)?).as_str() {
            "countbased" => Some(Value::WindowType(SlidingWindowType::CountBased)),
            "timebased" => Some(Value::WindowType(SlidingWindowType::TimeBased)),
            _ => None,
        },
        ValueKind::Count | ValueKind::Duration => unreachable!("read by `interpret`"),
        ValueKind::Percent => {
            let value = match raw {
                Raw::Integer(i) => *i as f64,
                Raw::Float(f) => *f,
                Raw::Text(s) => parse_decimal(s.trim())?,
                _ => return None,
            };
            // Range checks (0, 100] happen when the config is built; here only finiteness.
            let value = value as f32;
            value.is_finite().then_some(Value::Percent(value))
        }
        ValueKind::Decimal => {
            let value = match raw {
                Raw::Integer(i) => *i as f64,
                Raw::Float(f) => *f,
                Raw::Text(s) => parse_decimal(s.trim())?,
                _ => return None,
            };
            // Range checks happen when the config is built; here only finiteness.
            value.is_finite().then_some(Value::Decimal(value))
        }
        ValueKind::Bool => match raw {
            Raw::Bool(b) => Some(Value::Bool(*b)),
            // The words Spring's boolean conversion accepts.
            Raw::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "on" | "yes" | "1" => Some(Value::Bool(true)),
                "false" | "off" | "no" | "0" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        },
        ValueKind::OpenOrClosed => match lenient_enum(text(raw)?).as_str() {
            "open" => Some(Value::State(State::Open)),
            "closed" => Some(Value::State(State::Closed)),
            _ => None,
        },
        ValueKind::Kinds => match raw {
            Raw::List(items) => {
                let items: Vec<String> = items.iter().map(|s| s.trim().to_owned()).collect();
                items
                    .iter()
                    .all(|s| !s.is_empty())
                    .then_some(Value::Kinds(items))
            }
            Raw::Text(s) if s.trim().is_empty() => Some(Value::Kinds(Vec::new())),
            Raw::Text(s) => {
                let items: Vec<String> = s.split(',').map(|s| s.trim().to_owned()).collect();
                items
                    .iter()
                    .all(|s| !s.is_empty())
                    .then_some(Value::Kinds(items))
            }
            _ => None,
        },
        ValueKind::Name => {
            let name = text(raw)?.trim();
            (!name.is_empty()).then(|| Value::Name(name.to_owned()))
        }
    }
}

fn text(raw: &Raw) -> Option<&str> {
    match raw {
        Raw::Text(s) => Some(s),
        _ => None,
    }
}

/// Spring's lenient enum binding: case and `-`/`_` do not matter (`COUNT_BASED`, `count-based`,
/// `countBased`).
fn lenient_enum(s: &str) -> String {
    s.trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A whole number; one of more digits than any `u32` is too large, not malformed.
fn parse_u32(s: &str) -> Result<u32, Misfit> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Misfit::NotOfKind);
    }
    digits.parse().map_err(|_| Misfit::TooLarge)
}

/// The digits of a whole number, read without overflow: more than `u64` holds is too large.
fn parse_digits(s: &str) -> Result<u64, Misfit> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Misfit::NotOfKind);
    }
    s.parse().map_err(|_| Misfit::TooLarge)
}

/// A plain decimal number (`50`, `62.5`); no exponent, no `inf`/`nan`.
fn parse_decimal(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) || body.len() > 64 {
        return None;
    }
    s.parse().ok()
}

/// A duration in Spring's two formats: simple (`500ms`, `10s`, `2m`, `1h`, `1d`, `100ns`,
/// `100us`; a bare number is milliseconds) and ISO-8601 (`PT10S`, `PT0.5S`, `P1DT2H`).
/// Negative durations are rejected; one longer than [`MAX_DURATION`] is too large.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, Misfit> {
    let s = s.trim();
    let unsigned = s.strip_prefix('+').unwrap_or(s);
    if unsigned.starts_with(['P', 'p']) {
        return parse_iso_duration(&unsigned[1..]);
    }
    let split = unsigned
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(unsigned.len());
    let (number, unit) = unsigned.split_at(split);
    let nanos_per_unit: u128 = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1,
        "us" => 1_000,
        "" | "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(Misfit::NotOfKind),
    };
    let n = parse_digits(number)?;
    bounded(u128::from(n) * nanos_per_unit)
}

/// The part after `P` of an ISO-8601 duration, as Java's `Duration.parse` reads it (days,
/// hours, minutes, seconds with up to 9 decimals), without signs.
fn parse_iso_duration(rest: &str) -> Result<Duration, Misfit> {
    use Misfit::NotOfKind;
    let upper = rest.to_ascii_uppercase();
    let (date, time) = match upper.split_once('T') {
        Some((date, time)) => {
            if time.is_empty() {
                return Err(NotOfKind);
            }
            (date, Some(time))
        }
        None => (upper.as_str(), None),
    };
    // Each part is below 2^64 units of at most a day (2^47 ns): the sum fits in a u128.
    let mut nanos: u128 = 0;
    let mut any = false;
    if !date.is_empty() {
        let days = date.strip_suffix('D').ok_or(NotOfKind)?;
        nanos += u128::from(parse_digits(days)?) * 86_400_000_000_000;
        any = true;
    }
    if let Some(mut time) = time {
        for (unit, scale) in [('H', 3_600_000_000_000u128), ('M', 60_000_000_000)] {
            if let Some(at) = time.find(unit) {
                let (n, after) = time.split_at(at);
                nanos += u128::from(parse_digits(n)?) * scale;
                time = &after[1..];
                any = true;
            }
        }
        if !time.is_empty() {
            let seconds = time.strip_suffix('S').ok_or(NotOfKind)?;
            let (whole, frac) = match seconds.split_once(['.', ',']) {
                Some((w, f)) => (w, f),
                None => (seconds, ""),
            };
            if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(NotOfKind);
            }
            nanos += u128::from(parse_digits(whole)?) * 1_000_000_000;
            if !frac.is_empty() {
                let padded = format!("{frac:0<9}");
                nanos += padded.parse::<u128>().map_err(|_| NotOfKind)?;
            }
            any = true;
        }
    }
    if !any {
        return Err(NotOfKind);
    }
    bounded(nanos)
}

/// `nanos` as a duration, if it is at most [`MAX_DURATION`].
fn bounded(nanos: u128) -> Result<Duration, Misfit> {
    if nanos > MAX_DURATION.as_nanos() {
        return Err(Misfit::TooLarge);
    }
    // At most MAX_DURATION, so the seconds fit in u64; the remainder is below 1e9.
    let secs = (nanos / 1_000_000_000) as u64;
    let sub = (nanos % 1_000_000_000) as u32;
    Ok(Duration::new(secs, sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_spring() {
        let ok = |s: &str, d: Duration| assert_eq!(parse_duration(s), Ok(d), "{s}");
        ok("10s", Duration::from_secs(10));
        ok("500ms", Duration::from_millis(500));
        ok("2m", Duration::from_secs(120));
        ok("1h", Duration::from_secs(3600));
        ok("1d", Duration::from_secs(86_400));
        ok("250us", Duration::from_micros(250));
        ok("7ns", Duration::from_nanos(7));
        ok("2000", Duration::from_millis(2000));
        ok(" 10S ", Duration::from_secs(10));
        ok("PT10S", Duration::from_secs(10));
        ok("pt0.5s", Duration::from_millis(500));
        ok("PT1M30S", Duration::from_secs(90));
        ok("P1DT2H", Duration::from_secs(86_400 + 7200));
        ok("0s", Duration::ZERO);
        for bad in [
            "", "s", "-1s", "1.5s", "10 s", "10sec", "P", "PT", "PT1X", "P1H", "1e3",
        ] {
            assert_eq!(parse_duration(bad), Err(Misfit::NotOfKind), "{bad}");
        }
        ok("36500d", MAX_DURATION);
        for large in [
            "36501d",
            "999999999999d",
            "99999999999999999999s",
            "99999999999999999999999d",
            "PT99999999999999999999S",
            "P36501D",
        ] {
            assert_eq!(parse_duration(large), Err(Misfit::TooLarge), "{large}");
        }
    }

    #[test]
    fn numbers_and_enums_are_lenient_as_spring_is() {
        let count = |raw: Raw| interpret(ValueKind::Count, &raw);
        assert_eq!(count(Raw::Text(" 10 ".into())), Ok(Value::Count(10)));
        assert_eq!(count(Raw::Integer(10)), Ok(Value::Count(10)));
        assert_eq!(count(Raw::Integer(-1)), Err(Misfit::NotOfKind));
        assert_eq!(count(Raw::Text("1.0".into())), Err(Misfit::NotOfKind));
        assert_eq!(count(Raw::Text("4294967296".into())), Err(Misfit::TooLarge));
        assert_eq!(count(Raw::Integer(4_294_967_296)), Err(Misfit::TooLarge));
        let window = |s: &str| interpret(ValueKind::WindowType, &Raw::Text(s.into()));
        for s in ["COUNT_BASED", "count-based", "countBased"] {
            assert_eq!(
                window(s),
                Ok(Value::WindowType(SlidingWindowType::CountBased))
            );
        }
        assert_eq!(window("SLIDING"), Err(Misfit::NotOfKind));
        let percent = |s: &str| interpret(ValueKind::Percent, &Raw::Text(s.into()));
        assert_eq!(percent("62.5"), Ok(Value::Percent(62.5)));
        assert_eq!(percent("NaN"), Err(Misfit::NotOfKind));
        assert_eq!(percent("1e2"), Err(Misfit::NotOfKind));
        let decimal = |s: &str| interpret(ValueKind::Decimal, &Raw::Text(s.into()));
        assert_eq!(decimal("1.5"), Ok(Value::Decimal(1.5)));
        assert_eq!(decimal("2"), Ok(Value::Decimal(2.0)));
        assert_eq!(decimal("inf"), Err(Misfit::NotOfKind));
        let kinds = |s: &str| interpret(ValueKind::Kinds, &Raw::Text(s.into()));
        assert_eq!(
            kinds("a, b"),
            Ok(Value::Kinds(vec!["a".into(), "b".into()]))
        );
        assert_eq!(kinds(""), Ok(Value::Kinds(vec![])));
        assert_eq!(kinds("a,,b"), Err(Misfit::NotOfKind));
    }
}
