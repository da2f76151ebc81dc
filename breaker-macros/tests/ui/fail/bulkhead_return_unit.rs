use breaker::bulkhead;

#[bulkhead(name = "audit")]
fn record(event: &str) {
    let _ = event;
}

fn main() {}
