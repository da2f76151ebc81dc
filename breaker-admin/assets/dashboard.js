// The breaker dashboard.
//
// Data: the visible page of breakers is polled from `api/breakers` about once a second (rates
// per second are deltas of the cumulative counters between two polls); state transitions come
// from the actuator's event stream (`EventSource`) and are applied to their tile at once; a
// tile's state bands from before the page opened come from `api/breakers/{name}/states` (the
// breaker's state when the admin started following it and its newest transitions since, kept
// apart from its call events, which on a busy breaker push transitions out of
// `api/breakers/{name}/events` within seconds).
//
// Only one page of tiles (PAGE_SIZE) exists in the DOM, whatever the number of breakers: the
// server filters (`q`, `state`) and pages (`offset`, `limit`).
//
// Bulkheads come with the same poll: a breaker's tile shows the bulkhead of its name (calls in
// flight against the limit), and the bulkheads no breaker shares a name with get small tiles of
// their own below the breakers' (the first page of those matching the search). A breaker's tile
// also shows the retry of its name, as a line of its four counts and its budget's refusals.
//
// Everything that comes from the server (breaker names are request data) goes in through
// `textContent` or `setAttribute`, never as markup.
(function () {
  "use strict";

  const PAGE_SIZE = 60;
  const POLL_MS = 1000;
  const WINDOW_MS = 5 * 60 * 1000;
  // A gap between two samples longer than this breaks the timeline's lines (the tile was off
  // the page, or polls failed) and restarts the per-second rates.
  const GAP_MS = 5000;
  const HISTORY_FETCHES = 4;
  const HISTORY_RETRY_MS = 10000;
  const KEEP_RECORDS = 2000;
  const STATES = ["CLOSED", "OPEN", "HALF_OPEN", "FORCED_OPEN", "DISABLED", "METRICS_ONLY"];
  const SERIES = ["calls", "failures", "slow", "rejected"];
  const SVG_NS = "http://www.w3.org/2000/svg";
  // Where a transition came from: a bit each, so the same one from both is kept once.
  const FROM_STREAM = 1;
  const FROM_HISTORY = 2;
  const TL_W = 300;
  const TL_H = 44;
  const BAND_H = 8;

  // The page is served at .../dashboard and this script at .../dashboard/dashboard.js: the
  // API is under the script's folder and the actuator beside the dashboard.
  const scriptUrl = document.currentScript && document.currentScript.src
    ? document.currentScript.src
    : new URL("dashboard/dashboard.js", location.href).href;
  const base = new URL(".", scriptUrl);
  const streamUrl = new URL("../actuator/streamcircuitbreakerevents", base);

  const $ = (id) => document.getElementById(id);
  const ui = {
    tiles: $("tiles"),
    bulkheads: $("bulkheads"),
    bulkheadTiles: $("bulkhead-tiles"),
    bulkheadRange: $("bulkhead-range"),
    empty: $("empty"),
    search: $("search"),
    range: $("range"),
    first: $("first"),
    prev: $("prev"),
    next: $("next"),
    last: $("last"),
    stream: $("stream"),
    poll: $("poll"),
    notice: $("notice"),
    filters: Array.from(document.querySelectorAll("#states [data-filter]")),
  };

  const view = { q: "", state: "", offset: 0 };
  const page = { total: 0, matched: 0, shown: 0 };
  let counts = {};
  // Server time minus local time, from the last poll's `now`: timelines are drawn on the
  // server's clock, which the events' `creationTime` is on.
  let skew = 0;

  /** What the page knows of one breaker, kept while it is on the page and for a while after. */
  const records = new Map();
  /** The tiles in the DOM, by breaker name: at most one page. */
  const tiles = new Map();
  /** The tiles of bulkheads without a breaker, by name: at most one page. */
  const bulkheadTiles = new Map();

  function serverNow() {
    return Date.now() + skew;
  }

  function record(name) {
    let r = records.get(name);
    if (!r) {
      r = {
        name,
        state: null,
        data: null,
        last: null,
        rates: null,
        samples: [],
        transitions: [],
        history: "none",
        // Since when the page knows the breaker's state (server time): its first poll, when
        // the admin started following it (the history's `since`, or its oldest transition if
        // older ones were dropped), or the first transition the stream brought. Before that,
        // the timeline draws "unknown" rather than guess.
        knownSince: Infinity,
        historyRetryAt: 0,
        sseAt: -Infinity,
        touched: 0,
      };
      records.set(name, r);
    }
    r.touched = performance.now();
    return r;
  }

  // ---- formatting ----------------------------------------------------------------------

  const intFormat = new Intl.NumberFormat("en-US");

  function fmtInt(n) {
    return intFormat.format(n);
  }

  function fmtPct(p) {
    const s = p.toFixed(1);
    return (s.endsWith(".0") ? s.slice(0, -2) : s) + "%";
  }

  function fmtPerSec(v) {
    return v >= 100 ? v.toFixed(0) : v.toFixed(1);
  }

  function fmtClock(t) {
    return new Date(t).toLocaleTimeString("en-GB", { hour12: false });
  }

  /** Unix ms from an event's `creationTime`: a number, or an ISO-8601 date-time (Java's
   *  `ZonedDateTime` text, whose `[zone]` suffix and digits past milliseconds Date.parse may
   *  not take). */
  function parseTime(v) {
    if (typeof v === "number" && isFinite(v)) return v;
    if (typeof v !== "string") return null;
    const t = Date.parse(v.replace(/\[[^\]]*\]$/, "").replace(/(\.\d{3})\d+/, "$1"));
    return isNaN(t) ? null : t;
  }

  /** `CLOSED_TO_OPEN` -> ["CLOSED", "OPEN"]; no state name contains `_TO_`. */
  function parseTransition(s) {
    if (typeof s !== "string") return null;
    const i = s.indexOf("_TO_");
    if (i < 0) return null;
    const from = s.slice(0, i);
    const to = s.slice(i + 4);
    return STATES.includes(from) && STATES.includes(to) ? [from, to] : null;
  }

  // ---- state history -------------------------------------------------------------------

  /** A transition at server time `t` (ms). `key` is the event's `creationTime` text, the same
   *  from the stream and from the history (`null` for one a poll inferred); `seen` is where it
   *  came from (FROM_STREAM, FROM_HISTORY; 0 when inferred). */
  function transition(t, from, to, key, seen) {
    return { t, from, to, key, seen };
  }

  /** Whether `x` is the event `key`, `from`, `to` that `source` has not brought yet. Several
   *  transitions can share a `creationTime` (the server's clock ticks every few ms), so one
   *  the same source already brought is another transition. */
  function sameEvent(x, key, from, to, source) {
    return x.key === key && x.from === from && x.to === to && !(x.seen & source);
  }

  /** Drops a transition a poll inferred once the event that made it (at `t`, before the poll
   *  saw it) is there. */
  function dropInferred(list, t, from, to) {
    for (let i = list.length - 1; i >= 0; i--) {
      const x = list[i];
      if (x.seen === 0 && x.t >= t && x.from === from && x.to === to) {
        list.splice(i, 1);
        return;
      }
    }
  }

  /** Keeps the last transition before the window (it tells the state the window starts in). */
  function trim(list) {
    const horizon = serverNow() - WINDOW_MS;
    while (list.length > 1 && list[1].t < horizon) list.shift();
  }

  /** Adds a transition from the stream (`key` its `creationTime`), or one a poll inferred
   *  (`key` null), once: the stream's may already be there from the history. A transition the
   *  poll inferred is replaced by the event that made it. */
  function addTransition(r, t, from, to, key) {
    const list = r.transitions;
    const source = key === null ? 0 : FROM_STREAM;
    if (source) {
      for (const x of list) {
        if (sameEvent(x, key, from, to, source)) {
          x.seen |= source;
          return;
        }
      }
      dropInferred(list, t, from, to);
    }
    let i = list.length;
    while (i > 0 && list[i - 1].t > t) i--;
    list.splice(i, 0, transition(t, from, to, key, source));
    trim(list);
  }

  /** Applies `api/breakers/{name}/states`: the state when the admin started following the
   *  breaker (`since`, `initialState`) and its transitions since, oldest first (`dropped`: how
   *  many older ones the server no longer keeps). The history's order is kept as it is (its
   *  transitions can share a millisecond); what the stream brought that the history does not
   *  have is newer, and goes after it at equal times. */
  function applyStates(r, body) {
    if (!body || typeof body !== "object") return;
    const entries = Array.isArray(body.transitions) ? body.transitions : [];
    let state = STATES.includes(body.initialState) ? body.initialState : null;
    let known = typeof body.dropped === "number" && body.dropped > 0 ? null : parseTime(body.since);
    const history = [];
    for (const e of entries) {
      const t = e ? parseTime(e.creationTime) : null;
      if (t === null || !STATES.includes(e.to)) continue;
      // After dropped transitions the state is known from the oldest one listed.
      if (known === null) known = t;
      // A RESET carries no `from`: the state before it. To the same state, it changes nothing.
      const from = STATES.includes(e.from) ? e.from : state;
      state = e.to;
      if (!from || from === e.to) continue;
      history.push(transition(t, from, e.to, e.creationTime, FROM_HISTORY));
    }
    // Each transition already here matches one of the history's at most (it leaves `rest`).
    const rest = r.transitions.slice();
    for (const h of history) {
      const i = rest.findIndex((x) => x.key === h.key && x.from === h.from && x.to === h.to);
      if (i >= 0) {
        h.seen |= rest[i].seen;
        rest.splice(i, 1);
      } else {
        dropInferred(rest, h.t, h.from, h.to);
      }
    }
    const merged = [];
    let j = 0;
    for (const x of rest) {
      while (j < history.length && history[j].t <= x.t) merged.push(history[j++]);
      merged.push(x);
    }
    while (j < history.length) merged.push(history[j++]);
    trim(merged);
    r.transitions = merged;
    if (known !== null && known < r.knownSince) r.knownSince = known;
  }

  /** The state bands: [{t, state}], the first from -Infinity. */
  function bandsOf(r) {
    const list = r.transitions;
    const first = list.length ? list[0].from : r.state;
    if (!first) return [];
    const bands = [{ t: -Infinity, state: first }];
    for (const tr of list) bands.push({ t: tr.t, state: tr.to });
    return bands;
  }

  // ---- tiles ---------------------------------------------------------------------------

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }

  function makeRate(label, metric) {
    const root = el("div", "rate");
    root.dataset.metric = metric;
    const head = el("div", "rate-head");
    head.append(el("span", "rate-label", label));
    const value = el("span", "rate-value", "–");
    head.append(value);
    const bar = el("div", "bar");
    bar.setAttribute("role", "meter");
    bar.setAttribute("aria-label", label);
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", "100");
    const fill = el("div", "fill");
    const mark = el("div", "mark");
    mark.title = "threshold";
    bar.append(fill, mark);
    root.append(head, bar);
    return { root, value, bar, fill, mark };
  }

  /** A tile's head: the name (in full on hover) and `badge`. */
  function tileHead(name, badge) {
    const head = el("div", "tile-head");
    const title = el("h2", "name", name);
    title.title = name;
    head.append(title, badge);
    return head;
  }

  function makeTile(name) {
    const tile = el("article", "tile");
    tile.dataset.breaker = name;
    const badge = el("span", "badge");
    const head = tileHead(name, badge);

    const failure = makeRate("Failure rate", "failureRate");
    const slow = makeRate("Slow-call rate", "slowCallRate");
    // The bulkhead of the breaker's name: shown once a poll says there is one.
    const bulkhead = makeBulkhead();
    bulkhead.root.hidden = true;

    const numbers = el("dl", "numbers");
    const callsPs = el("dd", "", "–");
    callsPs.dataset.field = "callsPerSecond";
    const rejectedPs = el("dd", "", "–");
    rejectedPs.dataset.field = "rejectedPerSecond";
    numbers.append(el("dt", "", "calls/s"), callsPs, el("dt", "", "rejected/s"), rejectedPs);

    const countsLine = el("div", "counts");
    // The retry of the breaker's name: its four counts, shown once a poll says there is one.
    const retryLine = el("div", "counts retry");
    retryLine.dataset.metric = "retry";
    retryLine.hidden = true;
    const svg = svgEl("svg", {
      class: "timeline",
      viewBox: `0 0 ${TL_W} ${TL_H}`,
      preserveAspectRatio: "none",
      role: "img",
    });

    const axis = el("div", "axis");
    axis.setAttribute("aria-hidden", "true");
    axis.append(el("span", "", "5 min ago"), el("span", "", "now"));

    tile.append(head, failure.root, slow.root, bulkhead.root, numbers, countsLine, retryLine, svg, axis);
    return {
      tile, name, badge, failure, slow, bulkhead, callsPs, rejectedPs, countsLine, retryLine, svg,
    };
  }

  /** A bulkhead's meter: calls in flight against its limit. */
  function makeBulkhead() {
    const part = makeRate("Bulkhead in flight", "bulkhead");
    part.mark.remove(); // the limit is the bar's end
    return part;
  }

  /** Shows `g` (a bulkhead's `maxAllowedConcurrentCalls`, `availableConcurrentCalls`,
   *  `inFlightCalls`, `waitingCalls`) on `part`, or hides it when there is none. */
  function renderBulkhead(part, g) {
    const max = g ? Number(g.maxAllowedConcurrentCalls) : NaN;
    const inFlight = g ? Number(g.inFlightCalls) : NaN;
    if (!(max > 0) || !(inFlight >= 0)) {
      part.root.hidden = true;
      return;
    }
    part.root.hidden = false;
    const waiting = Number(g.waitingCalls) > 0 ? Number(g.waitingCalls) : 0;
    part.root.dataset.inFlight = String(inFlight);
    part.root.dataset.max = String(max);
    part.value.textContent =
      `${fmtInt(inFlight)} / ${fmtInt(max)}` + (waiting ? ` · ${fmtInt(waiting)} waiting` : "");
    part.fill.style.width = `${Math.min(100, (inFlight / max) * 100)}%`;
    part.root.dataset.over = inFlight >= max ? "true" : "false";
    part.bar.setAttribute("aria-valuemax", String(max));
    part.bar.setAttribute("aria-valuenow", String(inFlight));
    part.bar.setAttribute(
      "aria-valuetext",
      `${fmtInt(inFlight)} of ${fmtInt(max)} calls in flight, ${fmtInt(waiting)} waiting`,
    );
  }

  /** Shows `c` (a retry's `successfulWithoutRetry`, `successfulWithRetry`,
   *  `failedWithoutRetry`, `failedWithRetry`, `refusedByBudget`, counted since its creation) on
   *  `line`, or hides it when there is none. */
  function renderRetry(line, c) {
    if (!c || typeof c !== "object") {
      line.hidden = true;
      return;
    }
    line.hidden = false;
    line.textContent =
      `retry: ok ${fmtInt(c.successfulWithoutRetry)} · ok after retry ` +
      `${fmtInt(c.successfulWithRetry)} · failed ${fmtInt(c.failedWithoutRetry)} · ` +
      `failed after retry ${fmtInt(c.failedWithRetry)} · refused by budget ` +
      `${fmtInt(c.refusedByBudget)}`;
  }

  /** A tile for a bulkhead no breaker shares a name with. */
  function makeBulkheadTile(name) {
    const tile = el("article", "tile bulkhead-tile");
    tile.dataset.bulkhead = name;
    const head = tileHead(name, el("span", "badge", "BULKHEAD"));
    const meter = makeBulkhead();
    tile.append(head, meter.root);
    return { tile, meter };
  }

  /** Puts the lone bulkheads of a poll (`list`, sorted by name) in their section. */
  function renderBulkheads(list, matched) {
    const names = [];
    for (const g of list) {
      if (!g || typeof g.name !== "string") continue;
      names.push(g.name);
      let p = bulkheadTiles.get(g.name);
      if (!p) {
        p = makeBulkheadTile(g.name);
        bulkheadTiles.set(g.name, p);
      }
      renderBulkhead(p.meter, g);
    }
    const wanted = new Set(names);
    for (const [name, p] of bulkheadTiles) {
      if (!wanted.has(name)) {
        p.tile.remove();
        bulkheadTiles.delete(name);
      }
    }
    ui.bulkheadTiles.replaceChildren(...names.map((n) => bulkheadTiles.get(n).tile));
    ui.bulkheads.hidden = names.length === 0;
    ui.bulkheadRange.textContent =
      matched > names.length ? `${fmtInt(names.length)} of ${fmtInt(matched)}` : "";
  }

  function setTileState(p, state) {
    if (p.tile.dataset.state === state) return;
    p.tile.dataset.state = state;
    p.badge.textContent = state;
    p.tile.setAttribute("aria-label", `${p.name}: ${state}`);
  }

  /** A rate or threshold in percent: a number, or Resilience4j's actuator text (`"50.0%"`). */
  function percent(v) {
    const n = typeof v === "string" ? parseFloat(v) : v;
    return typeof n === "number" && isFinite(n) ? n : null;
  }

  function renderRate(part, rawRate, rawThreshold) {
    const rate = percent(rawRate);
    const known = rate !== null && rate >= 0;
    const thr = percent(rawThreshold) ?? 100;
    part.root.dataset.value = known ? String(rate) : "-1";
    part.value.textContent = `${known ? fmtPct(rate) : "–"} / ${fmtPct(thr)}`;
    part.fill.style.width = known ? `${Math.min(100, rate)}%` : "0";
    part.mark.style.left = `${Math.min(100, Math.max(0, thr))}%`;
    part.root.dataset.over = known && rate >= thr ? "true" : "false";
    if (known) {
      part.bar.setAttribute("aria-valuenow", String(rate));
      part.bar.setAttribute("aria-valuetext", `${fmtPct(rate)}, threshold ${fmtPct(thr)}`);
    } else {
      part.bar.removeAttribute("aria-valuenow");
      part.bar.setAttribute("aria-valuetext", `not computed yet, threshold ${fmtPct(thr)}`);
    }
  }

  function renderTile(p, r, now) {
    const b = r.data;
    setTileState(p, r.state || (b && b.state) || "DISABLED");
    if (b) {
      renderRate(p.failure, b.failureRate, b.failureRateThreshold);
      renderRate(p.slow, b.slowCallRate, b.slowCallRateThreshold);
      renderBulkhead(p.bulkhead, b.bulkhead);
      renderRetry(p.retryLine, b.retry);
      p.countsLine.textContent =
        `buffered ${fmtInt(b.bufferedCalls)} · failed ${fmtInt(b.failedCalls)} · ` +
        `slow ${fmtInt(b.slowCalls)} · not permitted ${fmtInt(b.notPermittedCalls)}`;
    }
    p.callsPs.textContent = r.rates ? fmtPerSec(r.rates.calls) : "–";
    p.rejectedPs.textContent = r.rates ? fmtPerSec(r.rates.rejected) : "–";
    renderTimeline(p, r, now);
  }

  function renderTimeline(p, r, now) {
    const start = now - WINDOW_MS;
    const x = (t) => Math.max(0, Math.min(TL_W, ((t - start) / WINDOW_MS) * TL_W));
    const kids = [];
    const summary = [];

    const known = Math.max(start, Math.min(r.knownSince, now));
    if (known > start) {
      const rect = svgEl("rect", {
        class: "unknown",
        x: 0,
        y: 0,
        width: x(known).toFixed(2),
        height: BAND_H,
      });
      const tip = svgEl("title", {});
      tip.textContent = `unknown before ${fmtClock(known)}`;
      rect.append(tip);
      kids.push(rect);
      summary.push(tip.textContent);
    }
    const bands = bandsOf(r);
    for (let i = 0; i < bands.length; i++) {
      const t0 = Math.max(bands[i].t, known);
      const t1 = i + 1 < bands.length ? bands[i + 1].t : now;
      // A state known only for an instant (events share a clock tick) still gets a sliver.
      if (t1 < t0) continue;
      const rect = svgEl("rect", {
        class: "band",
        x: x(t0).toFixed(2),
        y: 0,
        width: Math.max(0.5, x(t1) - x(t0)).toFixed(2),
        height: BAND_H,
        "data-state": bands[i].state,
      });
      const tip = svgEl("title", {});
      tip.textContent = t0 <= start ? bands[i].state : `${bands[i].state} from ${fmtClock(t0)}`;
      rect.append(tip);
      kids.push(rect);
      summary.push(tip.textContent);
    }

    const samples = r.samples;
    let max = 1;
    for (const s of samples) {
      if (s.gap || s.t < start) continue;
      for (const k of SERIES) if (s[k] > max) max = s[k];
    }
    const top = BAND_H + 3;
    const y = (v) => (TL_H - 1 - (v / max) * (TL_H - 1 - top)).toFixed(2);
    for (const k of SERIES) {
      let pts = [];
      const flush = () => {
        if (pts.length > 1) kids.push(svgEl("polyline", { class: k, points: pts.join(" ") }));
        pts = [];
      };
      for (const s of samples) {
        if (s.t < start) continue;
        if (s.gap) {
          flush();
          continue;
        }
        pts.push(`${x(s.t).toFixed(2)},${y(s[k])}`);
      }
      flush();
    }
    kids.push(svgEl("rect", { class: "frame", x: 0, y: 0, width: TL_W, height: TL_H }));
    p.svg.replaceChildren(...kids);
    p.svg.setAttribute(
      "aria-label",
      `State, last 5 minutes: ${summary.join(", ") || "unknown"}; peak ${fmtPerSec(max)} per second`,
    );
  }

  /** Puts the tiles for `names` in the DOM in that order, and removes every other tile. */
  function reconcile(names) {
    const wanted = new Set(names);
    for (const [name, p] of tiles) {
      if (!wanted.has(name)) {
        p.tile.remove();
        tiles.delete(name);
      }
    }
    let prev = null;
    for (const name of names) {
      let p = tiles.get(name);
      if (!p) {
        p = makeTile(name);
        tiles.set(name, p);
      }
      const want = prev ? prev.nextSibling : ui.tiles.firstChild;
      if (p.tile !== want) ui.tiles.insertBefore(p.tile, want);
      prev = p.tile;
    }
  }

  // ---- state history of a tile from before the page opened -----------------------------

  const historyQueue = [];
  let historyActive = 0;

  function wantHistory(r) {
    if (r.history !== "none" || performance.now() < r.historyRetryAt) return;
    r.history = "queued";
    historyQueue.push(r);
    pumpHistory();
  }

  function pumpHistory() {
    while (historyActive < HISTORY_FETCHES && historyQueue.length) {
      const r = historyQueue.shift();
      if (!tiles.has(r.name)) {
        r.history = "none";
        continue;
      }
      historyActive++;
      const url = new URL(`api/breakers/${encodeURIComponent(r.name)}/states`, base);
      fetch(url, { cache: "no-store" })
        .then((res) => (res.ok ? res.json() : Promise.reject(new Error(`HTTP ${res.status}`))))
        .then((body) => {
          applyStates(r, body);
          r.history = "done";
          const p = tiles.get(r.name);
          if (p) renderTimeline(p, r, serverNow());
        })
        .catch(() => {
          r.history = "none";
          r.historyRetryAt = performance.now() + HISTORY_RETRY_MS;
        })
        .finally(() => {
          historyActive--;
          pumpHistory();
        });
    }
  }

  // ---- polling -------------------------------------------------------------------------

  let pollSeq = 0;
  let pollTimer = 0;
  let pollAbort = null;
  let lastPollSent = -Infinity;

  /** Polls now (cancelling a poll in flight), then about once a second. */
  async function poll() {
    clearTimeout(pollTimer);
    if (pollAbort) pollAbort.abort();
    const ctl = new AbortController();
    pollAbort = ctl;
    const seq = ++pollSeq;
    const sentAt = performance.now();
    lastPollSent = sentAt;
    const url = new URL("api/breakers", base);
    if (view.q) url.searchParams.set("q", view.q);
    if (view.state) url.searchParams.set("state", view.state);
    url.searchParams.set("offset", String(view.offset));
    url.searchParams.set("limit", String(PAGE_SIZE));
    try {
      const res = await fetch(url, { signal: ctl.signal, cache: "no-store" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = await res.json();
      if (seq !== pollSeq) return;
      applyPage(body, sentAt);
      ui.poll.dataset.poll = "ok";
      ui.stream.dataset.events = String(received);
      ui.poll.textContent = `metrics: ${fmtClock(serverNow())}`;
    } catch (e) {
      if (ctl.signal.aborted || seq !== pollSeq) return;
      ui.poll.dataset.poll = "error";
      ui.poll.textContent = `metrics: ${e && e.message ? e.message : "unreachable"}`;
    } finally {
      if (seq === pollSeq) pollTimer = setTimeout(poll, POLL_MS);
    }
  }

  function applyPage(body, sentAt) {
    const now = typeof body.now === "number" ? body.now : Date.now() + skew;
    skew = now - Date.now();
    page.total = body.total | 0;
    page.matched = body.matched | 0;
    counts = Object.assign({}, body.states || {});
    renderCounts();

    // The page went past the end (the filter now matches fewer): show the last page.
    if (page.matched > 0 && view.offset >= page.matched) {
      view.offset = Math.floor((page.matched - 1) / PAGE_SIZE) * PAGE_SIZE;
      setTimeout(poll, 0);
    }

    const list = Array.isArray(body.breakers) ? body.breakers : [];
    const names = [];
    for (const b of list) {
      if (!b || typeof b.name !== "string") continue;
      names.push(b.name);
      updateRecord(record(b.name), b, now, sentAt);
    }
    reconcile(names);
    for (const name of names) {
      const p = tiles.get(name);
      const r = records.get(name);
      renderTile(p, r, now);
      wantHistory(r);
    }
    page.shown = names.length;
    renderRange();
    renderBulkheads(
      Array.isArray(body.bulkheads) ? body.bulkheads : [],
      body.bulkheadsMatched | 0,
    );
    prune(now);
  }

  function updateRecord(r, b, now, sentAt) {
    // A poll sent before the stream's last transition of this breaker may carry the state
    // before it: the stream's is newer.
    if (now < r.knownSince) r.knownSince = now;
    if (r.state === null) {
      r.state = b.state;
    } else if (b.state !== r.state && sentAt > r.sseAt) {
      addTransition(r, now, r.state, b.state, null);
      r.state = b.state;
    }
    r.data = b;

    const last = r.last;
    const keys = SERIES;
    if (last && now - last.now > GAP_MS) {
      r.rates = null;
      r.samples.push({ t: now, gap: true });
    } else if (last && now > last.now) {
      const dt = (now - last.now) / 1000;
      const rates = {};
      let ok = true;
      for (const k of keys) {
        const d = b[k] - last[k];
        if (!(d >= 0)) ok = false; // a counter went back (a new breaker took the name)
        rates[k] = d / dt;
      }
      r.rates = ok ? rates : null;
      r.samples.push(ok ? Object.assign({ t: now }, rates) : { t: now, gap: true });
    }
    if (!last || now > last.now) {
      r.last = { now, calls: b.calls, failures: b.failures, slow: b.slow, rejected: b.rejected };
    }
    const horizon = now - WINDOW_MS;
    let drop = 0;
    while (drop < r.samples.length && r.samples[drop].t < horizon) drop++;
    if (drop) r.samples.splice(0, drop);
  }

  /** Forgets breakers that left the page long ago, once many are remembered. */
  function prune() {
    if (records.size <= KEEP_RECORDS) return;
    const old = performance.now() - 60000;
    for (const [name, r] of records) {
      if (records.size <= KEEP_RECORDS) break;
      if (!tiles.has(name) && r.touched < old) records.delete(name);
    }
  }

  // ---- header --------------------------------------------------------------------------

  function renderCounts() {
    for (const b of ui.filters) {
      const f = b.dataset.filter;
      const n = f ? counts[f] | 0 : page.total;
      b.querySelector(".count").textContent = fmtInt(n);
      b.setAttribute("aria-pressed", f === view.state ? "true" : "false");
    }
    const open = (counts.OPEN | 0) + (counts.FORCED_OPEN | 0);
    document.title = open ? `(${fmtInt(open)} open) Circuit breakers` : "Circuit breakers";
  }

  function renderRange() {
    const { matched, total, shown } = page;
    let text;
    if (matched === 0) {
      text = total === 0 ? "no breakers" : `none of ${fmtInt(total)} breakers match`;
    } else {
      text = `${fmtInt(view.offset + 1)}–${fmtInt(view.offset + shown)} of ${fmtInt(matched)}`;
      if (matched !== total) text += ` (${fmtInt(total)} breakers)`;
    }
    ui.range.textContent = text;
    ui.empty.hidden = matched !== 0;
    const atStart = view.offset === 0;
    const atEnd = view.offset + PAGE_SIZE >= matched;
    ui.first.disabled = atStart;
    ui.prev.disabled = atStart;
    ui.next.disabled = atEnd;
    ui.last.disabled = atEnd;
  }

  function goTo(offset) {
    const lastPage = Math.max(0, Math.floor((page.matched - 1) / PAGE_SIZE) * PAGE_SIZE);
    view.offset = Math.max(0, Math.min(offset, lastPage));
    poll();
  }

  ui.first.addEventListener("click", () => goTo(0));
  ui.prev.addEventListener("click", () => goTo(view.offset - PAGE_SIZE));
  ui.next.addEventListener("click", () => goTo(view.offset + PAGE_SIZE));
  ui.last.addEventListener("click", () => goTo(Infinity));

  for (const b of ui.filters) {
    b.addEventListener("click", () => {
      const f = b.dataset.filter;
      view.state = view.state === f ? "" : f;
      view.offset = 0;
      renderCounts();
      poll();
    });
  }

  let searchTimer = 0;
  ui.search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      const q = ui.search.value.trim();
      if (q === view.q) return;
      view.q = q;
      view.offset = 0;
      poll();
    }, 150);
  });
  ui.search.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      ui.search.value = "";
      ui.search.dispatchEvent(new Event("input"));
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement !== ui.search) {
      e.preventDefault();
      ui.search.focus();
    }
  });

  // ---- the event stream ----------------------------------------------------------------

  let noticeTimer = 0;

  function showNotice(text) {
    ui.notice.textContent = text;
    ui.notice.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => {
      ui.notice.hidden = true;
    }, 15000);
  }

  function setStream(state, text) {
    ui.stream.dataset.stream = state;
    ui.stream.textContent = text;
  }

  function onEvent(ev) {
    if (!ev || typeof ev.circuitBreakerName !== "string") return;
    let from;
    let to;
    let r;
    if (ev.type === "STATE_TRANSITION") {
      const tr = parseTransition(ev.stateTransition);
      if (!tr) return;
      [from, to] = tr;
      r = record(ev.circuitBreakerName);
    } else if (ev.type === "RESET") {
      r = record(ev.circuitBreakerName);
      from = r.state || "CLOSED";
      to = "CLOSED";
    } else {
      return;
    }
    const prev = r.state;
    const t = parseTime(ev.creationTime);
    const at = t === null ? serverNow() : t;
    const key = typeof ev.creationTime === "string" ? ev.creationTime : String(at);
    if (from !== to) addTransition(r, at, from, to, key);
    if (at < r.knownSince) r.knownSince = at;
    r.state = to;
    r.sseAt = performance.now();
    const was = prev || from;
    if (was !== to && (counts[was] | 0) > 0) {
      counts[was] = (counts[was] | 0) - 1;
      counts[to] = (counts[to] | 0) + 1;
      renderCounts();
    }
    const p = tiles.get(r.name);
    if (p) {
      setTileState(p, to);
      renderTimeline(p, r, serverNow());
    }
  }

  let stream = null;
  // Events received, shown as the stream status's `data-events` at each poll.
  let received = 0;
  // The stream's event names other than STATE_TRANSITION and RESET: Resilience4j's breaker
  // event types (FORCED_OPEN and DISABLED are never sent; a transition to those states is a
  // STATE_TRANSITION).
  const EVENT_TYPES = [
    "ERROR",
    "IGNORED_ERROR",
    "SUCCESS",
    "NOT_PERMITTED",
    "FAILURE_RATE_EXCEEDED",
    "SLOW_CALL_RATE_EXCEEDED",
  ];

  function connectStream() {
    if (typeof EventSource === "undefined") {
      setStream("error", "events: not supported by this browser");
      return;
    }
    stream = new EventSource(streamUrl);
    stream.onopen = () => setStream("open", "events: live");
    stream.onerror = () => {
      if (stream.readyState === EventSource.CLOSED) {
        // The server refused the stream: EventSource gives up, so try again later.
        setStream("error", "events: disconnected, retrying");
        stream = null;
        setTimeout(connectStream, 5000);
      } else {
        setStream("connecting", "events: reconnecting");
      }
    };
    // Each message is named by its event's type, as Resilience4j's stream names them (so
    // `onmessage`, which gets unnamed messages only, sees none). Most are calls (SUCCESS,
    // ERROR, ...), which the polls count: they are only counted here; transitions and resets
    // are parsed.
    const count = () => {
      received++;
    };
    for (const type of EVENT_TYPES) stream.addEventListener(type, count);
    const parse = (m) => {
      received++;
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch (_) {
        return;
      }
      onEvent(ev);
    };
    stream.addEventListener("STATE_TRANSITION", parse);
    stream.addEventListener("RESET", parse);
    stream.addEventListener("lagged", (m) => {
      let lost = null;
      try {
        const d = JSON.parse(m.data);
        if (d && typeof d.lost === "number") lost = d.lost;
      } catch (_) {
        // the notice says "some"
      }
      showNotice(
        `The event stream fell behind: ${lost === null ? "some" : fmtInt(lost)} events were ` +
        "dropped. Tiles catch up from the next poll.",
      );
      // Catch up now, but not more than twice a second however often the stream lags.
      if (performance.now() - lastPollSent > 500) poll();
    });
  }

  connectStream();
  poll();
})();
