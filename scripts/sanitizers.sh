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
# the listener lists) and in the lock-free window, through their unit tests; then the event
# and cancellation modules of the engine's test binary, which reach them through the public
# API with listeners, panics and dropped futures. The call and timeout tests run under
# ThreadSanitizer below: their code has no `unsafe`, and Miri interprets Tokio's timer wheel
# under them for most of a minute. Miri also runs the one test of the system clock's
# portable reading (the standard library's monotonic clock, used where the kernel's coarse
# clock is not: under Miri and off Linux), which no other run compiles.
export MIRIFLAGS="-Zmiri-disable-isolation"
cargo +"$NIGHTLY" miri test -p breaker-core --lib -- \
    window::closed concurrent_map event::listeners error::tests \
    time::clock::tests::the_coarse_clock_moves
cargo +"$NIGHTLY" miri test -p breaker-core --test engine -- \
    events:: cancellation::
unset MIRIFLAGS

# ThreadSanitizer: the multi-threaded tests at full size, std rebuilt with the sanitizer. The
# unit tests of the map, the listener lists and the window, then the engine's test modules that
# race permits, events, cancellation, calls with their timeouts, keyed lookups (the map
# through the registry) and soak (a filter matches anywhere in a test's path: `slow_calls::`
# contains `calls::`, so it is skipped).
tsan=(cargo "+$NIGHTLY" test -Zbuild-std --target x86_64-unknown-linux-gnu --target-dir target/tsan
    -p breaker-core)
RUSTFLAGS="-Zsanitizer=thread" "${tsan[@]}" --lib -- \
    window::closed concurrent_map event::listeners
RUSTFLAGS="-Zsanitizer=thread" "${tsan[@]}" --test engine -- \
    permits:: events:: cancellation:: calls:: registry:: soak:: properties:: --skip slow_calls::
