//! Both attributes in either order, on the shapes `#[circuit_breaker]` takes; the future of an
//! async fn under both is still `Send`.

use breaker::{bulkhead, circuit_breaker, CallError};

#[circuit_breaker(name = "pass:composed")]
#[bulkhead(name = "pass:composed")]
async fn breaker_first(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(name = "pass:composed")]
#[circuit_breaker(name = "pass:composed", fallback = "fallback")]
fn bulkhead_first(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn fallback(_id: u32, err: CallError<std::io::Error>) -> std::io::Result<u32> {
    Err(err.into_error())
}

struct Tenant {
    id: u32,
}

impl Tenant {
    // One breaker per tenant, one bulkhead for all of them.
    #[bulkhead(name = "pass:composed-keyed")]
    #[inline]
    #[circuit_breaker(name = "pass:composed-keyed", key = self.id)]
    async fn quote(&self, factor: u32) -> std::io::Result<impl std::fmt::Display> {
        Ok(self.id * factor)
    }
}

trait Inventory {
    async fn stock(&self, id: u32) -> std::io::Result<u32>;

    // A default method, guarded in the trait itself.
    #[bulkhead(name = "pass:composed-trait")]
    #[circuit_breaker(name = "pass:composed-trait")]
    fn ping(&self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Warehouse;

impl Inventory for Warehouse {
    #[circuit_breaker(name = "pass:composed-trait")]
    #[bulkhead(name = "pass:composed-trait")]
    async fn stock(&self, id: u32) -> std::io::Result<u32> {
        Ok(id)
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(assert_send(breaker_first(1))).unwrap(), 1);
    assert_eq!(bulkhead_first(2).unwrap(), 2);
    let tenant = Tenant { id: 3 };
    assert_eq!(rt.block_on(tenant.quote(2)).unwrap().to_string(), "6");
    assert_eq!(rt.block_on(Warehouse.stock(4)).unwrap(), 4);
    Warehouse.ping().unwrap();
}
