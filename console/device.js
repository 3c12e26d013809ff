// One device: its assets with latest values (live), last seen, its rejections and recent commands.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { follow } from './live.js';
import { html, ErrorBox, LiveBadge, ago, formatTime, formatValue, newerStates, useLoad, useNow } from './ui.js';

/**
 * Follows a device's stream; returns the live status. Each event goes to the LATEST render's
 * `onEvent` (and a reset to its `onReset`): a handler reads the page's current asset and window,
 * never those of the render that opened the stream.
 */
export function useDeviceLive(deviceId, kinds, onEvent, onReset) {
  const [status, setStatus] = useState('connecting');
  const handlers = useRef();
  handlers.current = { onEvent, onReset };
  useEffect(() => {
    const abort = new AbortController();
    follow(p`/device/${deviceId}/live` + `?kinds=${kinds}`, {
      signal: abort.signal,
      onStatus: setStatus,
      onEvent: (kind, data) => handlers.current.onEvent(kind, data),
      onReset: () => handlers.current.onReset?.(),
    });
    return () => abort.abort();
  }, [deviceId, kinds]);
  return status;
}

export function DevicePage({ deviceId }) {
  const [device, error] = useLoad(() => api(p`/device/${deviceId}`), [deviceId]);
  const [state, setState] = useState({});
  const [seen, setSeen] = useState();
  const [rejections, setRejections] = useState([]);
  const [commands, setCommands] = useState([]);
  const now = useNow();
  const loadAll = () => {
    api(p`/device/${deviceId}/state`).then((s) => {
      setState((live) => newerStates(s, live));
      const latest = Math.max(-Infinity, ...Object.values(s).map((v) => Date.parse(v.at)));
      if (Number.isFinite(latest)) setSeen((old) => Math.max(old ?? -Infinity, latest));
    }, () => {});
    api(p`/device/${deviceId}/rejections?limit=20`).then((r) => setRejections(r.items), () => {});
    api(p`/device/${deviceId}/commands?limit=10`).then((r) => setCommands(r.items), () => {});
  };
  useEffect(loadAll, [deviceId]);
  const status = useDeviceLive(deviceId, 'state,rejection,command', (kind, data) => {
    if (kind === 'state') {
      setState((s) => ({ ...s, [data.asset]: { value: data.value, at: data.at } }));
      setSeen(data.receivedAt);
    } else if (kind === 'rejection') {
      setRejections((r) => [{ at: new Date(data.rejectedAt).toISOString(), code: data.code, reason: data.reason, asset: data.asset, uplinkId: data.uplinkId }, ...r].slice(0, 20));
    } else if (kind === 'command') {
      setCommands((list) => {
        const known = list.some((c) => c.id === data.commandId);
        if (!known) { loadAll(); return list; }
        return list.map((c) => (c.id === data.commandId ? { ...c, status: data.status, attempts: data.attempts, code: data.code, reason: data.reason } : c));
      });
    }
  }, loadAll);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!device) return html`<p>Loading…</p>`;
  return html`<p class="crumbs"><a href=${p`#/ground/${device.groundId}`}>← Devices of the ground</a></p>
    <h1>${device.title || device.name} <${LiveBadge} status=${status} /></h1>
    <p>Last seen <strong data-testid="last-seen">${ago(seen, now)}</strong> · id <code>${device.id}</code></p>
    <div class="table-wrap"><table>
      <caption class="sr-only">Assets and their latest values</caption>
      <thead><tr><th scope="col">Asset</th><th scope="col">Kind</th><th scope="col">Value</th><th scope="col">Measured</th></tr></thead>
      <tbody>${device.assets.map((a) => html`<tr>
        <th scope="row"><a href=${p`#/device/${device.id}/asset/${a.name}`}>${a.title || a.name}</a></th>
        <td>${a.is}</td>
        <td class="value" data-asset=${a.name}>${formatValue(state[a.name]?.value)}</td>
        <td>${state[a.name] ? formatTime(Date.parse(state[a.name].at)) : '—'}</td>
      </tr>`)}</tbody>
    </table></div>
    <section aria-labelledby="rejections"><h2 id="rejections">Rejections</h2>
      ${rejections.length === 0 ? html`<p>None recently.</p>` : html`<ul class="list">${rejections.map((r) => html`<li>
        <strong>${r.code}</strong> ${r.asset ? html`<span class="chip">${r.asset}</span>` : ''} ${r.reason} <span class="muted">${formatTime(Date.parse(r.at))}</span></li>`)}</ul>`}
    </section>
    <section aria-labelledby="commands"><h2 id="commands">Recent commands</h2>
      ${commands.length === 0 ? html`<p>None.</p>` : html`<ul class="list">${commands.map((c) => html`<li>
        <span class="chip">${c.asset ?? 'device'}</span> ${formatValue(c.value)} → <strong class=${`status ${c.status}`}>${c.status}</strong>
        ${c.code ? html` <span class="muted">${c.code}: ${c.reason}</span>` : ''} <span class="muted">${formatTime(c.updatedAt)}</span></li>`)}</ul>`}
    </section>`;
}
