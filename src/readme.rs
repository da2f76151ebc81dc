#![doc = include_str!("../README.md")]

// README.md is this module's documentation, read only by `cargo test --doc`: each of its
// ```rust blocks is a doctest named `src/readme.rs - readme (line N)`, N being the line of the
// block's opening fence in README.md (the README is the file's first attribute, on line 1, so
// rustdoc's line numbers are the README's). A compile error's `src/readme.rs:L:C` is the
// README's line L, or one past it where rustdoc miscounts the lines it rearranges.
//
// A block that is a fragment gets hidden `# ` lines (imports, a registry, a client, a `main`
// that returns a `Result` for `?`) that make it a program without changing what the reader
// sees. Its fence says how it is checked:
// - `rust`: compiled and run.
// - `rust,no_run`: type-checked only (rustdoc neither links nor runs it): blocks that need a
//   server, a Redis, an environment variable or a process-wide recorder, and the copies of
//   example files, which cargo builds as examples and tests/attribute/readme_examples.rs holds
//   to their files word for word.
// - `rust,test_harness`: compiled with the test harness and its `#[test]` run (without the
//   harness, rustc drops a `#[test]` function before checking it).

mod redis_hint;
