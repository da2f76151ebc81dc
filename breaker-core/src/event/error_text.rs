//! The text of the error a failed call ended with, for the listeners that asked for it:
//! [`ErrorText`], and the bounded writer that cuts it. Resilience4j's events carry the
//! throwable, and its actuator writes `throwable.toString()` as an event's `errorMessage`;
//! this is the Rust counterpart, built only when someone listens for it.

use std::any::Any;
use std::error::Error;
use std::fmt;
use std::sync::Arc;

use crate::error::{BulkheadFull, CallNotPermitted, CallTimedOut};

/// The error a failed (or ignored) call ended with, as the listeners that asked for error
/// texts see it on its event ([`Event::error`](crate::Event::error)): the error's type name
/// and, where the breaker could find one, its `Display` text, bounded.
///
/// The breaker's call paths are generic over an error type without a `Display` bound, so the
/// type name (`std::any::type_name`) is always there and the text is found, in this order:
///
/// 1. from the call's classification ([`Classify::error_text`](crate::Classify::error_text)):
///    `#[circuit_breaker]` passes its function's error type's `Display` when the type has one;
///    [`Described`](crate::Described) does the same for a hand-written call; the reqwest
///    middleware describes its errors so;
/// 2. else for the error types the breaker knows through `Any`: `std::io::Error`, `String`,
///    `&'static str`, boxed and counted `dyn Error` (tower's `BoxError`), and the breaker's own
///    errors (a rejection, a timeout, a bulkhead's refusal); a panic is its message, and an
///    `Ok` counted as a failure is its type's name with "the call's result was recorded as a
///    failure";
/// 3. else none: the type name alone.
///
/// The text is at most [`MAX_TEXT_BYTES`](ErrorText::MAX_TEXT_BYTES), cut at a character
/// boundary and ending with `…` when cut. It is built for a failure or an ignored error only
/// while a listener that asked for error texts hears the breaker: once (one allocation), shared
/// by every such listener; never for a success.
///
/// Its `Display` is Resilience4j's `errorMessage` shape, `type: text` (or the type alone):
/// `std::io::error::Error: connection reset`. The text is the error's own, unescaped: write it
/// to JSON through serde, and to a log line through [`LogSafe`](crate::LogSafe).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorText {
    type_name: &'static str,
    text: Option<Arc<str>>,
    cut: bool,
}

/// Writes `error`'s `Display` text: what [`Classify::error_text`](crate::Classify::error_text)
/// returns for an error type that has one.
pub type DescribeError<E> = fn(&E, &mut fmt::Formatter<'_>) -> fmt::Result;

impl ErrorText {
    /// The most bytes a text holds, the `…` that marks a cut text included.
    pub const MAX_TEXT_BYTES: usize = 256;

    /// What marks a text cut at [`MAX_TEXT_BYTES`](ErrorText::MAX_TEXT_BYTES).
    const CUT: &'static str = "…";

    /// The error's type, as `std::any::type_name` writes it (`std::io::error::Error`).
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// The error's `Display` text, bounded; `None` where the breaker found no way to write it
    /// (see [`ErrorText`] for where it looks).
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// Whether the text was longer than [`MAX_TEXT_BYTES`](ErrorText::MAX_TEXT_BYTES) and was
    /// cut (it then ends with `…`).
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// A text with the given parts, for tests of code that reads events (a listener's own
    /// tests): `text` is bounded and cut as the breaker cuts it.
    pub fn new(type_name: &'static str, text: Option<&str>) -> ErrorText {
        match text {
            Some(text) => ErrorText::written(type_name, |out| out.write_str(text)),
            None => ErrorText::type_only(type_name),
        }
    }

    /// The type name alone.
    pub(crate) fn type_only(type_name: &'static str) -> ErrorText {
        ErrorText {
            type_name,
            text: None,
            cut: false,
        }
    }

    /// The text `write` writes, bounded (one allocation, for the text).
    pub(crate) fn written(
        type_name: &'static str,
        write: impl FnOnce(&mut dyn fmt::Write) -> fmt::Result,
    ) -> ErrorText {
        let mut bounded = Bounded::new();
        // An error here is the bound's own (which stops the writing) or the error's `Display`
        // failing: either way, what was written so far is the text.
        let _ = write(&mut bounded);
        let (text, cut) = bounded.finish();
        ErrorText {
            type_name,
            text: Some(Arc::from(text)),
            cut,
        }
    }

    /// The text of `error`: written by `describe` if given, else found through [`Any`] for
    /// the types the breaker knows, else the type name alone.
    #[cold]
    #[inline(never)]
    pub(crate) fn of_error<E: 'static>(error: &E, describe: Option<DescribeError<E>>) -> ErrorText {
        let type_name = std::any::type_name::<E>();
        if let Some(describe) = describe {
            return ErrorText::written(type_name, |out| write!(out, "{}", With(error, describe)));
        }
        match known_display(error) {
            Some(display) => ErrorText::written(type_name, |out| write!(out, "{display}")),
            None => ErrorText::type_only(type_name),
        }
    }

    /// The text of an `Ok` value of type `T` that the classification counted as a failure or
    /// an ignored error (Resilience4j's `ResultRecordedAsFailureException`).
    #[cold]
    #[inline(never)]
    pub(crate) fn of_value<T>(failed: bool) -> ErrorText {
        let text = match failed {
            true => "the call's result was recorded as a failure",
            false => "the call's result was ignored",
        };
        ErrorText::new(std::any::type_name::<T>(), Some(text))
    }

    /// The text of a panic's payload (`panic!`'s message), if it is one.
    #[cold]
    pub(crate) fn of_panic(payload: &(dyn Any + Send)) -> ErrorText {
        let message = payload
            .downcast_ref::<&'static str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        ErrorText::new("panic", message)
    }
}

impl fmt::Display for ErrorText {
    /// `type: text`, or the type alone: Resilience4j's `throwable.toString()` shape.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.type_name)?;
        if let Some(text) = &self.text {
            f.write_str(": ")?;
            f.write_str(text)?;
        }
        Ok(())
    }
}

/// `error` written by `describe`, as a `Display`.
struct With<'a, E>(&'a E, DescribeError<E>);

impl<E> fmt::Display for With<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.1)(self.0, f)
    }
}

/// The `Display` of the error types the breaker knows without being told: the common ones of
/// std (`io::Error`, strings, boxed and counted `dyn Error`, as tower's `BoxError`) and the
/// breaker's own.
fn known_display(error: &dyn Any) -> Option<&dyn fmt::Display> {
    macro_rules! known {
        ($($ty:ty),* $(,)?) => {
            $(
                if let Some(e) = error.downcast_ref::<$ty>() {
                    return Some(e);
                }
            )*
        };
    }
    known!(
        std::io::Error,
        String,
        &'static str,
        Box<dyn Error + Send + Sync>,
        Box<dyn Error + Send>,
        Box<dyn Error>,
        Arc<dyn Error + Send + Sync>,
        CallNotPermitted,
        CallTimedOut,
        BulkheadFull,
    );
    None
}

/// A `fmt::Write` into a fixed buffer of [`ErrorText::MAX_TEXT_BYTES`]: what does not fit is
/// cut at a character boundary, leaving room for the mark, and the writing stops there.
struct Bounded {
    buf: [u8; ErrorText::MAX_TEXT_BYTES],
    len: usize,
    cut: bool,
}

impl Bounded {
    fn new() -> Bounded {
        Bounded {
            buf: [0; ErrorText::MAX_TEXT_BYTES],
            len: 0,
            cut: false,
        }
    }

    fn push(&mut self, s: &str) {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
    }

    /// The text written, and whether it was cut.
    fn finish(&self) -> (&str, bool) {
        // Only whole `&str`s and char-boundary prefixes of them were copied in.
        let text = std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default();
        (text, self.cut)
    }
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.cut {
            return Err(fmt::Error);
        }
        if self.len + s.len() <= ErrorText::MAX_TEXT_BYTES {
            self.push(s);
            return Ok(());
        }
        // Too long: the longest prefix that leaves room for the mark, at a char boundary. (Text
        // already written may have used the room: then the mark goes after a shorter cut.)
        let room = ErrorText::MAX_TEXT_BYTES - ErrorText::CUT.len();
        if self.len > room {
            self.len = room;
            while !self.is_boundary() {
                self.len -= 1;
            }
        }
        let mut take = (room - self.len).min(s.len());
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.push(&s[..take]);
        self.push(ErrorText::CUT);
        self.cut = true;
        Err(fmt::Error)
    }
}

impl Bounded {
    /// Whether `len` ends on a character boundary of what is written.
    fn is_boundary(&self) -> bool {
        self.len == 0 || self.buf.get(self.len).is_none_or(|b| (*b as i8) >= -0x40)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_kept_whole() {
        let t = ErrorText::new("my::Error", Some("connection reset"));
        assert_eq!(t.text(), Some("connection reset"));
        assert!(!t.is_cut());
        assert_eq!(t.to_string(), "my::Error: connection reset");
        assert_eq!(ErrorText::new("my::Error", None).to_string(), "my::Error");
    }

    #[test]
    fn a_long_text_is_cut_at_a_char_boundary_and_marked() {
        // 300 two-byte characters: the cut must not split one.
        let long = "é".repeat(300);
        let t = ErrorText::new("x", Some(&long));
        let text = t.text().unwrap();
        assert!(t.is_cut());
        assert!(text.len() <= ErrorText::MAX_TEXT_BYTES, "{}", text.len());
        assert!(text.ends_with('…'));
        assert!(text.trim_end_matches('…').chars().all(|c| c == 'é'));
        // Exactly at the bound: not cut.
        let exact = "a".repeat(ErrorText::MAX_TEXT_BYTES);
        let t = ErrorText::new("x", Some(&exact));
        assert_eq!((t.text().unwrap().len(), t.is_cut()), (exact.len(), false));
        // Written in pieces: cut in the piece that overflows, earlier pieces kept.
        let t = ErrorText::written("x", |out| {
            out.write_str(&"a".repeat(250))?;
            out.write_str("bcdefghij")
        });
        let text = t.text().unwrap();
        assert_eq!(text.len(), ErrorText::MAX_TEXT_BYTES);
        assert!(text.starts_with(&"a".repeat(250)) && text.ends_with("bcd…"));
        // A piece that exactly fills the bound, then another: the first is shortened for the
        // mark.
        let t = ErrorText::written("x", |out| {
            out.write_str(&"é".repeat(128))?;
            out.write_str("more")
        });
        let text = t.text().unwrap();
        assert!(t.is_cut() && text.len() <= ErrorText::MAX_TEXT_BYTES && text.ends_with('…'));
    }

    #[test]
    fn known_types_are_described_through_any() {
        let io = std::io::Error::other("connection reset");
        let t = ErrorText::of_error(&io, None);
        assert_eq!(t.type_name(), "std::io::error::Error");
        assert_eq!(t.text(), Some("connection reset"));
        let boxed: Box<dyn Error + Send + Sync> = "refused".into();
        assert_eq!(ErrorText::of_error(&boxed, None).text(), Some("refused"));
        #[derive(Debug)]
        struct Opaque;
        let t = ErrorText::of_error(&Opaque, None);
        assert!(t.type_name().ends_with("Opaque"));
        assert_eq!(t.text(), None);
        let t = ErrorText::of_error(&Opaque, Some(|_, f| f.write_str("described")));
        assert_eq!(t.text(), Some("described"));
    }

    #[test]
    fn a_panic_payload_is_its_message() {
        let payload: Box<dyn Any + Send> = Box::new("index out of bounds");
        assert_eq!(
            ErrorText::of_panic(&*payload).to_string(),
            "panic: index out of bounds"
        );
        let payload: Box<dyn Any + Send> = Box::new(42u8);
        assert_eq!(ErrorText::of_panic(&*payload).to_string(), "panic");
    }
}
