use breaker::bulkhead;

#[bulkhead(name = "products")]
async fn count() -> u32 {
    7
}

fn main() {}
