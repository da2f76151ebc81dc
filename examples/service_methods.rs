//! `#[circuit_breaker]` on the methods of a service struct: a fallback method on `Self`, one
//! breaker per run-time key (provider and model), and the event stream of the registry.
//!
//! ```text
//! cargo run --example service_methods
//! ```

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use breaker::{
    circuit_breaker, BulkheadFull, CallError, CallNotPermitted, CallTimedOut, Config, EventKind,
    MaxRetriesExceeded, Registry,
};

/// Why a completion failed.
#[derive(Debug)]
enum LlmError {
    /// The provider answered 5xx.
    Overloaded,
    /// The breaker of that provider and model is open.
    Rejected(CallNotPermitted),
    /// The call ran longer than the breaker's `timeout-duration`.
    TimedOut(CallTimedOut),
    /// A bulkhead was full, or a retry ran out of attempts (what `CallError::into_error` needs
    /// to convert every way a guarded call can end).
    Full(BulkheadFull),
    /// See `Full`.
    Exhausted(MaxRetriesExceeded),
}

impl From<CallNotPermitted> for LlmError {
    fn from(rejected: CallNotPermitted) -> Self {
        LlmError::Rejected(rejected)
    }
}

impl From<CallTimedOut> for LlmError {
    fn from(timed_out: CallTimedOut) -> Self {
        LlmError::TimedOut(timed_out)
    }
}

impl From<BulkheadFull> for LlmError {
    fn from(full: BulkheadFull) -> Self {
        LlmError::Full(full)
    }
}

impl From<MaxRetriesExceeded> for LlmError {
    fn from(exhausted: MaxRetriesExceeded) -> Self {
        LlmError::Exhausted(exhausted)
    }
}

/// A gateway to several LLM providers, one of which is down.
struct LlmGateway {
    down: HashSet<&'static str>,
    cache: Mutex<Vec<String>>,
}

impl LlmGateway {
    /// One breaker per provider/model pair, all configured as `llm`; a rejection or failure
    /// answers from the cache instead.
    #[circuit_breaker(name = "llm", key = format!("{provider}/{model}"), fallback = "cached_answer")]
    async fn complete(
        &self,
        provider: &str,
        model: &str,
        prompt: &str,
    ) -> Result<String, LlmError> {
        tokio::task::yield_now().await; // the HTTP call would be here
        if self.down.contains(provider) {
            return Err(LlmError::Overloaded);
        }
        let answer = format!("{provider}/{model} says hi to {prompt:?}");
        self.cache.lock().unwrap().push(answer.clone());
        Ok(answer)
    }

    /// The fallback: a method on `Self` with the same parameters plus the `CallError`.
    async fn cached_answer(
        &self,
        provider: &str,
        model: &str,
        _prompt: &str,
        err: CallError<LlmError>,
    ) -> Result<String, LlmError> {
        let why = match &err {
            CallError::Inner(e) => format!("{e:?}"),
            CallError::Rejected(r) => format!("rejected by '{}'", r.breaker_name()),
            CallError::TimedOut(t) => format!("timed out after {:?}", t.timeout()),
            other => format!("{other:?}"),
        };
        match self.cache.lock().unwrap().last() {
            Some(cached) => Ok(format!("[cached, {provider}/{model}: {why}] {cached}")),
            None => Err(err.into_error()),
        }
    }

    /// No fallback: a rejection comes back as `LlmError::from(CallNotPermitted)`.
    #[circuit_breaker(name = "llm-health")]
    fn health(&self, provider: &str) -> Result<(), LlmError> {
        if self.down.contains(provider) {
            Err(LlmError::Overloaded)
        } else {
            Ok(())
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let llm = Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(2)
        .wait_duration_in_open_state(Duration::from_secs(30))
        .timeout_duration(Some(Duration::from_secs(2)))
        .build()
        .expect("valid");
    Registry::install_global(
        Registry::builder()
            .instance("llm", llm.clone())
            .instance("llm-health", llm)
            .build(),
    )
    .expect("installed before the first call");

    // Every breaker of the registry, keyed ones included, reports here.
    let _events = Registry::global().subscribe(|event| match event.kind() {
        EventKind::StateTransition { .. } | EventKind::NotPermitted => {
            println!("    event: {event}");
        }
        _ => {}
    });

    let gateway = LlmGateway {
        down: HashSet::from(["flaky"]),
        cache: Mutex::new(Vec::new()),
    };
    let calls = [
        ("openai", "gpt-4o"),
        ("flaky", "big-model"),
        ("flaky", "big-model"),
        ("flaky", "big-model"),
        ("flaky", "small-model"),
        ("openai", "gpt-4o"),
    ];
    for (provider, model) in calls {
        let answer = gateway.complete(provider, model, "hello").await;
        println!("{provider}/{model} -> {answer:?}");
    }

    for _ in 0..3 {
        match gateway.health("flaky") {
            Err(LlmError::Rejected(rejected)) => println!("health(flaky) -> rejected: {rejected}"),
            Err(LlmError::TimedOut(timed_out)) => println!("health(flaky) -> {timed_out}"),
            Err(LlmError::Full(full)) => println!("health(flaky) -> {full}"),
            Err(LlmError::Exhausted(exhausted)) => println!("health(flaky) -> {exhausted}"),
            other => println!("health(flaky) -> {other:?}"),
        }
    }

    println!();
    for b in Registry::global().breakers() {
        let m = b.metrics();
        println!(
            "{:<24} {:<9} buffered {} failed {} rejected {}",
            b.name(),
            m.state.to_string(),
            m.buffered_calls,
            m.failed_calls,
            m.not_permitted_calls
        );
    }
}
