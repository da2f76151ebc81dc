use breaker::circuit_breaker;

#[circuit_breaker(name = "llm", key = (provider.to_owned(), model.to_owned()))]
async fn complete(provider: &str, model: &str) -> Result<String, std::io::Error> {
    Ok(format!("{provider}/{model}"))
}

fn main() {}
