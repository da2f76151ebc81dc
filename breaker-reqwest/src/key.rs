//! [`PerHost`], the default key of the middleware's keyed breakers.

use std::fmt;

use ::reqwest::{Request, Url};

use breaker_core::RequestKey;

/// The default key: the request URL's host and port, as `host:port`.
///
/// The host is as the URL parser normalised it (a domain lowercased and in its ASCII form, an
/// IPv6 address in brackets), and the port is the URL's, or its scheme's default: so
/// `https://API.example.com/a` and `https://api.example.com:443/b` share the breaker
/// `name[api.example.com:443]`, and `http://[::1]:8080/` has `name[[::1]:8080]`. A URL
/// without a host has the key `""` plus its port, if any.
///
/// ```
/// use breaker_reqwest::PerHost;
/// use breaker_core::RequestKey;
///
/// let key = |url: &str| {
///     let request = reqwest::Request::new(reqwest::Method::GET, url.parse().unwrap());
///     PerHost.key(&request).to_string()
/// };
/// assert_eq!(key("https://API.example.com/a?b=c"), "api.example.com:443");
/// assert_eq!(key("http://127.0.0.1:8080/"), "127.0.0.1:8080");
/// assert_eq!(key("http://[::1]/"), "[::1]:80");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct PerHost;

impl RequestKey<Request> for PerHost {
    type Key<'a> = HostPort<'a>;

    #[inline]
    fn key<'a>(&'a self, request: &'a Request) -> HostPort<'a> {
        HostPort(request.url())
    }
}

/// A URL's `host:port`, the key [`PerHost`] gives a request; formatted straight into the
/// key's buffer.
#[derive(Clone, Copy, Debug)]
pub struct HostPort<'a>(&'a Url);

impl<'a> HostPort<'a> {
    /// The `host:port` of `url`.
    pub fn new(url: &'a Url) -> Self {
        HostPort(url)
    }
}

impl fmt::Display for HostPort<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.host_str().unwrap_or(""))?;
        match self.0.port_or_known_default() {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}
