//! The admin dashboard (`GET /dashboard`) in a real browser: headless Chromium driven through
//! ChromeDriver (Debian's `chromium` and `chromium-driver`) with fantoccini, against the
//! operations example's service (examples/operations/sim.rs) run in-process on 127.0.0.1.
//!
//! Everything is read from the DOM: the tiles' `data-state` and state text for breakers the
//! test drives or moves by hand, the rates against their thresholds, the state bands (from the
//! state history endpoint for what happened before the page opened, even on a breaker whose
//! call events have long pushed its transitions out of its event buffer, from the stream
//! after), that a
//! transition made through the registry reaches its tile through the event stream (see
//! below), the search box and the state filters, a breaker
//! name that is markup shown as text, and with 10,000 breakers that only one page of tiles is in
//! the DOM and the search finds one breaker among them; a bulkhead's calls in flight against its
//! limit, on the tile of the breaker of its name or on a tile of its own. Screenshots go to the test build's
//! scratch directory, or to `BREAKER_SCREENSHOTS` (see `screenshot_path`).
//!
//! A transition made through the registry is timed inside the page, never against the test's
//! wall clock: a probe script, installed before the page's own script runs (`PROBE_JS`,
//! through ChromeDriver's DevTools command), wraps the page's `STATE_TRANSITION` listener to
//! note when each event arrived (the message's `timeStamp`) and what the breaker's tile showed
//! before and after the page handled it, and a `MutationObserver` notes each change of a tile's
//! `data-state` with `performance.now()`. While the test makes a transition, the probe holds
//! the page's polls of `api/breakers` (and waits for the ones under way to be applied), so the
//! stream is the only way the tile can change. The test then asserts the causality and the
//! order: the tile changed once, from the old state to the new, inside the listener of that
//! transition's event, and the observer saw the change after the event arrived. How long that
//! took (arrival to DOM) is printed as a figure, not asserted: the page applies an event
//! synchronously, and what a loaded machine adds to it says nothing about the dashboard.
//!
//! Without /usr/bin/chromium or /usr/bin/chromedriver the tests fail (never skip) and say what
//! to install; scripts/test.sh installs both.
//!
//! A binary of its own: Chromium and ChromeDriver are busy processes, which other tests'
//! threads should not have to compete with.

// Tests cannot run examples, so the example's service is included here. The test does not
// use every item the example's `main` uses.
#[allow(dead_code)]
#[path = "../examples/operations/sim.rs"]
mod sim;

use std::future::Future;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use breaker::{Registry, State};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde::Deserialize;
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const INSTALL: &str = "apt-get install chromium chromium-driver";

/// How long to wait for the page to show what the test made, before calling it a failure. A
/// hang guard for a loaded machine, not a claim about speed: the test asserts no timing.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// The dashboard's page size: the tiles one page puts in the DOM.
const PAGE_SIZE: usize = 60;

/// One test at a time (its service and its browser): the machine is small.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The test's own breakers, which the simulated traffic does not touch.
const CLOSED: &str = "check-closed";
const OPENED: &str = "check-opened";
const HALF_OPEN: &str = "check-half-open";
const FORCED: &str = "check-forced";
const LIVE: &str = "check-live";
/// Opened and recovered twice before the page opens, then 150 calls: more than its
/// `event-consumer-buffer-size` (100), so its events no longer hold any of its transitions.
const FLAPPED: &str = "check-flapped";
const FLAPPED_CALLS_AFTER: usize = 150;
/// A name that is markup: it must show as text, and run nothing.
const MARKUP: &str = "<img src=x onerror=\"window.__pwned=1\">";
/// A bulkhead that no breaker shares a name with: a tile of its own. (`LIVE` has a bulkhead of
/// its name too, shown on its tile.)
const BULKHEAD_ALONE: &str = "check-bulkhead-alone";

// ---- ChromeDriver and Chromium -----------------------------------------------------------

/// A chromedriver process of this test, on a free port of 127.0.0.1. Dropping it ends it and
/// the browsers it started (its own process group).
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        for binary in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(binary).exists(),
                "{binary} is missing: the dashboard test needs headless Chromium and ChromeDriver \
                 from Debian: `{INSTALL}` (scripts/test.sh does it)"
            );
        }
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .expect("a free port on 127.0.0.1")
            .port();
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .arg("--allowed-ips=127.0.0.1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER} ({e}); `{INSTALL}`"))
        };
        Driver { child, port }
    }

    /// A session in a new headless Chromium.
    async fn connect(&mut self) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-proxy-server",
                    "--no-first-run",
                    "--disable-extensions",
                    "--window-size=1400,1200",
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{}", self.port);
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            // Plain HTTP to 127.0.0.1: no TLS connector.
            let attempt = ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&url)
                .await;
            match attempt {
                Ok(client) => return client,
                Err(err) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        panic!("{CHROMEDRIVER} exited ({status}) before a session: {err}");
                    }
                    assert!(
                        Instant::now() < deadline,
                        "no WebDriver session from {CHROMEDRIVER} on {url}: {err}"
                    );
                    // ChromeDriver is still starting: it listens within a few hundred ms.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The group is chromedriver's own (`process_group(0)`): it and the Chromium it started.
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `test` with a browser session (the page probe installed), then closes the session and ChromeDriver whether the
/// test passed or panicked (and then panics with the test's panic).
async fn with_browser<F, Fut>(test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut driver = Driver::start();
    let client = driver.connect().await;
    install_probe(&client).await;
    let outcome = tokio::spawn(test(client.clone())).await;
    let _ = client.close().await;
    drop(driver);
    if let Err(err) = outcome {
        match err.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(err) => panic!("the test task did not finish: {err}"),
        }
    }
}

// ---- the probe inside the page -----------------------------------------------------------

/// Installed in every document the session opens, before the page's own script runs. It
/// exposes `window.__breakerProbe`:
/// - `events`: each `STATE_TRANSITION` message the page's listener handled, with the breaker's
///   name, the event's `stateTransition`, when it arrived (`timeStamp`) and when the listener
///   returned (`performance.now()`, the same time origin), and the tile's `data-state` just
///   before and just after the listener ran;
/// - `changes`: each change of a tile's `data-state` (`from`, `to`), with `performance.now()`
///   when the `MutationObserver` was told of it;
/// - `holdPolls`: while true, the page's polls of `api/breakers` wait (in `held`) until
///   `release()`; `inFlight` counts the polls sent and not yet applied (their answer read and
///   the task that applies it over).
const PROBE_JS: &str = r#"
(() => {
  const probe = { events: [], changes: [], holdPolls: false, held: [], inFlight: 0 };
  probe.release = () => {
    probe.holdPolls = false;
    for (const send of probe.held.splice(0)) send();
  };
  Object.defineProperty(window, "__breakerProbe", { value: probe });

  const tileState = (name) => {
    if (typeof name !== "string") return null;
    const t = document.querySelector('[data-breaker="' + CSS.escape(name) + '"]');
    return t ? t.dataset.state ?? null : null;
  };
  const add = EventTarget.prototype.addEventListener;
  EventSource.prototype.addEventListener = function (type, listener, options) {
    if (type !== "STATE_TRANSITION" || typeof listener !== "function") {
      return add.call(this, type, listener, options);
    }
    return add.call(this, type, function (m) {
      let ev = null;
      try { ev = JSON.parse(m.data); } catch (_) { /* the page ignores it too */ }
      const name = ev ? ev.circuitBreakerName : null;
      const before = tileState(name);
      const result = listener.call(this, m);
      probe.events.push({
        name, transition: ev ? ev.stateTransition : null,
        arrived: m.timeStamp, handled: performance.now(), before, after: tileState(name),
      });
      return result;
    }, options);
  };

  new MutationObserver((records) => {
    const at = performance.now();
    for (const r of records) {
      const t = r.target;
      if (t.dataset && t.dataset.breaker !== undefined) {
        probe.changes.push({ name: t.dataset.breaker, from: r.oldValue, to: t.dataset.state, at });
      }
    }
  }).observe(document, {
    subtree: true, attributes: true, attributeFilter: ["data-state"], attributeOldValue: true,
  });

  const realFetch = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    if (!url.pathname.endsWith("/api/breakers")) return realFetch(input, init);
    const send = () => {
      probe.inFlight++;
      let settled = false;
      // Applied: the page applies the answer in the continuation of its `await res.json()`,
      // a microtask, so a task queued after the body is read runs after it.
      const settle = () => {
        if (!settled) { settled = true; setTimeout(() => { probe.inFlight--; }, 0); }
      };
      return realFetch(input, init).then((res) => {
        if (!res.ok) settle();
        const json = res.json.bind(res);
        res.json = () => json().finally(settle);
        return res;
      }, (err) => { settle(); throw err; });
    };
    if (!probe.holdPolls) return send();
    return new Promise((resolve, reject) => {
      probe.held.push(() => send().then(resolve, reject));
    });
  };
})();
"#;

/// `url`'s `ParseError`, named through reqwest's re-export of its `Url`.
type UrlParseError = <reqwest::Url as std::str::FromStr>::Err;

/// A Chrome DevTools Protocol command, sent through ChromeDriver's `goog/cdp/execute`.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &reqwest::Url,
        session_id: Option<&str>,
    ) -> Result<reqwest::Url, UrlParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &reqwest::Url) -> (axum::http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}

/// Installs [`PROBE_JS`] in every document `client` opens from now on.
async fn install_probe(client: &Client) {
    client
        .issue_cmd(Cdp {
            cmd: "Page.addScriptToEvaluateOnNewDocument",
            params: json!({ "source": PROBE_JS }),
        })
        .await
        .unwrap_or_else(|e| panic!("ChromeDriver did not install the page probe: {e}"));
}

/// One `STATE_TRANSITION` message, as the probe saw the page handle it.
#[derive(Debug, Deserialize)]
struct HandledEvent {
    transition: Option<String>,
    /// When it arrived (ms since the page's time origin).
    arrived: f64,
    /// When the page's listener returned.
    handled: f64,
    /// The tile's `data-state` before and after the listener.
    before: Option<String>,
    after: Option<String>,
}

/// One change of a tile's `data-state`, as the `MutationObserver` saw it.
#[derive(Debug, Deserialize)]
struct TileChange {
    from: Option<String>,
    to: Option<String>,
    /// When the observer was told (ms since the page's time origin).
    at: f64,
}

/// What the probe saw of one breaker since a mark.
#[derive(Debug, Deserialize)]
struct Probed {
    events: Vec<HandledEvent>,
    changes: Vec<TileChange>,
}

/// The probe's events and tile changes of `arguments[0]` after the first `arguments[1]`
/// events and `arguments[2]` changes.
const PROBED_JS: &str = r#"
const p = window.__breakerProbe;
return {
  events: p.events.slice(arguments[1]).filter((e) => e.name === arguments[0]),
  changes: p.changes.slice(arguments[2]).filter((c) => c.name === arguments[0]),
};
"#;

/// Moves `name` to `to` through the registry with the page's polls held, so that only the
/// event stream can change its tile, and asserts that it did: the tile changed once, from the
/// breaker's state before to `to`, inside the page's listener for that transition's event, and
/// after the event arrived. Returns the time the page took from the event's arrival to the
/// tile's change, in milliseconds of the page's clock: a figure to print, not to assert.
async fn transition_shows_from_its_event(
    client: &Client,
    registry: &Registry,
    name: &str,
    to: State,
) -> f64 {
    eval(
        client,
        "window.__breakerProbe.holdPolls = true; return null;",
        vec![],
    )
    .await;
    wait_for(
        client,
        "the polls under way applied",
        "return window.__breakerProbe.inFlight;",
        vec![],
        |v| (v.as_u64() == Some(0)).then_some(()),
    )
    .await;
    let mark = eval(
        client,
        "const p = window.__breakerProbe; return [p.events.length, p.changes.length];",
        vec![],
    )
    .await;
    let breaker = registry.find(name).expect("the test's breaker");
    let from = breaker.state();
    breaker
        .transition_to(to)
        .unwrap_or_else(|e| panic!("{name} -> {to}: {e}"));
    let transition = format!("{from}_TO_{to}");
    let probed: Probed = wait_for(
        client,
        &format!("{name}: the event {transition} handled and its tile changed"),
        PROBED_JS,
        vec![json!(name), mark[0].clone(), mark[1].clone()],
        |v| {
            let probed: Probed = serde_json::from_value(v.clone()).ok()?;
            let handled = probed
                .events
                .iter()
                .any(|e| e.transition.as_deref() == Some(transition.as_str()));
            (handled && !probed.changes.is_empty()).then_some(probed)
        },
    )
    .await;
    eval(
        client,
        "window.__breakerProbe.release(); return null;",
        vec![],
    )
    .await;

    let [event] = &probed.events[..] else {
        panic!("{name}: one event for {transition}, the page handled {probed:?}");
    };
    let [change] = &probed.changes[..] else {
        panic!("{name}: one change of its tile for {transition}, the page made {probed:?}");
    };
    assert_eq!(
        (event.before.as_deref(), event.after.as_deref()),
        (Some(from.as_str()), Some(to.as_str())),
        "{name}: the tile did not change inside the listener of {transition}: {probed:?}"
    );
    assert_eq!(
        (change.from.as_deref(), change.to.as_deref()),
        (Some(from.as_str()), Some(to.as_str())),
        "{name}: {probed:?}"
    );
    assert!(
        event.arrived <= event.handled && event.handled <= change.at,
        "{name}: the tile changed before its event arrived: {probed:?}"
    );
    change.at - event.arrived
}

// ---- reading the page --------------------------------------------------------------------

async fn eval(client: &Client, script: &str, args: Vec<Value>) -> Value {
    client
        .execute(script, args)
        .await
        .unwrap_or_else(|e| panic!("the page could not run `{script}`: {e}"))
}

/// Runs `script` until `check` accepts what it returns; fails after `HANG_GUARD`.
async fn wait_for<T>(
    client: &Client,
    what: &str,
    script: &str,
    args: Vec<Value>,
    mut check: impl FnMut(&Value) -> Option<T>,
) -> T {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let value = eval(client, script, args.clone()).await;
        if let Some(found) = check(&value) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not on the page after {HANG_GUARD:?}; the page has {value}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One tile, as the DOM shows it.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Tile {
    state: String,
    badge: String,
    name: String,
    label: String,
    failure: Rate,
    slow: Rate,
    calls_per_second: String,
    rejected_per_second: String,
    /// The timeline's state bands, oldest first.
    bands: Vec<String>,
}

#[derive(Debug, Deserialize, Clone, PartialEq)]
struct Rate {
    /// `data-value`: the rate, `-1` when not computed.
    value: String,
    /// What it shows: `12.5% / 50%`, `– / 50%`.
    text: String,
}

const TILE_JS: &str = r#"
const t = document.querySelector('[data-breaker="' + CSS.escape(arguments[0]) + '"]');
if (!t) return null;
const rate = (m) => {
  const r = t.querySelector('.rate[data-metric="' + m + '"]');
  return { value: r.dataset.value ?? '', text: r.querySelector('.rate-value').textContent };
};
return {
  state: t.dataset.state ?? '',
  badge: t.querySelector('.badge').textContent,
  name: t.querySelector('.name').textContent,
  label: t.getAttribute('aria-label') ?? '',
  failure: rate('failureRate'),
  slow: rate('slowCallRate'),
  callsPerSecond: t.querySelector('[data-field=callsPerSecond]').textContent,
  rejectedPerSecond: t.querySelector('[data-field=rejectedPerSecond]').textContent,
  bands: Array.from(t.querySelectorAll('svg.timeline rect.band'), (r) => r.dataset.state),
};
"#;

const NAMES_JS: &str =
    "return Array.from(document.querySelectorAll('[data-breaker]'), (t) => t.dataset.breaker);";

/// The header: counts per state (`total` for All), the pager's text, the pressed filter, and
/// the event stream's status.
#[derive(Debug, Deserialize)]
struct Header {
    counts: std::collections::BTreeMap<String, String>,
    range: String,
    pressed: Vec<String>,
    stream: String,
    events: u64,
    tiles: usize,
}

const HEADER_JS: &str = r#"
const counts = {};
for (const e of document.querySelectorAll('[data-count]')) counts[e.dataset.count] = e.textContent;
const s = document.getElementById('stream');
return {
  counts,
  range: document.getElementById('range').textContent,
  pressed: Array.from(document.querySelectorAll('[data-filter][aria-pressed=true]'), (b) => b.dataset.filter),
  stream: s.dataset.stream,
  events: Number(s.dataset.events || 0),
  tiles: document.querySelectorAll('[data-breaker]').length,
};
"#;

async fn tile(client: &Client, name: &str) -> Option<Tile> {
    let value = eval(client, TILE_JS, vec![json!(name)]).await;
    serde_json::from_value(value).expect("a tile's fields")
}

async fn header(client: &Client) -> Header {
    serde_json::from_value(eval(client, HEADER_JS, vec![]).await).expect("the header's fields")
}

async fn names(client: &Client) -> Vec<String> {
    serde_json::from_value(eval(client, NAMES_JS, vec![]).await).expect("the tiles' names")
}

/// Waits until the tile of `name` satisfies `check`, and returns it.
async fn wait_for_tile(
    client: &Client,
    name: &str,
    what: &str,
    check: impl Fn(&Tile) -> bool,
) -> Tile {
    wait_for(
        client,
        &format!("{name}: {what}"),
        TILE_JS,
        vec![json!(name)],
        |v| {
            serde_json::from_value::<Option<Tile>>(v.clone())
                .ok()
                .flatten()
                .filter(|t| check(t))
        },
    )
    .await
}

/// Waits until the tiles in the DOM are exactly `expected`, in that order.
async fn wait_for_names(client: &Client, what: &str, expected: &[&str]) {
    wait_for(client, what, NAMES_JS, vec![], |v| {
        let shown: Vec<String> = serde_json::from_value(v.clone()).ok()?;
        (shown == expected).then_some(())
    })
    .await;
}

async fn wait_for_header(client: &Client, what: &str, check: impl Fn(&Header) -> bool) -> Header {
    wait_for(client, what, HEADER_JS, vec![], |v| {
        serde_json::from_value::<Header>(v.clone())
            .ok()
            .filter(|h| check(h))
    })
    .await
}

async fn type_in_search(client: &Client, text: &str) {
    let search = client
        .find(Locator::Id("search"))
        .await
        .expect("the search box");
    search.click().await.expect("focus the search box");
    search
        .send_keys(text)
        .await
        .expect("type in the search box");
}

/// Clears the search box with Escape (the page's shortcut).
async fn clear_search(client: &Client) {
    type_in_search(client, &fantoccini::key::Key::Escape.to_string()).await;
}

async fn click(client: &Client, css: &str) {
    client
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

/// Where screenshots go: `BREAKER_SCREENSHOTS` if set (`BREAKER_SCREENSHOTS=docs/images` to
/// refresh the README's pictures), else the test build's scratch directory, so a test run
/// leaves the checkout as it was.
fn screenshot_path(file: &str) -> PathBuf {
    let dir = match std::env::var_os("BREAKER_SCREENSHOTS") {
        Some(dir) => Path::new(env!("CARGO_MANIFEST_DIR")).join(dir),
        None => Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots"),
    };
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir.join(file)
}

async fn screenshot(client: &Client, file: &str) {
    let png = client.screenshot().await.expect("a screenshot");
    let path = screenshot_path(file);
    std::fs::write(&path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    println!("screenshot: {}", path.display());
}

/// `10000` -> `10,000`, as the page writes counts.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn count_of(registry: &Registry, state: State) -> usize {
    registry
        .breakers()
        .iter()
        .filter(|b| b.state() == state)
        .count()
}

/// The events `GET /dashboard/api/breakers/{FLAPPED}/events` answers (what the page drew its
/// bands from before the state history).
async fn flapped_events(url: &str) -> Vec<Value> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(HANG_GUARD)
        .build()
        .expect("a client");
    let response = client.get(url).send().await.expect("the events endpoint");
    assert_eq!(response.status().as_u16(), 200, "{url}");
    let body: Value =
        serde_json::from_str(&response.text().await.expect("its body")).expect("the events' JSON");
    body["circuitBreakerEvents"]
        .as_array()
        .expect("circuitBreakerEvents")
        .clone()
}

/// A bulkhead's meter as the DOM shows it: on the tile of the breaker `name`, or on the lone
/// bulkhead tile `name`; `null` if there is no such tile, `hidden: true` if it has no bulkhead.
const BULKHEAD_JS: &str = r#"
const t = document.querySelector('[data-breaker="' + CSS.escape(arguments[0]) + '"]')
  ?? document.querySelector('[data-bulkhead="' + CSS.escape(arguments[0]) + '"]');
if (!t) return null;
const m = t.querySelector('.rate[data-metric="bulkhead"]');
return {
  hidden: m.hidden || m.getClientRects().length === 0,
  inFlight: m.dataset.inFlight ?? '',
  max: m.dataset.max ?? '',
  text: m.querySelector('.rate-value').textContent,
};
"#;

/// Waits until the bulkhead meter of `name` (see [`BULKHEAD_JS`]) is `expected`.
async fn wait_for_bulkhead(client: &Client, name: &str, expected: Value) {
    wait_for(
        client,
        &format!("{name}: the bulkhead meter {expected}"),
        BULKHEAD_JS,
        vec![json!(name)],
        |v| (*v == expected).then_some(()),
    )
    .await;
}

// ---- the tests -----------------------------------------------------------------------------

/// Makes the test's breakers (on the manual config: nothing moves them but the test) and puts
/// each in its state through real calls or the registry.
fn make_test_breakers(registry: &Registry) {
    for name in [CLOSED, OPENED, HALF_OPEN, FORCED, LIVE, FLAPPED, MARKUP] {
        registry.breaker(name);
        registry
            .replace(name, sim::manual_config())
            .expect("the breaker was just made");
    }
    let calls = |name: &str, failures: usize, successes: usize| {
        let breaker = registry.find(name).expect("made above");
        for _ in 0..failures {
            breaker.try_acquire().expect("CLOSED permits").failure();
        }
        for _ in 0..successes {
            breaker.try_acquire().expect("CLOSED permits").success();
        }
    };
    // Under the minimum number of calls (10): no rate yet.
    calls(CLOSED, 0, 5);
    // Ten failures of ten: 100 % opens it.
    calls(OPENED, 10, 0);
    calls(HALF_OPEN, 10, 0);
    calls(LIVE, 0, 10);
    let set = |name: &str, state: State| {
        registry
            .find(name)
            .expect("made above")
            .transition_to(state)
            .unwrap_or_else(|e| panic!("{name} -> {state}: {e}"));
    };
    set(HALF_OPEN, State::HalfOpen);
    set(FORCED, State::ForcedOpen);
    // CLOSED -> OPEN -> HALF_OPEN -> CLOSED twice (three successful trials close it), then
    // calls only.
    for _ in 0..2 {
        calls(FLAPPED, 10, 0);
        set(FLAPPED, State::HalfOpen);
        calls(FLAPPED, 0, 3);
    }
    calls(FLAPPED, 0, FLAPPED_CALLS_AFTER);
    for (name, state) in [
        (CLOSED, State::Closed),
        (OPENED, State::Open),
        (HALF_OPEN, State::HalfOpen),
        (FORCED, State::ForcedOpen),
        (LIVE, State::Closed),
        (FLAPPED, State::Closed),
        (MARKUP, State::Closed),
    ] {
        assert_eq!(
            registry.find(name).map(|b| b.state()),
            Some(state),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_shows_states_live_and_searches() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let service = sim::start(&sim::Options {
        port: 0,
        ..sim::Options::default()
    })
    .await
    .expect("the operations service on 127.0.0.1");
    let registry = service.registry.clone();
    make_test_breakers(&registry);
    // Calls in two bulkheads (Resilience4j's default limit, 25), held for the whole test.
    let in_bulkheads: Vec<_> = [(LIVE, 3), (BULKHEAD_ALONE, 2)]
        .into_iter()
        .flat_map(|(name, calls)| {
            let bulkhead = registry.bulkhead(name);
            (0..calls).map(move |_| bulkhead.try_acquire_owned().expect("a free place"))
        })
        .collect();
    let url = service.dashboard_url();
    let events_url = format!(
        "http://{}/dashboard/api/breakers/{FLAPPED}/events",
        service.addr
    );

    with_browser(move |client| async move {
        let _service = service;
        let _in_bulkheads = in_bulkheads;
        client.goto(&url).await.expect("open the dashboard");

        // Every breaker on one page, and the stream delivering events.
        let all = registry.breakers();
        let expected_names = {
            let mut n: Vec<String> = all.iter().map(|b| b.name().to_owned()).collect();
            n.sort();
            n
        };
        assert!(expected_names.len() < PAGE_SIZE, "one page holds them all");
        wait_for(&client, "every breaker's tile", NAMES_JS, vec![], |v| {
            let mut shown: Vec<String> = serde_json::from_value(v.clone()).ok()?;
            shown.sort();
            (shown == expected_names).then_some(())
        })
        .await;
        wait_for_header(&client, "the event stream open and delivering", |h| {
            h.stream == "open" && h.events > 0
        })
        .await;

        // The states the test made, in data-state, in text and in the tile's label.
        for (name, state) in [
            (CLOSED, "CLOSED"),
            (OPENED, "OPEN"),
            (HALF_OPEN, "HALF_OPEN"),
            (FORCED, "FORCED_OPEN"),
            (LIVE, "CLOSED"),
        ] {
            let t = wait_for_tile(&client, name, state, |t| t.state == state).await;
            assert_eq!(
                t.badge, state,
                "{name}: the state is in text, not colour only"
            );
            assert_eq!(t.name, name);
            assert_eq!(t.label, format!("{name}: {state}"));
        }
        // The simulation's hand-set states.
        wait_for_tile(&client, "shipping", "METRICS_ONLY", |t| {
            t.state == "METRICS_ONLY" && t.badge == "METRICS_ONLY"
        })
        .await;
        wait_for_tile(&client, "legacyLedger", "DISABLED", |t| {
            t.state == "DISABLED" && t.badge == "DISABLED"
        })
        .await;

        // Rates against their thresholds: "–" before the minimum number of calls.
        let closed = tile(&client, CLOSED).await.expect("tile");
        assert_eq!(closed.failure.value, "-1");
        assert_eq!(closed.failure.text, "– / 50%");
        assert_eq!(closed.slow.text, "– / 60%");
        let opened = tile(&client, OPENED).await.expect("tile");
        assert_eq!(opened.failure.value, "100");
        assert_eq!(opened.failure.text, "100% / 50%");
        assert_eq!(opened.slow.text, "0% / 60%");
        let live = tile(&client, LIVE).await.expect("tile");
        assert_eq!(live.failure.text, "0% / 50%");

        // A bulkhead's calls in flight against its limit: beside the breaker of its name, on a
        // tile of its own when no breaker has the name, and nothing on a tile without one.
        let meter = |in_flight: &str, text: &str| {
            json!({ "hidden": false, "inFlight": in_flight, "max": "25", "text": text })
        };
        wait_for_bulkhead(&client, LIVE, meter("3", "3 / 25")).await;
        wait_for_bulkhead(&client, BULKHEAD_ALONE, meter("2", "2 / 25")).await;
        wait_for_bulkhead(
            &client,
            CLOSED,
            json!({ "hidden": true, "inFlight": "", "max": "", "text": "–" }),
        )
        .await;

        // Its transition happened before the page opened: the band before OPEN is from the
        // breaker's state history (`/dashboard/api/breakers/{name}/states`).
        wait_for_tile(&client, OPENED, "CLOSED then OPEN in its timeline", |t| {
            t.bands == ["CLOSED", "OPEN"]
        })
        .await;
        wait_for_tile(
            &client,
            HALF_OPEN,
            "CLOSED, OPEN, HALF_OPEN in its timeline",
            |t| t.bands == ["CLOSED", "OPEN", "HALF_OPEN"],
        )
        .await;
        // Six transitions before the page opened, then more calls than its event buffer holds:
        // none of them is in its events any more, and every one is on its timeline.
        let events = flapped_events(&events_url).await;
        assert!(
            events.len() == 100 && events.iter().all(|e| e["type"] == "SUCCESS"),
            "{FLAPPED}'s events still hold a transition, so this checks nothing: {events:?}"
        );
        let flapped = [
            "CLOSED",
            "OPEN",
            "HALF_OPEN",
            "CLOSED",
            "OPEN",
            "HALF_OPEN",
            "CLOSED",
        ];
        wait_for_tile(&client, FLAPPED, "both openings in its timeline", |t| {
            t.bands == flapped
        })
        .await;

        // Calls and rejections per second, from two polls of the counters.
        wait_for_tile(&client, "inventory", "calls per second", |t| {
            t.calls_per_second.parse::<f64>().is_ok_and(|v| v > 0.0)
        })
        .await;

        // The header's counts per state, against the registry (the simulation moves only
        // CLOSED, OPEN and HALF_OPEN breakers).
        let total = thousands(registry.breakers().len());
        let fixed = [State::ForcedOpen, State::Disabled, State::MetricsOnly]
            .map(|s| (s.as_str().to_owned(), count_of(&registry, s).to_string()));
        assert_eq!(
            fixed.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(),
            ["1", "1", "1"]
        );
        wait_for_header(&client, "the counts per state", |h| {
            h.counts.get("total") == Some(&total)
                && fixed.iter().all(|(s, n)| h.counts.get(s) == Some(n))
        })
        .await;

        // A transition made now reaches its tile through the event stream, each time, and joins
        // its timeline.
        let mut shown = Vec::new();
        for to in [
            State::Open,
            State::HalfOpen,
            State::Closed,
            State::ForcedOpen,
        ] {
            let ms = transition_shows_from_its_event(&client, &registry, LIVE, to).await;
            shown.push(format!("{to} {ms:.1} ms"));
        }
        println!("{LIVE}: transitions shown, event to DOM on the page's clock: {shown:?}");
        wait_for_tile(&client, LIVE, "every transition in its timeline", |t| {
            t.bands == ["CLOSED", "OPEN", "HALF_OPEN", "CLOSED", "FORCED_OPEN"]
        })
        .await;
        wait_for_header(&client, "FORCED_OPEN counted twice", |h| {
            h.counts.get("FORCED_OPEN").map(String::as_str) == Some("2")
        })
        .await;

        // A name that is markup is text: no element made from it, no script run.
        let markup = tile(&client, MARKUP).await.expect("the markup name's tile");
        assert_eq!(markup.name, MARKUP);
        let injected = eval(
            &client,
            "return { images: document.querySelectorAll('img').length, \
                      pwned: typeof window.__pwned }",
            vec![],
        )
        .await;
        assert_eq!(injected, json!({ "images": 0, "pwned": "undefined" }));

        // The screenshot, once the simulation has opened a breaker (tenantApi[umbrella] is
        // always down).
        wait_for_tile(
            &client,
            "tenantApi[umbrella]",
            "opened by its failures",
            |t| t.state == "OPEN" || t.state == "HALF_OPEN",
        )
        .await;
        screenshot(&client, "dashboard.png").await;

        // The search box: case-insensitive substring, on the server.
        type_in_search(&client, "CHECK-").await;
        let mut checks = vec![CLOSED, FLAPPED, FORCED, HALF_OPEN, LIVE, OPENED];
        checks.sort_unstable();
        wait_for_names(&client, "the search `CHECK-`", &checks).await;
        let h = header(&client).await;
        assert!(h.range.starts_with("1–6 of 6"), "{}", h.range);
        type_in_search(&client, "LIVE").await;
        wait_for_names(&client, "the search `CHECK-LIVE`", &[LIVE]).await;
        type_in_search(&client, "-nothing").await;
        wait_for_names(&client, "a search that matches nothing", &[]).await;
        clear_search(&client).await;
        wait_for(&client, "every tile back", NAMES_JS, vec![], |v| {
            let shown: Vec<String> = serde_json::from_value(v.clone()).ok()?;
            (shown.len() == expected_names.len()).then_some(())
        })
        .await;

        // The state counts are filters.
        click(&client, "button[data-filter=FORCED_OPEN]").await;
        wait_for_names(&client, "the FORCED_OPEN filter", &[FORCED, LIVE]).await;
        assert_eq!(header(&client).await.pressed, ["FORCED_OPEN"]);
        click(&client, "button[data-filter=DISABLED]").await;
        wait_for_names(&client, "the DISABLED filter", &["legacyLedger"]).await;
        click(&client, "button[data-filter=DISABLED]").await;
        let h = wait_for_header(&client, "no filter", |h| h.tiles == expected_names.len()).await;
        assert_eq!(h.pressed, [""]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_breakers_stay_usable() {
    let _alone = ONE_AT_A_TIME.lock().await;
    const BULK: usize = 10_000;
    let service = sim::start(&sim::Options {
        port: 0,
        bulk: BULK,
        ..sim::Options::default()
    })
    .await
    .expect("the operations service on 127.0.0.1");
    let registry = service.registry.clone();
    let total = registry.breakers().len();
    assert!(total > BULK);
    let url = service.dashboard_url();

    with_browser(move |client| async move {
        let _service = service;
        client.goto(&url).await.expect("open the dashboard");
        let count = thousands(total);
        let h = wait_for_header(&client, "the first page of 10,000 breakers", |h| {
            h.counts.get("total") == Some(&count) && h.tiles == PAGE_SIZE
        })
        .await;
        assert_eq!(h.range, format!("1–60 of {count}"));
        // Only the page's tiles are in the DOM.
        let dom = eval(
            &client,
            "return { tiles: document.querySelectorAll('.tile').length, \
                      elements: document.getElementsByTagName('*').length }",
            vec![],
        )
        .await;
        assert_eq!(dom["tiles"], json!(PAGE_SIZE), "{dom}");
        assert!(dom["elements"].as_u64().is_some_and(|n| n < 5_000), "{dom}");
        wait_for_header(&client, "the event stream open", |h| h.stream == "open").await;
        wait_for_tile(
            &client,
            &sim::bulk_name(0),
            "its rates from two polls",
            |t| t.calls_per_second == "0.0" && t.rejected_per_second == "0.0",
        )
        .await;
        screenshot(&client, "dashboard-10k.png").await;

        // Paging: the next 60, still 60 in the DOM.
        let first_page = names(&client).await;
        click(&client, "#next").await;
        let h = wait_for_header(&client, "the second page", |h| {
            h.range.starts_with("61–120 of")
        })
        .await;
        assert_eq!(h.tiles, PAGE_SIZE);
        let second_page = names(&client).await;
        assert!(
            second_page.iter().all(|n| !first_page.contains(n)),
            "the pages overlap: {first_page:?} / {second_page:?}"
        );
        click(&client, "#first").await;
        wait_for_header(&client, "back to the first page", |h| {
            h.range.starts_with("1–60 of")
        })
        .await;

        // The search finds one breaker among 10,000, and its transition still reaches its tile
        // through the event stream.
        let needle = sim::bulk_name(7342);
        type_in_search(&client, &needle.to_uppercase()).await;
        wait_for_names(&client, "the search for one of 10,000", &[needle.as_str()]).await;
        let h = header(&client).await;
        assert_eq!(h.range, format!("1–1 of 1 ({count} breakers)"));
        let ms =
            transition_shows_from_its_event(&client, &registry, &needle, State::ForcedOpen).await;
        println!("{needle}: FORCED_OPEN shown, event to DOM on the page's clock: {ms:.1} ms");

        // The filter finds it too, without the search.
        clear_search(&client).await;
        wait_for_header(&client, "a full page again", |h| h.tiles == PAGE_SIZE).await;
        click(&client, "button[data-filter=FORCED_OPEN]").await;
        wait_for_names(&client, "the FORCED_OPEN filter", &[needle.as_str()]).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_falls_behind_shows_a_notice() {
    let _alone = ONE_AT_A_TIME.lock().await;
    // A stream buffer of 4 events, against about 300 events a second of simulated traffic read
    // every 100 ms: the client falls behind at every read, and the admin says so
    // (`event: lagged`).
    let service = sim::start(&sim::Options {
        port: 0,
        stream_buffer_size: Some(4),
        ..sim::Options::default()
    })
    .await
    .expect("the operations service on 127.0.0.1");
    let url = service.dashboard_url();

    with_browser(move |client| async move {
        let _service = service;
        client.goto(&url).await.expect("open the dashboard");
        let notice = wait_for(
            &client,
            "the lagged notice",
            "const n = document.getElementById('notice'); return n.hidden ? null : n.textContent;",
            vec![],
            |v| v.as_str().map(str::to_owned),
        )
        .await;
        let lost = notice
            .strip_prefix("The event stream fell behind: ")
            .and_then(|rest| rest.split(' ').next())
            .map(|n| n.replace(',', ""))
            .and_then(|n| n.parse::<u64>().ok());
        assert!(lost.is_some_and(|n| n > 0), "{notice}");
        assert!(
            notice.ends_with("Tiles catch up from the next poll."),
            "{notice}"
        );
        // The tiles still come from the polls.
        wait_for_tile(&client, "inventory", "calls per second", |t| {
            t.calls_per_second.parse::<f64>().is_ok_and(|v| v > 0.0)
        })
        .await;
    })
    .await;
}
