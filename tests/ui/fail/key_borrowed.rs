// A key is stored in the breaker set for the life of the program, so it must be owned.
use breaker::circuit_breaker;

#[circuit_breaker(name = "llm", key = provider)]
async fn complete(provider: &str, prompt: &str) -> Result<String, std::io::Error> {
    Ok(format!("{provider}: {prompt}"))
}

fn main() {}
