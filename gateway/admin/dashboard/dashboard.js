/* global document, window, fetch, Chart */
// The operators' dashboard: polls /dashboard.json of the admin listener every two seconds and
// draws it. Every value goes in with textContent, never as markup: a route or a caller's id
// is shown, never run (the page's Content-Security-Policy forbids inline code as well).
'use strict';

const REFRESH_MS = 2000;
const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'];
const STATUS_COLOURS = { '2xx': '#1a7f4b', '3xx': '#3b6fd4', '4xx': '#d69e2e', '5xx': '#c0362c' };
const ROUTE_COLOURS = ['#3b6fd4', '#1a7f4b', '#9f5bd6', '#d69e2e', '#c0362c', '#2c9aa8', '#667085'];

const byId = (id) => document.getElementById(id);

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = String(text);
  if (className !== undefined) node.className = className;
  return node;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) tr.append(cell instanceof window.Node ? cell : element('td', cell));
  return tr;
}

function fill(tableId, rows) {
  const body = byId(tableId).querySelector('tbody');
  body.replaceChildren(...rows);
}

const number = (value, digits = 0) =>
  value === null || value === undefined ? '–' : Number(value).toFixed(digits);

function bytes(value) {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let n = value;
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit += 1;
  }
  return `${n.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function mixText(mix) {
  const parts = STATUS_CLASSES.filter((c) => mix[c] > 0).map((c) => `${c} ${mix[c]}`);
  return parts.length === 0 ? '–' : parts.join(' · ');
}

function cell(text, className) {
  return element('td', text, className);
}

function stagesCell(stages) {
  const td = document.createElement('td');
  for (const stage of stages) {
    const chip = element('span', stage.name, stage.active ? 'stage' : 'stage off');
    // Struck out (class off): the gateway runs the stage, and this route's requests pass it untouched.
    chip.title = stage.active ? 'runs on this route' : 'skipped by this route';
    td.append(chip);
  }
  return td;
}

function routeRows(snapshot) {
  const rows = snapshot.routes.map((route) =>
    row([
      // The route's label (routes[].name, else the prefix), with its prefix when they differ.
      cell(route.name === route.prefix ? route.prefix : `${route.name} (${route.prefix})`),
      cell(route.upstreams.join(', ')),
      stagesCell(route.stages),
      cell(route.rateLimits.length === 0 ? '–' : route.rateLimits.join(', ')),
      cell(route.traffic.total, 'number'),
      cell(number(route.traffic.rps, 1), 'number'),
      cell(number(route.traffic.p50Ms, 1), 'number'),
      cell(number(route.traffic.p99Ms, 1), 'number'),
      cell(mixText(route.traffic.statusMix)),
    ]),
  );
  const none = snapshot.unrouted;
  if (none !== null) {
    rows.push(
      row([
        cell('(no route)'),
        cell('–'),
        cell('refused before routing'),
        cell('–'),
        cell(none.total, 'number'),
        cell(number(none.rps, 1), 'number'),
        cell(number(none.p50Ms, 1), 'number'),
        cell(number(none.p99Ms, 1), 'number'),
        cell(mixText(none.statusMix)),
      ]),
    );
  }
  return rows;
}

/** Which of the dashboard's dependencies a readiness check is about. */
function dependencyOf(name) {
  if (name === 'redis') return 'Redis';
  if (name === 'identity provider keys') return 'JWKS (identity provider)';
  if (name.startsWith('upstream ')) return 'Upstream connection';
  // An upstream's own health path (routes[].healthPath); the resource service's /healthz checks PostgreSQL.
  if (/^https?:\/\//.test(name)) return 'Upstream health';
  return 'Other';
}

/** Dependencies this gateway was started without: said, so that an empty row is not a mystery. */
const NOT_CONFIGURED = [
  ['redis', 'Redis', 'no REDIS_URL: limits, revocations and invalidations are per process'],
  ['identity provider keys', 'JWKS (identity provider)', 'no route requires authentication'],
];

function healthRows(snapshot) {
  const rows = snapshot.health.map((check) =>
    row([
      cell(dependencyOf(check.name)),
      cell(check.name),
      // A failing check the gateway serves through (readiness.ts) is degraded, not failing.
      check.ok
        ? cell('ok', 'ok')
        : check.required === true
          ? cell('failing', 'bad')
          : cell('degraded', 'warn'),
      cell(check.detail),
    ]),
  );
  for (const [name, dependency, why] of NOT_CONFIGURED) {
    if (!snapshot.health.some((check) => check.name === name))
      rows.push(row([cell(dependency), cell('–'), cell('not configured', 'muted'), cell(why)]));
  }
  return rows;
}

function limitedRows(snapshot) {
  const callers = snapshot.rateLimit.mostLimited;
  if (callers.length === 0) return [row([cell('no caller refused since start'), cell(''), cell('')])];
  return callers.map((caller) =>
    row([cell(caller.principal), cell(caller.customerId ?? '–'), cell(caller.refused, 'number')]),
  );
}

const WHAT_COUNTS = {
  principal: 'per caller',
  customer: 'per customer',
  apiKey: 'per API key',
  ip: 'per address',
};

function policyRows(snapshot) {
  if (snapshot.policies.length === 0)
    return [row([cell('no policy: nothing is limited'), cell(''), cell(''), cell(''), cell('')])];
  return snapshot.policies.map((policy) => {
    const takes = [];
    if (policy.scope === 'route') takes.push('routes naming it');
    if (policy.match?.methods) takes.push(policy.match.methods.join(' '));
    if (policy.match?.path) takes.push(`${policy.match.path} and below`);
    return row([
      cell(policy.name),
      cell(WHAT_COUNTS[policy.key] ?? policy.key),
      cell(policy.limit, 'number'),
      cell(typeof policy.window === 'number' ? `${policy.window}s` : policy.window),
      cell(takes.length === 0 ? 'every request' : takes.join(', ')),
    ]);
  });
}

function apiKeyRows(snapshot) {
  const keys = snapshot.apiKeys;
  const count = byId('api-key-count');
  if (!keys.enabled) {
    count.textContent = '';
    return [
      row([
        cell('API keys are off (auth.apiKeys.enabled: false, or no route requires auth)'),
        cell(''),
        cell(''),
        cell(''),
      ]),
    ];
  }
  if (keys.error !== undefined) {
    count.textContent = '';
    return [row([cell('the key store does not answer'), cell(''), cell(''), cell(keys.error, 'bad')])];
  }
  count.textContent = `${keys.total} minted, ${keys.revoked} revoked${keys.total > keys.keys.length ? `; the newest ${keys.keys.length}` : ''}`;
  if (keys.keys.length === 0)
    return [row([cell('no key minted (npm run -s apikey -- create)'), cell(''), cell(''), cell('')])];
  return keys.keys.map((key) =>
    row([
      cell(key.id),
      cell(key.owner),
      cell(new Date(key.createdAt).toLocaleString()),
      key.revokedAt === null
        ? cell('valid', 'ok')
        : cell(
            `revoked ${key.revokedAt === 'unknown' ? '' : new Date(key.revokedAt).toLocaleString()}`.trim(),
            'bad',
          ),
    ]),
  );
}

function showState(snapshot) {
  const state = byId('state');
  if (snapshot.draining) {
    state.textContent = 'draining';
    state.className = 'badge warn';
  } else {
    state.textContent = snapshot.ready ? (snapshot.degraded ? 'ready, degraded' : 'ready') : 'not ready';
    state.className = snapshot.ready ? (snapshot.degraded ? 'badge warn' : 'badge ok') : 'badge bad';
  }
  byId('draining').textContent = snapshot.draining ? 'yes' : 'no';
  const config = configText(snapshot.config);
  byId('config-version').textContent = config.version;
  byId('config-reload').textContent = config.reload;
  byId('updated').textContent = `updated ${new Date(snapshot.generatedAt).toLocaleTimeString()}`;
}

/**
 * The file version running (its digest) and how the last reload went (npm run -s reload, SIGHUP).
 * Under GATEWAY_WORKERS, every worker's: the one that answered this request is not the gateway.
 */
function configText(config) {
  if (config === undefined) return { version: '–', reload: '' };
  const workers = config.workers;
  if (workers === undefined) {
    const own = config.workersUnknown === undefined ? '' : ` (this worker only: ${config.workersUnknown})`;
    return { version: config.version, reload: `${lastReload(config.lastReload)}${own}` };
  }
  const versions = new Set(workers.map((w) => w.version ?? `no answer (${w.message})`));
  const version =
    versions.size === 1 && workers[0].version !== undefined
      ? `${workers[0].version} (all ${workers.length} workers)`
      : workers.map((w) => `worker ${w.worker}: ${w.version ?? 'no answer'}`).join(' · ');
  const reload = workers
    .map((w) => `worker ${w.worker}: ${w.version === undefined ? w.message : lastReload(w.lastReload)}`)
    .join(' · ');
  return { version, reload };
}

/** The result's first line (applied what, what needs a restart); a refusal's problems follow it. */
function lastReload(reload) {
  return reload === undefined
    ? 'no reload since the start'
    : `last reload at ${new Date(reload.at).toLocaleTimeString()}: ${reload.message ?? reload.outcome}`;
}

function showTiles(snapshot) {
  const everything = [
    ...snapshot.routes.map((r) => r.traffic),
    ...(snapshot.unrouted ? [snapshot.unrouted] : []),
  ];
  const rps = everything.reduce((sum, t) => sum + t.rps, 0);
  const total = everything.reduce((sum, t) => sum + t.total, 0);
  byId('total-rps').textContent = number(rps, 1);
  byId('total-requests').textContent = `${total} requests since start`;
  const { cache, rateLimit } = snapshot;
  byId('cache-ratio').textContent =
    cache.hitRatio === null ? 'no lookups' : `${(cache.hitRatio * 100).toFixed(1)} % hits`;
  byId('cache-bytes').textContent = `${bytes(cache.bytes)} in ${cache.entries} entries`;
  byId('limiter-state').textContent = `${rateLimit.backend}${rateLimit.degraded ? ', degraded' : ''}`;
  byId('limiter-state').className = rateLimit.degraded ? 'figure bad' : 'figure ok';
  byId('limiter-failures').textContent = `${rateLimit.storeFailures} store failures since start`;
  byId('window').textContent =
    snapshot.traffic.windowSeconds === null ? 'since start' : `last ${snapshot.traffic.windowSeconds} s`;
}

const common = { animation: false, responsive: true, maintainAspectRatio: false };
let charts;

function makeCharts() {
  return {
    rps: new Chart(byId('rps-chart'), {
      type: 'line',
      data: { labels: [], datasets: [] },
      options: { ...common, scales: { y: { beginAtZero: true } }, elements: { point: { radius: 0 } } },
    }),
    status: new Chart(byId('status-chart'), {
      type: 'bar',
      data: { labels: [], datasets: [] },
      options: { ...common, indexAxis: 'y', scales: { x: { stacked: true }, y: { stacked: true } } },
    }),
    cache: new Chart(byId('cache-chart'), {
      type: 'doughnut',
      data: {
        labels: ['hit', 'revalidated', 'miss'],
        datasets: [{ data: [0, 0, 0], backgroundColor: ['#1a7f4b', '#3b6fd4', '#d69e2e'] }],
      },
      options: common,
    }),
  };
}

function drawCharts(snapshot) {
  if (typeof Chart === 'undefined') return;
  charts ??= makeCharts();
  // One series per label: unnamed routes of one prefix share theirs (and their counts).
  const names = [...new Set(snapshot.routes.map((r) => r.name))];
  // The gateway's own ring (the last hour): a reloaded page draws the past at once.
  const history = snapshot.traffic.history;
  const minutes = Math.round((history.length * snapshot.traffic.historyIntervalSeconds) / 60);
  byId('history-span').textContent =
    `last ${minutes} min, a point every ${snapshot.traffic.historyIntervalSeconds} s`;
  charts.rps.data.labels = history.map((point) => new Date(point.at).toLocaleTimeString());
  charts.rps.data.datasets = names.map((name, i) => ({
    label: name,
    data: history.map((point) => point.rps[name] ?? 0),
    borderColor: ROUTE_COLOURS[i % ROUTE_COLOURS.length],
    backgroundColor: ROUTE_COLOURS[i % ROUTE_COLOURS.length],
  }));
  charts.rps.update();
  charts.status.data.labels = names;
  charts.status.data.datasets = STATUS_CLASSES.map((group) => ({
    label: group,
    data: names.map((name) => snapshot.routes.find((r) => r.name === name).traffic.statusMix[group] ?? 0),
    backgroundColor: STATUS_COLOURS[group],
  }));
  charts.status.update();
  const { hits, revalidated, misses } = snapshot.cache;
  charts.cache.data.datasets[0].data = [hits, revalidated, misses];
  charts.cache.update();
}

function render(snapshot) {
  showState(snapshot);
  showTiles(snapshot);
  fill('routes', routeRows(snapshot));
  fill('health', healthRows(snapshot));
  fill('limited', limitedRows(snapshot));
  fill('policies', policyRows(snapshot));
  fill('api-keys', apiKeyRows(snapshot));
  drawCharts(snapshot);
  document.body.dataset.rendered = snapshot.generatedAt;
}

async function refresh() {
  try {
    const response = await fetch('/dashboard.json', { cache: 'no-store' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    render(await response.json());
    byId('offline').hidden = true;
  } catch {
    byId('offline').hidden = false;
  } finally {
    window.setTimeout(refresh, REFRESH_MS);
  }
}

void refresh();
