//! The names an admin answers to: the `Host` check's list (`routes/host.rs`).

use std::sync::Arc;

/// The names a request may be addressed to (the `Host` header without its port), lowercased;
/// any port is allowed.
#[derive(Clone, Debug)]
pub(crate) struct AllowedHosts(Arc<[String]>);

impl AllowedHosts {
    /// `hosts`, each a name or address as a `Host` header carries it (an IPv6 address in
    /// brackets); a port given with one is dropped.
    pub(crate) fn new<S: AsRef<str>>(hosts: impl IntoIterator<Item = S>) -> AllowedHosts {
        AllowedHosts(
            hosts
                .into_iter()
                .map(|h| {
                    let h = h.as_ref().trim();
                    host_of(h).unwrap_or(h).to_ascii_lowercase()
                })
                .collect(),
        )
    }

    /// Whether a request whose `Host` is `value` is answered.
    pub(crate) fn allows(&self, value: &str) -> bool {
        host_of(value).is_some_and(|host| self.0.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }

    /// `127.0.0.1, localhost, [::1]`, for a message.
    pub(crate) fn list(&self) -> String {
        self.0.join(", ")
    }
}

/// The name of a `Host` value, `name[:port]` or `[v6 address][:port]`; `None` for a value
/// that is neither (an empty name, a port that is not a number).
fn host_of(value: &str) -> Option<&str> {
    let (host, port) = if value.starts_with('[') {
        let (host, rest) = value.split_at(value.find(']')? + 1);
        if rest.is_empty() {
            (host, None)
        } else {
            (host, Some(rest.strip_prefix(':')?))
        }
    } else {
        match value.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (value, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (!host.is_empty() && port_ok && (value.starts_with('[') || !host.contains(':'))).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_with_or_without_a_port() {
        assert_eq!(host_of("127.0.0.1"), Some("127.0.0.1"));
        assert_eq!(host_of("localhost:9090"), Some("localhost"));
        assert_eq!(host_of("[::1]"), Some("[::1]"));
        assert_eq!(host_of("[::1]:9090"), Some("[::1]"));
        for bad in [
            "",
            ":80",
            "localhost:",
            "localhost:x",
            "::1",
            "[::1",
            "[::1]x",
            "[::1]:",
            "a:b:c",
        ] {
            assert_eq!(host_of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_the_allowed_names_pass_in_any_case_on_any_port() {
        let loopback = AllowedHosts::new(crate::LOOPBACK_HOSTS);
        for host in ["127.0.0.1", "127.0.0.1:9090", "LOCALHOST:80", "[::1]:1"] {
            assert!(loopback.allows(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:9090",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "127.0.0.2",
            "[::2]",
            "localhost:x",
        ] {
            assert!(!loopback.allows(host), "{host}");
        }
        let given = AllowedHosts::new(["Admin.Internal:8080", " [::1] "]);
        assert!(given.allows("admin.internal:9090"));
        assert!(given.allows("[::1]"));
        assert_eq!(given.list(), "admin.internal, [::1]");
    }
}
