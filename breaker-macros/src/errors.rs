//! `Errors`: every mistake found, reported together (serde's `Ctxt`).

use std::fmt::Display;

use proc_macro2::Span;

/// Collects errors so that the user sees every mistake at once, not just the first.
///
/// In debug builds, dropping it without calling [`Errors::finish`] panics, so that no code
/// path can forget to report what it collected.
pub(crate) struct Errors {
    combined: Option<syn::Error>,
    finished: bool,
}

impl Errors {
    pub(crate) fn new() -> Errors {
        Errors {
            combined: None,
            finished: false,
        }
    }

    /// Records an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// Records `message` at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records `message` spanning the tokens of `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl quote::ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// All recorded errors as one, if any.
    pub(crate) fn finish(mut self) -> syn::Result<()> {
        self.finished = true;
        match self.combined.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.finished && !std::thread::panicking() {
            debug_assert!(false, "Errors dropped without finish()");
        }
    }
}
