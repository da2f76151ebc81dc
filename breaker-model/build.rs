//! Compiles breaker-core's sources in this package with `--cfg loom`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
    println!("cargo::rustc-cfg=loom");
}
