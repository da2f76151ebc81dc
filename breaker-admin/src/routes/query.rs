//! The dashboard's query string: `q`, `state`, `offset`, `limit`, each bounded, and a bad one
//! named in the error.

use axum::http::StatusCode;
use breaker_core::State as BreakerState;

use crate::routes::error::ApiError;
use crate::text::echo;

/// The longest query string the dashboard's API reads.
const MAX_QUERY_BYTES: usize = 4096;
/// The longest `q` the dashboard's API takes, in characters.
const MAX_SEARCH_CHARS: usize = 256;
/// The largest `limit` of the dashboard's API.
const MAX_LIMIT: usize = 1000;
const DEFAULT_LIMIT: usize = 100;

/// The dashboard's query: `q`, `state`, `offset`, `limit`.
#[derive(Debug, PartialEq)]
pub(super) struct Query {
    /// Part of the name to look for, lowercased; `None` matches every name.
    pub(super) q: Option<String>,
    /// Only breakers in this state; `None` matches every state.
    pub(super) state: Option<BreakerState>,
    /// How many matching breakers to skip.
    pub(super) offset: usize,
    /// How many matching breakers to list at most.
    pub(super) limit: usize,
}

/// Reads the raw query string (`None` when the request has none).
pub(super) fn parse_query(raw: Option<&str>) -> Result<Query, ApiError> {
    let mut query = Query {
        q: None,
        state: None,
        offset: 0,
        limit: DEFAULT_LIMIT,
    };
    let raw = raw.unwrap_or("");
    if raw.len() > MAX_QUERY_BYTES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the query string is longer than {MAX_QUERY_BYTES} bytes"),
        )
        .naming("parameter", "query"));
    }
    let bad = |parameter: &'static str, message: String| {
        ApiError::new(StatusCode::BAD_REQUEST, message).naming("parameter", parameter)
    };
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        match &*key {
            "q" => {
                if value.chars().count() > MAX_SEARCH_CHARS {
                    return Err(bad(
                        "q",
                        format!("`q` is longer than {MAX_SEARCH_CHARS} characters"),
                    ));
                }
                query.q = (!value.is_empty()).then(|| value.to_lowercase());
            }
            "state" => {
                query.state = if value.is_empty() {
                    None
                } else {
                    let state = BreakerState::from_name(&value.to_ascii_uppercase());
                    Some(state.ok_or_else(|| {
                        let states = BreakerState::ALL.map(BreakerState::as_str).join(", ");
                        bad(
                            "state",
                            format!(
                                "unknown state \"{}\": expected one of {states}",
                                echo(&value)
                            ),
                        )
                    })?)
                };
            }
            "offset" => {
                query.offset = value.parse().map_err(|_| {
                    bad(
                        "offset",
                        format!("`offset` must be a whole number, not \"{}\"", echo(&value)),
                    )
                })?;
            }
            "limit" => {
                let limit: usize = value.parse().map_err(|_| {
                    bad(
                        "limit",
                        format!("`limit` must be a whole number, not \"{}\"", echo(&value)),
                    )
                })?;
                if limit > MAX_LIMIT {
                    return Err(bad(
                        "limit",
                        format!("`limit` is at most {MAX_LIMIT}, not {limit}"),
                    ));
                }
                query.limit = limit;
            }
            _ => {}
        }
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_and_bad_values_name_their_parameter() {
        assert_eq!(
            parse_query(None).unwrap(),
            Query {
                q: None,
                state: None,
                offset: 0,
                limit: 100
            }
        );
        assert_eq!(
            parse_query(Some(
                "q=Pay%20Ment&state=half_open&offset=20&limit=1000&x=1"
            ))
            .unwrap(),
            Query {
                q: Some("pay ment".to_owned()),
                state: Some(BreakerState::HalfOpen),
                offset: 20,
                limit: 1000
            }
        );
        let field = |raw: &str| parse_query(Some(raw)).unwrap_err().field.unwrap();
        assert_eq!(field("limit=1001"), ("parameter", "limit".to_owned()));
        assert_eq!(field("limit=-1"), ("parameter", "limit".to_owned()));
        assert_eq!(field("offset=x"), ("parameter", "offset".to_owned()));
        assert_eq!(field("state=AJAR"), ("parameter", "state".to_owned()));
        assert_eq!(
            field(&format!("q={}", "a".repeat(257))),
            ("parameter", "q".to_owned())
        );
        assert_eq!(field(&"a".repeat(5000)), ("parameter", "query".to_owned()));
    }
}
