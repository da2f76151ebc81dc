//! No heap allocation for a retried call whose first attempt succeeds (sync and async, the
//! default budget on, a listener subscribed), nor for attempts the retry does not wait
//! before: a first attempt's ignored error, and retries with a wait of zero.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use breaker_core::retry::{Retry, RetryConfig};

use crate::counting_alloc::{allocations_during, block_on};

#[test]
fn a_first_attempt_that_succeeds_allocates_nothing() {
    let retry = Retry::new("retry-no-alloc", RetryConfig::default());
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _subscription = retry.subscribe(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let calls = allocations_during(|| {
        for i in 0..10_000 {
            assert_eq!(retry.call_sync(|| Ok::<_, ()>(i)), Ok(i));
            let attempt = || async move { Ok::<_, ()>(i) };
            assert_eq!(block_on(retry.call(attempt)), Ok(i));
        }
    });
    assert_eq!(calls, 0, "allocations per call");
    assert_eq!(
        heard.load(Ordering::Relaxed),
        0,
        "a first success publishes nothing"
    );
    assert_eq!(
        retry.metrics().successful_calls_without_retry_attempt(),
        20_000
    );
}

#[test]
fn retries_without_a_wait_allocate_nothing_either() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    let retry = Retry::new("retry-no-alloc:zero-wait", config);
    let retries = allocations_during(|| {
        for _ in 0..1_000 {
            let mut attempts = 0;
            let _ = retry.call_sync(|| {
                attempts += 1;
                if attempts < 3 {
                    Err(attempts)
                } else {
                    Ok(attempts)
                }
            });
        }
    });
    assert_eq!(retries, 0, "allocations per retried call");
}
