// A partner's device types (spec §2.7, §9): the draft — title, description, assets, payload format
// and conversion script — saved with PUT, which replaces the whole draft, so the form sends every
// field of it, those it shows unchanged included; publishing the draft as the next immutable
// version is an action of its own.
import { useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, formatTime, useLoad } from './ui.js';

const FORMATS = ['json', 'cbor', 'binary', 'cayenne'];
const EXAMPLE_ASSETS = [{ name: 'temperature', is: 'sensor', profile: { type: 'number' } }];

function invalid(field, message) {
  return Object.assign(new Error(`${field}: ${message}`), { code: 'VALIDATION_FAILED' });
}

/** JSON text of a textarea; `empty` when it holds nothing but blanks. */
function parseJson(text, field, empty) {
  if (text.trim() === '') return empty;
  try { return JSON.parse(text); } catch { throw invalid(field, 'not JSON'); }
}

/** The draft the form describes: every field PUT replaces, so nothing of the draft is dropped. */
export function draftFrom(form) {
  const draft = { assets: parseJson(form.get('assets') ?? '', 'body.assets', []) };
  for (const key of ['title', 'description']) if (form.get(key)) draft[key] = form.get(key);
  const format = form.get('format');
  if (format) {
    const conversion = parseJson(form.get('conversion') ?? '', 'body.payload.conversion', undefined);
    draft.payload = conversion === undefined ? { format } : { format, conversion };
  }
  return draft;
}

const pretty = (value) => (value === undefined ? '' : JSON.stringify(value, null, 2));

function DraftForm({ selected, onSave }) {
  const draft = selected?.draft;
  const [format, setFormat] = useState(draft?.payload?.format ?? '');
  return html`<form onSubmit=${onSave} class="stack" key=${selected?.name ?? 'new'}>
    ${selected ? html`<input type="hidden" name="name" value=${selected.name} />` : html`<label>Name <input name="name" required autocomplete="off" /></label>`}
    <label>Title <input name="title" autocomplete="off" defaultValue=${draft?.title ?? ''} /></label>
    <label>Description <input name="description" autocomplete="off" defaultValue=${draft?.description ?? ''} /></label>
    <label>Assets (JSON) <textarea name="assets" rows="6" spellcheck=${false}>${pretty(draft?.assets ?? EXAMPLE_ASSETS)}</textarea></label>
    <label>Payload format <select name="format" value=${format} onChange=${(e) => setFormat(e.target.value)}>
      <option value="">none (devices send JSON states)</option>
      ${FORMATS.map((f) => html`<option value=${f}>${f}</option>`)}</select></label>
    <label>Conversion script (JSON${format === 'binary' ? ', required for binary' : ', binary only'})
      <textarea name="conversion" rows="6" spellcheck=${false}>${pretty(draft?.payload?.conversion)}</textarea></label>
    <button type="submit">${selected ? 'Save the draft' : 'Create the device type'}</button>
  </form>`;
}

export function DeviceTypesPage({ me, name }) {
  const [types, error, reload] = useLoad(() => api(p`/partner/${me.id}/device-types`), [me.id]);
  const [formError, setFormError] = useState();
  const [notice, setNotice] = useState();
  const selected = types?.find((t) => t.name === name);
  const attempt = (fn) => async (event) => {
    event?.preventDefault();
    setFormError(undefined);
    setNotice(undefined);
    try { await fn(event); reload(); } catch (e) { setFormError(e); }
  };
  const save = attempt(async (event) => {
    const form = new FormData(event.target);
    const typeName = form.get('name');
    await api(p`/partner/${me.id}/device-types/${typeName}`, { method: 'PUT', body: draftFrom(form) });
    setNotice(`Draft of ${typeName} saved; nothing published.`);
    if (!selected) location.hash = p`#/device-types/${typeName}`;
  });
  const publish = attempt(async () => {
    const version = await api(p`/partner/${me.id}/device-types/${selected.name}/versions`, { method: 'POST' });
    setNotice(`Published ${version.ref ?? `version ${version.version}`}.`);
  });
  return html`<h1>Device types</h1><${ErrorBox} error=${error} />
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">Reference</th><th scope="col">Latest</th><th scope="col">Versions</th></tr></thead>
      <tbody>${types?.map((t) => html`<tr><th scope="row"><a href=${p`#/device-types/${t.name}`} aria-current=${t.name === name ? 'page' : undefined}>${t.name}</a></th><td><code>${t.ref}</code></td>
        <td>${t.latest ?? 'draft only'}</td><td>${t.versions.length}</td></tr>`)}</tbody>
    </table></div>
    ${selected ? html`<section aria-labelledby="versions"><h2 id="versions">Versions of ${selected.name}</h2>
      ${selected.versions.length ? html`<ul class="list" data-testid="versions">${selected.versions.map((v) => html`<li><code>${v.ref}</code> <span class="muted">published ${formatTime(v.publishedAt)}</span></li>`)}</ul>` : html`<p>Nothing published yet.</p>`}
      <p class="hint">Publishing freezes the draft below, as saved, into version ${selected.versions.length + 1}; published versions never change.</p>
      <button type="button" onClick=${publish}>Publish a version</button></section>` : ''}
    <section aria-labelledby="draft"><h2 id="draft">${selected ? `The draft of ${selected.name}` : 'Create a device type'}</h2>
      ${selected ? html`<p><a href="#/device-types">Create another device type</a></p>` : ''}
      ${types ? html`<${DraftForm} key=${selected?.name ?? 'new'} selected=${selected} onSave=${save} />` : ''}
      <${ErrorBox} error=${formError} />
      ${notice ? html`<p role="status">${notice}</p>` : ''}
    </section>`;
}
