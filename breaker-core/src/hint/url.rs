//! Checking a Redis URL part by part, so that an error names the part that is wrong.

use super::error::HintError;

/// Checks the parts of a Redis URL one by one, so that an error names the wrong part;
/// returns the URL to hand to the client.
pub(super) fn validate_url(url: &str) -> Result<String, HintError> {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(HintError::url(
            url,
            "scheme",
            "is missing: expected `redis://host:port` or `rediss://host:port`",
        ));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "redis" => {}
        "rediss" if cfg!(feature = "redis-hint-tls") => {}
        "rediss" => {
            return Err(HintError::url(
                url,
                "scheme",
                "`rediss://` (TLS) needs breaker's `redis-hint-tls` feature",
            ))
        }
        other => {
            return Err(HintError::url(
                url,
                "scheme",
                format!("`{other}://` is not supported: expected `redis://` or `rediss://`"),
            ))
        }
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host_port = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => {
            if userinfo
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(HintError::url(
                    url,
                    "password",
                    "or user name contains whitespace; percent-encode it",
                ));
            }
            host_port
        }
        None => authority,
    };
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, after)) => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => {
                    return Err(HintError::url(
                        url,
                        "host",
                        format!("`[{host}]` is followed by `{after}`"),
                    ))
                }
            },
            None => return Err(HintError::url(url, "host", "has an unclosed `[`")),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err(HintError::url(url, "host", "is missing"));
    }
    if host.contains(|c: char| c.is_whitespace() || c.is_control() || c == '@') {
        return Err(HintError::url(
            url,
            "host",
            format!("`{host}` is not a host"),
        ));
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => {
                return Err(HintError::url(
                    url,
                    "port",
                    format!("`{port}` is not a port number (1-65535)"),
                ))
            }
        }
    }
    let path = tail.split(['?', '#']).next().unwrap_or("");
    let db = path.trim_start_matches('/');
    if !db.is_empty() && db.parse::<u32>().is_err() {
        return Err(HintError::url(
            url,
            "database",
            format!("`{db}` is not a database number"),
        ));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_err(url: &str) -> (&'static str, String) {
        match validate_url(url) {
            Err(HintError::InvalidUrl { part, url, .. }) => (part, url),
            other => panic!("{url}: expected an invalid URL, got {other:?}"),
        }
    }

    #[test]
    fn bad_urls_name_the_wrong_part() {
        assert_eq!(url_err("127.0.0.1:6379").0, "scheme");
        assert_eq!(url_err("http://127.0.0.1:6379").0, "scheme");
        assert_eq!(url_err("redis://").0, "host");
        assert_eq!(url_err("redis://:pw@:6379").0, "host");
        assert_eq!(url_err("redis://127.0.0.1:0").0, "port");
        assert_eq!(url_err("redis://127.0.0.1:99999").0, "port");
        assert_eq!(url_err("redis://127.0.0.1:six").0, "port");
        assert_eq!(url_err("redis://127.0.0.1:6379/zero").0, "database");
        assert_eq!(url_err("redis://[::1:6379").0, "host");
        if !cfg!(feature = "redis-hint-tls") {
            assert_eq!(url_err("rediss://127.0.0.1:6379").0, "scheme");
        }
        // The password never shows.
        let (part, shown) = url_err("redis://user:s3cret@127.0.0.1:nope");
        assert_eq!(part, "port");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("user:***@"), "{shown}");
    }

    #[test]
    fn good_urls_pass() {
        for url in [
            "redis://127.0.0.1",
            "redis://127.0.0.1:6379",
            "redis://127.0.0.1:6379/2",
            "redis://:pw@localhost:6379/0",
            "redis://user:p%40ss@localhost:6379",
            "redis://[::1]:6379",
            "REDIS://127.0.0.1/",
        ] {
            assert!(validate_url(url).is_ok(), "{url}");
        }
    }
}
