//! `#[bulkhead]` alone: async and plain fns, a generic fn with a fallback, `&self` and
//! `self: Arc<Self>` methods.

use std::sync::Arc;

use breaker::{bulkhead, BulkheadFull, CallError};

#[derive(Debug)]
struct ApiError;

impl From<BulkheadFull> for ApiError {
    fn from(_: BulkheadFull) -> Self {
        ApiError
    }
}

#[bulkhead(name = "pass:bulkhead")]
async fn fetch(id: &str) -> Result<String, ApiError> {
    Ok(id.to_owned())
}

#[bulkhead(name = "pass:bulkhead")]
fn read(path: &str) -> std::io::Result<String> {
    Ok(path.to_owned())
}

#[bulkhead(name = "pass:bulkhead", fallback = "fallback")]
async fn with_fallback<T: Clone + Send + 'static>(items: &[T]) -> Result<T, String> {
    items.first().cloned().ok_or_else(|| "empty".to_owned())
}

async fn fallback<T: Clone + Send + 'static>(
    items: &[T],
    err: CallError<String>,
) -> Result<T, String> {
    let _ = items;
    Err(err.to_string())
}

struct Client {
    base: String,
}

impl Client {
    #[bulkhead(name = "pass:bulkhead")]
    async fn get(&self, path: &str) -> Result<String, ApiError> {
        Ok(format!("{}{path}", self.base))
    }

    #[bulkhead(name = "pass:bulkhead", fallback = "offline")]
    fn get_sync(self: Arc<Self>, path: &str) -> Result<String, ApiError> {
        Ok(format!("{}{path}", self.base))
    }

    fn offline(self: Arc<Self>, path: &str, _err: CallError<ApiError>) -> Result<String, ApiError> {
        Ok(format!("offline {path}"))
    }
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(fetch("7")).unwrap(), "7");
    assert_eq!(read("/a").unwrap(), "/a");
    assert_eq!(rt.block_on(with_fallback(&[1, 2])).unwrap(), 1);
    let client = Arc::new(Client { base: "b".into() });
    assert_eq!(rt.block_on(client.get("/x")).unwrap(), "b/x");
    assert_eq!(client.get_sync("/y").unwrap(), "b/y");
}
