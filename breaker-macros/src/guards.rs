//! The attributes on one function: `#[retry]`, `#[circuit_breaker]` and `#[bulkhead]`, any of
//! them, expand once, together, as Retry(Breaker(Bulkhead(fn))) whatever order they are
//! written in.
//!
//! Rust expands the outermost attribute first, with the others still among the item's
//! attributes. The outermost one takes the others over: it parses their options, removes them
//! from the item, and writes the one expansion. The others never run, so each attempt takes
//! exactly one breaker permit and one bulkhead place, and each call is retried by one retry.

use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::{Meta, Path};

use crate::args::{self, Args, FnPath, Guard};
use crate::errors::Errors;
use crate::item::GuardedFn;

/// The options of each attribute on the function.
pub(crate) struct Guards {
    pub(crate) retry: Option<Args>,
    pub(crate) breaker: Option<Args>,
    pub(crate) bulkhead: Option<Args>,
}

impl Guards {
    /// The attribute being expanded, with its options.
    pub(crate) fn new(outer: Args) -> Guards {
        let mut guards = Guards {
            retry: None,
            breaker: None,
            bulkhead: None,
        };
        let guard = outer.guard;
        *guards.slot(guard) = Some(outer);
        guards
    }

    fn slot(&mut self, guard: Guard) -> &mut Option<Args> {
        match guard {
            Guard::Retry => &mut self.retry,
            Guard::Breaker => &mut self.breaker,
            Guard::Bulkhead => &mut self.bulkhead,
        }
    }

    /// The options of every attribute given, outermost first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Args> {
        self.retry
            .iter()
            .chain(self.breaker.iter())
            .chain(self.bulkhead.iter())
    }

    /// The attribute that holds the one fallback: `#[circuit_breaker]` when it is given (where a
    /// Spring team writes `fallbackMethod`), else `#[retry]`, else `#[bulkhead]`. Wherever it
    /// is written, the fallback runs outside every guard.
    pub(crate) fn fallback_holder(&self) -> Guard {
        if self.breaker.is_some() {
            Guard::Breaker
        } else if self.retry.is_some() {
            Guard::Retry
        } else {
            Guard::Bulkhead
        }
    }

    /// The fallback (validated: one at most, on [`fallback_holder`](Guards::fallback_holder)).
    pub(crate) fn fallback(&self) -> Option<&FnPath> {
        self.all().find_map(|args| args.fallback.as_ref())
    }

    /// The `crate = ".."` path (validated: given on one attribute at most).
    pub(crate) fn krate(&self) -> Option<&Path> {
        self.all().find_map(|args| args.krate.as_ref())
    }

    /// Takes the other guard attribute among `item`'s attributes over: parses its options and
    /// removes it from the item. A second attribute of either kind is reported where it is
    /// written, and left on the item.
    pub(crate) fn take_over(&mut self, item: &mut GuardedFn, errors: &mut Errors) {
        let mut kept = Vec::with_capacity(item.attrs.len());
        for attr in std::mem::take(&mut item.attrs) {
            let Some(guard) = Guard::of(&attr) else {
                kept.push(attr);
                continue;
            };
            if self.slot(guard).is_some() {
                errors.spanned(&attr, applied_twice(guard));
                kept.push(attr);
                continue;
            }
            let tokens = match &attr.meta {
                Meta::List(list) => list.tokens.clone(),
                Meta::Path(_) => TokenStream::new(),
                Meta::NameValue(value) => {
                    errors.spanned(
                        value,
                        format_args!(
                            "`#[{}]` takes its options in parentheses: `#[{}(name = \"..\")]`",
                            guard.attr(),
                            guard.attr()
                        ),
                    );
                    TokenStream::new()
                }
            };
            *self.slot(guard) = Some(args::parse(guard, Some(attr), tokens, errors));
        }
        item.attrs = kept;
    }
}

impl Guards {
    /// For the attribute taken over: an import of its path as written, so that the path is
    /// still resolved (a `use` of it is not reported unused; a path that names nothing is an
    /// error at the attribute).
    pub(crate) fn resolve_taken_over(&self) -> TokenStream {
        self.all()
            .filter_map(|args| args.taken_over.as_ref())
            .map(|attr| {
                let path = attr.path();
                quote_spanned! {path.span()=>
                    #[allow(unused_imports)]
                    use #path as _;
                }
            })
            .collect()
    }
}

fn applied_twice(guard: Guard) -> String {
    format!(
        "`#[{}]` is applied twice: a function has one {}; merge the options into one attribute",
        guard.attr(),
        guard.noun()
    )
}
