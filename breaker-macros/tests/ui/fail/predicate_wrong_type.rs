// The first error is at the predicate. rustc then also reports that the classifier built from
// it does not classify this function's results, at the return type: a cascade of the same
// mistake, pinned here.
use breaker::circuit_breaker;

fn is_server_error(status: &u16) -> bool {
    *status >= 500
}

#[circuit_breaker(name = "products", record = is_server_error)]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
