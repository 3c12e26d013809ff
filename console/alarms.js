// A ground's alarms (docs/rules.md), newest first, refreshed every few seconds: active ones or all,
// unacknowledged only if asked; each with its rule, device, values and count; acknowledge, clear.
import { useEffect, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { follow } from './live.js';
import { html, ErrorBox, ago, formatValue, useLoad, useNow } from './ui.js';
import { canEdit, useRole } from './members.js';

const REFRESH_MS = 5000;
/** The active alarms of a ground are reloaded this often besides their live changes. */
const RELOAD_MS = 30_000;

/**
 * The ground's active alarms (up to 1000): the count for its pages and the badges of its devices,
 * kept live by the ground's stream of alarm changes (reloaded when the stream cannot resume, and
 * every half minute in case a change was missed while it reconnected).
 */
export function useActiveAlarms(groundId) {
  const [alarms, setAlarms] = useState();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let gone = false;
    api(p`/ground/${groundId}/alarms` + '?status=active&limit=1000').then((page) => { if (!gone) setAlarms(page.items); }, () => {});
    return () => { gone = true; };
  }, [groundId, tick]);
  useEffect(() => {
    const abort = new AbortController();
    const timer = setInterval(() => setTick((t) => t + 1), RELOAD_MS);
    follow(p`/ground/${groundId}/live` + '?kinds=alarm', {
      signal: abort.signal,
      onReset: () => setTick((t) => t + 1),
      onEvent: (kind, data) => {
        if (kind !== 'alarm') return;
        setAlarms((list) => {
          const others = (list ?? []).filter((a) => a.id !== data.alarmId);
          return data.status === 'active' ? [{ ...data, id: data.alarmId }, ...others] : others;
        });
      },
    });
    return () => { abort.abort(); clearInterval(timer); };
  }, [groundId]);
  return alarms;
}

export function AlarmsPage({ groundId }) {
  const [status, setStatus] = useState('active');
  const [unacknowledged, setUnacknowledged] = useState(false);
  const [tick, setTick] = useState(0);
  const query = `?limit=200${status === 'all' ? '' : `&status=${status}`}${unacknowledged ? '&acknowledged=false' : ''}`;
  const [page, error] = useLoad(() => api(p`/ground/${groundId}/alarms` + query), [groundId, query, tick]);
  const [rules] = useLoad(() => api(p`/ground/${groundId}/rules` + '?limit=1000'), [groundId]);
  const [devices] = useLoad(() => api(p`/ground/${groundId}/devices` + '?limit=1000'), [groundId]);
  const now = useNow();
  const editor = canEdit(useRole(groundId));
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), REFRESH_MS);
    return () => clearInterval(timer);
  }, [groundId]);
  const ruleName = (id) => rules?.items.find((r) => r.id === id)?.name ?? 'a deleted rule';
  const deviceName = (id) => { const d = devices?.items.find((x) => x.id === id); return d ? d.title || d.name : id; };
  return html`<p class="crumbs"><a href=${p`#/ground/${groundId}`}>Devices</a> · <a href=${p`#/ground/${groundId}/rules`}>Rules</a></p>
    <h1>Alarms</h1>
    <div class="toolbar" role="group" aria-label="Which alarms">
      ${[['active', 'Active'], ['cleared', 'Cleared'], ['all', 'All']].map(([value, text]) => html`<button type="button" class="secondary" aria-pressed=${status === value} onClick=${() => setStatus(value)}>${text}</button>`)}
      <label class="inline"><input type="checkbox" checked=${unacknowledged} onChange=${(e) => setUnacknowledged(e.target.checked)} /> Unacknowledged only</label>
    </div>
    <${ErrorBox} error=${error} />
    ${page && page.items.length === 0 ? html`<p>No alarm.</p>` : ''}
    ${page?.items.length ? html`<div class="table-wrap"><table data-testid="alarms">
      <caption class="sr-only">Alarms of this ground, newest first</caption>
      <thead><tr><th scope="col">Severity</th><th scope="col">Rule</th><th scope="col">Device</th><th scope="col">Asset</th><th scope="col">Status</th>
        <th scope="col">Started</th><th scope="col">Value</th><th scope="col">Last value</th><th scope="col">Count</th><th scope="col">Acknowledged</th>${editor ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
      <tbody>${page.items.map((a) => html`<${AlarmRow} key=${a.id} alarm=${a} now=${now} editor=${editor} rule=${ruleName(a.ruleId)} device=${deviceName(a.deviceId)} onChanged=${() => setTick((t) => t + 1)} />`)}</tbody>
    </table></div>` : ''}`;
}

function AlarmRow({ alarm, now, editor, rule, device, onChanged }) {
  const [error, setError] = useState();
  const act = async (action) => {
    setError(undefined);
    try {
      await api(p`/alarms/${alarm.id}/${action}`, { method: 'POST' });
      onChanged();
    } catch (e) {
      setError(e);
    }
  };
  return html`<tr data-alarm=${alarm.id}>
    <td><span class=${`severity ${alarm.severity}`}>${alarm.severity}</span></td>
    <th scope="row">${rule}</th>
    <td><a href=${p`#/device/${alarm.deviceId}`}>${device}</a></td>
    <td><code>${alarm.asset}</code></td>
    <td class=${`status ${alarm.status === 'active' ? 'failing' : 'active'}`} data-testid="alarm-status">${alarm.status}${alarm.clearedAt !== undefined ? html` <span class="muted">${ago(alarm.clearedAt, now)}</span>` : ''}</td>
    <td>${ago(alarm.startedAt, now)}</td>
    <td>${formatValue(alarm.value)}</td>
    <td>${formatValue(alarm.lastValue)}</td>
    <td data-testid="alarm-count">${alarm.count}</td>
    <td data-testid="alarm-acknowledged">${alarm.acknowledged ? `yes, ${ago(alarm.acknowledgedAt, now)}` : 'no'}</td>
    ${editor ? html`<td><div class="row">
      ${alarm.acknowledged ? '' : html`<button type="button" class="secondary" onClick=${() => act('acknowledge')}>Acknowledge</button>`}
      ${alarm.status === 'active' ? html`<button type="button" class="secondary" onClick=${() => act('clear')}>Clear</button>` : ''}
    </div><${ErrorBox} error=${error} /></td>` : ''}
  </tr>`;
}
