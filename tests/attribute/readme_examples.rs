//! The README's complete programs are the example files, word for word: the examples are
//! compiled by `cargo test` (and run by hand), so a README program that drifted from its file
//! would be code nobody compiles.

use std::path::Path;

/// The examples the README shows whole.
const SHOWN: &[&str] = &[
    "examples/axum_layer.rs",
    "examples/reqwest_client.rs",
    "examples/admin_mount.rs",
    "examples/retry_attribute.rs",
];

#[test]
fn the_readme_shows_each_example_as_it_is_in_its_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for example in SHOWN {
        let code = std::fs::read_to_string(root.join(example))
            .unwrap_or_else(|e| panic!("{example}: {e}"));
        let block = format!("```rust\n{code}```\n");
        assert!(
            readme.contains(&block),
            "README.md does not show {example} as it is in the file: copy the file into its \
             ```rust block"
        );
    }
}
