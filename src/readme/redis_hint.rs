#![doc = include_str!("../../docs/REDIS_HINT.md")]

// docs/REDIS_HINT.md's Rust block, checked as the README's are (see `readme.rs`), under the name
// `src/readme/redis_hint.rs - readme::redis_hint (line N)`, N being its line in
// docs/REDIS_HINT.md.
