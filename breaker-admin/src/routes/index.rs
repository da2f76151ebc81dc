//! `GET /actuator`: Spring Boot's links index, `{"_links": {id: {"href", "templated"}}}`, over
//! the endpoints this router mounts. Spring Boot Admin and other clients discover the endpoints
//! from it.
//!
//! Each link's id and path are Spring's for Resilience4j's endpoints: the endpoint's id, then
//! `-` and each path variable's name (`circuitbreakerevents-name-eventType`,
//! `bulkheadevents-bulkheadName`), the href templated where the path has a variable
//! (`{name}`; `{*path}` for the rest of a health path). An href is absolute: the scheme, the
//! request's host and the path the index was reached at (the prefix a service nested the admin
//! under included), then the endpoint's path.

use std::sync::Arc;

use axum::extract::{OriginalUri, State};
use axum::http::header::HOST;
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::options::Options;
use crate::routes::error::ApiError;
use crate::routes::state::AppState;

/// A link's id and its path below `/actuator`.
type Target = (&'static str, &'static str);

/// The links `options` mounts, after `self`, in the order of the crate's route table.
fn targets(o: &Options) -> Vec<Target> {
    let mut links: Vec<Target> = Vec::new();
    let mut add = |on: bool, more: &[Target]| {
        if on {
            links.extend_from_slice(more);
        }
    };
    add(
        o.circuit_breakers,
        &[("circuitbreakers", "/circuitbreakers")],
    );
    // Resilience4j's write operation is `circuitbreakers-name`; the GET there is breaker's.
    add(
        o.circuit_breakers || o.write.is_some(),
        &[("circuitbreakers-name", "/circuitbreakers/{name}")],
    );
    add(
        o.events,
        &[
            ("circuitbreakerevents", "/circuitbreakerevents"),
            ("circuitbreakerevents-name", "/circuitbreakerevents/{name}"),
            (
                "circuitbreakerevents-name-eventType",
                "/circuitbreakerevents/{name}/{eventType}",
            ),
        ],
    );
    add(
        o.stream,
        &[
            ("streamcircuitbreakerevents", "/streamcircuitbreakerevents"),
            (
                "streamcircuitbreakerevents-name",
                "/streamcircuitbreakerevents/{name}",
            ),
            (
                "streamcircuitbreakerevents-name-eventType",
                "/streamcircuitbreakerevents/{name}/{eventType}",
            ),
        ],
    );
    add(o.bulkheads, &[("bulkheads", "/bulkheads")]);
    add(
        o.bulkhead_events,
        &[
            ("bulkheadevents", "/bulkheadevents"),
            (
                "bulkheadevents-bulkheadName",
                "/bulkheadevents/{bulkheadName}",
            ),
            (
                "bulkheadevents-bulkheadName-eventType",
                "/bulkheadevents/{bulkheadName}/{eventType}",
            ),
        ],
    );
    add(o.retries, &[("retries", "/retries")]);
    add(
        o.retry_events,
        &[
            ("retryevents", "/retryevents"),
            ("retryevents-name", "/retryevents/{name}"),
            (
                "retryevents-name-eventType",
                "/retryevents/{name}/{eventType}",
            ),
        ],
    );
    add(
        o.health,
        &[("health", "/health"), ("health-path", "/health/{*path}")],
    );
    add(o.prometheus.is_some(), &[("prometheus", "/prometheus")]);
    links
}

pub(super) async fn links(
    State(app): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Response {
    let authority = match authority(&uri, &headers) {
        Ok(authority) => authority,
        Err(error) => return error.into_response(),
    };
    // Spring's normalization: the index's own URL without a trailing `/`.
    let path = uri.path().strip_suffix('/').unwrap_or(uri.path());
    let base = format!("{}://{authority}{}", scheme(&uri), clean_path(path));
    let mut links = vec![("self", Link::new(base.clone()))];
    links.extend(
        targets(&app.options)
            .into_iter()
            .map(|(id, path)| (id, Link::new(format!("{base}{path}")))),
    );
    Json(Links(links)).into_response()
}

/// The request's scheme when its URI carries one (an HTTP/2 request, or HTTP/1's absolute
/// form), else `http`: behind a proxy that ends TLS the hrefs say `http`, as Spring's do unless
/// it is told to trust forwarded headers.
fn scheme(uri: &Uri) -> &'static str {
    match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") => "https",
        _ => "http",
    }
}

/// The host (and port) the client asked for: the URI's authority when it carries one, else the
/// `Host` header. Only a plain `host[:port]` passes (a name, IPv4 or bracketed IPv6 address),
/// so nothing the client sent reaches an href unchecked; anything else is a 400 naming the
/// header.
fn authority(uri: &Uri, headers: &HeaderMap) -> Result<String, ApiError> {
    let bad = |why: &str| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{why}: the links index writes absolute links with the request's host"),
        )
        .naming("header", "Host")
    };
    if let Some(authority) = uri.authority() {
        return plain(authority.as_str()).ok_or_else(|| bad("the request URI's host is not valid"));
    }
    let mut hosts = headers.get_all(HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Err(bad("the request needs exactly one Host header"));
    };
    host.to_str()
        .ok()
        .and_then(plain)
        .ok_or_else(|| bad("the Host header is not a valid host[:port]"))
}

/// `text` if it is a plain `host[:port]`: at most 255 bytes, a valid URI authority without user
/// information, its host only letters, digits, `-`, `.`, `_` and `~` (or an IPv6 address in
/// brackets), its port a number up to 65535.
fn plain(text: &str) -> Option<String> {
    if text.len() > 255 || text.contains('@') {
        return None;
    }
    let authority: Authority = text.parse().ok()?;
    let host = authority.host();
    let host_ok = if let Some(inner) = host.strip_prefix('[') {
        inner
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
    } else {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
    };
    // Without user information the authority is the host, then `:port` or nothing.
    let port_ok = match text.strip_prefix(host)? {
        "" => true,
        port => port.strip_prefix(':').is_some_and(|digits| {
            digits.bytes().all(|b| b.is_ascii_digit()) && digits.parse::<u16>().is_ok()
        }),
    };
    (host_ok && port_ok).then(|| text.to_owned())
}

/// `path` with every byte outside RFC 3986's path characters percent-encoded (a `%` that does
/// not start an escape included), so an href is a valid URI and only the endpoints' own
/// variables are templates.
fn clean_path(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    for (i, &b) in bytes.iter().enumerate() {
        let escape = b == b'%'
            && bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        let keep = b.is_ascii_alphanumeric()
            || escape
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
            );
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Spring's `Link`: the href, and whether it is a template (it has a `{`).
#[derive(Serialize)]
struct Link {
    href: String,
    templated: bool,
}

impl Link {
    fn new(href: String) -> Link {
        let templated = href.contains('{');
        Link { href, templated }
    }
}

/// `{"_links": {id: link}}`, the links in their order.
struct Links(Vec<(&'static str, Link)>);

impl Serialize for Links {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Inner<'a>(&'a [(&'static str, Link)]);
        impl Serialize for Inner<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (id, link) in self.0 {
                    map.serialize_entry(id, link)?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("_links", &Inner(&self.0))?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::{clean_path, plain};

    #[test]
    fn only_a_plain_host_and_port_pass() {
        for good in [
            "127.0.0.1:8080",
            "localhost",
            "svc.ns.svc.cluster.local:9090",
            "[::1]:8080",
            "my_host~1",
        ] {
            assert_eq!(plain(good).as_deref(), Some(good), "{good}");
        }
        for bad in [
            "",
            "user@host",
            "host:port",
            "a b",
            "host\"><script>",
            "[not-an-ip]:80",
            "host/path",
            "host:99999999",
            "host:",
            "host:+80",
            &"a".repeat(256),
        ] {
            assert_eq!(plain(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_path_is_left_as_is_unless_a_byte_is_not_a_path_character() {
        assert_eq!(clean_path("/ops/actuator"), "/ops/actuator");
        assert_eq!(clean_path("/t%5Bacme%5D/actuator"), "/t%5Bacme%5D/actuator");
        assert_eq!(clean_path("/{x}/\"a\"/100%"), "/%7Bx%7D/%22a%22/100%25");
    }
}
