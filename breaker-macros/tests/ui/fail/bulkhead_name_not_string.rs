use breaker::bulkhead;

const NAME: &str = "products";

#[bulkhead(name = NAME)]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(name = 7)]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
