use breaker::retry;

const NAME: &str = "products";

#[retry(name = NAME)]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[retry(name = "")]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
