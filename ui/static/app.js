// ticketd's status page: plain JavaScript, no library and no build step.
//
// It reads this node's own API (same origin; the Content-Security-Policy
// allows no other) with the bearer token the person enters, about once a
// second, and never starts a read before the last one has finished. It keeps
// the token in session storage: for this tab only, never in local storage or a
// cookie. Everything it shows goes into the DOM as text (textContent, or
// attributes set one by one), never as HTML, so a sequence name or a lease
// holder cannot inject markup.
//
// Its work is bounded whatever the size of the cluster: the first
// MAX_SEQUENCES sequences (by name), the leases of the first
// MAX_LEASE_NAMESPACES namespaces, MAX_LEASE_ROWS leases each, five minutes
// of readings per sequence, MAX_CHART_LINES lines in the chart.
"use strict";

(function () {
  const REFRESH_MS = 1000; // a read starts about this long after the last one started
  const MIN_GAP_MS = 250; // and at least this long after it ended
  const REQUEST_TIMEOUT_MS = 5000;
  const MAX_SEQUENCES = 200;
  const MAX_LEASE_NAMESPACES = 10;
  const MAX_LEASE_ROWS = 50;
  const MAX_CHANGES = 12;
  const MAX_CHART_LINES = 6;
  const CHART_SPAN_MS = 5 * 60 * 1000;
  const RATE_WINDOW_MS = 10 * 1000;
  const CHART_GAP_MS = 5000; // readings further apart than this leave a gap in a line
  const TOKEN_KEY = "ticketd.token";
  // A member whose answer has no feature_level runs a binary from before
  // feature levels: it counts as this level, as the leader counts it.
  const BASE_FEATURE_LEVEL = 1;

  // ---- JSON with exact 64-bit integers ----

  // parseJSON is JSON.parse, except that an integer too large for a double
  // to hold exactly (beyond ±(2^53-1)) becomes a BigInt instead of a rounded
  // Number. IDs are int64: JSON.parse reads 9007199254740993 as
  // 9007199254740992, a different ID, and a reviver cannot help, because it
  // gets the number already rounded (the reviver's access to the source text
  // is not in every browser yet). So the page tokenizes the answer itself:
  // each number is converted from its own literal text, and each string is
  // handed to JSON.parse alone, so escapes are decoded exactly as the
  // standard says. Objects have no prototype, so a key "__proto__" is just a
  // key.
  function parseJSON(text) {
    const n = text.length;
    let i = 0;
    const fail = (what) => {
      throw new SyntaxError("invalid JSON at offset " + i + ": " + what);
    };
    const skipSpace = () => {
      while (i < n) {
        const c = text.charCodeAt(i);
        if (c !== 32 && c !== 9 && c !== 10 && c !== 13) {
          return;
        }
        i++;
      }
    };
    const string = () => {
      const start = i;
      i++; // the opening quote
      while (i < n) {
        const c = text.charCodeAt(i);
        if (c === 34) {
          i++;
          return JSON.parse(text.slice(start, i));
        }
        i += c === 92 ? 2 : 1; // a backslash escapes the next character
      }
      return fail("unterminated string");
    };
    const number = () => {
      const start = i;
      let integer = true;
      if (text[i] === "-") {
        i++;
      }
      while (i < n) {
        const c = text[i];
        if (c >= "0" && c <= "9") {
          i++;
        } else if (c === "." || c === "e" || c === "E" || c === "+" || c === "-") {
          integer = false;
          i++;
        } else {
          break;
        }
      }
      const literal = text.slice(start, i);
      const value = Number(literal);
      if (literal === "" || literal === "-" || !Number.isFinite(value)) {
        return fail("not a value: " + JSON.stringify(text.slice(start, start + 10)));
      }
      if (integer && !Number.isSafeInteger(value)) {
        return BigInt(literal);
      }
      return value;
    };
    const word = (w, v) => {
      if (text.startsWith(w, i)) {
        i += w.length;
        return v;
      }
      return fail("unexpected " + JSON.stringify(text[i]));
    };
    const value = (depth) => {
      if (depth > 64) {
        fail("nested too deep");
      }
      skipSpace();
      switch (text[i]) {
        case "{": {
          i++;
          const obj = Object.create(null);
          skipSpace();
          if (text[i] === "}") {
            i++;
            return obj;
          }
          for (;;) {
            skipSpace();
            if (text[i] !== '"') {
              fail("expected a key");
            }
            const key = string();
            skipSpace();
            if (text[i] !== ":") {
              fail("expected ':'");
            }
            i++;
            obj[key] = value(depth + 1);
            skipSpace();
            if (text[i] === ",") {
              i++;
            } else if (text[i] === "}") {
              i++;
              return obj;
            } else {
              fail("expected ',' or '}'");
            }
          }
        }
        case "[": {
          i++;
          const arr = [];
          skipSpace();
          if (text[i] === "]") {
            i++;
            return arr;
          }
          for (;;) {
            arr.push(value(depth + 1));
            skipSpace();
            if (text[i] === ",") {
              i++;
            } else if (text[i] === "]") {
              i++;
              return arr;
            } else {
              fail("expected ',' or ']'");
            }
          }
        }
        case '"':
          return string();
        case "t":
          return word("true", true);
        case "f":
          return word("false", false);
        case "n":
          return word("null", null);
        default:
          return number();
      }
    };
    const v = value(0);
    skipSpace();
    if (i !== n) {
      fail("trailing characters");
    }
    return v;
  }

  // ---- numbers, sizes, times ----

  // big is an API integer (a Number or a BigInt from parseJSON) as a BigInt,
  // or null when it is not an integer.
  function big(v) {
    if (typeof v === "bigint") {
      return v;
    }
    if (typeof v === "number" && Number.isInteger(v)) {
      return BigInt(v);
    }
    return null;
  }

  // grouped writes a decimal integer string with thousands separators.
  function grouped(s) {
    const neg = s.startsWith("-");
    const digits = neg ? s.slice(1) : s;
    const parts = [];
    for (let k = digits.length; k > 0; k -= 3) {
      parts.unshift(digits.slice(Math.max(0, k - 3), k));
    }
    return (neg ? "-" : "") + parts.join(",");
  }

  function fmtInt(v) {
    const b = big(v);
    return b === null ? "—" : grouped(b.toString());
  }

  function fmtRate(r) {
    if (r === null || !Number.isFinite(r)) {
      return "—";
    }
    if (r > 0 && r < 10) {
      return r.toFixed(1);
    }
    return grouped(String(Math.round(r)));
  }

  // fmtCompact is a short form for chart labels: 950, 12k, 3.4M.
  function fmtCompact(x) {
    const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [u, s] of units) {
      if (Math.abs(x) >= u) {
        const v = x / u;
        return (v >= 10 ? Math.round(v) : Math.round(v * 10) / 10) + s;
      }
    }
    return String(Math.round(x * 10) / 10);
  }

  function fmtBytes(v) {
    const b = typeof v === "bigint" ? Number(v) : v;
    if (typeof b !== "number" || b < 0) {
      return "?";
    }
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let x = b;
    let u = 0;
    while (x >= 1024 && u < units.length - 1) {
      x /= 1024;
      u++;
    }
    return (u === 0 || x >= 100 ? Math.round(x) : x.toFixed(1)) + " " + units[u];
  }

  function fmtDuration(ms) {
    const s = ms / 1000;
    if (s < 1) {
      return Math.round(ms) + " ms";
    }
    if (s < 60) {
      return (s < 10 ? s.toFixed(1) : Math.round(s)) + " s";
    }
    if (s < 3600) {
      return Math.floor(s / 60) + " min " + Math.floor(s % 60) + " s";
    }
    if (s < 86400) {
      return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    }
    const days = s / 86400;
    if (days < 365) {
      return Math.round(days) + " days";
    }
    const years = days / 365.25;
    return years >= 100 ? "over 100 years" : years.toFixed(years < 10 ? 1 : 0) + " years";
  }

  const pad2 = (x) => String(x).padStart(2, "0");
  function fmtClock(d) {
    return pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + ":" + pad2(d.getSeconds());
  }
  function fmtDateTime(d) {
    return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " + fmtClock(d);
  }

  // parseTime reads an RFC 3339 time; Go writes up to nine digits of
  // fractions, and Date reads three.
  function parseTime(s) {
    if (typeof s !== "string") {
      return null;
    }
    let t = s;
    const dot = t.indexOf(".");
    if (dot >= 0) {
      let end = dot + 1;
      while (end < t.length && t[end] >= "0" && t[end] <= "9") {
        end++;
      }
      t = t.slice(0, Math.min(end, dot + 4)) + t.slice(end);
    }
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? null : d;
  }

  function ago(d, now) {
    const ms = now - d.getTime();
    return ms < 0 ? "in " + fmtDuration(-ms) : fmtDuration(ms) + " ago";
  }

  // ---- DOM ----

  const $ = (id) => document.getElementById(id);

  // el builds an element: attrs are set one by one (a "class" key sets the
  // class name, "data-*" and others become attributes); children are nodes
  // or strings, and strings become text nodes, never HTML.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) {
          continue;
        }
        if (k === "class") {
          e.className = v;
        } else {
          e.setAttribute(k, v === true ? "" : String(v));
        }
      }
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) {
        continue;
      }
      e.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  function setText(id, text) {
    $(id).textContent = text;
  }

  // ---- the API ----

  class ApiError extends Error {
    constructor(status, message, problem) {
      super(message);
      this.status = status; // 0: no answer
      this.problem = problem || null;
    }
    get auth() {
      return this.status === 401 || this.status === 403;
    }
    // words is the error as a person reads it: "no leader is known (503)".
    get words() {
      return this.status ? this.message + " (" + this.status + ")" : this.message;
    }
  }

  const state = {
    token: null, // the token sent; "" when this node needs none
    generation: 0, // grows with each new token: answers to an older one are dropped
    active: false,
    paused: false,
    busy: false,
    again: false,
    timer: 0,
    refreshes: 0,
    history: new Map(), // sequence name -> [{t, next}], oldest first
    last: null, // what was last drawn, for a redraw on resize
    lastGood: null, // when this node last answered
  };

  async function apiGet(path) {
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
    const headers = { Accept: "application/json" };
    if (state.token) {
      headers.Authorization = "Bearer " + state.token;
    }
    let resp;
    let text;
    try {
      resp = await fetch(path, { headers, signal: ctrl.signal, cache: "no-store", credentials: "omit", redirect: "error" });
      text = await resp.text();
    } catch (e) {
      throw new ApiError(0, ctrl.signal.aborted ? "no answer within " + REQUEST_TIMEOUT_MS / 1000 + " s" : "no answer (" + e.message + ")");
    } finally {
      clearTimeout(timer);
    }
    let body = null;
    try {
      body = text === "" ? null : parseJSON(text);
    } catch (e) {
      if (resp.ok) {
        throw new ApiError(resp.status, "the answer is not JSON: " + e.message);
      }
    }
    if (!resp.ok) {
      let words = resp.statusText || "refused";
      if (body && typeof body === "object" && !Array.isArray(body)) {
        words = typeof body.detail === "string" && body.detail !== "" ? body.detail : typeof body.title === "string" ? body.title : words;
      }
      throw new ApiError(resp.status, words, body);
    }
    return body;
  }

  const arr = (v) => (Array.isArray(v) ? v : []);

  // ---- reading the cluster ----

  // refresh reads everything once and draws it. It returns when done; the
  // caller schedules the next one.
  async function refresh() {
    const gen = state.generation;
    const [nodesR, seqR, nsR] = await Promise.allSettled([
      apiGet("/v1/cluster/nodes"),
      apiGet("/v1/sequences?limit=" + MAX_SEQUENCES),
      apiGet("/v1/namespaces"),
    ]);
    if (gen !== state.generation) {
      return; // the token changed meanwhile
    }
    const refused = [nodesR, seqR, nsR].find((r) => r.status === "rejected" && r.reason instanceof ApiError && r.reason.auth);
    if (refused) {
      authRefused(refused.reason);
      return;
    }
    let leases = new Map();
    if (nsR.status === "fulfilled") {
      const names = arr(nsR.value && nsR.value.namespaces).slice(0, MAX_LEASE_NAMESPACES).map((ns) => String(ns.name));
      const results = await Promise.allSettled(names.map((name) => apiGet("/v1/namespaces/" + encodeURIComponent(name) + "/leases")));
      if (gen !== state.generation) {
        return;
      }
      const lr = results.find((r) => r.status === "rejected" && r.reason instanceof ApiError && r.reason.auth);
      if (lr) {
        authRefused(lr.reason);
        return;
      }
      names.forEach((name, k) => leases.set(name, results[k]));
    }
    const now = performance.now();
    if (seqR.status === "fulfilled") {
      record(arr(seqR.value && seqR.value.sequences), now);
    }
    render(nodesR, seqR, nsR, leases, now);
    state.refreshes++;
    const u = $("updated");
    u.dataset.refreshes = String(state.refreshes);
  }

  // record keeps each sequence's readings of next (a BigInt; max+1 once it
  // is exhausted) for the chart and the rate column.
  function record(seqs, now) {
    const seen = new Set();
    for (const s of seqs) {
      const name = String(s.name);
      seen.add(name);
      let next = big(s.next);
      if (next === null) {
        const m = big(s.max);
        if (m === null) {
          continue;
        }
        next = m + 1n;
      }
      let h = state.history.get(name);
      if (!h) {
        h = [];
        state.history.set(name, h);
      }
      if (h.length > 0 && next < h[h.length - 1].next) {
        h.length = 0; // next went down: a cluster restored from a backup; start again
      }
      h.push({ t: now, next });
      const oldest = now - CHART_SPAN_MS - RATE_WINDOW_MS;
      let drop = 0;
      while (drop < h.length && h[drop].t < oldest) {
        drop++;
      }
      if (drop > 0) {
        h.splice(0, drop);
      }
    }
    for (const name of state.history.keys()) {
      if (!seen.has(name)) {
        state.history.delete(name);
      }
    }
  }

  // rateAt is IDs per second over RATE_WINDOW_MS up to reading k of h (or
  // since the reading before it, if that is older), null without one.
  function rateAt(h, k) {
    if (k < 1) {
      return null;
    }
    const end = h[k];
    let j = k;
    while (j > 0 && h[j - 1].t >= end.t - RATE_WINDOW_MS) {
      j--;
    }
    if (j === k) {
      j = k - 1;
    }
    const dt = (end.t - h[j].t) / 1000;
    return dt > 0 ? Number(end.next - h[j].next) / dt : null;
  }

  function currentRate(name) {
    const h = state.history.get(name);
    return h ? rateAt(h, h.length - 1) : null;
  }

  // ---- drawing ----

  function render(nodesR, seqR, nsR, leases, now) {
    document.body.dataset.phase = "live";
    $("dashboard").hidden = false;
    const banners = [];
    let view = state.last && state.last.view;
    if (nodesR.status === "fulfilled" && nodesR.value) {
      view = clusterView(nodesR.value);
      state.lastGood = new Date();
      $("dashboard").classList.remove("stale");
    } else {
      const err = nodesR.reason;
      const when = state.lastGood ? " Showing what it said at " + fmtClock(state.lastGood) + "." : "";
      banners.push({
        kind: "error",
        id: "offline",
        text: "This node (" + location.host + ") " + (err instanceof ApiError && err.status ? "refused to list the members: " : "did not answer: ") +
          (err instanceof ApiError ? err.words : String(err)) + "." + when +
          (view && view.others.length ? " Open another member's page:" : ""),
        links: view ? view.others : [],
      });
      $("dashboard").classList.add("stale");
    }
    if (view) {
      banners.push(...view.banners);
      drawCluster(view);
    }
    drawSequences(seqR, now);
    drawNamespaces(nsR, leases);
    drawBanners(banners);
    state.last = { view };
    setText("updated", state.lastGood ? "Updated " + fmtClock(state.lastGood) : "No answer yet");
  }

  // clusterView turns GET /v1/cluster/nodes into what the page shows.
  function clusterView(ns) {
    const nodes = arr(ns.nodes);
    const self = String(ns.node || "");
    let leader = null;
    for (const n of nodes) {
      const st = n.reachable ? n.status : null;
      if (st && st.state === "Leader" && (leader === null || big(st.term) > big(leader.status.term))) {
        leader = n;
      }
    }
    const reachable = nodes.filter((n) => n.reachable && n.status);
    const voters = nodes.filter((n) => n.voter);
    const votersUp = voters.filter((n) => n.reachable && n.status);
    const banners = [];
    if (!leader) {
      const views = reachable.map((n) => n.id + " is " + String(n.status.state || "?").toLowerCase() + " in term " + fmtInt(n.status.term));
      banners.push({
        kind: "error",
        id: "no-leader",
        text: "No leader: the cluster hands out no IDs until one is elected." + (views.length ? " " + views.join("; ") + "." : ""),
      });
    }
    const quorum = Math.floor(voters.length / 2) + 1;
    for (const n of nodes) {
      if (!(n.reachable && n.status)) {
        banners.push({
          kind: "warn",
          id: "unreachable",
          node: n.id,
          text: n.id + (n.http_addr ? " (" + n.http_addr + ")" : "") + " is unreachable: " + unreachableWhy(n) + ". " +
            votersUp.length + " of " + voters.length + " voters answer; a majority needs " + quorum + ".",
        });
        continue;
      }
      const sto = n.status.storage;
      if (sto && sto.healthy === false) {
        banners.push({
          kind: "error",
          id: "storage",
          node: n.id,
          text: n.id + "'s storage is failing" + (sto.error_kind ? " (" + sto.error_kind + ")" : "") +
            (sto.failing_for_ms ? " for " + fmtDuration(Number(sto.failing_for_ms)) : "") + (sto.error ? ": " + sto.error : "") + ".",
        });
      }
      // A node that cannot make the IDs of a Snowflake namespace it serves:
      // its callers must go to another node.
      for (const sf of snowflakeOf(n.status)) {
        if (!sf.serving) {
          banners.push({
            kind: "warn",
            id: "snowflake",
            node: n.id,
            text: n.id + " cannot make Snowflake IDs of " + String(sf.namespace) + (sf.reason ? ": " + String(sf.reason) : "") +
              ". Other nodes answer its callers.",
          });
        }
      }
    }
    const level = levelView(reachable);
    if (level && level.upgrading) {
      banners.push({ kind: "warn", id: "upgrading", text: upgradingText(level) });
    }
    const dr = standbyView(reachable, leader, self);
    if (dr.fence) {
      // Before every other banner: nothing else matters on a fenced cluster.
      banners.unshift({ kind: "error", id: "fenced", node: String(dr.fence.standby), text: fenceText(dr.fence) });
    }
    if (dr.standby && dr.standby.state !== "in-sync") {
      banners.push({ kind: "warn", id: "standby", node: String(dr.standby.id), text: standbyText(dr.standby) });
    }
    const others = nodes.filter((n) => n.id !== self && n.http_addr).map((n) => ({ text: n.id, href: memberURL(n.http_addr) })).filter((l) => l.href);
    return { self, nodes, leader, reachable, voters, votersUp, banners, others, level, dr, changes: mergeChanges(reachable) };
  }

  // standbyView is the disaster-recovery standby, the fence and the
  // promotions as the members that answer show them. All three come from
  // the log; the leader's answer is preferred (it alone adds what it sees of
  // the standby's replication, and it is the newest), then this page's node,
  // then any member's.
  function standbyView(reachable, leader, self) {
    const rank = (n) => (leader && n.id === leader.id ? 0 : n.id === self ? 1 : 2);
    const ordered = [...reachable].sort((a, b) => rank(a) - rank(b));
    const first = ordered[0];
    const standby = first && first.status.standby ? first.status.standby : null;
    const fenced = ordered.find((n) => n.status.fence);
    let promotions = [];
    for (const n of ordered) {
      if (arr(n.status.promotions).length > promotions.length) {
        promotions = arr(n.status.promotions);
      }
    }
    return { standby, fence: fenced ? fenced.status.fence : null, promotions };
  }

  function fenceText(f) {
    return "FENCED: standby " + String(f.standby) + " was promoted (recorded at index " + fmtInt(f.index) +
      (parseTime(f.at) ? ", " + fmtDateTime(parseTime(f.at)) : "") + (f.reason ? ": " + String(f.reason) : "") +
      "). This cluster serves nothing: every request that would issue IDs is answered 503. Point clients at the promoted node; " +
      "keep these nodes stopped.";
  }

  function standbyText(sb) {
    const since = parseTime(sb.since);
    const when = " since index " + fmtInt(sb.since_index) + (since ? " (" + fmtDateTime(since) + ")" : "");
    if (sb.state === "catching-up") {
      return "The disaster-recovery standby " + String(sb.id) + " is catching up" + when +
        ": it does not hold the log yet, so a promotion now would need --advance.";
    }
    return "The disaster-recovery standby " + String(sb.id) + " is out of sync" + when + (sb.reason ? ": " + String(sb.reason) : "") +
      ". The primary goes on without it; a promotion now would need --advance. The leader records it in sync once it has caught up.";
  }

  // isStandby says whether member n is the cluster's standby: a non-voter
  // of its own kind, whether or not it answers.
  function isStandby(n, v) {
    return !n.voter && ((v.dr.standby && v.dr.standby.id === n.id) || Boolean(n.status && n.status.this_node_standby));
  }

  // snowflakeOf is a member's own worker-id lease in each Snowflake
  // namespace it serves, as it answers them (none from an older binary).
  function snowflakeOf(st) {
    return Array.isArray(st && st.snowflake) ? st.snowflake : [];
  }

  // snowflakeCell shows a member's Snowflake leases, one line a namespace:
  // its worker id and the time its lease lasts without a renewal, or why it
  // does not serve, marked as other unhealthy states are.
  function snowflakeCell(st) {
    const leases = snowflakeOf(st);
    if (leases.length === 0) {
      return el("td", { class: "snowflake muted" }, "—");
    }
    return el("td", { class: "snowflake" }, ...leases.map((sf) => {
      const attrs = { "data-namespace": String(sf.namespace), "data-serving": sf.serving ? "true" : "false" };
      const worker = Number(sf.worker_id) >= 0 ? "worker " + fmtInt(sf.worker_id) : "no worker id";
      if (!sf.serving) {
        attrs.class = "warn-text";
        return el("div", attrs, String(sf.namespace) + ": not serving" + (sf.reason ? " (" + String(sf.reason) + ")" : ""));
      }
      return el("div", attrs, String(sf.namespace) + ": " + worker,
        el("span", { class: "muted" }, " · " + fmtDuration(Number(sf.lease_remaining_ms)) + " left · " + fmtInt(sf.issued) + " made"));
    }));
  }

  // memberLevel is the feature level a member's binary knows, as it answers
  // it, or BASE_FEATURE_LEVEL for an older binary that answers none.
  function memberLevel(st) {
    const l = Number(st.feature_level);
    return Number.isInteger(l) && l > 0 ? l : BASE_FEATURE_LEVEL;
  }

  // levelView is the cluster's feature level as the members that answer
  // show it: the cluster's own (the highest any of them has applied, since
  // the level only rises and a member that lags has not applied it yet),
  // the highest a member's binary knows, and the members behind that. The
  // cluster is upgrading while its level is below the highest: some member
  // still runs an older binary, or the leader has yet to raise the level.
  function levelView(reachable) {
    if (reachable.length === 0) {
      return null;
    }
    let cluster = 0;
    let highest = 0;
    for (const n of reachable) {
      const c = Number(n.status.cluster_feature_level);
      cluster = Math.max(cluster, Number.isInteger(c) && c > 0 ? c : 0);
      highest = Math.max(highest, memberLevel(n.status));
    }
    cluster = cluster || BASE_FEATURE_LEVEL;
    const behind = reachable.filter((n) => memberLevel(n.status) < highest);
    return { cluster, highest, behind, upgrading: behind.length > 0 || cluster < highest };
  }

  function behindText(n) {
    const st = n.status;
    if (!(Number(st.feature_level) > 0)) {
      return n.id + " (an older binary: level " + BASE_FEATURE_LEVEL + ")";
    }
    return n.id + " (" + (st.version ? String(st.version) + ", " : "") + "level " + memberLevel(st) + ")";
  }

  function upgradingText(l) {
    if (l.behind.length === 0) {
      return "Upgrading: every member that answers knows feature level " + l.highest + "; the leader raises the cluster's level from " +
        l.cluster + " to it within seconds.";
    }
    return "Upgrading: the cluster's feature level is " + l.cluster + "; members know up to " + l.highest + ". Still on an older binary: " +
      l.behind.map(behindText).join(", ") + ". Until every member runs the new one, raising a sequence, choosing a worker id and shard " +
      "namespaces answer 409 cluster-upgrading (grouped blocks fall back by themselves), and any member can go back to its older binary. " +
      "Replace them one at a time; the level rises by itself within seconds of the last.";
  }

  // unreachableWhy is the gathering node's reason, without the word the
  // page already says.
  function unreachableWhy(n) {
    const e = n.error ? String(n.error) : "no answer";
    return e.startsWith("unreachable: ") ? e.slice("unreachable: ".length) : e;
  }

  // memberURL is the status page of the member at addr (host:port) on this
  // page's scheme, or "" when addr is not a plain host:port.
  function memberURL(addr) {
    const a = String(addr);
    for (const c of "/\\@?# ") {
      if (a.includes(c)) {
        return "";
      }
    }
    try {
      return new URL(location.protocol + "//" + a + "/ui/").href;
    } catch (e) {
      return "";
    }
  }

  function mergeChanges(reachable) {
    const byKey = new Map();
    for (const n of reachable) {
      for (const c of arr(n.status.leader_changes).slice(0, 20)) {
        const term = big(c.term);
        const at = parseTime(c.at);
        if (term === null || at === null) {
          continue;
        }
        const leader = typeof c.leader === "string" ? c.leader : "";
        const key = term.toString() + "/" + leader;
        let e = byKey.get(key);
        if (!e) {
          e = { term, leader, at, seenBy: [] };
          byKey.set(key, e);
        }
        if (at < e.at) {
          e.at = at;
        }
        e.seenBy.push(String(n.id));
      }
    }
    return [...byKey.values()]
      .sort((a, b) => (a.term !== b.term ? (a.term > b.term ? -1 : 1) : b.at - a.at))
      .slice(0, MAX_CHANGES);
  }

  function stateBadge(st) {
    const s = String(st || "unknown");
    return el("span", { class: "badge badge-" + s.toLowerCase().replace(/[^a-z]/g, "") }, s);
  }

  function drawCluster(v) {
    setText("served-by", v.self ? "status from " + v.self + " (" + location.host + ")" : location.host);
    const lead = $("leader");
    lead.dataset.leader = v.leader ? String(v.leader.id) : "";
    lead.textContent = v.leader ? String(v.leader.id) : "none";
    lead.classList.toggle("bad", !v.leader);
    const leaderChange = v.leader && v.changes.find((c) => c.leader === v.leader.id);
    setText("leader-since", v.leader ? (leaderChange ? "since " + fmtClock(leaderChange.at) : "") : "no member leads");
    const best = v.leader || v.reachable[0];
    setText("term", best ? fmtInt(best.status.term) : "—");
    setText("commit", best ? fmtInt(best.status.commit_index) : "—");
    setText("commit-note", v.leader ? "on the leader" : best ? "as " + best.id + " sees it" : "");
    const up = $("members-up");
    up.textContent = v.reachable.length + " of " + v.nodes.length;
    up.classList.toggle("bad", v.reachable.length < v.nodes.length);
    setText("members-note", v.votersUp.length >= Math.floor(v.voters.length / 2) + 1 ? "a majority of voters answers" : "no majority of voters answers");
    const lvl = $("cluster-level");
    lvl.dataset.level = v.level ? String(v.level.cluster) : "";
    lvl.textContent = v.level ? String(v.level.cluster) : "—";
    lvl.classList.toggle("warn-text", Boolean(v.level && v.level.upgrading));
    setText("cluster-level-note", !v.level ? "" : v.level.upgrading ? "of " + v.level.highest + ": upgrading" :
      "every member " + (v.reachable.length < v.nodes.length ? "that answers " : "") + "at " + v.level.highest);

    const rows = v.nodes.map((n) => memberRow(n, v));
    $("members").tBodies[0].replaceChildren(...rows);
    drawStandby(v.dr);

    const now = Date.now();
    const changeRows = v.changes.map((c) =>
      el("tr", { "data-term": c.term.toString(), "data-leader": c.leader },
        el("td", { class: "num" }, fmtInt(c.term)),
        el("td", null, c.leader ? el("strong", null, c.leader) : el("span", { class: "muted" }, "none known (election)")),
        el("td", { title: fmtDateTime(c.at) }, fmtClock(c.at), el("span", { class: "muted" }, " · " + ago(c.at, now))),
        el("td", null, c.seenBy.join(", "))));
    if (changeRows.length === 0) {
      changeRows.push(el("tr", null, el("td", { colspan: 4, class: "muted" }, "No change seen since the members started.")));
    }
    $("leader-changes").tBodies[0].replaceChildren(...changeRows);
  }

  // drawStandby fills the standby's section: its recorded state, and from
  // the leader's answer its replication ("—" when no leader answers,
  // "never" when it made no progress in this leader's term); then the
  // promotions. The section is hidden when there is neither.
  function drawStandby(dr) {
    $("standby-section").hidden = !dr.standby && dr.promotions.length === 0;
    const sb = dr.standby;
    const rows = [];
    if (sb) {
      const seen = sb.seen || null;
      const since = parseTime(sb.since);
      let progress = "—";
      if (seen) {
        const p = Number(seen.last_progress_ms);
        progress = p < 0 ? "never" : fmtDuration(p) + " ago";
      }
      const lag = seen ? big(seen.lag_entries) : null;
      rows.push(el("tr", { "data-standby": String(sb.id), "data-state": String(sb.state), "data-lag": lag === null ? "" : lag.toString() },
        el("th", { scope: "row" }, el("span", { class: "node-id" }, String(sb.id))),
        el("td", null, stateBadge(sb.state)),
        el("td", { class: "num" }, fmtInt(sb.bound)),
        el("td", { class: "num" }, fmtDuration(Number(sb.timeout_ms))),
        el("td", null, "index " + fmtInt(sb.since_index), since ? el("span", { class: "muted" }, " · " + fmtDateTime(since)) : null),
        el("td", { class: "num" + (Number(sb.out_of_sync_count) > 0 ? " warn-text" : "") }, fmtInt(sb.out_of_sync_count || 0)),
        el("td", { class: "num" }, seen ? fmtInt(seen.ack_index) : "—"),
        el("td", { class: "num" + (lag !== null && lag > 1000n ? " warn-text" : "") }, seen ? fmtInt(seen.lag_entries) : "—"),
        el("td", { class: "num" }, progress),
        el("td", { class: sb.reason ? "error-text" : "muted" }, sb.reason ? String(sb.reason) : "—")));
    }
    $("standby").tBodies[0].replaceChildren(...rows);
    $("promotions-wrap").hidden = dr.promotions.length === 0;
    $("promotions").tBodies[0].replaceChildren(...dr.promotions.map((p) => {
      const at = parseTime(p.at);
      return el("tr", { "data-promoted": String(p.standby) },
        el("th", { scope: "row" }, el("span", { class: "node-id" }, String(p.standby))),
        el("td", { class: "num" }, fmtInt(p.at_index)),
        el("td", { class: "num" }, fmtInt(p.advance)),
        el("td", null, stateBadge(p.state)),
        el("td", { class: "num" }, fmtInt(p.token_floor)),
        el("td", null, at ? fmtDateTime(at) : "—"));
    }));
  }

  function memberRow(n, v) {
    const st = n.reachable ? n.status : null;
    const isLeader = v.leader && v.leader.id === n.id;
    const addr = n.http_addr ? String(n.http_addr) : "";
    const href = addr ? memberURL(addr) : "";
    const nameCell = el("th", { scope: "row" },
      el("span", { class: "node-id" }, String(n.id)),
      n.id === v.self ? el("span", { class: "tag" }, "this page") : null,
      n.voter ? null : el("span", { class: "tag" }, isStandby(n, v) ? "standby" : "non-voter"));
    const addrCell = el("td", { class: "addr" }, href ? el("a", { href }, addr) : addr || "—");
    const attrs = { "data-node": String(n.id), "data-reachable": st ? "true" : "false", "data-state": st ? String(st.state) : "unreachable", class: isLeader ? "is-leader" : st ? "" : "is-down" };
    if (!st) {
      return el("tr", attrs, nameCell, el("td", { class: "muted" }, "—"), el("td", { class: "num muted" }, "—"),
        el("td", null, el("span", { class: "badge badge-unreachable" }, "unreachable")),
        el("td", { colspan: 9, class: "error-text" }, unreachableWhy(n)),
        addrCell);
    }
    let contact = "—";
    const lc = Number(st.last_contact_ms);
    if (st.state === "Leader") {
      contact = "is leader";
    } else if (lc < 0) {
      contact = "never";
    } else if (Number.isFinite(lc)) {
      contact = fmtDuration(lc) + " ago";
    }
    const sto = st.storage || {};
    const storage = sto.healthy === false
      ? el("span", { class: "error-text" }, "failing" + (sto.error_kind ? " (" + sto.error_kind + ")" : ""))
      : el("span", null, fmtBytes(sto.free_bytes) + " free", el("span", { class: "muted" }, " · log " + fmtBytes(sto.log_bytes) + " · snap " + fmtBytes(sto.snapshot_bytes)));
    const lag = big(st.lag_entries);
    // An older binary answers without a version or level: "—", counted as
    // the base level; a member behind the highest level is marked.
    const reported = Number(st.feature_level) > 0;
    attrs["data-version"] = st.version ? String(st.version) : "";
    attrs["data-level"] = reported ? String(memberLevel(st)) : "";
    const behind = v.level && memberLevel(st) < v.level.highest;
    const versionCell = el("td", { class: "version" }, st.version ? String(st.version) : el("span", { class: "muted", title: "an older binary: it reports no version" }, "—"));
    const levelCell = el("td", { class: "num" + (behind ? " warn-text" : ""), title: reported ? "" : "an older binary: it reports no level and counts as " + BASE_FEATURE_LEVEL },
      reported ? String(memberLevel(st)) : "—", behind ? el("div", { class: "small" }, "behind") : null);
    return el("tr", attrs, nameCell, versionCell, levelCell,
      el("td", null, stateBadge(st.state), st.raft_tls ? el("span", { class: "tag", title: "Raft traffic is mutual TLS" }, "TLS") : null,
        !isLeader && st.leader ? el("div", { class: "muted small" }, "follows " + String(st.leader)) : null),
      el("td", { class: "num" }, fmtInt(st.term)),
      el("td", { class: "num" }, fmtInt(st.commit_index)),
      el("td", { class: "num" }, fmtInt(st.applied_index)),
      el("td", { class: "num" + (lag !== null && lag > 1000n ? " warn-text" : "") }, fmtInt(st.lag_entries)),
      el("td", { class: "num" + (lc > 2000 ? " warn-text" : "") }, contact),
      el("td", null, st.ready ? el("span", { class: "ok-text" }, "ready") : el("span", { class: "warn-text" }, st.not_ready ? "not ready: " + st.not_ready : "not ready")),
      el("td", null, storage),
      snowflakeCell(st),
      el("td", { class: "num" }, n.id === v.self ? "—" : fmtInt(n.round_trip_ms) + " ms"),
      addrCell);
  }

  function drawBanners(list) {
    const nodes = list.map((b) => {
      const attrs = { class: "alert alert-" + b.kind, "data-banner": b.id, role: b.kind === "error" ? "alert" : "status" };
      if (b.node) {
        attrs["data-node"] = b.node;
      }
      const links = (b.links || []).map((l) => el("a", { href: l.href }, l.text));
      const parts = [];
      links.forEach((a, k) => parts.push(k ? ", " : " ", a));
      return el("div", attrs, b.text, ...parts);
    });
    $("banners").replaceChildren(...nodes);
  }

  function sectionNote(id, text) {
    const p = $(id);
    p.hidden = !text;
    p.textContent = text || "";
  }

  function failedNote(what, err) {
    const e = err instanceof ApiError ? err.words : String(err);
    return what + " could not be read: " + e + "." + (state.lastGood ? " The values shown are older." : "");
  }

  function drawSequences(seqR, now) {
    const section = $("sequences-section");
    if (seqR.status !== "fulfilled") {
      sectionNote("sequences-note", failedNote("The sequences", seqR.reason));
      section.classList.add("stale");
      drawChart(now);
      return;
    }
    section.classList.remove("stale");
    const body = seqR.value || {};
    const seqs = arr(body.sequences);
    sectionNote("sequences-note", body.next ? "Showing the first " + seqs.length + " sequences by name; more exist (ticketd sequences lists them all)." : "");
    const charted = chartedNames(seqs);
    let total = 0;
    const rows = seqs.map((s) => {
      const name = String(s.name);
      const next = big(s.next);
      const start = big(s.start);
      const max = big(s.max);
      const rem = big(s.remaining);
      const rate = currentRate(name);
      if (rate !== null) {
        total += rate;
      }
      let frac = null;
      if (rem !== null && start !== null && max !== null && max >= start) {
        frac = Number((rem * 1000000n) / (max - start + 1n)) / 1e6;
      }
      let lasts = "—";
      if (rem === 0n || next === null) {
        lasts = "exhausted";
      } else if (rate !== null && rate > 0 && rem !== null) {
        lasts = fmtDuration((Number(rem) / rate) * 1000);
      } else if (rate === 0) {
        lasts = "idle";
      }
      const ci = charted.indexOf(name);
      const remCell = el("td", { class: "num" },
        el("div", null, fmtInt(rem)),
        frac === null ? null : el("div", { class: "remaining" },
          el("meter", { min: 0, max: 1, low: 0.1, high: 0.25, optimum: 1, value: frac, title: (frac * 100).toFixed(4) + "% left" }),
          el("span", { class: "muted small" }, pct(frac))));
      return el("tr", { "data-sequence": name, "data-next": next === null ? "" : next.toString(), "data-rate": rate === null ? "" : String(Math.round(rate)) },
        el("th", { scope: "row" }, ci >= 0 ? el("span", { class: "swatch c" + ci, "aria-hidden": "true" }) : null, name),
        el("td", { class: "num id" }, next === null ? el("span", { class: "error-text" }, "exhausted") : next.toString()),
        remCell,
        el("td", { class: "num" }, rate === null ? el("span", { class: "muted" }, "measuring") : fmtRate(rate) + " /s"),
        el("td", { class: lasts === "exhausted" ? "error-text" : "" }, lasts),
        el("td", { class: "num muted" }, fmtInt(start)),
        el("td", { class: "num muted" }, fmtInt(max)));
    });
    if (rows.length === 0) {
      rows.push(el("tr", null, el("td", { colspan: 7, class: "muted" }, "No sequences yet (PUT /v1/sequences/{name} creates one).")));
    }
    $("sequences").tBodies[0].replaceChildren(...rows);
    setText("total-rate", seqs.length ? fmtRate(total) : "—");
    drawChart(now, charted);
  }

  function pct(frac) {
    if (frac >= 0.9999 && frac < 1) {
      return ">99.99%";
    }
    if (frac > 0 && frac < 0.0001) {
      return "<0.01%";
    }
    return (frac * 100).toFixed(frac >= 0.1 ? 1 : 2) + "%";
  }

  // chartedNames picks the sequences the chart draws: the busiest now, then
  // by name, at most MAX_CHART_LINES.
  function chartedNames(seqs) {
    return seqs
      .map((s) => String(s.name))
      .filter((name) => (state.history.get(name) || []).length > 1)
      .map((name) => ({ name, rate: currentRate(name) || 0 }))
      .sort((a, b) => b.rate - a.rate || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, MAX_CHART_LINES)
      .map((x) => x.name);
  }

  function drawNamespaces(nsR, leases) {
    const box = $("namespaces");
    const section = $("namespaces-section");
    if (nsR.status !== "fulfilled") {
      sectionNote("namespaces-note", failedNote("The namespaces", nsR.reason));
      section.classList.add("stale");
      return;
    }
    section.classList.remove("stale");
    const list = arr(nsR.value && nsR.value.namespaces);
    sectionNote("namespaces-note", list.length > MAX_LEASE_NAMESPACES ? "Leases are shown for the first " + MAX_LEASE_NAMESPACES + " of " + list.length + " namespaces." : "");
    const now = Date.now();
    const cards = list.map((ns, k) => namespaceCard(ns, k < MAX_LEASE_NAMESPACES ? leases.get(String(ns.name)) : null, now));
    if (cards.length === 0) {
      cards.push(el("p", { class: "muted" }, "No Snowflake namespaces (PUT /v1/namespaces/{name} creates one)."));
    }
    box.replaceChildren(...cards);
  }

  function namespaceCard(ns, leaseR, now) {
    const name = String(ns.name);
    const years = Number(ns.years_left);
    const maxWorkers = big(ns.max_workers);
    const facts = el("dl", { class: "facts" },
      el("dt", null, "Years left"), el("dd", { class: years < 5 ? "warn-text" : "" , "data-years-left": String(years) }, Number.isFinite(years) ? years.toFixed(1) : "—"),
      el("dt", null, "Lease TTL"), el("dd", null, fmtDuration(Number(ns.lease_ttl_ms))),
      el("dt", null, "Layout"), el("dd", null, ns.timestamp_bits + " time / " + ns.worker_bits + " worker / " + ns.sequence_bits + " sequence bits"),
      el("dt", null, "Max workers"), el("dd", null, fmtInt(maxWorkers)));
    let content;
    let held = null;
    if (!leaseR) {
      content = el("p", { class: "muted" }, "Leases not read (too many namespaces).");
    } else if (leaseR.status !== "fulfilled") {
      content = el("p", { class: "error-text" }, failedNote("Its leases", leaseR.reason));
    } else {
      const all = arr(leaseR.value && leaseR.value.leases);
      const order = { held: 0, ended: 1 };
      const shown = all.filter((l) => l.state === "held" || l.state === "ended");
      held = all.filter((l) => l.state === "held").length;
      shown.sort((a, b) => order[a.state] - order[b.state] || Number(a.worker_id) - Number(b.worker_id));
      const rows = shown.slice(0, MAX_LEASE_ROWS).map((l) => leaseRow(l, now));
      if (shown.length > MAX_LEASE_ROWS) {
        rows.push(el("tr", null, el("td", { colspan: 4, class: "muted" }, (shown.length - MAX_LEASE_ROWS) + " more not shown.")));
      }
      if (rows.length === 0) {
        rows.push(el("tr", null, el("td", { colspan: 4, class: "muted" }, "No worker id is leased.")));
      }
      content = el("div", { class: "table-wrap" },
        el("table", { class: "leases" },
          el("thead", null, el("tr", null, el("th", { scope: "col", class: "num" }, "Worker"), el("th", { scope: "col" }, "Holder"), el("th", { scope: "col" }, "State"), el("th", { scope: "col" }, "Expires"))),
          el("tbody", null, ...rows)));
    }
    const heading = el("h3", null, name, held === null ? null : el("span", { class: "h-note" }, held + " of " + fmtInt(maxWorkers) + " worker ids held"));
    return el("article", { class: "namespace", "data-namespace": name }, heading, facts, content);
  }

  function leaseRow(l, now) {
    const expires = Number(l.expires_ms);
    let when = "—";
    let title = "";
    if (l.state === "held" && Number.isFinite(expires) && expires > 0) {
      const d = new Date(expires);
      when = (expires >= now ? "in " + fmtDuration(expires - now) : fmtDuration(now - expires) + " ago") + " (" + fmtClock(d) + ")";
      title = "the leader's stamp; the leader ends a lease by its own timer, renewals move it";
    } else if (l.state === "ended") {
      const rel = Number(l.released_ms);
      when = "ended" + (l.end_reason ? " (" + l.end_reason + ")" : "") + (rel > 0 ? " " + fmtDuration(Math.max(0, now - rel)) + " ago" : "") + "; resting";
    }
    return el("tr", { "data-worker": String(l.worker_id), "data-state": String(l.state || "") },
      el("td", { class: "num" }, fmtInt(l.worker_id)),
      el("td", { class: "holder" }, String(l.holder || "")),
      el("td", null, el("span", { class: "badge badge-lease-" + (l.state === "held" ? "held" : "ended") }, String(l.state || "?"))),
      el("td", title ? { title } : null, when));
  }

  // ---- the chart ----

  function drawChart(now, charted) {
    const names = charted || (state.chartNames || []);
    state.chartNames = names;
    state.chartNow = now;
    const canvas = $("rate-chart");
    const rect = canvas.getBoundingClientRect();
    if (rect.width < 10 || rect.height < 10) {
      return;
    }
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(rect.width * dpr);
    const h = Math.round(rect.height * dpr);
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
    }
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, rect.width, rect.height);
    const css = getComputedStyle(document.documentElement);
    const color = (v) => css.getPropertyValue(v).trim() || "#888";
    const font = "12px " + (css.getPropertyValue("--font-ui").trim() || "sans-serif");

    const series = names.map((name) => {
      const hist = state.history.get(name) || [];
      const pts = [];
      for (let k = 1; k < hist.length; k++) {
        // Only points whose whole window was read: the first readings'
        // rates hang on whether a block happened to fall between them.
        if (hist[k].t < now - CHART_SPAN_MS || hist[k].t - hist[0].t < RATE_WINDOW_MS * 0.9) {
          continue;
        }
        pts.push({ t: hist[k].t, r: Math.max(0, rateAt(hist, k) || 0), gap: hist[k].t - hist[k - 1].t > CHART_GAP_MS });
      }
      return { name, pts };
    });
    let top = 0;
    for (const s of series) {
      for (const p of s.pts) {
        top = Math.max(top, p.r);
      }
    }
    const ticks = niceTicks(top);
    const ymax = ticks[ticks.length - 1];
    g.font = font;
    const labelW = Math.max(...ticks.map((t) => g.measureText(fmtCompact(t) + "/s").width));
    const left = Math.ceil(labelW) + 12;
    const right = 12;
    const topPad = 10;
    const bottom = 24;
    const pw = rect.width - left - right;
    const ph = rect.height - topPad - bottom;
    const x = (t) => left + pw * (1 - (now - t) / CHART_SPAN_MS);
    const y = (r) => topPad + ph * (1 - r / ymax);

    g.lineWidth = 1;
    g.strokeStyle = color("--grid");
    g.fillStyle = color("--muted");
    g.textBaseline = "middle";
    g.textAlign = "right";
    for (const t of ticks) {
      const yy = Math.round(y(t)) + 0.5;
      g.beginPath();
      g.moveTo(left, yy);
      g.lineTo(left + pw, yy);
      g.stroke();
      g.fillText(fmtCompact(t) + "/s", left - 6, yy);
    }
    g.textAlign = "center";
    g.textBaseline = "top";
    const perMinute = pw / 5; // pixels between minute marks; narrow screens label fewer, shorter
    for (let m = 0; m <= 5; m++) {
      const xx = Math.round(x(now - m * 60000)) + 0.5;
      if (perMinute >= 45 || m % 2 === 0) {
        const label = m === 0 ? "now" : "−" + m + (perMinute >= 60 ? " min" : "m");
        const half = g.measureText(label).width / 2;
        g.fillText(label, Math.min(Math.max(xx, left + half), left + pw - half), topPad + ph + 7);
      }
      g.beginPath();
      g.moveTo(xx, topPad + ph);
      g.lineTo(xx, topPad + ph + 4);
      g.stroke();
    }

    let drawn = 0;
    g.lineJoin = "round";
    g.lineCap = "round";
    g.lineWidth = 2;
    series.forEach((s, k) => {
      if (s.pts.length === 0) {
        return;
      }
      g.strokeStyle = color("--c" + k);
      g.beginPath();
      s.pts.forEach((p, j) => {
        if (j === 0 || p.gap) {
          g.moveTo(x(p.t), y(p.r));
        } else {
          g.lineTo(x(p.t), y(p.r));
        }
      });
      g.stroke();
      drawn++;
    });
    if (drawn === 0) {
      g.fillStyle = color("--muted");
      g.textAlign = "center";
      g.textBaseline = "middle";
      g.fillText(names.length ? "Measuring: a line starts after " + RATE_WINDOW_MS / 1000 + " s of readings." : "No sequence to draw yet.", left + pw / 2, topPad + ph / 2);
    }

    const legend = names.map((name, k) => {
      const r = currentRate(name);
      return el("li", { "data-sequence": name }, el("span", { class: "swatch c" + k, "aria-hidden": "true" }), name,
        el("span", { class: "muted" }, " " + (r === null ? "…" : fmtRate(r) + " /s")));
    });
    $("chart-legend").replaceChildren(...legend);
  }

  // niceTicks gives 0 and 4 or 5 round steps up to at least top.
  function niceTicks(top) {
    if (!(top > 0)) {
      return [0, 1, 2, 3, 4];
    }
    const raw = top / 4;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = mag;
    for (const f of [1, 2, 2.5, 5, 10]) {
      if (f * mag >= raw) {
        step = f * mag;
        break;
      }
    }
    const out = [];
    for (let v = 0; v <= top + step * 0.001 || out.length < 2; v += step) {
      out.push(v);
      if (out.length > 10) {
        break;
      }
    }
    if (out[out.length - 1] < top) {
      out.push(out[out.length - 1] + step);
    }
    return out;
  }

  // ---- the loop ----

  function schedule(ms) {
    clearTimeout(state.timer);
    state.timer = setTimeout(tick, ms);
  }

  async function tick() {
    state.timer = 0;
    if (state.busy) {
      state.again = true; // one read at a time; the next starts when this one ends
      return;
    }
    if (!state.active || state.paused) {
      return;
    }
    state.busy = true;
    const started = performance.now();
    try {
      await refresh();
    } catch (e) {
      drawBanners([{ kind: "error", id: "page", text: "The page failed to draw the answer: " + (e && e.message ? e.message : String(e)) }]);
    } finally {
      state.busy = false;
    }
    if (!state.active || state.paused) {
      return;
    }
    const wait = state.again ? 0 : Math.max(REFRESH_MS - (performance.now() - started), MIN_GAP_MS);
    state.again = false;
    schedule(wait);
  }

  function start() {
    state.active = true;
    state.paused = false;
    $("pause").hidden = false;
    $("pause").textContent = "Pause";
    schedule(0);
  }

  function stop() {
    state.active = false;
    clearTimeout(state.timer);
    state.timer = 0;
    $("pause").hidden = true;
  }

  // ---- the token ----

  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch (e) {
      return null;
    }
  }

  function storeToken(t) {
    try {
      if (t === null) {
        sessionStorage.removeItem(TOKEN_KEY);
      } else {
        sessionStorage.setItem(TOKEN_KEY, t);
      }
    } catch (e) {
      // storage refused (a private mode): the token lives in this page only
    }
  }

  function showAuth(message) {
    document.body.dataset.phase = "token";
    $("auth").hidden = false;
    const p = $("auth-error");
    p.hidden = !message;
    p.textContent = message || "";
    $("token-forget").hidden = true;
    const input = $("token-input");
    input.value = "";
    input.focus();
  }

  function useToken(t) {
    state.generation++;
    state.token = t;
    $("auth").hidden = true;
    $("auth-error").hidden = true;
    $("token-forget").hidden = t === "";
    start();
  }

  // authRefused stops reading and asks for a token again, saying why. A
  // node that refuses a request sent without a token just asks for one.
  function authRefused(err) {
    stop();
    state.generation++;
    const sent = Boolean(state.token);
    state.token = null;
    storeToken(null);
    $("dashboard").hidden = true;
    drawBanners([]);
    if (!sent) {
      showAuth("");
    } else if (err.status === 401) {
      showAuth("The token was refused (401): " + err.message);
    } else {
      showAuth("The token may not read the cluster (403): " + err.message);
    }
  }

  function init() {
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const t = $("token-input").value.trim();
      if (t === "") {
        return;
      }
      storeToken(t);
      $("token-input").value = "";
      useToken(t);
    });
    $("token-forget").addEventListener("click", () => {
      stop();
      state.generation++;
      state.token = null;
      storeToken(null);
      $("dashboard").hidden = true;
      drawBanners([]);
      showAuth("");
    });
    $("pause").addEventListener("click", () => {
      if (state.paused) {
        state.paused = false;
        $("pause").textContent = "Pause";
        schedule(0);
      } else {
        state.paused = true;
        clearTimeout(state.timer);
        $("pause").textContent = "Resume";
        setText("updated", "Paused");
      }
    });
    let resizing = 0;
    window.addEventListener("resize", () => {
      cancelAnimationFrame(resizing);
      resizing = requestAnimationFrame(() => {
        if (state.chartNow !== undefined) {
          drawChart(state.chartNow);
        }
      });
    });
    const t = storedToken();
    // Without a stored token, the first read goes without one: a node
    // without authentication answers it, one with asks for a token.
    useToken(t === null ? "" : t);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
