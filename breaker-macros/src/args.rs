//! The attributes' arguments: `#[circuit_breaker]`'s `name`, `fallback`, `record`, `ignore`,
//! `result`, `key`, `crate`, `#[bulkhead]`'s `name`, `fallback`, `crate`, and `#[retry]`'s
//! `name`, `fallback`, `retry`, `ignore`, `result`, `crate`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitStr, Path};

use crate::errors::Errors;

/// The option names, in the order the messages list them.
pub(crate) mod kw {
    pub(crate) const NAME: &str = "name";
    pub(crate) const FALLBACK: &str = "fallback";
    pub(crate) const RECORD: &str = "record";
    pub(crate) const IGNORE: &str = "ignore";
    pub(crate) const RESULT: &str = "result";
    pub(crate) const KEY: &str = "key";
    pub(crate) const CRATE: &str = "crate";
    pub(crate) const RETRY: &str = "retry";

    pub(crate) const ALL: [&str; 7] = [NAME, FALLBACK, RECORD, IGNORE, RESULT, KEY, CRATE];
    /// `#[bulkhead]`'s: a bulkhead counts calls, it does not classify them or key them.
    pub(crate) const BULKHEAD: [&str; 3] = [NAME, FALLBACK, CRATE];
    /// `#[retry]`'s: `retry` and `ignore` choose the errors to retry, `result` the `Ok` values;
    /// no `key` (one retry, one budget, per name).
    pub(crate) const RETRY_OPTIONS: [&str; 6] = [NAME, FALLBACK, RETRY, IGNORE, RESULT, CRATE];
}

/// Which of the three attributes: each guards a function on its own, and any of them together
/// expand once, as Retry(Breaker(Bulkhead(fn))).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guard {
    Retry,
    Breaker,
    Bulkhead,
}

impl Guard {
    /// Every guard, outermost first: the order of the one expansion.
    pub(crate) const ALL: [Guard; 3] = [Guard::Retry, Guard::Breaker, Guard::Bulkhead];

    /// The attribute's name, as written: `retry`, `circuit_breaker`, `bulkhead`.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Guard::Retry => "retry",
            Guard::Breaker => "circuit_breaker",
            Guard::Bulkhead => "bulkhead",
        }
    }

    /// What it puts around the function: `retry`, `breaker`, `bulkhead`.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Guard::Retry => "retry",
            Guard::Breaker => "breaker",
            Guard::Bulkhead => "bulkhead",
        }
    }

    /// The options it takes, in the order the messages list them.
    pub(crate) fn options(self) -> &'static [&'static str] {
        match self {
            Guard::Retry => &kw::RETRY_OPTIONS,
            Guard::Breaker => &kw::ALL,
            Guard::Bulkhead => &kw::BULKHEAD,
        }
    }

    /// The guard an attribute of the item is, by the last segment of its path
    /// (`#[bulkhead]`, `#[breaker::bulkhead]`), if it is one.
    pub(crate) fn of(attr: &syn::Attribute) -> Option<Guard> {
        let last = attr.path().segments.last()?;
        Guard::ALL
            .into_iter()
            .find(|guard| last.ident == guard.attr())
    }
}

/// A path to a function, given as a string (`fallback = "fb"`) or bare (`fallback = fb`).
/// From a string, every token of the path carries the literal's span (serde's
/// `parse_lit_into_expr_path`), so errors about the function land on the literal.
pub(crate) struct FnPath {
    pub(crate) path: ExprPath,
    /// The literal, or the bare path: where errors about the function go.
    pub(crate) span: Span,
}

/// The options of one attribute, each given at most once.
pub(crate) struct Args {
    /// Which attribute they belong to.
    pub(crate) guard: Guard,
    /// For an attribute taken over by the one being expanded: the attribute as written, where
    /// a mistake of the attribute as a whole (a missing `name`) is reported, and whose path
    /// the expansion still resolves. `None` for the attribute being expanded (its mistakes go
    /// to the call site).
    pub(crate) taken_over: Option<syn::Attribute>,
    pub(crate) name: Option<LitStr>,
    pub(crate) fallback: Option<FnPath>,
    pub(crate) record: Option<Expr>,
    /// `#[retry]`'s `retry`: the errors to retry.
    pub(crate) retry: Option<Expr>,
    pub(crate) ignore: Option<Expr>,
    pub(crate) result: Option<Expr>,
    pub(crate) key: Option<Expr>,
    pub(crate) krate: Option<Path>,
    /// Every key given, valid value or not: a key is "given twice" even if its first value
    /// was rejected, and a `name` with a bad value is not also "missing".
    pub(crate) given: Vec<String>,
}

/// Parses the arguments, recording every mistake and going on after each one that leaves the
/// input readable.
pub(crate) fn parse(
    guard: Guard,
    taken_over: Option<syn::Attribute>,
    attr: TokenStream,
    errors: &mut Errors,
) -> Args {
    let mut args = Args {
        guard,
        taken_over,
        name: None,
        fallback: None,
        record: None,
        retry: None,
        ignore: None,
        result: None,
        key: None,
        krate: None,
        given: Vec::new(),
    };
    let parser = syn::meta::parser(|meta| {
        let Some(key) = meta.path.get_ident().cloned() else {
            skip_value(&meta)?;
            errors.spanned(&meta.path, unknown_option(guard, &path_text(&meta.path)));
            return Ok(());
        };
        let name = key.to_string();
        if let Some(message) = not_on(guard, &name) {
            skip_value(&meta)?;
            errors.at(key.span(), message);
            return Ok(());
        }
        if !guard.options().contains(&name.as_str()) {
            skip_value(&meta)?;
            errors.at(key.span(), unknown_option(guard, &name));
            // A typo of a known key counts as that key given, so that `nmae = ".."` is one
            // error ("did you mean `name`?"), not also "`name` is missing".
            if let Some(meant) = did_you_mean(guard, &name) {
                args.given.push(meant.to_owned());
            }
            return Ok(());
        }
        if !set_once(&mut args.given, &key, errors) {
            return skip_value(&meta);
        }
        if !meta.input.peek(syn::Token![=]) {
            errors.at(
                key.span(),
                format!("`{name}` takes a value: {}", example(&name)),
            );
            return skip_value(&meta);
        }
        let value: Expr = meta.value()?.parse()?;
        match name.as_str() {
            kw::NAME => args.name = string_literal(guard, &name, &value, errors),
            kw::FALLBACK => args.fallback = fn_path(&name, value, errors),
            kw::RECORD => args.record = Some(code(value, errors)),
            kw::RETRY => args.retry = Some(code(value, errors)),
            kw::IGNORE => args.ignore = Some(code(value, errors)),
            kw::RESULT => args.result = Some(code(value, errors)),
            kw::KEY => args.key = Some(value),
            kw::CRATE => args.krate = crate_path(&name, value, errors),
            _ => unreachable!("every known key has an arm"),
        }
        Ok(())
    });
    if let Err(error) = parser.parse2(attr) {
        errors.push(error);
    }
    args
}

/// Why an option of another guard is not one of `guard`'s, if it is such an option.
fn not_on(guard: Guard, name: &str) -> Option<String> {
    match guard {
        Guard::Breaker => None,
        Guard::Bulkhead => not_on_bulkhead(name),
        Guard::Retry => not_on_retry(name),
    }
}

fn not_on_retry(name: &str) -> Option<String> {
    match name {
        kw::KEY => Some(
            "`key` is not supported on `#[retry]`: one retry, with one budget, serves every \
             key of its name; key the breaker instead \
             (`#[circuit_breaker(name = \"..\", key = ..)]` beside `#[retry(name = \"..\")]`)"
                .to_owned(),
        ),
        kw::RECORD => Some(
            "`record` is the breaker's; on `#[retry]`, `retry = predicate` names the errors to \
             retry (the others end the call at once)"
                .to_owned(),
        ),
        _ => None,
    }
}

fn not_on_bulkhead(name: &str) -> Option<String> {
    match name {
        kw::KEY => Some(
            "`key` is not supported on `#[bulkhead]`: a bulkhead bounds the calls to one \
             dependency, whatever their key; key the breaker instead \
             (`#[circuit_breaker(name = \"..\", key = ..)]` beside `#[bulkhead(name = \"..\")]`)"
                .to_owned(),
        ),
        kw::RECORD | kw::IGNORE | kw::RESULT => Some(format!(
            "`{name}` classifies a call's result for a breaker, which a bulkhead does not do; \
             put it on `#[circuit_breaker]`"
        )),
        kw::RETRY => Some(
            "`retry` names the errors a retry retries, which a bulkhead does not do; put it on \
             `#[retry]`"
                .to_owned(),
        ),
        _ => None,
    }
}

/// The one duplicate check, for every option: records `key` as given, or reports a second
/// occurrence at that key and returns `false`.
fn set_once(given: &mut Vec<String>, key: &Ident, errors: &mut Errors) -> bool {
    let name = key.to_string();
    if given.contains(&name) {
        errors.at(
            key.span(),
            format_args!("`{key}` is given twice; give each option once"),
        );
        false
    } else {
        given.push(name);
        true
    }
}

/// Consumes whatever value an option has (`= expr` or `(...)`), so that parsing goes on.
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}

fn path_text(path: &Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.join("::")
}

fn unknown_option(guard: Guard, name: &str) -> String {
    let expected: Vec<String> = guard.options().iter().map(|k| format!("`{k}`")).collect();
    let expected = expected.join(", ");
    let mut message = format!("unknown option `{name}`; expected one of: {expected}");
    let lower = name.to_ascii_lowercase();
    if let Some(meant) = did_you_mean(guard, name) {
        message.push_str(&format!("\ndid you mean `{meant}`?"));
    } else if lower.starts_with("fallback") {
        message.push_str(
            "\nSpring's `fallbackMethod` is `fallback` here: `fallback = \"my_fallback\"`",
        );
    } else if [
        "timeout",
        "threshold",
        "window",
        "duration",
        "wait",
        "calls",
        "permitted",
        "minimum",
        "rate",
        "attempts",
        "backoff",
        "budget",
        "multiplier",
    ]
    .iter()
    .any(|word| lower.contains(word))
    {
        message.push_str(match guard {
            Guard::Breaker => {
                "\nnumbers live in the breaker's configuration, under its `name` \
                 (for example `resilience4j.circuitbreaker.instances.<name>.timeout-duration`), \
                 not in the attribute"
            }
            Guard::Bulkhead => {
                "\nnumbers live in the bulkhead's configuration, under its `name` \
                 (for example `resilience4j.bulkhead.instances.<name>.max-concurrent-calls`), \
                 not in the attribute"
            }
            Guard::Retry => {
                "\nnumbers live in the retry's configuration, under its `name` \
                 (for example `resilience4j.retry.instances.<name>.max-attempts`), \
                 not in the attribute"
            }
        });
    }
    message
}

/// The known key `name` is most likely a typo of: at most two edits (a swap of neighbours
/// counts as one) away.
fn did_you_mean(guard: Guard, name: &str) -> Option<&'static str> {
    if name.len() < 3 {
        return None;
    }
    guard
        .options()
        .iter()
        .copied()
        .map(|k| (edit_distance(name, k), k))
        .filter(|&(d, _)| d <= 2)
        .min()
        .map(|(_, k)| k)
}

/// Optimal string alignment distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

fn example(name: &str) -> &'static str {
    match name {
        kw::NAME => "`name = \"productService\"`",
        kw::FALLBACK => "`fallback = \"my_fallback\"`",
        kw::RECORD | kw::IGNORE => "a predicate on the error, `record = is_server_error`",
        kw::RETRY => "a predicate on the error, `retry = is_transient`",
        kw::RESULT => "a predicate on the `Ok` value, `result = is_retry_later`",
        kw::KEY => "an expression, `key = tenant.clone()`",
        _ => "`crate = \"breaker\"`",
    }
}

fn as_str_literal(value: &Expr) -> Option<&LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        // A `$name:literal` of a `macro_rules!` arrives in an invisible group.
        Expr::Group(group) => as_str_literal(&group.expr),
        _ => None,
    }
}

/// `name`: a non-empty string literal without surrounding whitespace.
fn string_literal(guard: Guard, key: &str, value: &Expr, errors: &mut Errors) -> Option<LitStr> {
    let Some(lit) = as_str_literal(value) else {
        errors.spanned(
            value,
            format_args!("`{key}` takes a string literal: {}", example(key)),
        );
        return None;
    };
    let text = lit.value();
    if text.is_empty() {
        errors.at(
            lit.span(),
            format_args!(
                "`name` must not be empty: it names the {} and its configuration instance",
                guard.noun()
            ),
        );
        return None;
    }
    if text.trim() != text {
        errors.at(
            lit.span(),
            format_args!(
                "`name` has leading or trailing whitespace; did you mean `\"{}\"`?",
                text.trim()
            ),
        );
        return None;
    }
    Some(lit.clone())
}

/// `fallback`: a path, as a string or bare.
fn fn_path(key: &str, value: Expr, errors: &mut Errors) -> Option<FnPath> {
    if let Some(lit) = as_str_literal(&value) {
        return match lit.parse::<ExprPath>() {
            Ok(path) => Some(FnPath {
                path,
                span: lit.span(),
            }),
            Err(_) => {
                errors.at(
                    lit.span(),
                    format_args!(
                        "`{key}` names a function: {}, or `\"Self::my_fallback\"`; `{}` is not a path",
                        example(key),
                        lit.value()
                    ),
                );
                None
            }
        };
    }
    match value {
        Expr::Path(path) if path.attrs.is_empty() && path.qself.is_none() => {
            let span = path.span();
            Some(FnPath { path, span })
        }
        other => {
            errors.spanned(
                &other,
                format_args!("`{key}` names a function: {}", example(key)),
            );
            None
        }
    }
}

/// `record`, `ignore`, `result`: code, as an expression or a string holding a path.
fn code(value: Expr, errors: &mut Errors) -> Expr {
    if let Some(lit) = as_str_literal(&value) {
        match lit.parse::<ExprPath>() {
            Ok(path) => return Expr::Path(path),
            Err(_) => errors.at(
                lit.span(),
                "a predicate is a path or a closure, such as `record = is_server_error`; this string is not a path",
            ),
        }
    }
    value
}

/// `crate`: the path the generated code reaches the runtime through.
fn crate_path(key: &str, value: Expr, errors: &mut Errors) -> Option<Path> {
    if let Some(lit) = as_str_literal(&value) {
        return match lit.parse::<Path>() {
            Ok(path) => Some(path),
            Err(_) => {
                errors.at(
                    lit.span(),
                    format_args!(
                        "`{key}` takes the path of the `breaker` crate, such as `crate = \"::my_breaker\"`"
                    ),
                );
                None
            }
        };
    }
    match value {
        Expr::Path(path) if path.qself.is_none() => Some(path.path),
        other => {
            errors.spanned(
                &other,
                format_args!("`{key}` takes the path of the `breaker` crate, such as `crate = \"::my_breaker\"`"),
            );
            None
        }
    }
}
