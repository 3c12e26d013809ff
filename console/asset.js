// An asset: history chart and table over a window (zoom and pan), live values while the window
// ends now, and for actuators a command form checked against the profile, its lifecycle shown.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, LiveBadge, formatTime, formatValue, useLoad } from './ui.js';
import { Chart } from './chart.js';
import { CommandForm } from './command.js';
import { useDeviceLive } from './device.js';

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

export function AssetPage({ deviceId, name }) {
  const [device, error] = useLoad(() => api(p`/device/${deviceId}`), [deviceId]);
  const [range, setRange] = useState(() => ({ from: Date.now() - HOUR, to: Date.now(), follow: true }));
  const [history, setHistory] = useState();
  const [historyError, setHistoryError] = useState();
  const reload = () => loadHistory(deviceId, name, range.from, range.to).then(setHistory, setHistoryError);
  useEffect(() => { setHistoryError(undefined); reload(); }, [deviceId, name, range]);
  const status = useDeviceLive(deviceId, 'state', (kind, data) => {
    if (kind !== 'state' || data.asset !== name || !range.follow) return;
    setHistory((h) => (h && !h.resolution ? { ...h, items: [...h.items, { value: data.value, at: data.at }] } : h));
  }, reload);
  const asset = device?.assets.find((a) => a.name === name);
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
  const show = (from, to, follow = false) => setRange({ from, to, follow });
  const rows = history ? [...history.items].reverse().slice(0, 200) : [];
  return html`<p class="crumbs"><a href=${p`#/device/${deviceId}`}>← ${device.title || device.name}</a></p>
    <h1>${asset.title || asset.name} <span class="muted">${asset.is}</span> <${LiveBadge} status=${status} /></h1>
    <div class="toolbar" role="group" aria-label="Time window">
      ${SPANS.map(([label, ms]) => html`<button type="button" class="secondary" aria-pressed=${range.follow && span === ms} onClick=${() => show(Date.now() - ms, Date.now(), true)}>Last ${label}</button>`)}
      <button type="button" class="secondary" onClick=${() => show(range.from - span / 2, range.to - span / 2)}>◀ Earlier</button>
      <button type="button" class="secondary" onClick=${() => show(range.from + span / 2, Math.min(Date.now(), range.to + span / 2))}>Later ▶</button>
      <button type="button" class="secondary" onClick=${() => show(range.from - span / 2, Math.min(Date.now(), range.to + span / 2))}>Zoom out</button>
    </div>
    <p class="muted" data-testid="window">${formatTime(range.from)} – ${formatTime(range.to)} · ${history?.resolution ? `${history.resolution} aggregates` : 'raw points'}</p>
    <${ErrorBox} error=${historyError} />
    ${series && series.x.length > 0 ? html`<${Chart} series=${series} label=${`History of ${name}`} onZoom=${(from, to) => show(from, to)} />` : ''}
    ${asset.is === 'actuator' ? html`<${CommandForm} deviceId=${deviceId} asset=${asset} />` : ''}
    <section aria-labelledby="history"><h2 id="history">History</h2>
      <div class="table-wrap"><table data-testid="history">
        <thead><tr><th scope="col">Time</th>${history?.resolution ? html`<th scope="col">Count</th><th scope="col">Min</th><th scope="col">Avg</th><th scope="col">Max</th>` : html`<th scope="col">Value</th>`}</tr></thead>
        <tbody>${rows.map((r) => html`<tr><td>${formatTime(Date.parse(r.at))}</td>${history.resolution
          ? html`<td>${r.count}</td><td>${formatValue(r.min ?? undefined)}</td><td>${formatValue(r.avg ?? undefined)}</td><td>${formatValue(r.max ?? undefined)}</td>`
          : html`<td>${formatValue(r.value)}</td>`}</tr>`)}</tbody>
      </table></div>
      ${history && rows.length === 0 ? html`<p>No value in this window.</p>` : ''}
    </section>`;
}
