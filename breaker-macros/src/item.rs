//! The guarded item: a fn whose signature is parsed and whose body is kept as tokens.
//!
//! The body is never parsed as Rust (tracing's `MaybeItemFn`, tokio's `ItemFn`): a body the
//! user is halfway through typing still expands, so an IDE keeps completing inside it.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::parse::ParseStream;
use syn::{braced, token, AttrStyle, Attribute, Signature, Token, Visibility};

/// A function as the attribute sees it.
pub(crate) struct GuardedFn {
    /// Outer attributes, in order.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) body: Body,
}

pub(crate) enum Body {
    /// `{ #![inner] stmts }`.
    Block {
        brace: token::Brace,
        /// Inner attributes (`#![allow(..)]`): the generated body is a new block, so they are
        /// moved onto the fn as outer attributes (tokio).
        inner_attrs: Vec<Attribute>,
        stmts: TokenStream,
    },
    /// `;`: a declaration in a trait, without a body.
    None,
}

/// The input is not a function at all: where to say so.
pub(crate) struct NotAFn {
    pub(crate) span: Span,
    pub(crate) found: String,
}

impl GuardedFn {
    /// The fn's attributes plus the hoisted inner ones.
    pub(crate) fn all_outer_attrs(&self) -> Vec<Attribute> {
        let mut attrs = self.attrs.clone();
        if let Body::Block { inner_attrs, .. } = &self.body {
            attrs.extend(inner_attrs.iter().cloned().map(|mut attr| {
                attr.style = AttrStyle::Outer;
                attr
            }));
        }
        attrs
    }

    /// The fn as written (its attributes minus those taken over by the attribute being
    /// expanded), for when the attribute reports errors instead of expanding; `prelude` goes
    /// first in its body.
    pub(crate) fn untouched(&self, prelude: TokenStream) -> TokenStream {
        let (attrs, vis, sig) = (&self.attrs, &self.vis, &self.sig);
        let body = match &self.body {
            Body::Block {
                brace,
                inner_attrs,
                stmts,
            } => {
                let mut block =
                    Group::new(Delimiter::Brace, quote!(#(#inner_attrs)* #prelude #stmts));
                block.set_span(brace.span.join());
                block.into_token_stream()
            }
            Body::None => quote!(;),
        };
        quote!(#(#attrs)* #vis #sig #body)
    }
}

/// Parses the item: a fn, something that is not a fn at all, or a fn with a syntax error.
pub(crate) fn parse(input: TokenStream) -> syn::Result<Result<GuardedFn, NotAFn>> {
    syn::parse::Parser::parse2(parse_guarded, input)
}

fn parse_guarded(input: ParseStream<'_>) -> syn::Result<Result<GuardedFn, NotAFn>> {
    let attrs = input.call(Attribute::parse_outer)?;
    let vis: Visibility = input.parse()?;
    if !starts_a_fn(input) {
        let (span, found) = match input.cursor().token_tree() {
            Some((tt, _)) => (tt.span(), describe(&tt)),
            None => (Span::call_site(), "nothing".to_owned()),
        };
        input.parse::<TokenStream>()?;
        return Ok(Err(NotAFn { span, found }));
    }
    let sig: Signature = input.parse()?;
    let body = if input.peek(Token![;]) {
        {
            input.parse::<Token![;]>()?;
            Body::None
        }
    } else {
        let content;
        let brace = braced!(content in input);
        let inner_attrs = content.call(Attribute::parse_inner)?;
        let stmts: TokenStream = content.parse()?;
        Body::Block {
            brace,
            inner_attrs,
            stmts,
        }
    };
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after the function"));
    }
    Ok(Ok(GuardedFn {
        attrs,
        vis,
        sig,
        body,
    }))
}

/// `fn`, or the qualifiers that may come before it.
fn starts_a_fn(input: ParseStream<'_>) -> bool {
    let qualifier_then_fn = |q: bool| {
        q && (input.peek2(Token![fn])
            || input.peek2(Token![async])
            || input.peek2(Token![unsafe])
            || input.peek2(Token![extern])
            || input.peek2(syn::LitStr))
    };
    input.peek(Token![fn])
        || qualifier_then_fn(input.peek(Token![const]))
        || qualifier_then_fn(input.peek(Token![async]))
        || qualifier_then_fn(input.peek(Token![unsafe]))
        || qualifier_then_fn(input.peek(Token![extern]))
}

fn describe(tt: &TokenTree) -> String {
    match tt {
        TokenTree::Ident(ident) => match ident.to_string().as_str() {
            "impl" => "an `impl` block".to_owned(),
            "trait" => "a `trait`".to_owned(),
            "struct" | "enum" | "union" | "mod" | "static" | "const" | "type" | "use" => {
                format!("a `{ident}` item")
            }
            _ => format!("`{ident}`"),
        },
        TokenTree::Punct(p) => format!("`{}`", p.as_char()),
        TokenTree::Literal(lit) => format!("`{lit}`"),
        TokenTree::Group(_) => "a group".to_owned(),
    }
}
