//! The `Host` check: only requests addressed to one of the allowed names are answered.
//!
//! A loopback admin trusts whoever can reach it, and a browser reaches it from any page: a page
//! on `evil.example` whose name the attacker then resolves to 127.0.0.1 (DNS rebinding) sends
//! its requests to the admin as same-origin ones, with `Host: evil.example`. Answering only the
//! names the admin is reached by stops that, whatever a write hook trusts. The check runs before
//! every route (an unknown path too), on [`Admin::serve_local`](crate::Admin::serve_local) by
//! default and on [`Admin::router`](crate::Admin::router) with
//! [`Admin::allowed_hosts`](crate::Admin::allowed_hosts).

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::hosts::AllowedHosts;
use crate::routes::error::ApiError;

/// The middleware: a 403 naming the `Host` for a request addressed elsewhere, a 400 for one
/// with no `Host` at all.
pub(crate) async fn check(
    State(allowed): State<AllowedHosts>,
    request: Request,
    next: Next,
) -> Response {
    // HTTP/1.1 sends `Host`; HTTP/2 the URI's authority.
    let given = match request.headers().get(header::HOST) {
        Some(value) => Some(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        None => request.uri().authority().map(|a| a.as_str().to_owned()),
    };
    match given {
        Some(host) if allowed.allows(&host) => next.run(request).await,
        Some(host) => ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "this admin answers only requests addressed to {} (the Host header): a page \
                 elsewhere whose name resolves to this machine (DNS rebinding) must not reach it",
                allowed.list()
            ),
        )
        .naming("host", &host)
        .into_response(),
        None => ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "the request has no Host header: this admin answers only requests addressed \
                 to {}",
                allowed.list()
            ),
        )
        .into_response(),
    }
}
