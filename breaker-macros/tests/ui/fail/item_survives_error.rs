// On a macro error the function is still emitted unchanged: its callers type-check, and the
// attribute's error is the only one reported (thiserror's `invalid-input-impl-anyway`).
use breaker::circuit_breaker;

#[circuit_breaker(nmae = "products")]
async fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

async fn caller() -> Result<u32, std::io::Error> {
    // No error on the following line.
    let n: u32 = get(1).await?;
    Ok(n + 1)
}

fn main() {
    let _ = caller();
}
