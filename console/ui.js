// Small shared pieces: htm bound to Preact, an error box that shows the API's message, formats.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

/** The API's problem+json message, announced to screen readers. */
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.code ? html`<strong>${error.code}</strong> ` : ''}${error.message}</p>`;
}

export function formatValue(value) {
  if (value === undefined) return '—';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) < 10 ? 3 : 2).replace(/\.?0+$/, '');
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

export function formatTime(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return 'never';
  return new Date(ms).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/**
 * Latest values by asset ({name: {value, at}}): what a page read once (`loaded`) and what live
 * events brought since (`live`), the later measurement of each asset, the live one on a tie. A
 * read that was answered after a live event must not put back the value that event replaced.
 */
export function newerStates(loaded, live) {
  const merged = { ...loaded };
  for (const [asset, s] of Object.entries(live ?? {})) {
    const had = merged[asset];
    if (had === undefined || !(Date.parse(had.at) > Date.parse(s.at))) merged[asset] = s;
  }
  return merged;
}

/** "12 s ago", refreshed every few seconds by `useNow`. */
export function ago(ms, now) {
  if (ms === undefined || ms === null) return 'never';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function useNow(periodMs = 5000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), periodMs);
    return () => clearInterval(timer);
  }, [periodMs]);
  return now;
}

/** Loads `load()` when `deps` change; returns [data, error, reload]. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: undefined, error: undefined });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, error: undefined }));
    load().then((data) => live && setState({ data, error: undefined }), (error) => live && setState({ data: undefined, error }));
    return () => { live = false; };
  }, [...deps, tick]);
  return [state.data, state.error, () => setTick((t) => t + 1)];
}

export function LiveBadge({ status }) {
  const cls = status === 'live' ? 'badge live' : 'badge';
  return html`<span class=${cls} role="status" aria-live="polite">${status === 'live' ? '● live' : status}</span>`;
}

/** A token shown once (device creation, activation): copy it now, it is never shown again. */
export function ShownOnce({ label, token }) {
  const [copied, setCopied] = useState(false);
  return html`<div class="once" role="status">
    <p><strong>${label}</strong> — shown once: copy it now.</p>
    <code class="token" data-testid="shown-token">${token}</code>
    <button type="button" onClick=${() => navigator.clipboard?.writeText(token).then(() => setCopied(true))}>${copied ? 'Copied' : 'Copy'}</button>
  </div>`;
}
