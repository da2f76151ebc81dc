//! The two attributes on one function: `#[circuit_breaker]` and `#[bulkhead]` expand once,
//! together, as Breaker(Bulkhead(fn)) whatever order they are written in.
//!
//! Rust expands the outer attribute first, with the inner one still among the item's
//! attributes. The outer one takes the inner one over: it parses the inner one's options,
//! removes it from the item, and writes the one expansion. The inner attribute never runs, so
//! each call takes exactly one breaker permit and one bulkhead place.

use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::{Meta, Path};

use crate::args::{self, Args, FnPath, Guard};
use crate::errors::Errors;
use crate::item::GuardedFn;

/// The options of each attribute on the function.
pub(crate) struct Guards {
    pub(crate) breaker: Option<Args>,
    pub(crate) bulkhead: Option<Args>,
}

impl Guards {
    /// The attribute being expanded, with its options.
    pub(crate) fn new(outer: Args) -> Guards {
        let mut guards = Guards {
            breaker: None,
            bulkhead: None,
        };
        let guard = outer.guard;
        *guards.slot(guard) = Some(outer);
        guards
    }

    fn slot(&mut self, guard: Guard) -> &mut Option<Args> {
        match guard {
            Guard::Breaker => &mut self.breaker,
            Guard::Bulkhead => &mut self.bulkhead,
        }
    }

    /// The options of both attributes.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Args> {
        self.breaker.iter().chain(self.bulkhead.iter())
    }

    /// The fallback (validated: one at most, on `#[circuit_breaker]` when both are there).
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
