// Sends an asset command: the value is checked against the asset's profile here first (the API
// checks it again and its problem+json message is shown as is), then its lifecycle is followed
// (queued → sent → delivered | expired | failed) from the live stream and the command history.
import { useEffect, useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, formatTime } from './ui.js';
import { useDeviceLive } from './device.js';

const FINAL = new Set(['delivered', 'expired', 'failed']);

/** The subset of JSON Schema the console checks before sending; undefined when it fits. */
export function profileProblem(profile, value) {
  const type = profile?.type;
  if (type === 'number' && (typeof value !== 'number' || !Number.isFinite(value))) return 'must be a number';
  if (type === 'integer' && !Number.isInteger(value)) return 'must be an integer';
  if (type === 'boolean' && typeof value !== 'boolean') return 'must be true or false';
  if (type === 'string' && typeof value !== 'string') return 'must be text';
  if (typeof value === 'number') {
    if (profile.minimum !== undefined && value < profile.minimum) return `must be at least ${profile.minimum}`;
    if (profile.maximum !== undefined && value > profile.maximum) return `must be at most ${profile.maximum}`;
  }
  if (typeof value === 'string' && profile?.maxLength !== undefined && value.length > profile.maxLength) return `must be at most ${profile.maxLength} characters`;
  if (Array.isArray(profile?.enum) && !profile.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) return `must be one of ${profile.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  return undefined;
}

function readValue(profile, raw, checked) {
  const type = profile?.type;
  if (type === 'boolean') return checked;
  if (type === 'number' || type === 'integer') return raw.trim() === '' ? NaN : Number(raw);
  if (type === 'string' || Array.isArray(profile?.enum)) return raw;
  try { return JSON.parse(raw); } catch { throw new Error('must be JSON'); }
}

function ValueInput({ profile }) {
  const type = profile?.type;
  if (Array.isArray(profile?.enum)) return html`<label>Value <select name="value">${profile.enum.map((e) => html`<option>${e}</option>`)}</select></label>`;
  if (type === 'boolean') return html`<label class="inline"><input type="checkbox" name="value" /> Value (on / off)</label>`;
  if (type === 'number' || type === 'integer') {
    return html`<label>Value <input name="value" type="text" inputmode="decimal" autocomplete="off" required /></label>`;
  }
  return html`<label>Value ${type === 'string' ? '' : '(JSON)'} <input name="value" autocomplete="off" /></label>`;
}

export function CommandForm({ deviceId, asset }) {
  const [error, setError] = useState();
  const [command, setCommand] = useState();
  useDeviceLive(deviceId, 'command', (kind, data) => {
    setCommand((c) => (c && c.id === data.commandId ? merge(c, data) : c));
  });
  // The history is the record: read until the command is final (the stream may not carry it).
  // An answer that comes back after the command has moved on (the stream said delivered while
  // the read was under way) is dropped: it would put back the status it had read.
  useEffect(() => {
    if (!command || FINAL.has(command.status)) return undefined;
    let current = true;
    const timer = setTimeout(async () => {
      const list = await api(p`/device/${deviceId}/commands?limit=20`).catch(() => undefined);
      if (!current) return;
      const found = list?.items.find((c) => c.id === command.id);
      if (found) setCommand((c) => (c && c.id === found.id ? { ...c, status: found.status, code: found.code, reason: found.reason, transitions: found.transitions } : c));
      else setCommand((c) => ({ ...c }));
    }, 700);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [command]);
  const submit = async (event) => {
    event.preventDefault();
    setError(undefined);
    const input = event.target.elements.value;
    let value;
    try {
      value = readValue(asset.profile, input.value, input.checked);
      const problem = profileProblem(asset.profile, value);
      if (problem) throw new Error(problem);
    } catch (e) {
      setError({ code: 'VALIDATION_FAILED', message: `value: ${e.message}` });
      input.focus();
      return;
    }
    try {
      const { id } = await api(p`/device/${deviceId}/asset/${asset.name}/command`, { method: 'PUT', body: { value } });
      setCommand({ id, value, status: 'queued', transitions: [{ status: 'queued', changedAt: Date.now(), attempts: 0 }] });
    } catch (e) {
      setError(e);
    }
  };
  return html`<section aria-labelledby="command"><h2 id="command">Send a command</h2>
    <form onSubmit=${submit} class="stack" noValidate>
      <${ValueInput} profile=${asset.profile} />
      <button type="submit">Send</button>
    </form>
    <${ErrorBox} error=${error} />
    ${command ? html`<div class="lifecycle" aria-live="polite">
      <p>Command <code>${command.id}</code> (${JSON.stringify(command.value)}): <strong class=${`status ${command.status}`} data-testid="command-status">${command.status}</strong>
      ${command.code ? html` — ${command.code}: ${command.reason}` : ''}</p>
      ${command.status === 'queued' ? html`<p class="waiting" data-testid="command-waiting">Waiting for the device: the command is sent when the device is connected and listens for its commands, until it expires.</p>` : ''}
      <ol>${(command.transitions ?? []).map((t) => html`<li>${t.status} <span class="muted">${formatTime(t.changedAt)}${t.attempts ? ` · attempt ${t.attempts}` : ''}</span></li>`)}</ol>
    </div>` : ''}
  </section>`;
}

function merge(command, event) {
  const transitions = [...(command.transitions ?? [])];
  if (!transitions.some((t) => t.status === event.status)) transitions.push({ status: event.status, changedAt: event.changedAt, attempts: event.attempts });
  return { ...command, status: event.status, code: event.code, reason: event.reason, transitions };
}
