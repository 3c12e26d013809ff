// An asset: history chart and table over a window (zoom and pan), live values while the window
// ends now, and for actuators a command form checked against the profile, its lifecycle shown.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, LiveBadge, formatTime, formatValue, useLoad } from './ui.js';
import { Chart } from './chart.js';
import { CommandForm } from './command.js';
import { useDeviceLive } from './device.js';
import { canEdit, useRole } from './members.js';
import { DownloadButtons } from './download.js';

const HOUR = 3_600_000;
const SPANS = [['1 h', HOUR], ['24 h', 24 * HOUR], ['7 d', 7 * 24 * HOUR], ['30 d', 30 * 24 * HOUR]];

/** Raw points up to 6 hours; then hourly, then daily buckets (the API's rollups). */
export function resolutionFor(spanMs) {
  if (spanMs <= 6 * HOUR) return undefined;
  if (spanMs <= 14 * 24 * HOUR) return 'hour';
  return 'day';
}

async function loadHistory(deviceId, name, from, to) {
  const resolution = resolutionFor(to - from);
  const query = `from=${from}&to=${to}` + (resolution ? `&resolution=${resolution}` : '&order=asc&limit=1000');
  const page = await api(p`/device/${deviceId}/asset/${name}/states` + `?${query}`);
  return { resolution, items: page.items };
}

/** A window in whole epoch milliseconds (the API refuses fractions); `follow`: it ends now and grows live. */
export function windowOf(from, to, follow = false) {
  return { from: Math.round(from), to: Math.round(to), follow };
}

/** What a history belongs to: the asset and the window it was loaded for. */
const keyOf = (deviceId, name, range) => `${deviceId}\n${name}\n${range.from}\n${range.to}`;

/** A live value appended to raw points, in time order; none to aggregates or a window in the past. */
function appendLive(history, data) {
  if (!history || history.resolution) return history;
  const at = Date.parse(data.at);
  const items = [...history.items, { value: data.value, at: data.at }];
  if (items.length > 1 && at < Date.parse(items[items.length - 2].at)) items.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  return { ...history, items };
}

/**
 * The history of one asset over `range`, and live values while the window follows now. A history
 * is shown only under the window it was loaded for: a load still running, or failed, shows none.
 */
function useHistory(deviceId, name, range) {
  const key = keyOf(deviceId, name, range);
  const [history, setHistory] = useState();
  const [historyError, setHistoryError] = useState();
  const current = useRef(key);
  current.current = key;
  const reload = () => {
    const wanted = key;
    setHistoryError(undefined);
    loadHistory(deviceId, name, range.from, range.to).then(
      (loaded) => { if (current.current === wanted) setHistory({ ...loaded, key: wanted }); },
      (error) => { if (current.current === wanted) { setHistory(undefined); setHistoryError(error); } },
    );
  };
  useEffect(reload, [key]);
  const status = useDeviceLive(deviceId, 'state', (kind, data) => {
    // Bound to this render's asset and window: a window in the past gets no live values.
    if (kind !== 'state' || data.asset !== name || !range.follow || Date.parse(data.at) < range.from) return;
    setHistory((h) => (h?.key === key ? appendLive(h, data) : h));
  }, reload);
  return { history: history?.key === key ? history : undefined, historyError, status };
}

export function AssetPage({ deviceId, name }) {
  const [device, error] = useLoad(() => api(p`/device/${deviceId}`), [deviceId]);
  const [range, setRange] = useState(() => windowOf(Date.now() - HOUR, Date.now(), true));
  const { history, historyError, status } = useHistory(deviceId, name, range);
  const asset = device?.assets.find((a) => a.name === name);
  const role = useRole(device?.groundId);
  const numeric = asset && ['number', 'integer'].includes(asset.profile?.type);
  const series = useMemo(() => {
    if (!history || !numeric) return undefined;
    if (!history.resolution) {
      const points = history.items.filter((s) => typeof s.value === 'number');
      return { x: points.map((s) => Date.parse(s.at) / 1000), lines: [{ label: name, values: points.map((s) => s.value) }] };
    }
    const rows = history.items;
    return { x: rows.map((r) => Date.parse(r.at) / 1000), lines: [{ label: 'avg', values: rows.map((r) => r.avg) }, { label: 'min', values: rows.map((r) => r.min) }, { label: 'max', values: rows.map((r) => r.max) }] };
  }, [history, numeric]);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!device) return html`<p>Loading…</p>`;
  if (!asset) return html`<p class="error" role="alert">No asset “${name}” on this device.</p>`;
  const span = range.to - range.from;
  const show = (from, to, follow = false) => setRange(windowOf(from, to, follow));
  // Panning or zooming out to now follows now again.
  const showUpToNow = (from, to) => { const now = Date.now(); show(from, Math.min(now, to), to >= now); };
  const rows = history ? [...history.items].reverse().slice(0, 200) : [];
  const resolution = resolutionFor(span);
  // A window that follows now moves with the live values appended after it was chosen.
  const last = series?.x.length ? series.x[series.x.length - 1] * 1000 : -Infinity;
  const end = range.follow ? Math.max(range.to, last) : range.to;
  const drawn = { from: end - span, to: end };
  return html`<p class="crumbs"><a href=${p`#/device/${deviceId}`}>← ${device.title || device.name}</a></p>
    <h1>${asset.title || asset.name} <span class="muted">${asset.is}</span> <${LiveBadge} status=${status} /></h1>
    <div class="toolbar" role="group" aria-label="Time window">
      ${SPANS.map(([label, ms]) => html`<button type="button" class="secondary" aria-pressed=${range.follow && span === ms} onClick=${() => show(Date.now() - ms, Date.now(), true)}>Last ${label}</button>`)}
      <button type="button" class="secondary" onClick=${() => show(range.from - span / 2, range.to - span / 2)}>◀ Earlier</button>
      <button type="button" class="secondary" onClick=${() => showUpToNow(range.from + span / 2, range.to + span / 2)}>Later ▶</button>
      <button type="button" class="secondary" onClick=${() => showUpToNow(range.from - span / 2, range.to + span / 2)}>Zoom out</button>
    </div>
    <p class="muted" data-testid="window" data-from=${range.from} data-to=${range.to}>${formatTime(range.from)} – ${formatTime(range.to)} · ${resolution ? `${resolution} aggregates` : 'raw points'}${range.follow ? ' · live' : ''}</p>
    <${ErrorBox} error=${historyError} />
    ${!history && !historyError ? html`<p class="muted" role="status">Loading this window…</p>` : ''}
    ${series && series.x.length > 0 ? html`<${Chart} series=${series} window=${drawn} label=${`History of ${asset.title || name}, ${formatTime(drawn.from)} to ${formatTime(drawn.to)}`} onZoom=${(from, to) => show(from, to)} />` : ''}
    ${asset.is === 'actuator' && canEdit(role) ? html`<${CommandForm} deviceId=${deviceId} asset=${asset} />` : ''}
    <section aria-labelledby="history"><h2 id="history">History</h2>
      <${DownloadButtons} path=${p`/device/${deviceId}/asset/${name}/states`} query=${`from=${Math.floor(range.from)}&to=${Math.ceil(range.to)}`} label="Download the states of this window" groundId=${device.groundId} />
      <div class="table-wrap"><table data-testid="history">
        <thead><tr><th scope="col">Time</th>${resolution ? html`<th scope="col">Count</th><th scope="col">Min</th><th scope="col">Avg</th><th scope="col">Max</th>` : html`<th scope="col">Value</th>`}</tr></thead>
        <tbody>${rows.map((r) => html`<tr><td>${formatTime(Date.parse(r.at))}</td>${history.resolution
          ? html`<td>${r.count}</td><td>${formatValue(r.min ?? undefined)}</td><td>${formatValue(r.avg ?? undefined)}</td><td>${formatValue(r.max ?? undefined)}</td>`
          : html`<td>${formatValue(r.value)}</td>`}</tr>`)}</tbody>
      </table></div>
      ${history && rows.length === 0 ? html`<p>No value in this window.</p>` : ''}
    </section>`;
}
