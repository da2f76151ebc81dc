//! `&self` methods, without a fallback (a rejection comes back through `From`) and with one.

use breaker::{circuit_breaker, CallError, CallNotPermitted, CallTimedOut};

// The rejections' values are kept for `Debug`, which is all that reads them.
#[derive(Debug)]
#[allow(dead_code)]
enum ApiError {
    Down,
    Rejected(CallNotPermitted),
    TimedOut(CallTimedOut),
}

impl From<CallNotPermitted> for ApiError {
    fn from(e: CallNotPermitted) -> Self {
        ApiError::Rejected(e)
    }
}

impl From<CallTimedOut> for ApiError {
    fn from(e: CallTimedOut) -> Self {
        ApiError::TimedOut(e)
    }
}

struct Catalog {
    prefix: String,
}

impl Catalog {
    // No fallback: a rejection comes back as `ApiError::from(CallNotPermitted)`.
    #[circuit_breaker(name = "pass:method_ref_self")]
    async fn get(&self, id: &str) -> Result<String, ApiError> {
        Ok(format!("{}{id}", self.prefix))
    }

    // With a fallback method on `Self`.
    #[circuit_breaker(name = "pass:method_ref_self", fallback = "cached")]
    async fn get_or_cached(&self, id: &str) -> Result<String, ApiError> {
        let _ = id;
        Err(ApiError::Down)
    }

    async fn cached(&self, id: &str, err: CallError<ApiError>) -> Result<String, ApiError> {
        let _ = (err.into_inner(), ApiError::Rejected);
        Ok(format!("{}{id} (cached)", self.prefix))
    }
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    let catalog = Catalog {
        prefix: "p-".into(),
    };
    assert_eq!(rt.block_on(catalog.get("1")).unwrap(), "p-1");
    assert_eq!(
        rt.block_on(catalog.get_or_cached("2")).unwrap(),
        "p-2 (cached)"
    );
}
