// Unknown options list the bulkhead's own; numbers belong to its configuration.
use breaker::bulkhead;

#[bulkhead(name = "products", fallbak = "fb")]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(name = "products", max_concurrent_calls = 10)]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
