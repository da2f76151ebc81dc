//! The guarded future is `Send` when the body's is, so it can be spawned on a multi-thread
//! runtime (axum's `check_future_send`).

use std::future::Future;

use breaker::{circuit_breaker, CallError};

fn assert_send<F: Future + Send>(f: F) -> F {
    f
}

#[circuit_breaker(name = "pass:future_is_send", fallback = "fallback", key = id % 4)]
async fn get(id: u64) -> Result<u64, std::io::Error> {
    tokio::task::yield_now().await;
    Ok(id)
}

async fn fallback(id: u64, _err: CallError<std::io::Error>) -> Result<u64, std::io::Error> {
    tokio::task::yield_now().await;
    Ok(id)
}

#[test]
fn compiles_and_runs() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let handle = rt.spawn(assert_send(get(5)));
    assert_eq!(rt.block_on(handle).unwrap().unwrap(), 5);
}
