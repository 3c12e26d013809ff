// A ground's team (docs/grounds.md): its members with their roles, its usage, its API keys and its
// audit log. Every member sees the members; owners see the usage against the quota, change roles,
// add and remove members, make and revoke keys (a key's token is shown once) and read the audit log.
// What the caller's role cannot do is not offered.
import { useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, ShownOnce, formatTime, useLoad } from './ui.js';

const ROLES = ['owner', 'editor', 'viewer'];

/** The caller's role in the ground (GET /ground/{id}); undefined while it loads or when it cannot be read. */
export function useRole(groundId) {
  const [ground] = useLoad(() => (groundId === undefined ? Promise.resolve(undefined) : api(p`/ground/${groundId}`)), [groundId]);
  return ground?.role;
}

/** Editors and owners change devices, rules, alarms, commands and integrations; viewers only read. */
export const canEdit = (role) => role === 'owner' || role === 'editor';

async function loadAll(path) {
  const items = [];
  let cursor;
  do {
    const page = await api(path + `?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    items.push(...page.items);
    cursor = page.next;
  } while (cursor);
  return items;
}

export function MembersPage({ groundId }) {
  const [tick, setTick] = useState(0);
  const reload = () => setTick((t) => t + 1);
  const [ground, groundError] = useLoad(() => api(p`/ground/${groundId}`), [groundId, tick]);
  const [members, error] = useLoad(() => loadAll(p`/ground/${groundId}/members`), [groundId, tick]);
  const owner = ground?.role === 'owner';
  return html`<p class="crumbs"><a href=${p`#/ground/${groundId}`}>Devices</a></p>
    <h1>Members${ground ? html` of ${ground.name}` : ''}</h1>
    <${ErrorBox} error=${groundError ?? error} />
    ${ground ? html`<p class="hint" data-testid="my-role">You are ${ground.role === 'owner' ? 'an' : 'a'} ${ground.role} of this ground.</p>` : ''}
    ${members?.length ? html`<div class="table-wrap"><table data-testid="members">
      <caption class="sr-only">Members of this ground</caption>
      <thead><tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col">Joined</th>${owner ? html`<th scope="col"><span class="sr-only">Remove</span></th>` : ''}</tr></thead>
      <tbody>${members.map((m) => html`<${MemberRow} key=${m.userId} groundId=${groundId} member=${m} owner=${owner} onChanged=${reload} />`)}</tbody>
    </table></div>` : ''}
    ${owner ? html`<${UsageSection} groundId=${groundId} /><${AddMember} groundId=${groundId} onAdded=${reload} /><${KeysSection} groundId=${groundId} />
      <${AuditSection} groundId=${groundId} members=${members ?? []} tick=${tick} />` : ''}`;
}

const AUDIT_PAGE = 20;

/** The ground's audit log, newest first, a page at a time (owners: GET /ground/{id}/audit). */
function AuditSection({ groundId, members, tick }) {
  // The first page reloads with the page (and on Refresh); older pages are added below it.
  const [older, setOlder] = useState({ items: [], next: undefined, loaded: false, error: undefined });
  const [first, error, refresh] = useLoad(async () => {
    setOlder({ items: [], next: undefined, loaded: false, error: undefined });
    return api(p`/ground/${groundId}/audit` + `?limit=${AUDIT_PAGE}`);
  }, [groundId, tick]);
  const next = older.loaded ? older.next : first?.next;
  const more = async () => {
    try {
      const page = await api(p`/ground/${groundId}/audit` + `?limit=${AUDIT_PAGE}&before=${encodeURIComponent(next)}`);
      setOlder((o) => ({ items: [...o.items, ...page.items], next: page.next, loaded: true, error: undefined }));
    } catch (e) {
      setOlder((o) => ({ ...o, error: e }));
    }
  };
  const names = new Map(members.map((m) => [m.userId, m.name]));
  const who = (actor) => (actor.kind === 'user' ? names.get(actor.id) ?? `user ${actor.id}` : `${actor.kind} ${actor.id}`);
  const entries = [...(first?.items ?? []), ...older.items];
  return html`<section aria-labelledby="audit-heading">
    <h2 id="audit-heading">Audit log</h2>
    <p class="hint">Changes made to this ground, newest first (kept 90 days unless the operator set otherwise).</p>
    <${ErrorBox} error=${error ?? older.error} />
    <button type="button" onClick=${refresh}>Refresh</button>
    ${first && entries.length === 0 ? html`<p>No change recorded.</p>` : ''}
    ${entries.length ? html`<div class="table-wrap"><table data-testid="audit">
      <caption class="sr-only">Changes made to this ground, newest first</caption>
      <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Operation</th><th scope="col">Target</th><th scope="col">Result</th></tr></thead>
      <tbody>${entries.map((e, i) => html`<tr key=${i} data-operation=${e.operation}>
        <td>${formatTime(e.at)}</td><td>${who(e.actor)}</td><td>${e.operation}</td><td>${e.targetId ? names.get(e.targetId) ?? e.targetId : ''}</td>
        <td>${e.result.status}${e.result.code ? ` ${e.result.code}` : ''}</td></tr>`)}</tbody>
    </table></div>` : ''}
    ${next ? html`<button type="button" onClick=${more}>Older</button>` : ''}
  </section>`;
}

const limit = (quota) => (quota === null ? 'no limit' : quota.toLocaleString());
const bytes = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);

/** The ground's usage against its quota (owners: GET /ground/{id}/usage). */
function UsageSection({ groundId }) {
  const [usage, error] = useLoad(() => api(p`/ground/${groundId}/usage`), [groundId]);
  return html`<section aria-labelledby="usage-heading">
    <h2 id="usage-heading">Usage</h2>
    <${ErrorBox} error=${error} />
    ${usage ? html`<div class="table-wrap"><table data-testid="usage">
      <caption class="sr-only">What this ground uses, against its quota (days and months in UTC)</caption>
      <thead><tr><th scope="col">What</th><th scope="col">Used</th><th scope="col">Quota</th></tr></thead>
      <tbody>
        <tr><th scope="row">Devices</th><td>${usage.devices.count.toLocaleString()}</td><td>${limit(usage.devices.quota)}</td></tr>
        <tr><th scope="row">States today</th><td>${usage.states.today.toLocaleString()}</td><td>${usage.states.perSecondQuota === null ? 'no limit' : `${limit(usage.states.perSecondQuota)} per second`}</td></tr>
        <tr><th scope="row">States this month</th><td>${usage.states.thisMonth.toLocaleString()}</td><td></td></tr>
        <tr><th scope="row">Commands this month</th><td>${usage.commands.thisMonth.toLocaleString()}</td><td></td></tr>
        <tr><th scope="row">States stored</th><td>${usage.stored.rows.toLocaleString()} (about ${bytes(usage.stored.compressedBytes)})</td><td>${usage.stored.retentionDays === null ? 'kept' : `kept ${usage.stored.retentionDays} days`}</td></tr>
      </tbody>
    </table></div>` : ''}
  </section>`;
}

function MemberRow({ groundId, member, owner, onChanged }) {
  const [error, setError] = useState();
  const act = async (request) => {
    setError(undefined);
    try {
      await request();
      onChanged();
    } catch (e) {
      setError(e);
    }
  };
  const setRole = (role) => act(() => api(p`/ground/${groundId}/members/${member.userId}`, { method: 'PUT', body: { role } }));
  const remove = () => confirm(`Remove ${member.name} from this ground?`) && act(() => api(p`/ground/${groundId}/members/${member.userId}`, { method: 'DELETE' }));
  return html`<tr data-member=${member.userId}>
    <th scope="row">${member.name}</th>
    <td>${owner
      ? html`<select aria-label=${`Role of ${member.name}`} value=${member.role} onChange=${(e) => setRole(e.target.value)}>${ROLES.map((r) => html`<option value=${r}>${r}</option>`)}</select>`
      : member.role}</td>
    <td>${formatTime(member.createdAt)}</td>
    ${owner ? html`<td><button type="button" class="danger" onClick=${remove}>Remove</button><${ErrorBox} error=${error} /></td>` : ''}
  </tr>`;
}

function AddMember({ groundId, onAdded }) {
  const [error, setError] = useState();
  const submit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    setError(undefined);
    try {
      await api(p`/ground/${groundId}/members/${String(form.get('userId')).trim()}`, { method: 'PUT', body: { role: form.get('role') } });
      event.target.reset();
      onAdded();
    } catch (e) {
      setError(e);
    }
  };
  return html`<h2>Add a member</h2>
    <form onSubmit=${submit} data-testid="add-member" class="stack">
    <label for="member-user">User id</label>
    <input id="member-user" name="userId" required autocomplete="off" spellcheck=${false} />
    <label for="member-role">Role</label>
    <select id="member-role" name="role">${['editor', 'viewer', 'owner'].map((r) => html`<option value=${r}>${r}</option>`)}</select>
    <button type="submit">Add the member</button>
    <${ErrorBox} error=${error} />
  </form>`;
}

function KeysSection({ groundId }) {
  const [tick, setTick] = useState(0);
  const [keys, error] = useLoad(() => loadAll(p`/ground/${groundId}/keys`), [groundId, tick]);
  const [created, setCreated] = useState();
  const [actionError, setActionError] = useState();
  const reload = () => setTick((t) => t + 1);
  const create = async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const days = Number(form.get('days'));
    setActionError(undefined);
    try {
      const body = { name: String(form.get('name')).trim(), role: form.get('role') };
      if (form.get('days') !== '' && Number.isFinite(days)) body.expiresAt = Math.round(Date.now() + days * 86_400_000);
      setCreated(await api(p`/ground/${groundId}/keys`, { method: 'POST', body }));
      event.target.reset();
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  const revoke = async (key) => {
    if (!confirm(`Revoke the key ${key.name}? Its token stops working and its live streams end.`)) return;
    try {
      await api(p`/ground/${groundId}/keys/${key.id}`, { method: 'DELETE' });
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  return html`<section aria-labelledby="keys-heading">
    <h2 id="keys-heading">API keys</h2>
    <p class="hint">A key acts for applications in this ground alone, as a viewer or an editor.</p>
    <${ErrorBox} error=${error ?? actionError} />
    ${created ? html`<${ShownOnce} label=${`Token of the key ${created.name}`} token=${created.token} />` : ''}
    ${keys?.length ? html`<div class="table-wrap"><table data-testid="keys">
      <caption class="sr-only">API keys of this ground</caption>
      <thead><tr><th scope="col">Key</th><th scope="col">Role</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Revoke</span></th></tr></thead>
      <tbody>${keys.map((k) => html`<tr data-key=${k.id}>
        <th scope="row">${k.name}</th><td>${k.role}</td><td>${formatTime(k.createdAt)}</td>
        <td>${k.expiresAt === undefined ? 'never' : formatTime(k.expiresAt)}</td>
        <td><button type="button" class="danger" onClick=${() => revoke(k)}>Revoke</button></td>
      </tr>`)}</tbody>
    </table></div>` : html`<p>No key.</p>`}
    <h3>Create a key</h3>
    <form onSubmit=${create} data-testid="create-key" class="stack">
      <label for="key-name">Name</label>
      <input id="key-name" name="name" required autocomplete="off" />
      <label for="key-role">Role</label>
      <select id="key-role" name="role"><option value="viewer">viewer</option><option value="editor">editor</option></select>
      <label for="key-days">Expires after (days, empty: never)</label>
      <input id="key-days" name="days" type="number" min="1" step="1" />
      <button type="submit">Create the key</button>
    </form>
  </section>`;
}
