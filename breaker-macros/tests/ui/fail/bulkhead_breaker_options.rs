// `key` and the predicates are the breaker's: each says where to go instead.
use breaker::bulkhead;

fn is_server_error(_: &std::io::Error) -> bool {
    true
}

#[bulkhead(name = "products", key = tenant.clone())]
fn get(tenant: String) -> std::io::Result<String> {
    Ok(tenant)
}

#[bulkhead(name = "products", record = is_server_error)]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
