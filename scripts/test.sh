#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine: installs what the tests need, then runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Redis hint tests start their own redis-server on a free 127.0.0.1 port.
if ! command -v redis-server >/dev/null 2>&1; then
    echo "scripts/test.sh: installing redis-server (Debian package redis-server)" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

# The credit-bureau tests run the fallback's manual-review queue on a real PostgreSQL: each
# makes its own cluster in a temporary directory and starts it on a free 127.0.0.1 port (as the
# package's `postgres` user when run as root). The package's own cluster, if its setup starts
# one, is never used.
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v postgres >/dev/null 2>&1; then
    echo "scripts/test.sh: installing postgresql (Debian package postgresql)" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
fi

# breaker-core's tests/metrics/grafana.rs runs `promtool check metrics` on a scrape; promtool
# comes with Debian's prometheus package. The package holds the server too; the tests never
# start or reach it (on a machine run by systemd, the package's own setup may start it on :9090).
if ! command -v promtool >/dev/null 2>&1; then
    echo "scripts/test.sh: installing promtool (Debian package prometheus)" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

# tests/dashboard_browser.rs drives the admin dashboard in headless Chromium through
# ChromeDriver, both from Debian (packages chromium and chromium-driver).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    echo "scripts/test.sh: installing chromium and chromium-driver (Debian packages)" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

cargo test --workspace --all-features
