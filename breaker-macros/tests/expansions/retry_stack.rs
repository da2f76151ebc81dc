//! `#[retry]` alone and with the other two in any order, on the shapes `#[circuit_breaker]`
//! takes; the future of an async fn under all three is still `Send`.

use breaker::{bulkhead, circuit_breaker, retry, CallError};

fn is_transient(e: &std::io::Error) -> bool {
    e.kind() != std::io::ErrorKind::InvalidInput
}

fn is_unavailable(status: &u16) -> bool {
    *status == 503
}

#[retry(name = "pass:retry", retry = is_transient, result = is_unavailable)]
async fn alone(id: &str) -> std::io::Result<u16> {
    let _ = id.len();
    Ok(200)
}

#[retry(name = "pass:retry", ignore = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound)]
fn alone_sync(path: &str) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

#[bulkhead(name = "pass:retry")]
#[retry(name = "pass:retry")]
#[circuit_breaker(name = "pass:retry", fallback = "fallback")]
async fn all_three(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

async fn fallback(_id: u32, err: CallError<std::io::Error>) -> std::io::Result<u32> {
    Err(err.into_error())
}

#[circuit_breaker(name = "pass:retry", fallback = "fallback_sync")]
#[retry(name = "pass:retry")]
#[bulkhead(name = "pass:retry")]
fn all_three_sync(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn fallback_sync(_id: u32, err: CallError<std::io::Error>) -> std::io::Result<u32> {
    Err(err.into_error())
}

struct Tenant {
    id: u32,
}

impl Tenant {
    // One breaker per tenant, one retry for all of them.
    #[retry(name = "pass:retry-keyed")]
    #[circuit_breaker(name = "pass:retry-keyed", key = self.id)]
    async fn quote(&self, factor: u32) -> std::io::Result<impl std::fmt::Display> {
        Ok(self.id * factor)
    }

    #[retry(name = "pass:retry-method", fallback = "fallback")]
    fn stock(&self, id: u32) -> std::io::Result<u32> {
        Ok(self.id + id)
    }

    fn fallback(&self, id: u32, _err: CallError<std::io::Error>) -> std::io::Result<u32> {
        Ok(id)
    }

    // A plain fn may mutate `self` between attempts.
    #[retry(name = "pass:retry-method")]
    fn bump(&mut self) -> std::io::Result<u32> {
        self.id += 1;
        Ok(self.id)
    }
}

/// An error of the function's own with no conversion from `MaxRetriesExceeded`: without
/// `result = ..` only errors are retried and the last one comes back as it is, so the
/// attribute asks for no such conversion.
#[derive(Debug, PartialEq)]
struct Declined(u32);

// Not retried (`retry` says so), so the call takes no wait between attempts.
#[retry(name = "pass:retry-own-error", retry = |_: &Declined| false)]
fn declined(id: u32) -> Result<u32, Declined> {
    Err(Declined(id))
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(assert_send(alone("7"))).unwrap(), 200);
    assert!(alone_sync("/nonexistent").is_err());
    assert_eq!(rt.block_on(assert_send(all_three(1))).unwrap(), 1);
    assert_eq!(all_three_sync(2).unwrap(), 2);
    let mut tenant = Tenant { id: 3 };
    assert_eq!(rt.block_on(tenant.quote(2)).unwrap().to_string(), "6");
    assert_eq!(tenant.stock(1).unwrap(), 4);
    assert_eq!(tenant.bump().unwrap(), 4);
    assert_eq!(declined(5), Err(Declined(5)));
}
