// A retry decides from an `Err` (or a retried `Ok`): the function returns a `Result`.
use breaker::retry;

#[retry(name = "products")]
fn get(id: u32) -> Option<u32> {
    Some(id)
}

#[retry(name = "products")]
async fn ping() {}

fn main() {}
