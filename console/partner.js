// A partner's pages: activations (spec §4.5 create; list with filters, look up by hardware id,
// change, delete) and the networks table (spec §2.8); device types are in deviceTypes.js.
import { useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, useLoad } from './ui.js';

const networksOnce = () => api('/networks');

export function NetworksPage() {
  const [networks, error] = useLoad(networksOnce, []);
  return html`<h1>Networks</h1><${ErrorBox} error=${error} />
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Id</th><th scope="col">Alias</th><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">Required keys</th><th scope="col">Downlink</th></tr></thead>
      <tbody>${networks?.map((n) => html`<tr><th scope="row"><code>${n.id}</code></th><td>${n.alias}</td><td>${n.kind}</td><td>${n.title}</td>
        <td>${n.required.length ? n.required.join(', ') : 'none'}</td><td>${n.downlink ? 'yes' : 'no'}</td></tr>`)}</tbody>
    </table></div>`;
}

/**
 * The device type of an option, picked from the partner's types: each type's latest version (its
 * `<partner>/<name>` reference) or one pinned version (`…:<n>`). An option being changed keeps a
 * reference that is not in the list (a type since removed) as its own choice.
 */
function TypePicker({ name, types, initial }) {
  const refs = types.flatMap((t) => [t.ref, ...t.versions.map((v) => v.ref)]);
  const kept = initial && !refs.includes(initial) ? initial : undefined;
  // `selected` on the options, not `value` on the select: a re-render keeps what the partner picked.
  return html`<label>Device type <select name=${name} required>
    ${types.length === 0 && !kept ? html`<option value="">no device type yet: create one under Device types</option>` : ''}
    ${kept ? html`<option value=${kept} selected>${kept}</option>` : ''}
    ${types.map((t) => html`<optgroup label=${t.draft.title ? `${t.name} — ${t.draft.title}` : t.name}>
      <option value=${t.ref} selected=${t.ref === initial}>${t.name}, latest${t.latest ? ` (version ${t.latest} now)` : ' (draft only)'}</option>
      ${[...t.versions].reverse().map((v) => html`<option value=${v.ref} selected=${v.ref === initial}>${t.name}, version ${v.version} only</option>`)}
    </optgroup>`)}
  </select></label>`;
}

/** One option's fields; `initial` (an option of an activation being changed) fills them in. */
function OptionFields({ index, networks, types, onRemove, initial }) {
  const [networkId, setNetworkId] = useState(initial?.network.networkId ?? networks[0]?.id ?? '');
  const network = networks.find((n) => n.id === networkId);
  return html`<fieldset class="fields"><legend>Option ${index + 1}</legend>
    <label>Description <input name=${`o${index}.description`} autocomplete="off" defaultValue=${initial?.description ?? ''} /></label>
    <${TypePicker} name=${`o${index}.type`} types=${types} initial=${initial?.device.type} />
    <label>Network <select name=${`o${index}.network`} value=${networkId} onChange=${(e) => setNetworkId(e.target.value)}>
      ${networks.map((n) => html`<option value=${n.id}>${n.title} (${n.id})</option>`)}</select></label>
    ${network?.required.map((key) => html`<label>${key} <input name=${`o${index}.data.${key}`} autocomplete="off" defaultValue=${initial?.network.data?.[key] ?? ''} /></label>`)}
    ${onRemove ? html`<button type="button" class="secondary" onClick=${onRemove}>Remove option</button>` : ''}
  </fieldset>`;
}

function optionsFrom(form, count, networks) {
  return Array.from({ length: count }, (_, i) => {
    const networkId = form.get(`o${i}.network`);
    const network = networks.find((n) => n.id === networkId);
    const data = Object.fromEntries((network?.required ?? []).map((key) => [key, form.get(`o${i}.data.${key}`)]).filter(([, v]) => v !== ''));
    return { description: form.get(`o${i}.description`), device: { type: form.get(`o${i}.type`) }, network: { networkId, data } };
  });
}

export function ActivationsPage({ me }) {
  const [filter, setFilter] = useState({ status: '', hardwareId: '' });
  const [cursor, setCursor] = useState();
  const query = new URLSearchParams({ limit: '25', ...(filter.status ? { status: filter.status } : {}), ...(filter.hardwareId ? { hardwareId: filter.hardwareId } : {}), ...(cursor ? { cursor } : {}) });
  const [page, error, reload] = useLoad(() => api(p`/partner/${me.id}/activations` + `?${query}`), [me.id, filter, cursor]);
  const [networks] = useLoad(networksOnce, []);
  const [types] = useLoad(() => api(p`/partner/${me.id}/device-types`), [me.id]);
  const [optionCount, setOptionCount] = useState(1);
  const [formError, setFormError] = useState();
  const [created, setCreated] = useState();
  const [found, setFound] = useState();
  // An unused activation whose description and options the form replaces (its code and hardware id stay).
  const [editing, setEditing] = useState();
  const create = async (event) => {
    event.preventDefault();
    setFormError(undefined);
    const form = new FormData(event.target);
    try {
      const options = optionsFrom(form, optionCount, networks ?? []);
      if (editing) {
        setCreated(await api(p`/partner/${me.id}/activations/${editing.code}`, { method: 'PATCH', body: { description: form.get('description'), options } }));
        setEditing(undefined);
        setOptionCount(1);
      } else {
        setCreated(await api(p`/partner/${me.id}/activations`, { method: 'POST', body: { description: form.get('description'), hardware: { id: form.get('hardwareId') }, options } }));
        event.target.reset();
      }
      reload();
    } catch (e) {
      setFormError(e);
    }
  };
  const startChange = (activation) => {
    setCreated(undefined);
    setFormError(undefined);
    setEditing(activation);
    setOptionCount(activation.options.length);
    requestAnimationFrame(() => document.getElementById('new-activation')?.scrollIntoView());
  };
  const lookUp = async (event) => {
    event.preventDefault();
    const hardwareId = new FormData(event.target).get('hardware');
    try { setFound({ activation: await api(p`/partner/${me.id}/hardware/${hardwareId}/activation`) }); } catch (e) { setFound({ error: e }); }
  };
  const act = (fn) => async () => { try { await fn(); reload(); } catch (e) { setFormError(e); } };
  return html`<h1>Activations</h1>
    <form class="toolbar" onSubmit=${(e) => { e.preventDefault(); const f = new FormData(e.target); setCursor(undefined); setFilter({ status: f.get('status'), hardwareId: f.get('hardwareId').trim() }); }}>
      <label>Status <select name="status"><option value="">any</option><option>unused</option><option>used</option></select></label>
      <label>Hardware id <input name="hardwareId" autocomplete="off" /></label>
      <button type="submit" class="secondary">Filter</button>
    </form>
    <${ErrorBox} error=${error} />
    <div class="table-wrap"><table data-testid="activations">
      <thead><tr><th scope="col">Code</th><th scope="col">Hardware</th><th scope="col">Description</th><th scope="col">Status</th><th scope="col">Options</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${page?.items.map((a) => html`<tr><th scope="row"><code class="code">${a.code}</code></th><td>${a.hardware.id}</td><td>${a.description}</td><td>${a.status}</td>
        <td>${a.options.map((o) => html`<span class="chip" title=${o.id}>${o.device.type} · ${o.network.networkId}</span>`)}</td>
        <td class="actions">${a.status === 'unused' ? html`
          <button type="button" class="secondary" aria-label=${`Change activation ${a.code}`} onClick=${() => startChange(a)}>Change</button>
          <button type="button" class="danger" onClick=${act(async () => { if (confirm(`Delete activation ${a.code}?`)) await api(p`/partner/${me.id}/activations/${a.code}`, { method: 'DELETE' }); })}>Delete</button>` : ''}</td></tr>`)}</tbody>
    </table></div>
    ${page?.next ? html`<button type="button" class="secondary" onClick=${() => setCursor(page.next)}>Next page</button>` : ''}
    <section aria-labelledby="lookup"><h2 id="lookup">Look up by hardware id</h2>
      <form onSubmit=${lookUp} class="toolbar"><label>Hardware id <input name="hardware" required autocomplete="off" /></label><button type="submit" class="secondary">Look up</button></form>
      <${ErrorBox} error=${found?.error} />
      ${found?.activation ? html`<p role="status">Code <code class="code">${found.activation.code}</code>, ${found.activation.status}${found.activation.activatedDeviceId ? html`, device <code>${found.activation.activatedDeviceId}</code>` : ''}.</p>` : ''}
    </section>
    <section aria-labelledby="new-activation"><h2 id="new-activation">${editing ? html`Change activation <code class="code">${editing.code}</code>` : 'Create an activation'}</h2>
      <form onSubmit=${create} class="stack" key=${editing?.code ?? 'new'}>
        ${editing ? html`<p>Hardware id ${editing.hardware.id} stays; the options below replace every option (new options get new ids).</p>` : ''}
        <label>Description <input name="description" autocomplete="off" defaultValue=${editing?.description ?? ''} /></label>
        ${editing ? '' : html`<label>Hardware id <input name="hardwareId" required autocomplete="off" /></label>`}
        ${networks && types ? Array.from({ length: optionCount }, (_, i) => html`<${OptionFields} key=${`${editing?.code ?? 'new'}.${i}`} index=${i} networks=${networks} types=${types} initial=${editing?.options[i]} onRemove=${i > 0 && i === optionCount - 1 ? () => setOptionCount(optionCount - 1) : undefined} />`) : ''}
        <button type="button" class="secondary" onClick=${() => setOptionCount(optionCount + 1)}>Add an option</button>
        <button type="submit">${editing ? 'Save changes' : 'Create activation'}</button>
        ${editing ? html`<button type="button" class="secondary" onClick=${() => { setEditing(undefined); setOptionCount(1); }}>Cancel</button>` : ''}
      </form>
      <${ErrorBox} error=${formError} />
      ${created ? html`<p role="status" class="once">Activation code <code class="code" data-testid="activation-code">${created.code}</code> for ${created.hardware.id}${editing === undefined && created.options ? html`, ${created.options.length} option${created.options.length === 1 ? '' : 's'}` : ''}.</p>` : ''}
    </section>`;
}
