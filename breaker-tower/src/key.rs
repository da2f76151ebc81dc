//! The HTTP request keys for per-key breakers: [`HostKey`], [`HeaderKey`] and [`PathKey`].

use std::fmt;

use http::header::{HeaderName, HOST};

use breaker_core::RequestKey;

/// Keys an HTTP request by its host: the URI's authority (`host:port`, as a client's requests
/// carry it), else the `Host` header (as a server receives it); an empty key when neither is
/// there.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostKey;

impl<B> RequestKey<http::Request<B>> for HostKey {
    type Key<'a>
        = HeaderText<'a>
    where
        B: 'a;

    #[inline]
    fn key<'a>(&'a self, request: &'a http::Request<B>) -> HeaderText<'a> {
        match request.uri().authority() {
            Some(authority) => HeaderText(authority.as_str().as_bytes()),
            None => HeaderText(request.headers().get(HOST).map_or(&[], |v| v.as_bytes())),
        }
    }
}

/// Keys an HTTP request by the value of one header (a tenant id, an API key's name): an empty
/// key when the request does not carry it, the first value when it carries several.
#[derive(Clone, Debug)]
pub struct HeaderKey {
    name: HeaderName,
}

impl HeaderKey {
    /// Keys requests by the header `name`.
    pub fn new(name: HeaderName) -> Self {
        HeaderKey { name }
    }

    /// Keys requests by the header `name`, given as a lowercase static string (panics
    /// otherwise, as [`HeaderName::from_static`] does).
    pub fn from_static(name: &'static str) -> Self {
        HeaderKey::new(HeaderName::from_static(name))
    }

    /// The header's name.
    pub fn name(&self) -> &HeaderName {
        &self.name
    }
}

impl<B> RequestKey<http::Request<B>> for HeaderKey {
    type Key<'a>
        = HeaderText<'a>
    where
        B: 'a;

    #[inline]
    fn key<'a>(&'a self, request: &'a http::Request<B>) -> HeaderText<'a> {
        HeaderText(
            request
                .headers()
                .get(&self.name)
                .map_or(&[], |v| v.as_bytes()),
        )
    }
}

/// Keys an HTTP request by its path (without the query). A path that carries ids (`/orders/17`)
/// makes a breaker per id; key by a route template instead with a closure over the framework's
/// matched route (axum's `MatchedPath` extension).
#[derive(Clone, Copy, Debug, Default)]
pub struct PathKey;

impl<B> RequestKey<http::Request<B>> for PathKey {
    type Key<'a>
        = &'a str
    where
        B: 'a;

    #[inline]
    fn key<'a>(&'a self, request: &'a http::Request<B>) -> &'a str {
        request.uri().path()
    }
}

/// A header's bytes as a key: visible ASCII and spaces as they are, any other byte as `\xNN`,
/// so that a key never carries a control character and two different values never read the
/// same.
#[derive(Clone, Copy, Debug)]
pub struct HeaderText<'a>(&'a [u8]);

impl fmt::Display for HeaderText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while !rest.is_empty() {
            let plain = rest
                .iter()
                .position(|&b| !(b == b' ' || b.is_ascii_graphic()) || b == b'\\')
                .unwrap_or(rest.len());
            // Visible ASCII and spaces are UTF-8 on their own.
            f.write_str(std::str::from_utf8(&rest[..plain]).map_err(|_| fmt::Error)?)?;
            if let Some(&byte) = rest.get(plain) {
                write!(f, "\\x{byte:02x}")?;
                rest = &rest[plain + 1..];
            } else {
                rest = &[];
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> String {
        HeaderText(bytes).to_string()
    }

    #[test]
    fn header_text_escapes_what_is_not_visible_ascii() {
        assert_eq!(text(b"acme"), "acme");
        assert_eq!(text(b"a b"), "a b");
        assert_eq!(text(b""), "");
        assert_eq!(text(b"a\tb\x7f\xff"), "a\\x09b\\x7f\\xff");
        // A backslash is escaped too, so `\x41` sent literally is not the byte 0x41's key.
        assert_eq!(text(b"\\x41"), "\\x5cx41");
        assert_ne!(text(b"\\x41"), text(b"A"));
    }

    #[test]
    fn http_keys_read_the_request() {
        let request = http::Request::builder()
            .uri("http://bureau.internal:8443/score?x=1")
            .header("x-tenant", "acme")
            .body(())
            .unwrap();
        assert_eq!(HostKey.key(&request).to_string(), "bureau.internal:8443");
        assert_eq!(PathKey.key(&request), "/score");
        let tenant = HeaderKey::from_static("x-tenant");
        assert_eq!(tenant.key(&request).to_string(), "acme");
        assert_eq!(
            HeaderKey::from_static("x-other").key(&request).to_string(),
            ""
        );

        let served = http::Request::builder()
            .uri("/score")
            .header("host", "127.0.0.1:3000")
            .body(())
            .unwrap();
        assert_eq!(HostKey.key(&served).to_string(), "127.0.0.1:3000");
        let bare = http::Request::builder().uri("/").body(()).unwrap();
        assert_eq!(HostKey.key(&bare).to_string(), "");
    }
}
