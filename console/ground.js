// Grounds → devices, each with its latest values and last-seen time, kept live by the ground's
// stream; and the form that creates a device with its assets (its token shown once).
import { useEffect, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { follow } from './live.js';
import { html, ErrorBox, LiveBadge, ShownOnce, ago, formatValue, newerStates, useLoad, useNow } from './ui.js';
import { useActiveAlarms } from './alarms.js';
import { canEdit, useRole } from './members.js';
import { DownloadButtons } from './download.js';

export function GroundsPage() {
  const [grounds, error] = useLoad(() => api('/grounds'), []);
  return html`<h1>Grounds</h1>
    <${ErrorBox} error=${error} />
    ${grounds && grounds.items.length === 0 ? html`<p>You are a member of no ground yet: <code>fleetstream admin create-ground</code> makes one.</p>` : ''}
    <ul class="cards">${grounds?.items.map((g) => html`<li><a href=${p`#/ground/${g.id}`}>${g.name}</a></li>`)}</ul>`;
}

/** Latest values by device id: {assetName: {value, at}}, and last seen (epoch ms). */
async function loadLatest(devices) {
  const entries = await Promise.all(devices.map(async (d) => {
    const state = await api(p`/device/${d.id}/state`).catch(() => ({}));
    const seen = Math.max(-Infinity, ...Object.values(state).map((s) => Date.parse(s.at)));
    return [d.id, { state, seen: Number.isFinite(seen) ? seen : undefined }];
  }));
  return Object.fromEntries(entries);
}

/** The latest values read (loadLatest), with what live events brought meanwhile kept where it is newer (newerStates). */
function withLive(loaded, live) {
  const merged = { ...loaded };
  for (const [deviceId, entry] of Object.entries(live)) {
    const read = loaded[deviceId];
    merged[deviceId] = read === undefined ? entry : { state: newerStates(read.state, entry.state), seen: Math.max(read.seen ?? -Infinity, entry.seen ?? -Infinity) };
  }
  return merged;
}

export function GroundPage({ groundId }) {
  const [page, error, reload] = useLoad(() => api(p`/ground/${groundId}/devices?limit=200`), [groundId]);
  const [latest, setLatest] = useState({});
  const [status, setStatus] = useState('connecting');
  const now = useNow();
  const active = useActiveAlarms(groundId);
  const role = useRole(groundId);
  const alarmsOf = (deviceId) => (active ?? []).filter((a) => a.deviceId === deviceId).length;
  useEffect(() => { if (page) loadLatest(page.items).then((loaded) => setLatest((live) => withLive(loaded, live))); }, [page]);
  useEffect(() => {
    const abort = new AbortController();
    follow(p`/ground/${groundId}/live` + '?kinds=state', {
      signal: abort.signal,
      onStatus: setStatus,
      onReset: reload,
      onEvent: (kind, data) => {
        if (kind !== 'state') return;
        setLatest((all) => {
          const entry = all[data.deviceId] ?? { state: {} };
          return { ...all, [data.deviceId]: { state: { ...entry.state, [data.asset]: { value: data.value, at: data.at } }, seen: data.receivedAt } };
        });
      },
    });
    return () => abort.abort();
  }, [groundId]);
  return html`<h1>Devices <${LiveBadge} status=${status} /></h1>
    <p class="crumbs"><a href=${p`#/ground/${groundId}/alarms`} data-testid="alarms-link">Alarms${active?.length ? ` (${active.length} active)` : ''}</a> · <a href=${p`#/ground/${groundId}/rules`}>Rules</a> · <a href=${p`#/ground/${groundId}/integrations`}>Integrations</a> · <a href=${p`#/ground/${groundId}/members`} data-testid="members-link">Members</a></p>
    <${ErrorBox} error=${error} />
    <div class="table-wrap"><table>
      <caption class="sr-only">Devices of this ground with their latest values</caption>
      <thead><tr><th scope="col">Device</th><th scope="col">Latest values</th><th scope="col">Last seen</th></tr></thead>
      <tbody>${page?.items.map((d) => html`<tr data-device=${d.id}>
        <th scope="row"><a href=${p`#/device/${d.id}`}>${d.title || d.name}</a>${alarmsOf(d.id) > 0 ? html` <span class="badge alarm" data-testid="alarm-badge">${alarmsOf(d.id)} alarm${alarmsOf(d.id) > 1 ? 's' : ''}</span>` : ''}</th>
        <td>${Object.entries(latest[d.id]?.state ?? {}).map(([name, s]) => html`<span class="chip"><span class="k">${name}</span> <span class="v">${formatValue(s.value)}</span></span>`)}</td>
        <td>${ago(latest[d.id]?.seen, now)}</td>
      </tr>`)}</tbody>
    </table></div>
    ${page?.items.length === 0 ? html`<p>No device yet.</p>` : ''}
    ${page?.items.length > 0 ? html`<section aria-labelledby="export"><h2 id="export">Export</h2>
      <p class="muted">Every state of this ground's devices (up to 500 devices), as a file.</p>
      <${DownloadButtons} path=${p`/ground/${groundId}/export`} label="Download the ground's states" groundId=${groundId} />
    </section>` : ''}
    ${canEdit(role) ? html`<${CreateDevice} groundId=${groundId} onCreated=${reload} />` : ''}`;
}

const KINDS = ['sensor', 'actuator', 'virtual'];
const TYPES = ['number', 'integer', 'boolean', 'string', 'object'];

function CreateDevice({ groundId, onCreated }) {
  const [assets, setAssets] = useState([{ name: '', is: 'sensor', type: 'number' }]);
  const [error, setError] = useState();
  const [created, setCreated] = useState();
  const set = (i, key, value) => setAssets(assets.map((a, j) => (j === i ? { ...a, [key]: value } : a)));
  const submit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    setError(undefined);
    try {
      const body = {
        name: form.get('name'),
        ...(form.get('title') ? { title: form.get('title') } : {}),
        assets: assets.filter((a) => a.name !== '').map((a) => ({ name: a.name, is: a.is, profile: { type: a.type } })),
      };
      const device = await api(p`/ground/${groundId}/devices`, { method: 'POST', body });
      setCreated(device);
      event.target.reset();
      setAssets([{ name: '', is: 'sensor', type: 'number' }]);
      onCreated();
    } catch (e) {
      setError(e);
    }
  };
  return html`<section aria-labelledby="create-device"><h2 id="create-device">Create a device</h2>
    <form onSubmit=${submit} class="stack">
      <label>Name <input name="name" required autocomplete="off" /></label>
      <label>Title <input name="title" autocomplete="off" /></label>
      <fieldset><legend>Assets</legend>
        ${assets.map((a, i) => html`<div class="row">
          <label>Asset name <input value=${a.name} onInput=${(e) => set(i, 'name', e.target.value)} /></label>
          <label>Kind <select value=${a.is} onChange=${(e) => set(i, 'is', e.target.value)}>${KINDS.map((k) => html`<option>${k}</option>`)}</select></label>
          <label>Type <select value=${a.type} onChange=${(e) => set(i, 'type', e.target.value)}>${TYPES.map((k) => html`<option>${k}</option>`)}</select></label>
        </div>`)}
        <button type="button" class="secondary" onClick=${() => setAssets([...assets, { name: '', is: 'sensor', type: 'number' }])}>Add an asset</button>
      </fieldset>
      <button type="submit">Create device</button>
    </form>
    <${ErrorBox} error=${error} />
    ${created ? html`<p>Created <a href=${p`#/device/${created.id}`}>${created.name}</a> (id <code>${created.id}</code>).</p><${ShownOnce} label="Device token" token=${created.token} />` : ''}
  </section>`;
}
