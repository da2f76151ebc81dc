// `key` and `record` are the breaker's: each says what to do instead.
use breaker::retry;

fn is_transient(_: &std::io::Error) -> bool {
    true
}

#[retry(name = "products", key = tenant.clone())]
fn get(tenant: String) -> std::io::Result<String> {
    Ok(tenant)
}

#[retry(name = "products", record = is_transient)]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
