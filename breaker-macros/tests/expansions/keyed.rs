//! `key = ...`: one breaker per key, named `name[key]` in the registry.

use breaker::{circuit_breaker, CallError};

struct Llm;

impl Llm {
    #[circuit_breaker(name = "pass:keyed", key = format!("{provider}/{model}"), fallback = "fallback")]
    async fn complete(
        &self,
        provider: &str,
        model: &str,
        prompt: String,
    ) -> Result<String, std::io::Error> {
        Ok(format!("{provider}/{model}: {prompt}"))
    }

    async fn fallback(
        &self,
        _provider: &str,
        _model: &str,
        prompt: String,
        _err: CallError<std::io::Error>,
    ) -> Result<String, std::io::Error> {
        Ok(prompt)
    }
}

#[circuit_breaker(name = "pass:keyed_sync", key = tenant)]
fn for_tenant(tenant: u32) -> Result<u32, std::io::Error> {
    Ok(tenant)
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(
        rt.block_on(Llm.complete("openai", "gpt", "hi".into()))
            .unwrap(),
        "openai/gpt: hi"
    );
    assert_eq!(for_tenant(7).unwrap(), 7);
    let names: Vec<String> = breaker::Registry::global()
        .breakers()
        .iter()
        .map(|b| b.name().to_owned())
        .collect();
    assert!(
        names.contains(&"pass:keyed[openai/gpt]".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"pass:keyed_sync[7]".to_owned()),
        "{names:?}"
    );
}
