//! The expansion: the only place that writes code, and where every span is chosen.
//!
//! ```text
//! #[attrs] #vis #sig {
//!     static __BREAKER_SITE: ::breaker::CallSite = ::breaker::CallSite::new("name");
//!     let __breaker_out = ::breaker::__private::run::<R, _, _>(   // all at `-> R`
//!         __BREAKER_SITE.breaker(),
//!         texted(                             // with the error type's `Display`, if any:
//!             ::breaker::Classifier::new(),   // .record(p) .ignore(p) .result(p), checked at p;
//!             (&&ErrorTextProbe::<R>::new()).error_text(),  // autoref specialization
//!         ),                                  // borrowed (`&`) for an async fn
//!         async { /* fake return edge */ BODY },    // not `move`; `|| { .. }` for a plain fn
//!     ).await;
//!     // with a fallback:
//!     match __breaker_out {
//!         Ok(v) => ::breaker::__private::ok::<R>(v),
//!         Err(e) => ::breaker::__private::fallback::<R, _>(fb(args.., e)).await, // at "fb"
//!     }
//!     // without one:
//!     ::breaker::__private::reject::<R>(__breaker_out) // at `-> R`
//! }
//! ```
//!
//! With `key = expr`, the site is a `KeyedCallSite` and the breaker is lent by
//! `match expr { ref k => ::breaker::__private::keyed(&__BREAKER_SITE, k) }`, spanned at `expr`,
//! and given back (`KeyedLease::give_back`) once the call is over, before the tail.
//!
//! `#[bulkhead]` alone has a `static __BULKHEAD_SITE: ::breaker::BulkheadSite` and calls
//! `run_bulkhead::<R, _>(__BULKHEAD_SITE.bulkhead(), BODY)`; with `#[circuit_breaker]`, both
//! sites and `run_composed::<R, _, _>(breaker, classifier, __BULKHEAD_SITE.bulkhead(), BODY)`
//! (see `guards.rs`). A plain fn calls the `_sync` form of each. Without a fallback, the tail
//! is `reject`, `reject_bulkhead`, `reject_composed` or `reject_retry`: each asks the error
//! type for the conversions its guards need, and no others.
//!
//! `#[retry]` adds `static __RETRY_SITE: ::breaker::RetrySite` and goes outside the rest:
//! alone, `run_retry::<R, _, _>(__RETRY_SITE.retry(), &RetryOn::new()..., || async { BODY })`;
//! with a breaker or a bulkhead, `run_retry_layered` with `|| run_composed(..)` (or `run`,
//! `run_bulkhead`), so that every attempt takes a fresh permit and place (an async breaker's
//! classifier is then a local, `__breaker_classify`, which each attempt borrows). With
//! `result = ..` and no fallback, `exhausted::<R>(..)` turns `MaxRetriesExceeded` into `E`
//! before the tail.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{
    FnArg, GenericArgument, Pat, PathArguments, ReturnType, Type, TypeInfer, TypeParamBound,
};

use crate::args::{self, Args, FnPath, Guard};
use crate::errors::Errors;
use crate::guards::Guards;
use crate::item::{self, Body, GuardedFn};
use crate::validate;

/// `#[circuit_breaker]`: see [`guard`].
pub(crate) fn circuit_breaker(attr: TokenStream, input: TokenStream) -> TokenStream {
    guard(Guard::Breaker, attr, input)
}

/// `#[bulkhead]`: see [`guard`].
pub(crate) fn bulkhead(attr: TokenStream, input: TokenStream) -> TokenStream {
    guard(Guard::Bulkhead, attr, input)
}

/// `#[retry]`: see [`guard`].
pub(crate) fn retry(attr: TokenStream, input: TokenStream) -> TokenStream {
    guard(Guard::Retry, attr, input)
}

/// Any of the attributes: parse, take the others over if they are there, check, expand; on
/// any mistake, the untouched item plus the errors.
fn guard(outer: Guard, attr: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::new();
    let mut guards = Guards::new(args::parse(outer, None, attr, &mut errors));
    let guarded = match item::parse(input.clone()) {
        Ok(Ok(mut guarded)) => {
            guards.take_over(&mut guarded, &mut errors);
            Some(guarded)
        }
        Ok(Err(not_a_fn)) => {
            errors.at(
                not_a_fn.span,
                format_args!(
                    "`#[{}]` goes on a function (`fn` or `async fn`) that returns a `Result`, \
                     not on {}",
                    outer.attr(),
                    not_a_fn.found
                ),
            );
            None
        }
        Err(syntax) => {
            errors.push(syntax);
            None
        }
    };
    validate::guards(&guards, &mut errors);
    if let Some(guarded) = &guarded {
        validate::item(guarded, &guards, outer, &mut errors);
    }
    match (errors.finish(), guarded) {
        (Ok(()), Some(guarded)) => expand(guarded, &guards),
        // Without the attribute it took over, which would otherwise report the same mistakes
        // again.
        (Err(error), Some(guarded)) => {
            with_errors(guarded.untouched(guards.resolve_taken_over()), error)
        }
        (Err(error), None) => with_errors(input, error),
        (Ok(()), None) => unreachable!("an item that is not a fn is an error"),
    }
}

/// The facade's path without `crate = ".."`: the name the user's Cargo.toml gives the
/// `resilience-breaker` package, as proc-macro-crate reads it (`cb = { package =
/// "resilience-breaker" }` is `::cb`). proc-macro-crate names an un-renamed dependency, and the
/// facade's own integration tests, after the package (`resilience_breaker`), but the facade's
/// lib is `breaker`; its lib, doctests and examples (`Itself`) and a manifest without it are
/// `::breaker` too. A dependency renamed to exactly `resilience_breaker` looks un-renamed
/// here: it needs `crate = "resilience_breaker"`.
fn facade_path() -> TokenStream {
    const PACKAGE: &str = "resilience-breaker";
    let name = match proc_macro_crate::crate_name(PACKAGE) {
        Ok(proc_macro_crate::FoundCrate::Name(name)) if name != PACKAGE.replace('-', "_") => name,
        _ => return quote!(::breaker),
    };
    match syn::parse_str::<Ident>(&name) {
        Ok(ident) => quote!(::#ident),
        Err(_) => quote!(::breaker),
    }
}

/// The original item, untouched, so that the rest of the crate keeps type-checking and an IDE
/// keeps completing inside it (tokio), followed by the errors.
fn with_errors(input: TokenStream, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    quote!(#input #errors)
}

fn expand(f: GuardedFn, guards: &Guards) -> TokenStream {
    let krate = match guards.krate() {
        Some(path) => path.to_token_stream(),
        None => facade_path(),
    };
    let ReturnType::Type(_, declared) = &f.sig.output else {
        unreachable!("validated: the fn returns a type")
    };
    let Body::Block { brace, stmts, .. } = &f.body else {
        unreachable!("validated: the fn has a body")
    };
    // `R`: the declared return type with `impl Trait` erased to `_`, usable in a turbofish.
    let ret = erase_impl_trait((**declared).clone());
    let ret_span = declared.span();
    let at_ret = respan(krate.clone(), ret_span);
    let is_async = f.sig.asyncness.is_some();

    let breaker = guards
        .breaker
        .as_ref()
        .map(|args| breaker_site(&krate, args));
    let bulkhead = guards.bulkhead.as_ref().map(|args| {
        let name = args.name.as_ref().expect("validated: `name` is given");
        quote! {
            static __BULKHEAD_SITE: #krate::BulkheadSite = #krate::BulkheadSite::new(#name);
        }
    });

    // The body stays in the original fn, inside a block that is not `move`: it borrows the
    // arguments, so they are still there for the fallback. The fake return edge (tracing)
    // types the block as `R` and points type errors at the declared return type.
    let fake_return = quote_spanned! {ret_span=>
        #[allow(
            unknown_lints,
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            clippy::let_unit_value,
            clippy::let_with_type_underscore,
            clippy::needless_return,
            clippy::unreachable
        )]
        if false {
            let __breaker_fake_return: #ret = loop {};
            return __breaker_fake_return;
        }
    };
    // The user's statements go straight into the new block, whose braces take the original
    // braces' span, so that the body reads (and lints) as the user wrote it.
    let mut block = Group::new(Delimiter::Brace, quote!(#fake_return #stmts));
    block.set_span(brace.span.join());
    let body_span = brace.span.join();
    let guarded = if is_async {
        quote_spanned!(body_span=> async #block)
    } else {
        quote_spanned!(body_span=> || #block)
    };

    // Every generated use of `R` is spanned at the return type: if `R` is not a `Result`, each
    // shim reports the same error at the same place, and rustc prints it once. The shims are
    // named by what guards the call, `_sync` for a plain fn.
    let shim = |name: &str| {
        let name = if is_async {
            Ident::new(name, ret_span)
        } else {
            Ident::new(&format!("{name}_sync"), ret_span)
        };
        quote_spanned!(ret_span=> #at_ret::__private::#name)
    };
    let await_run = is_async.then(|| quote_spanned!(ret_span=> .await));
    let retried = guards.retry.is_some();
    // With a retry, the breaker and bulkhead run once per attempt, inside a closure the retry
    // calls: an async attempt's future borrows the breaker's classifier, so it is a local of
    // the call rather than a temporary of the statement.
    let mut hoisted = TokenStream::new();
    let inner_call = match (&guards.breaker, &breaker) {
        (Some(args), Some(site)) => {
            let classifier = classifier(&at_ret, ret_span, &ret, args);
            let classifier = with_error_text(&at_ret, ret_span, &ret, classifier);
            // The async shims borrow the classifier: a temporary of this statement, alive
            // until the `.await` in it completes.
            let classifier = match (is_async, retried) {
                (true, true) => {
                    hoisted = quote_spanned!(ret_span=> let __breaker_classify = #classifier;);
                    quote_spanned!(ret_span=> &__breaker_classify)
                }
                (true, false) => quote_spanned!(ret_span=> &#classifier),
                (false, _) => classifier,
            };
            let breaker = &site.breaker;
            if bulkhead.is_some() {
                let run = shim("run_composed");
                Some(quote_spanned! {ret_span=>
                    #run::<#ret, _, _>(#breaker, #classifier, __BULKHEAD_SITE.bulkhead(), #guarded)
                })
            } else {
                let run = shim("run");
                Some(quote_spanned!(ret_span=> #run::<#ret, _, _>(#breaker, #classifier, #guarded)))
            }
        }
        _ if bulkhead.is_some() => {
            let run = shim("run_bulkhead");
            Some(quote_spanned!(ret_span=> #run::<#ret, _>(__BULKHEAD_SITE.bulkhead(), #guarded)))
        }
        _ => None,
    };
    let run_call = match (&guards.retry, inner_call) {
        (None, Some(inner)) => quote_spanned!(ret_span=> #inner #await_run),
        (Some(args), inner) => {
            let classifier = classifier(&at_ret, ret_span, &ret, args);
            let classifier = if is_async {
                quote_spanned!(ret_span=> &#classifier)
            } else {
                classifier
            };
            // Each attempt is a fresh call of the closure: a new future (or run) of the body,
            // through a fresh breaker permit and bulkhead place.
            let (run, attempt) = match inner {
                Some(inner) => ("run_retry_layered", quote_spanned!(ret_span=> || #inner)),
                None if is_async => ("run_retry", quote_spanned!(body_span=> || #guarded)),
                None => ("run_retry", guarded.clone()),
            };
            // The shims' type parameters after `R`, all inferred: the classifier (its three
            // predicates, for the layered ones), the closure, and an async attempt's future.
            let inferred = match (run, is_async) {
                ("run_retry", true) => 3,
                ("run_retry", false) => 2,
                (_, true) => 5,
                (_, false) => 4,
            };
            let run = shim(run);
            let holes = (0..inferred).map(|_| quote_spanned!(ret_span=> _));
            quote_spanned! {ret_span=>
                #run::<#ret, #(#holes),*>(__RETRY_SITE.retry(), #classifier, #attempt) #await_run
            }
        }
        (None, None) => unreachable!("the attribute being expanded is one of the guards"),
    };
    let retry_site = guards.retry.as_ref().map(|args| {
        let name = args.name.as_ref().expect("validated: `name` is given");
        quote! {
            static __RETRY_SITE: #krate::RetrySite = #krate::RetrySite::new(#name);
        }
    });

    let tail = match guards.fallback() {
        Some(fallback) => {
            let (err, call) = fallback_call(&krate, &ret, &f, fallback, is_async);
            let ok = quote_spanned!(ret_span=> #at_ret::__private::ok::<#ret>);
            quote! {
                match __breaker_out {
                    #krate::__private::Ok(__breaker_value) => #ok(__breaker_value),
                    #krate::__private::Err(#err) => #call,
                }
            }
        }
        None => {
            // Each names the conversions its guards need, and only those.
            let reject = match (&breaker, &bulkhead) {
                (Some(_), Some(_)) => "reject_composed",
                (None, Some(_)) => "reject_bulkhead",
                (Some(_), None) => "reject",
                (None, None) => "reject_retry",
            };
            let reject = Ident::new(reject, ret_span);
            // Only a `result` predicate retries an `Ok`, so only then can the retries run out
            // on one (`fail-after-max-attempts`): only then is `From<MaxRetriesExceeded>` asked.
            let out = match &guards.retry {
                Some(args) if args.result.is_some() => {
                    let exhausted = Ident::new("exhausted", ret_span);
                    quote_spanned!(ret_span=> #at_ret::__private::#exhausted::<#ret>(__breaker_out))
                }
                _ => quote_spanned!(ret_span=> __breaker_out),
            };
            quote_spanned!(ret_span=> #at_ret::__private::#reject::<#ret>(#out))
        }
    };

    let attrs = f.all_outer_attrs();
    let vis = &f.vis;
    let sig = &f.sig;
    let (breaker_site, give_back) = match &breaker {
        Some(site) => (&site.statics, &site.give_back),
        None => (&TokenStream::new(), &TokenStream::new()),
    };
    // The fn's braces keep their original span: the item then spans the user's tokens only, and
    // the user's lints (dead_code, ...) still see it as their code.
    let resolve = guards.resolve_taken_over();
    let mut body = Group::new(
        Delimiter::Brace,
        quote! {
            #resolve
            #retry_site
            #breaker_site
            #bulkhead
            #hoisted
            let __breaker_out = #run_call;
            #give_back
            #tail
        },
    );
    body.set_span(brace.span.join());
    quote! {
        #(#attrs)*
        #vis #sig #body
    }
}

/// The breaker's call site, as the expansion uses it.
struct BreakerSite {
    /// The `static` site, and with `key`, the statement that leases the key's breaker.
    statics: TokenStream,
    /// The expression for the breaker.
    breaker: TokenStream,
    /// With `key`: the statement that gives the lease back once the call is over.
    give_back: TokenStream,
}

fn breaker_site(krate: &TokenStream, args: &Args) -> BreakerSite {
    let name = args.name.as_ref().expect("validated: `name` is given");
    match &args.key {
        None => BreakerSite {
            statics: quote! {
                static __BREAKER_SITE: #krate::CallSite = #krate::CallSite::new(#name);
            },
            breaker: quote!(__BREAKER_SITE.breaker()),
            give_back: TokenStream::new(),
        },
        Some(key) => {
            // The key's own span for the whole lookup, so that a key of the wrong type is
            // reported at the key expression.
            let key_span = key.span();
            let keyed = respan(quote!(#krate::__private::keyed), key_span);
            // `match` with a `ref` binding, as `assert_eq!` does: the key is borrowed in place
            // (a field is not moved out), a temporary lives through the lookup, and the key
            // expression keeps its own precedence.
            let lookup = quote_spanned! {key_span=>
                match #key {
                    ref __breaker_key => #keyed(&__BREAKER_SITE, __breaker_key),
                }
            };
            BreakerSite {
                statics: quote! {
                    static __BREAKER_SITE: #krate::KeyedCallSite = #krate::KeyedCallSite::new(#name);
                    let __breaker_keyed = #lookup;
                },
                breaker: quote!(__breaker_keyed.breaker()),
                // The call's output owns its data: the lease goes back to this thread's cache
                // (a call that panics or a future dropped early drops it instead).
                give_back: quote!(__breaker_keyed.give_back();),
            }
        }
    }
}

/// The classification an attribute's predicates give, each predicate checked by a shim
/// spanned at it: `Classifier::new()` with `record`, `ignore`, `result` for the breaker,
/// `RetryOn::new()` with `retry`, `ignore`, `result` for the retry.
fn classifier(at_ret: &TokenStream, ret_span: Span, ret: &Type, args: &Args) -> TokenStream {
    let (mut classifier, first) = match args.guard {
        Guard::Retry => (
            quote_spanned!(ret_span=> #at_ret::__private::RetryOn::new()),
            (&args.retry, "retry"),
        ),
        Guard::Breaker | Guard::Bulkhead => (
            quote_spanned!(ret_span=> #at_ret::Classifier::new()),
            (&args.record, "record"),
        ),
    };
    let predicates = [
        (first.0, first.1, "error_predicate"),
        (&args.ignore, "ignore", "error_predicate"),
        (&args.result, "result", "value_predicate"),
    ];
    for (predicate, method, check) in predicates {
        if let Some(predicate) = predicate {
            let span = predicate.span();
            let method = Ident::new(method, ret_span);
            let check = Ident::new(check, span);
            let krate = respan(at_ret.clone(), span);
            let checked = quote_spanned!(span=> #krate::__private::#check::<#ret, _>(#predicate));
            classifier = quote_spanned!(ret_span=> #classifier.#method(#checked));
        }
    }
    classifier
}

/// The fallback call, every token at the fallback's literal (serde `wrap_serialize_with`), so
/// that "not found", arity, argument and return-type errors land there; and the name the
/// `CallError` is bound to.
fn fallback_call(
    krate: &TokenStream,
    ret: &Type,
    f: &GuardedFn,
    fallback: &FnPath,
    is_async: bool,
) -> (Ident, TokenStream) {
    let span = fallback.span;
    // Forwarded arguments sit at the literal but belong to the expansion: rustc then reports an
    // argument mistake at the literal without suggesting edits to the literal itself.
    let arg_span = Span::call_site().located_at(span);
    let err = Ident::new("__breaker_err", arg_span);
    let mut receiver = None;
    let mut forwarded = Vec::new();
    for input in &f.sig.inputs {
        match input {
            FnArg::Receiver(_) => receiver = Some(Ident::new("self", span)),
            FnArg::Typed(typed) => {
                if let Pat::Ident(pat) = &*typed.pat {
                    let mut ident = pat.ident.clone();
                    ident.set_span(arg_span);
                    forwarded.push(ident);
                }
            }
        }
    }
    let path = &fallback.path;
    let single =
        path.qself.is_none() && path.path.leading_colon.is_none() && path.path.segments.len() == 1;
    let target = match (&receiver, single) {
        // A bare name on a method is the method on `Self`, as in Spring.
        (Some(this), true) => {
            let segment = &path.path.segments[0];
            let ident = &segment.ident;
            let generics = match &segment.arguments {
                PathArguments::None => TokenStream::new(),
                other => other.to_token_stream(),
            };
            quote_spanned!(span=> #this.#ident #generics (#(#forwarded,)* #err))
        }
        (Some(this), false) => quote_spanned!(span=> #path(#this, #(#forwarded,)* #err)),
        (None, _) => quote_spanned!(span=> #path(#(#forwarded,)* #err)),
    };
    let at = respan(krate.clone(), span);
    let call = if is_async {
        quote_spanned!(span=> #at::__private::fallback::<#ret, _>(#target).await)
    } else {
        quote_spanned!(span=> #at::__private::fallback_sync::<#ret, _>(#target))
    };
    (err, call)
}

/// Gives every token of `tokens` the span `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), respan(group.stream(), span));
                new.set_span(span);
                TokenTree::Group(new)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// The breaker's classification `classifier` with the error type's `Display`, if it has one,
/// for the listeners that asked for error texts: autoref specialization picks
/// `DisplayErrorText` when the type has one, `NoErrorText` otherwise. The probe must name the
/// return type: `R`, or, where `R` has an erased `impl Trait` (a `_` that only the body's type
/// infers), `Result<(), E>` for a `Result<T, E>` written out whose `E` has none. Failing both (`io::Result<impl Trait>`), no probe: the breaker still describes
/// the error types it knows on its own (`io::Error` among them), else writes the type name.
fn with_error_text(
    at_ret: &TokenStream,
    ret_span: Span,
    ret: &Type,
    classifier: TokenStream,
) -> TokenStream {
    let probed = if !has_placeholder(ret.to_token_stream()) {
        Some(quote_spanned!(ret_span=> #ret))
    } else {
        written_error_type(ret)
            .map(|error| quote_spanned!(ret_span=> #at_ret::__private::Result<(), #error>))
    };
    let probe = probed.map(
        |probed| quote_spanned!(ret_span=> #at_ret::__private::ErrorTextProbe::<#probed>::new()),
    );
    match probe {
        Some(probe) => quote_spanned! {ret_span=>
            #at_ret::__private::texted(#classifier, {
                // One of the two is used, whichever applies.
                #[allow(unused_imports)]
                use #at_ret::__private::{DisplayErrorText as _, NoErrorText as _};
                (&&#probe).error_text()
            })
        },
        None => quote_spanned!(ret_span=> #at_ret::__private::texted(#classifier, None)),
    }
}

/// Whether `tokens` hold a `_` (an erased `impl Trait`).
fn has_placeholder(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == "_",
        TokenTree::Group(group) => has_placeholder(group.stream()),
        _ => false,
    })
}

/// `E` of a return type written `Result<T, E>` (any path ending in `Result` with two type
/// arguments), if `E` holds no erased `impl Trait`.
fn written_error_type(ret: &Type) -> Option<&Type> {
    let Type::Path(path) = ret else {
        return None;
    };
    let last = path.path.segments.last()?;
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect();
    match types[..] {
        [_, error] if last.ident == "Result" && !has_placeholder(error.to_token_stream()) => {
            Some(error)
        }
        _ => None,
    }
}

/// Replaces `impl Trait` with `_` (tracing's `erase_impl_trait`): `Result<impl Iterator, E>`
/// cannot be written in a turbofish or a `let`, `Result<_, E>` can.
fn erase_impl_trait(ty: Type) -> Type {
    match ty {
        Type::ImplTrait(imp) => Type::Infer(TypeInfer {
            attrs: Vec::new(),
            underscore_token: syn::Token![_](imp.impl_token.span),
        }),
        Type::Path(mut path) => {
            if let Some(qself) = &mut path.qself {
                *qself.ty = erase_impl_trait((*qself.ty).clone());
            }
            erase_in_path(&mut path.path);
            Type::Path(path)
        }
        Type::Reference(mut r) => {
            *r.elem = erase_impl_trait((*r.elem).clone());
            Type::Reference(r)
        }
        Type::Ptr(mut p) => {
            *p.elem = erase_impl_trait((*p.elem).clone());
            Type::Ptr(p)
        }
        Type::Slice(mut s) => {
            *s.elem = erase_impl_trait((*s.elem).clone());
            Type::Slice(s)
        }
        Type::Array(mut a) => {
            *a.elem = erase_impl_trait((*a.elem).clone());
            Type::Array(a)
        }
        Type::Paren(mut p) => {
            *p.elem = erase_impl_trait((*p.elem).clone());
            Type::Paren(p)
        }
        Type::Group(mut g) => {
            *g.elem = erase_impl_trait((*g.elem).clone());
            Type::Group(g)
        }
        Type::Tuple(mut t) => {
            for elem in &mut t.elems {
                *elem = erase_impl_trait(elem.clone());
            }
            Type::Tuple(t)
        }
        // `dyn Iterator<Item = impl Display>`: the bounds' arguments.
        Type::TraitObject(mut object) => {
            for bound in &mut object.bounds {
                if let TypeParamBound::Trait(bound) = bound {
                    erase_in_path(&mut bound.path);
                }
            }
            Type::TraitObject(object)
        }
        other => other,
    }
}

/// Erases `impl Trait` in the generic arguments of each of `path`'s segments.
fn erase_in_path(path: &mut syn::Path) {
    for segment in &mut path.segments {
        erase_in_arguments(&mut segment.arguments);
    }
}

fn erase_in_arguments(arguments: &mut PathArguments) {
    match arguments {
        PathArguments::AngleBracketed(angle) => {
            for arg in &mut angle.args {
                match arg {
                    GenericArgument::Type(ty) => *ty = erase_impl_trait(ty.clone()),
                    GenericArgument::AssocType(assoc) => {
                        assoc.ty = erase_impl_trait(assoc.ty.clone());
                    }
                    _ => {}
                }
            }
        }
        PathArguments::Parenthesized(_) | PathArguments::None => {}
    }
}
