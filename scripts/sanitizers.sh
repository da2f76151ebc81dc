#!/usr/bin/env bash
# Runs breaker-core's unsafe and lock-free code under Miri and ThreadSanitizer, on a pinned
# nightly (BREAKER_NIGHTLY overrides it), which it installs with rustup, with the `miri` and
# `rust-src` components, if this machine does not have it. .ci/run runs it after the tests.
# About 5 minutes on a warm machine, most of it Miri.
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTLY=${BREAKER_NIGHTLY:-nightly-2026-05-20}
installed=$(rustup component list --toolchain "$NIGHTLY" --installed 2>/dev/null || true)
if ! grep -q '^miri' <<<"$installed" || ! grep -q '^rust-src' <<<"$installed"; then
    echo "scripts/sanitizers.sh: installing $NIGHTLY with miri and rust-src (rustup)" >&2
    rustup toolchain install "$NIGHTLY" --profile minimal --component miri,rust-src
fi

# Miri: undefined behaviour, leaks and data races in the code with `unsafe` (the lock-free map,
# the listener lists) and in the lock-free window, through their unit tests; then the event,
# call (timeouts included) and cancellation tests, which reach them through the public API.
export MIRIFLAGS="-Zmiri-disable-isolation"
cargo +"$NIGHTLY" miri test -p breaker-core --lib -- \
    window::closed concurrent_map event::listeners error::tests
cargo +"$NIGHTLY" miri test -p breaker-core --test events --test calls --test cancellation
unset MIRIFLAGS

# ThreadSanitizer: the multi-threaded tests at full size, std rebuilt with the sanitizer. The
# unit tests of the map, the listener lists and the window, then the integration tests that
# race permits, events, cancellation, keyed lookups (the map through the registry) and soak.
tsan=(cargo "+$NIGHTLY" test -Zbuild-std --target x86_64-unknown-linux-gnu --target-dir target/tsan
    -p breaker-core)
RUSTFLAGS="-Zsanitizer=thread" "${tsan[@]}" --lib -- \
    window::closed concurrent_map event::listeners
RUSTFLAGS="-Zsanitizer=thread" "${tsan[@]}" \
    --test permits --test events --test cancellation --test registry --test soak --test properties
