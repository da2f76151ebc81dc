// With `result = ..` and no fallback, retries that run out on an `Ok` need
// `From<MaxRetriesExceeded>`.
use breaker::retry;

#[derive(Debug)]
struct ApiError;

fn is_unavailable(status: &u16) -> bool {
    *status == 503
}

#[retry(name = "status", result = is_unavailable)]
fn status() -> Result<u16, ApiError> {
    Ok(200)
}

// Without `result`, the last error is returned as is: no conversion needed.
#[retry(name = "status")]
fn plain() -> Result<u16, ApiError> {
    Ok(200)
}

fn main() {}
