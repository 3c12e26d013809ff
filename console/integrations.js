// A ground's integrations (docs/integrations.md): each with how its deliveries go — status,
// delivered, pending, failed attempts, dropped, last success and last error, refreshed every few
// seconds — and its actions (a test event, a new secret, disable or enable, delete); and the form
// that creates one (its signing secret shown once).
import { useEffect, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, ShownOnce, ago, useLoad, useNow } from './ui.js';
import { canEdit, useRole } from './members.js';

const EVENTS = ['state', 'rejection', 'command', 'alarm'];
const REFRESH_MS = 5000;

/** Every integration of the ground with its figures (the list holds settings; GET /integrations/{id} the figures). */
async function loadViews(groundId) {
  const views = [];
  let cursor;
  do {
    const page = await api(p`/ground/${groundId}/integrations` + `?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    views.push(...await Promise.all(page.items.map((i) => api(p`/integrations/${i.id}`))));
    cursor = page.next;
  } while (cursor);
  return views;
}

export function IntegrationsPage({ groundId }) {
  const [tick, setTick] = useState(0);
  const [views, error] = useLoad(() => loadViews(groundId), [groundId, tick]);
  const [shown, setShown] = useState();
  const now = useNow();
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), REFRESH_MS);
    return () => clearInterval(timer);
  }, [groundId]);
  const reload = () => setTick((t) => t + 1);
  const editor = canEdit(useRole(groundId));
  return html`<p class="crumbs"><a href=${p`#/ground/${groundId}`}>Devices</a></p>
    <h1>Integrations</h1>
    <p class="hint">Each integration receives the ground's events as signed webhooks (Standard Webhooks), batched, retried and in order per device.</p>
    <${ErrorBox} error=${error} />
    ${shown ? html`<${ShownOnce} label=${shown.label} token=${shown.secret} />` : ''}
    ${views && views.length === 0 ? html`<p>No integration yet.</p>` : ''}
    ${views?.length ? html`<div class="table-wrap"><table data-testid="integrations">
      <caption class="sr-only">Integrations of this ground and how their deliveries go</caption>
      <thead><tr><th scope="col">Integration</th><th scope="col">Status</th><th scope="col">Delivered</th><th scope="col">Pending</th>
        <th scope="col">Failed attempts</th><th scope="col">Dropped</th><th scope="col">Last success</th><th scope="col">Last error</th><th scope="col">Actions</th></tr></thead>
      <tbody>${views.map((v) => html`<${IntegrationRow} key=${v.id} view=${v} now=${now} editor=${editor} onChanged=${reload} onSecret=${setShown} />`)}</tbody>
    </table></div>` : ''}
    ${editor ? html`<${CreateIntegration} groundId=${groundId} onCreated=${(created) => { setShown({ label: `Signing secret of ${created.name}`, secret: created.secret }); reload(); }} />` : ''}`;
}

function statusText(view) {
  if (view.status === 'disabled') return `disabled (${view.disabledReason === 'gone' ? 'the receiver answered 410 Gone' : view.disabledReason ?? 'manual'})`;
  return view.status;
}

function IntegrationRow({ view, now, editor, onChanged, onSecret }) {
  const [error, setError] = useState();
  const [result, setResult] = useState();
  const [busy, setBusy] = useState(false);
  const act = async (action) => {
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      await action();
      onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const test = () => act(async () => {
    const answer = await api(p`/integrations/${view.id}/test`, { method: 'POST' });
    setResult(answer.outcome === 'delivered'
      ? `Test delivered (HTTP ${answer.status}).`
      : `Test not delivered: ${answer.status !== undefined ? `HTTP ${answer.status}` : answer.error}${answer.body ? ` — ${answer.body.slice(0, 200)}` : ''}`);
  });
  const rotate = () => act(async () => {
    const rotated = await api(p`/integrations/${view.id}/rotate-secret`, { method: 'POST' });
    onSecret({ label: `New signing secret of ${rotated.name} (the previous one still signs for 24 h)`, secret: rotated.secret });
  });
  const toggle = () => act(() => api(p`/integrations/${view.id}`, { method: 'PATCH', body: { status: view.status === 'disabled' ? 'active' : 'disabled' } }));
  const remove = () => {
    if (!confirm(`Delete the integration ${view.name}? Nothing more is sent to it.`)) return;
    act(() => api(p`/integrations/${view.id}`, { method: 'DELETE' }));
  };
  const pending = view.pending.events === 0 ? '0' : `${view.pending.events}${view.pending.oldestAgeMs !== undefined ? `, oldest ${ago(now - view.pending.oldestAgeMs, now)}` : ''}`;
  return html`<tr data-integration=${view.id}>
    <th scope="row">${view.name}<div class="muted"><code>${view.url}</code></div><div class="muted">${view.events.join(', ')}${view.devices ? ` · ${view.devices.length} devices` : ''}${view.assets ? ` · assets ${view.assets.join(', ')}` : ''}</div></th>
    <td class=${`status ${view.status}`} data-testid="status">${statusText(view)}</td>
    <td class="value" data-testid="delivered">${view.delivered}</td>
    <td data-testid="pending">${pending}</td>
    <td data-testid="failed">${view.failedAttempts}</td>
    <td data-testid="dropped">${view.dropped}</td>
    <td>${view.lastSuccessAt === undefined ? 'never' : ago(view.lastSuccessAt, now)}</td>
    <td data-testid="last-error">${view.lastError ? html`${view.lastError.status !== undefined ? `HTTP ${view.lastError.status}: ` : ''}${view.lastError.message} <span class="muted">${ago(view.lastError.at, now)}</span>` : '—'}</td>
    <td>${editor ? html`<div class="row">
      <button type="button" class="secondary" disabled=${busy} onClick=${test}>Send a test</button>
      <button type="button" class="secondary" disabled=${busy} onClick=${rotate}>New secret</button>
      <button type="button" class="secondary" disabled=${busy} onClick=${toggle}>${view.status === 'disabled' ? 'Enable' : 'Disable'}</button>
      <button type="button" class="danger" disabled=${busy} onClick=${remove}>Delete</button>
    </div>` : ''}
    ${result ? html`<p role="status" data-testid="test-result">${result}</p>` : ''}
    <${ErrorBox} error=${error} /></td>
  </tr>`;
}

/** "a, b ,c" → ['a','b','c']; empty → undefined (every device or asset). */
function list(text) {
  const items = String(text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return items.length === 0 ? undefined : items;
}

/** "Name: value" lines → {Name: value}; a line without a colon is sent as is, for the API to refuse by name. */
function headers(text) {
  const out = {};
  for (const line of String(text ?? '').split('\n').map((l) => l.trim()).filter(Boolean)) {
    const colon = line.indexOf(':');
    if (colon < 0) out[line] = '';
    else out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return out;
}

function CreateIntegration({ groundId, onCreated }) {
  const [error, setError] = useState();
  const submit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    setError(undefined);
    try {
      const body = { name: form.get('name'), kind: 'webhook', url: form.get('url'), events: EVENTS.filter((e) => form.get(`event-${e}`) !== null) };
      const devices = list(form.get('devices'));
      const assets = list(form.get('assets'));
      const extra = headers(form.get('headers'));
      if (devices) body.devices = devices;
      if (assets) body.assets = assets;
      if (Object.keys(extra).length > 0) body.headers = extra;
      const created = await api(p`/ground/${groundId}/integrations`, { method: 'POST', body });
      event.target.reset();
      onCreated(created);
    } catch (e) {
      setError(e);
    }
  };
  return html`<section aria-labelledby="create-integration"><h2 id="create-integration">Create a webhook integration</h2>
    <form onSubmit=${submit} class="stack">
      <label>Name <input name="name" required autocomplete="off" /></label>
      <label>URL <input name="url" type="url" required autocomplete="off" placeholder="https://…" /></label>
      <fieldset><legend>Events</legend>
        ${EVENTS.map((e) => html`<label class="inline"><input type="checkbox" name=${`event-${e}`} checked=${e === 'state'} /> ${e}</label>`)}
      </fieldset>
      <label>Devices <span class="hint">device ids, comma-separated; empty: every device of the ground</span><input name="devices" autocomplete="off" /></label>
      <label>Assets <span class="hint">asset names, comma-separated; empty: every asset</span><input name="assets" autocomplete="off" /></label>
      <label>Extra headers <span class="hint">one <code>Name: value</code> per line (an API key of the receiver)</span><textarea name="headers" rows="2"></textarea></label>
      <button type="submit">Create integration</button>
    </form>
    <${ErrorBox} error=${error} />
  </section>`;
}
