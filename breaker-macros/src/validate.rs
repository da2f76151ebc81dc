//! Checks that need only syntax: the options together, and the options against the signature.
//! Everything that needs types is left to rustc, routed through the `__private` shims.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{FnArg, Pat, ReturnType};

use crate::args::{kw, Args, Guard};
use crate::errors::Errors;
use crate::guards::Guards;
use crate::item::{Body, GuardedFn};

/// Cross-option rules of each attribute, then across them (serde's `check.rs`).
pub(crate) fn guards(guards: &Guards, errors: &mut Errors) {
    for args in guards.all() {
        self::args(args, errors);
    }
    let holder = guards.fallback_holder();
    for args in guards.all().filter(|args| args.guard != holder) {
        if let Some(fallback) = &args.fallback {
            errors.at(
                fallback.span,
                misplaced_fallback(args.guard, holder, guards),
            );
        }
    }
    for krate in guards.all().filter_map(|args| args.krate.as_ref()).skip(1) {
        errors.spanned(
            krate,
            "`crate` is given on more than one attribute; give it on one of them",
        );
    }
}

/// Why a fallback written on `on` belongs on `holder`: there is one fallback, outside every
/// guard, written where a Spring team writes `fallbackMethod`.
fn misplaced_fallback(on: Guard, holder: Guard, guards: &Guards) -> String {
    let what = match (on, guards.retry.is_some()) {
        (Guard::Retry, _) => {
            "one fallback, outside the retry, which sees how the call ended after every \
             attempt; a fallback inside the retry would turn each failure into a success and \
             stop the retries"
        }
        (_, true) => {
            "one fallback, outside every guard, which sees how the call ended after every \
             attempt, a call refused by the bulkhead (`CallError::BulkheadFull`) included"
        }
        (_, false) => {
            "one fallback, outside both, which also catches a call refused by the bulkhead \
             (`CallError::BulkheadFull`)"
        }
    };
    format!(
        "with `#[{0}]` on the same function, the fallback goes on `#[{0}]`: {what}",
        holder.attr()
    )
}

/// Cross-option rules of one attribute.
fn args(args: &Args, errors: &mut Errors) {
    if !args.given.iter().any(|k| k == kw::NAME) {
        let guard = args.guard;
        let message = format!(
            "`#[{0}]` needs a `name`: the {1}'s name and configuration instance, as in \
             `#[{0}(name = \"productService\")]`",
            guard.attr(),
            guard.noun()
        );
        match &args.taken_over {
            Some(attr) => errors.spanned(attr, message),
            None => errors.at(Span::call_site(), message),
        }
    }
    // The error predicate beside `ignore`: the breaker's `record`, the retry's `retry`.
    let chosen = [
        (&args.record, kw::RECORD, "recorded"),
        (&args.retry, kw::RETRY, "retried"),
    ];
    for (chosen, key, what) in chosen {
        if let (Some(chosen), Some(ignore)) = (chosen, &args.ignore) {
            if tokens_text(chosen) == tokens_text(ignore) {
                errors.spanned(
                    ignore,
                    format_args!(
                        "`{key}` and `{}` name the same predicate; an error it matches would \
                         be ignored and never {what}",
                        kw::IGNORE
                    ),
                );
            }
        }
    }
}

/// The options against the function; `outer` is the attribute being expanded, which the
/// messages name.
pub(crate) fn item(item: &GuardedFn, guards: &Guards, outer: Guard, errors: &mut Errors) {
    let sig = &item.sig;
    let attr = outer.attr();
    if let Some(const_token) = &sig.constness {
        errors.spanned(
            const_token,
            format_args!(
                "`#[{attr}]` cannot guard a `const fn`: a {} decides at run time; remove `const`",
                outer.noun()
            ),
        );
    }
    if let Body::None = &item.body {
        errors.spanned(
            sig,
            format_args!(
                "`#[{attr}]` needs a function body: put the attribute on the method in each \
                 `impl`, not on its declaration in the trait"
            ),
        );
    }
    if let ReturnType::Default = sig.output {
        errors.spanned(
            &sig.ident,
            format_args!(
                "`#[{attr}]` guards functions that return a `Result`; `{}` returns `()`",
                sig.ident
            ),
        );
    }
    if guards.fallback().is_some() {
        for input in &sig.inputs {
            if let FnArg::Typed(typed) = input {
                if !is_plain_binding(&typed.pat) {
                    errors.spanned(
                        &typed.pat,
                        "with a `fallback`, every parameter is passed on to it by name: bind this \
                         parameter to a name and destructure it in the body",
                    );
                }
            }
        }
    }
    if sig.asyncness.is_none() {
        if let Body::Block { stmts, .. } = &item.body {
            if is_async_trait_body(stmts.clone()) {
                errors.spanned(
                    sig.fn_token,
                    format_args!(
                        "`#[async_trait]` has already turned this `async fn` into a boxed \
                         future, which `#[{attr}]` cannot guard; use a native `async fn` in the \
                         trait and its impl (Rust 1.75+) and drop `#[async_trait]`"
                    ),
                );
            }
        }
    }
}

/// `x`, `mut x`: what can be passed on by name.
fn is_plain_binding(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(ident) => ident.by_ref.is_none() && ident.subpat.is_none(),
        _ => false,
    }
}

fn tokens_text(tokens: &impl ToTokens) -> String {
    tokens.to_token_stream().to_string()
}

/// `Box::pin(async move { .. })`, optionally behind attributes: async-trait's rewrite of an
/// `async fn` (tracing's `AsyncInfo::from_fn` recognises the same shape).
fn is_async_trait_body(stmts: TokenStream) -> bool {
    let mut tokens = stmts.into_iter().peekable();
    // Skip outer attributes on the expression.
    while matches!(tokens.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '#') {
        tokens.next();
        tokens.next();
    }
    let rest: Vec<TokenTree> = tokens.collect();
    let text: Vec<String> = rest
        .iter()
        .take(5)
        .map(|tt| match tt {
            TokenTree::Group(_) => "(..)".to_owned(),
            other => other.to_string(),
        })
        .collect();
    if text != ["Box", ":", ":", "pin", "(..)"] || rest.len() != 5 {
        return false;
    }
    let TokenTree::Group(group) = &rest[4] else {
        return false;
    };
    let inner: Vec<String> = group
        .stream()
        .into_iter()
        .take(2)
        .map(|tt| tt.to_string())
        .collect();
    inner == ["async", "move"]
}
