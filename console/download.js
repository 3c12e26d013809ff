// Downloads of stored states (docs/analytics.md "Export"): one button per format the service
// writes. The API needs the bearer token, which a plain link cannot carry, so the file is fetched
// with it and handed to the browser as a download (the service streams it; the browser holds it).
import { useEffect, useState } from 'preact/hooks';
import { ApiError, authHeaders, readProblem } from './api.js';
import { html, ErrorBox } from './ui.js';

const LABELS = { csv: 'CSV', ndjson: 'NDJSON', parquet: 'Parquet' };

/**
 * `path` and `query` (a URLSearchParams string) name the export; Parquet is offered where the
 * service writes it, which an empty export of the ground (`groundId`) tells: 200 where it does,
 * 406 where not.
 */
export function DownloadButtons({ path, query = '', label, groundId }) {
  const [formats, setFormats] = useState(['csv', 'ndjson']);
  const [busy, setBusy] = useState();
  const [error, setError] = useState();
  useEffect(() => {
    const abort = new AbortController();
    fetch(`/ground/${encodeURIComponent(groundId)}/export?format=parquet&from=0&to=1`, { headers: authHeaders(), signal: abort.signal, cache: 'no-store' })
      .then(async (r) => { await r.arrayBuffer(); if (r.ok) setFormats(['csv', 'ndjson', 'parquet']); })
      .catch(() => undefined);
    return () => abort.abort();
  }, [groundId]);
  const download = async (format) => {
    setBusy(format);
    setError(undefined);
    try {
      const response = await fetch(`${path}?format=${format}${query ? `&${query}` : ''}`, { headers: authHeaders(), cache: 'no-store' });
      if (!response.ok) throw new ApiError(response.status, await readProblem(response));
      const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? `states.${format}`;
      const url = URL.createObjectURL(await response.blob());
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };
  return html`<div class="toolbar" role="group" aria-label=${label} data-testid="downloads">
      ${formats.map((f) => html`<button type="button" class="secondary" disabled=${busy !== undefined} onClick=${() => download(f)}>${busy === f ? 'Preparing…' : `Download ${LABELS[f]}`}</button>`)}
    </div>
    <${ErrorBox} error=${error} />`;
}
