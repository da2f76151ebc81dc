//! A borrowed key works as it is: only its text is kept, and only when its breaker is made.

use breaker::circuit_breaker;

#[circuit_breaker(name = "pass:key_borrowed", key = provider)]
async fn complete(provider: &str, prompt: &str) -> Result<String, std::io::Error> {
    Ok(format!("{provider}: {prompt}"))
}

#[circuit_breaker(name = "pass:key_borrowed_sync", key = tenant)]
fn for_tenant(tenant: &str) -> Result<usize, std::io::Error> {
    Ok(tenant.len())
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    let provider = String::from("openai");
    assert_eq!(
        rt.block_on(complete(&provider, "hi")).unwrap(),
        "openai: hi"
    );
    assert_eq!(for_tenant("acme").unwrap(), 4);
    let keyed = breaker::Registry::global().keyed("pass:key_borrowed");
    assert_eq!(
        keyed.find("openai").unwrap().name(),
        "pass:key_borrowed[openai]"
    );
}
