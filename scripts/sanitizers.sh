#!/usr/bin/env bash
# Runs breaker-core's concurrency tests under Miri and ThreadSanitizer. Not part of the test
# command: both need a nightly toolchain with the `miri` and `rust-src` components, which a
# fresh machine does not have (`rustup component add miri rust-src --toolchain nightly`).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri'; then
    echo "scripts/sanitizers.sh: needs nightly with miri and rust-src:" >&2
    echo "  rustup component add miri rust-src --toolchain nightly" >&2
    exit 1
fi

# Miri: undefined behaviour and data races in the code with `unsafe` (the lock-free map, the
# listener lists, the async call's pinned fields) and in the lock-free window, through their
# unit tests, the event tests, and the call tests (timeouts) and cancellation tests.
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p breaker-core --lib -- \
    closed_window concurrent_map error::tests
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p breaker-core \
    --test events --test calls --test cancellation

# ThreadSanitizer: the multi-threaded tests at full size, std rebuilt with the sanitizer.
RUSTFLAGS="-Zsanitizer=thread" cargo +nightly test -Zbuild-std \
    --target x86_64-unknown-linux-gnu --target-dir target/tsan -p breaker-core \
    --test permits --test events --test cancellation --test soak --test properties
