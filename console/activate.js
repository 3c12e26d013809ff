// Spec §4.6: redeem an activation code into one of the user's grounds, choosing one of its options.
import { useState } from 'preact/hooks';
import { api, p } from './api.js';
import { html, ErrorBox, ShownOnce, useLoad } from './ui.js';

export function ActivatePage() {
  const [grounds, groundsError] = useLoad(() => api('/grounds'), []);
  const [offer, setOffer] = useState();
  const [error, setError] = useState();
  const [device, setDevice] = useState();
  const lookUp = async (event) => {
    event.preventDefault();
    setError(undefined);
    setOffer(undefined);
    setDevice(undefined);
    const code = new FormData(event.target).get('code').trim();
    try {
      setOffer({ code, ...(await api(p`/activate/${code}`)) });
    } catch (e) {
      setError(e);
    }
  };
  const activate = async (event) => {
    event.preventDefault();
    setError(undefined);
    const form = new FormData(event.target);
    try {
      setDevice(await api('/activate', { method: 'POST', body: { code: offer.code, option: form.get('option') ?? '', groundId: form.get('groundId') ?? '' } }));
      setOffer(undefined);
    } catch (e) {
      setError(e);
    }
  };
  return html`<h1>Activate a device</h1>
    <${ErrorBox} error=${groundsError} />
    <form onSubmit=${lookUp} class="stack">
      <label for="code">Activation code</label>
      <input id="code" name="code" required autocomplete="off" spellcheck=${false} placeholder="XXXX-XXXX-XXXX-XXXX" />
      <button type="submit">Show its options</button>
    </form>
    ${offer ? html`<form onSubmit=${activate} class="stack" aria-labelledby="choose">
      <h2 id="choose">${offer.hardware?.id ? `Hardware ${offer.hardware.id}` : 'Options'}</h2>
      ${offer.description ? html`<p>${offer.description}</p>` : ''}
      <fieldset><legend>Choose an option</legend>
        ${offer.options.map((o, i) => html`<label class="inline option"><input type="radio" name="option" value=${o.id} checked=${i === 0} />
          <span><strong>${o.description || o.device.type}</strong> <span class="muted">${o.device.type} over ${o.network.networkId}</span></span></label>`)}
      </fieldset>
      <label>Ground <select name="groundId" required>${grounds?.items.map((g) => html`<option value=${g.id}>${g.name}</option>`)}</select></label>
      <button type="submit">Activate</button>
    </form>` : ''}
    <${ErrorBox} error=${error} />
    ${device ? html`<p role="status">Activated: <a href=${p`#/device/${device.id}`}>${device.name}</a>.</p><${ShownOnce} label="Device token" token=${device.token} />` : ''}`;
}
