// A ground's rules (docs/rules.md): each with its asset, condition, delay, clearing, severity and
// actions; the form that creates one (checked by the API against the ground's devices: its
// message names each field it refuses); deletion.
import { useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, useLoad } from './ui.js';
import { canEdit, useRole } from './members.js';

const SEVERITIES = ['critical', 'major', 'minor', 'warning', 'info'];
const KINDS = [
  ['above', 'above'],
  ['below', 'below'],
  ['outside', 'outside the range'],
  ['equals', 'equals'],
  ['silentFor', 'silent for'],
  ['outsideArea', 'outside the area'],
];

async function loadRules(groundId) {
  const rules = [];
  let cursor;
  do {
    const page = await api(p`/ground/${groundId}/rules` + `?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    rules.push(...page.items);
    cursor = page.next;
  } while (cursor);
  return rules;
}

/** "above 8", "outside [2, 8]", "silent for PT15M", … */
export function describeCondition(condition) {
  const [kind, value] = Object.entries(condition)[0] ?? [];
  if (kind === 'outside') return `outside [${value[0]}, ${value[1]}]`;
  if (kind === 'silentFor') return `silent for ${value}`;
  if (kind === 'outsideArea') return `more than ${value.radiusMeters} m from ${value.latitude}, ${value.longitude}`;
  if (kind === 'equals') return `equals ${JSON.stringify(value)}`;
  return `${kind} ${value}`;
}

function describeAction(action) {
  if (action.command) return `command ${action.command.asset} = ${JSON.stringify(action.command.value)}`;
  return `integration ${action.integration}`;
}

export function RulesPage({ groundId }) {
  const [tick, setTick] = useState(0);
  const [rules, error] = useLoad(() => loadRules(groundId), [groundId, tick]);
  const reload = () => setTick((t) => t + 1);
  const editor = canEdit(useRole(groundId));
  return html`<p class="crumbs"><a href=${p`#/ground/${groundId}`}>Devices</a> · <a href=${p`#/ground/${groundId}/integrations`}>Integrations</a></p>
    <h1>Rules</h1>
    <p class="hint">A rule watches one asset of the ground's devices for a condition. Rules are checked against the devices when saved; while a rule's condition holds, its alarm is active on the alarms page.</p>
    <${ErrorBox} error=${error} />
    ${rules && rules.length === 0 ? html`<p>No rule yet.</p>` : ''}
    ${rules?.length ? html`<div class="table-wrap"><table data-testid="rules">
      <caption class="sr-only">Rules of this ground</caption>
      <thead><tr><th scope="col">Rule</th><th scope="col">Asset</th><th scope="col">Condition</th><th scope="col">For</th><th scope="col">Clears</th>
        <th scope="col">Severity</th><th scope="col">Devices</th><th scope="col">Actions</th>${editor ? html`<th scope="col"><span class="sr-only">Delete</span></th>` : ''}</tr></thead>
      <tbody>${rules.map((r) => html`<${RuleRow} key=${r.id} rule=${r} editor=${editor} onChanged=${reload} />`)}</tbody>
    </table></div>` : ''}
    ${editor ? html`<${CreateRule} groundId=${groundId} onCreated=${reload} />` : ''}`;
}

function RuleRow({ rule, editor, onChanged }) {
  const [error, setError] = useState();
  const remove = async () => {
    if (!confirm(`Delete the rule ${rule.name}?`)) return;
    try {
      await api(p`/rules/${rule.id}`, { method: 'DELETE' });
      onChanged();
    } catch (e) {
      setError(e);
    }
  };
  return html`<tr data-rule=${rule.id}>
    <th scope="row">${rule.name}</th>
    <td><code>${rule.asset}</code></td>
    <td data-testid="condition">${describeCondition(rule.condition)}</td>
    <td>${rule.for ?? '—'}</td>
    <td>${rule.clear ? describeCondition(rule.clear) : 'when the condition ends'}</td>
    <td><span class=${`severity ${rule.severity}`}>${rule.severity}</span></td>
    <td>${rule.devices ? `${rule.devices.length} listed` : 'every device with the asset'}</td>
    <td>${rule.actions.length === 0 ? '—' : rule.actions.map((a) => html`<div>${describeAction(a)}</div>`)}</td>
    ${editor ? html`<td><button type="button" class="danger" onClick=${remove}>Delete</button><${ErrorBox} error=${error} /></td>` : ''}
  </tr>`;
}

/** The condition of the form's fields; what cannot be read is sent as typed, for the API to name. */
function conditionOf(kind, form) {
  const num = (name) => (form.get(name) === '' ? form.get(name) : Number(form.get(name)));
  if (kind === 'outside') return { outside: [num('low'), num('high')] };
  if (kind === 'silentFor') return { silentFor: form.get('duration') };
  if (kind === 'outsideArea') return { outsideArea: { latitude: num('latitude'), longitude: num('longitude'), radiusMeters: num('radius') } };
  if (kind === 'equals') {
    const text = form.get('value');
    try { return { equals: JSON.parse(text) }; } catch { return { equals: text }; }
  }
  return { [kind]: num('threshold') };
}

function CreateRule({ groundId, onCreated }) {
  const [error, setError] = useState();
  const [kind, setKind] = useState('above');
  const submit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    setError(undefined);
    try {
      const body = { name: form.get('name'), asset: form.get('asset'), condition: conditionOf(kind, form), severity: form.get('severity') };
      if (form.get('for')) body.for = form.get('for');
      const devices = String(form.get('devices') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      if (devices.length > 0) body.devices = devices;
      await api(p`/ground/${groundId}/rules`, { method: 'POST', body });
      event.target.reset();
      setKind('above');
      onCreated();
    } catch (e) {
      setError(e);
    }
  };
  return html`<section aria-labelledby="create-rule"><h2 id="create-rule">Create a rule</h2>
    <form onSubmit=${submit} class="stack">
      <label>Name <input name="name" required autocomplete="off" /></label>
      <label>Asset <input name="asset" required autocomplete="off" /></label>
      <label>Condition <select name="kind" value=${kind} onChange=${(e) => setKind(e.target.value)}>${KINDS.map(([value, text]) => html`<option value=${value}>${text}</option>`)}</select></label>
      ${kind === 'above' || kind === 'below' ? html`<label>Threshold <input name="threshold" inputmode="decimal" required /></label>` : ''}
      ${kind === 'outside' ? html`<div class="row"><label>Lower <input name="low" inputmode="decimal" required /></label><label>Higher <input name="high" inputmode="decimal" required /></label></div>` : ''}
      ${kind === 'equals' ? html`<label>Value (JSON) <input name="value" required autocomplete="off" /></label>` : ''}
      ${kind === 'silentFor' ? html`<label>Silence <input name="duration" required placeholder="PT15M" autocomplete="off" /></label>` : ''}
      ${kind === 'outsideArea' ? html`<div class="row"><label>Latitude <input name="latitude" inputmode="decimal" required /></label><label>Longitude <input name="longitude" inputmode="decimal" required /></label><label>Radius (m) <input name="radius" inputmode="decimal" required /></label></div>` : ''}
      ${kind !== 'silentFor' ? html`<label>For <span class="hint">how long it must hold first, e.g. PT2M; empty: at once</span><input name="for" autocomplete="off" /></label>` : ''}
      <label>Severity <select name="severity">${SEVERITIES.map((s) => html`<option>${s}</option>`)}</select></label>
      <label>Devices <span class="hint">device ids, comma-separated; empty: every device with the asset</span><input name="devices" autocomplete="off" /></label>
      <button type="submit">Create rule</button>
    </form>
    <${ErrorBox} error=${error} />
  </section>`;
}
