//! The call-by-call trace (docs/TRACE.md): order-service calls a failing product-service
//! through `#[circuit_breaker]`, and the trace shows, call by call, whether product-service was
//! called, why the fallback answered, and the breaker's state.
//!
//! ```text
//! cargo run --example product_service
//! ```
//!
//! The wait in OPEN is only 300 ms, so the demo ends in a second; with automatic transition
//! enabled, the registry's scheduler thread moves the breaker to HALF_OPEN with no call
//! involved.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use breaker::{circuit_breaker, CallError, EventKind, Format, LoadError, Registry, State};

/// product-service's client. It fails while `healthy` is false.
struct ProductClient {
    healthy: AtomicBool,
    calls: AtomicUsize,
}

static PRODUCT_CLIENT: ProductClient = ProductClient {
    healthy: AtomicBool::new(false),
    calls: AtomicUsize::new(0),
};

impl ProductClient {
    async fn get_product_by_id(&self, id: &str) -> Result<String, ProductError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.healthy.load(Ordering::SeqCst) {
            Ok(format!("product {id}"))
        } else {
            Err(ProductError::Unavailable)
        }
    }
}

/// What product-service's client fails with.
#[derive(Debug)]
enum ProductError {
    Unavailable,
}

/// What order-service gets: the product, or the fallback's answer and why it was used.
enum Product {
    Found(String),
    Fallback { reason: String },
}

// Spring's `@CircuitBreaker(name = "productService", fallbackMethod = "fallback")`.
#[circuit_breaker(name = "productService", fallback = "fallback")]
async fn invoke_product_api(id: &str) -> Result<Product, ProductError> {
    PRODUCT_CLIENT
        .get_product_by_id(id)
        .await
        .map(Product::Found)
}

/// Runs for every call that did not succeed: one that reached product-service and failed, and
/// one the open circuit refused.
async fn fallback(_id: &str, err: CallError<ProductError>) -> Result<Product, ProductError> {
    let reason = match err {
        CallError::Inner(e) => format!("ProductError::{e:?}"),
        CallError::Rejected(_) => "CallNotPermitted".to_owned(),
        CallError::TimedOut(t) => format!("timed out after {:?}", t.timeout()),
        other => format!("{other:?}"),
    };
    Ok(Product::Fallback { reason })
}

/// The seven Spring properties lines of docs/TRACE.md, read from
/// `examples/product_service.properties` (with the wait shortened to 300 ms).
fn configure() -> Result<Registry, LoadError> {
    Ok(Registry::builder()
        .load_str(
            Format::Properties,
            "examples/product_service.properties",
            include_str!("product_service.properties"),
        )?
        .build())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = match configure() {
        Ok(registry) => registry,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    };
    if let Err(err) = Registry::install_global(registry) {
        // The demo configures its breaker in code: a BREAKER_CONFIG set in the environment
        // would be ignored, and install_global says so rather than run on the wrong config.
        eprintln!("{err}");
        std::process::exit(1);
    }
    let breaker = Registry::global().breaker("productService");

    // Told when the scheduler moves the breaker to HALF_OPEN.
    let (half_open_tx, mut half_open) = tokio::sync::mpsc::unbounded_channel();
    let _subscription = breaker.subscribe(move |event| {
        if let EventKind::StateTransition {
            to: State::HalfOpen,
            ..
        } = event.kind()
        {
            let _ = half_open_tx.send(());
        }
    });

    println!("product-service is failing; every call goes through #[circuit_breaker(name = \"productService\")]");
    println!();
    for n in 1..=7 {
        call(&format!("call {n}"), &breaker).await;
    }

    tokio::time::timeout(Duration::from_secs(5), half_open.recv())
        .await
        .expect("the scheduler moves OPEN to HALF_OPEN after the wait");
    println!(
        "         ... {} ms later: {}",
        breaker.config().wait_duration_in_open_state().as_millis(),
        breaker.state()
    );

    for (n, healthy) in [(1, true), (2, false), (3, true)] {
        PRODUCT_CLIENT.healthy.store(healthy, Ordering::SeqCst);
        call(&format!("trial {n}"), &breaker).await;
    }
    println!();
    println!(
        "1 of the 3 trial calls failed (33% < 50%), so the circuit is {} again.",
        breaker.state()
    );
}

/// One call, printed as docs/TRACE.md shows it.
async fn call(label: &str, breaker: &breaker::CircuitBreaker) {
    let state_before = breaker.state();
    let calls_before = PRODUCT_CLIENT.calls.load(Ordering::SeqCst);
    let product = invoke_product_api("42")
        .await
        .expect("the fallback always answers");
    let called = PRODUCT_CLIENT.calls.load(Ordering::SeqCst) > calls_before;

    let downstream = if called {
        "downstream called"
    } else {
        "(not called)     "
    };
    let outcome = match product {
        Product::Found(product) => format!("ok ({product})"),
        Product::Fallback { reason } => format!("fallback ({reason})"),
    };
    let metrics = breaker.metrics();
    let detail = match (metrics.state, metrics.failure_rate) {
        (State::Closed, None) if state_before == State::Closed => {
            format!("buffered {}", metrics.buffered_calls)
        }
        (State::Open, Some(rate)) if state_before != State::Open => {
            format!("failure rate {rate:.0}%")
        }
        _ => String::new(),
    };
    let line = format!(
        "{label:<8} {downstream} -> {outcome:<40} {:<9} {detail}",
        metrics.state.to_string()
    );
    println!("{}", line.trim_end());
}
