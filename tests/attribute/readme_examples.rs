//! The README's Rust blocks are code that something compiles.
//!
//! Every ```` ```rust ```` block of README.md is a doctest of the facade (`src/readme.rs`,
//! `cargo test --doc`). The README's four complete programs are also example files: the README
//! shows each word for word, as the first test here checks, so that `cargo run --example` runs
//! the code the reader sees and the output the README prints after it is that program's. Their
//! blocks are `no_run`: the doctest type-checks the README's copy, the example build (every
//! `cargo test` builds the examples) compiles and links the file, and `cargo run` runs it.
//! Running them as doctests as well would start their servers a second time (`admin_mount` also
//! waits for a token and serves for ever) and prove nothing the example does not.
//!
//! The second test keeps every block a doctest: `ignore` (or a block without `rust`) would
//! drop a block from the doctests without a word.

use std::path::Path;

/// The examples the README shows whole.
const SHOWN: &[&str] = &[
    "examples/axum_layer.rs",
    "examples/reqwest_client.rs",
    "examples/admin_mount.rs",
    "examples/retry_attribute.rs",
];

/// How a README block may be checked, by its fence: run, compiled only, or compiled and run
/// under the test harness (for a block whose code is a `#[test]`).
const CHECKED: &[&str] = &["```rust", "```rust,no_run", "```rust,test_harness"];

fn readme() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("README.md")).unwrap()
}

#[test]
fn the_readme_shows_each_example_as_it_is_in_its_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = readme();
    for example in SHOWN {
        let code = std::fs::read_to_string(root.join(example))
            .unwrap_or_else(|e| panic!("{example}: {e}"));
        let block = format!("```rust,no_run\n{code}```\n");
        assert!(
            readme.contains(&block),
            "README.md does not show {example} as it is in the file: copy the file into its \
             ```rust,no_run block"
        );
    }
}

#[test]
fn every_rust_block_of_the_readme_is_a_doctest() {
    let readme = readme();
    let mut rust_blocks = 0;
    let mut in_block = false;
    for (index, line) in readme.lines().enumerate() {
        let fence = line.trim_start();
        if !fence.starts_with("```") {
            continue;
        }
        if in_block {
            in_block = fence != "```";
            continue;
        }
        in_block = true;
        let info = fence.trim_start_matches('`');
        // rustdoc reads a block without a language, or whose first word is `rust`, as Rust.
        if info.is_empty() || info.split(',').next() == Some("rust") {
            rust_blocks += 1;
            assert!(
                CHECKED.contains(&fence),
                "README.md:{}: `{fence}` is not compiled as the README's other Rust blocks \
                 are: use one of {CHECKED:?} (with hidden `# ` lines for what the reader does \
                 not need to see)",
                index + 1
            );
        }
    }
    assert!(!in_block, "README.md ends inside a code block");
    // At least the examples' blocks: a reading that found no block would check nothing.
    assert!(
        rust_blocks >= SHOWN.len(),
        "only {rust_blocks} Rust blocks found in README.md"
    );
}
