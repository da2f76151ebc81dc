// Unknown options list the retry's own; numbers belong to its configuration.
use breaker::retry;

#[retry(name = "products", retyr = is_transient)]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[retry(name = "products", max_attempts = 5)]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn is_transient(_: &std::io::Error) -> bool {
    true
}

fn main() {}
