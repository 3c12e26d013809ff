// The console shell: sign in, hash routes (a fragment never reaches a server or its logs), and
// the navigation for a user or a partner token.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, session } from './api.js';
import { html, ErrorBox } from './ui.js';
import { GroundsPage, GroundPage } from './ground.js';
import { DevicePage } from './device.js';
import { AssetPage } from './asset.js';
import { IntegrationsPage } from './integrations.js';
import { RulesPage } from './rules.js';
import { AlarmsPage } from './alarms.js';
import { MembersPage } from './members.js';
import { ActivatePage } from './activate.js';
import { ActivationsPage, NetworksPage } from './partner.js';
import { DeviceTypesPage } from './deviceTypes.js';

function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

function SignIn({ onSignedIn }) {
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    const token = new FormData(event.target).get('token').trim();
    setBusy(true);
    session.set(token);
    try {
      const me = await api('/me');
      if (me.scope === 'device') throw Object.assign(new Error('a device token cannot sign in to the console; use a user or partner token'), { code: 'FORBIDDEN' });
      onSignedIn(me);
    } catch (e) {
      session.clear();
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Fleetstream console</h1>
    <form onSubmit=${submit}>
      <label for="token">User or partner token</label>
      <input id="token" name="token" type="password" autocomplete="off" required spellcheck=${false} placeholder="fsu_… or fsp_…" />
      <p class="hint">Kept in this tab's session storage only; it is cleared when the tab closes. <code>fleetstream admin quickstart</code> prints one.</p>
      <button type="submit" disabled=${busy}>Sign in</button>
    </form>
    <${ErrorBox} error=${error} />
  </main>`;
}

function Nav({ me, onSignOut }) {
  const links = me.scope === 'user'
    ? [['#/', 'Grounds'], ['#/activate', 'Activate a device']]
    : [['#/activations', 'Activations'], ['#/device-types', 'Device types'], ['#/networks', 'Networks']];
  return html`<header class="top">
    <a class="brand" href="#/">Fleetstream</a>
    <nav aria-label="main"><ul>${links.map(([href, text]) => html`<li><a href=${href}>${text}</a></li>`)}</ul></nav>
    <span class="who">${me.scope} <strong>${me.name}</strong></span>
    <button type="button" class="link" onClick=${onSignOut}>Sign out</button>
  </header>`;
}

function Page({ me, route }) {
  const [head, a, b, c] = route;
  if (me.scope === 'partner') {
    if (head === 'device-types') return html`<${DeviceTypesPage} me=${me} name=${a} />`;
    if (head === 'networks') return html`<${NetworksPage} />`;
    return html`<${ActivationsPage} me=${me} />`;
  }
  if (head === 'ground' && a && b === 'integrations') return html`<${IntegrationsPage} groundId=${a} />`;
  if (head === 'ground' && a && b === 'rules') return html`<${RulesPage} groundId=${a} />`;
  if (head === 'ground' && a && b === 'alarms') return html`<${AlarmsPage} groundId=${a} />`;
  if (head === 'ground' && a && b === 'members') return html`<${MembersPage} groundId=${a} />`;
  if (head === 'ground' && a) return html`<${GroundPage} groundId=${a} />`;
  if (head === 'device' && a && b === 'asset' && c) return html`<${AssetPage} key=${`${a}/${c}`} deviceId=${a} name=${c} />`;
  if (head === 'device' && a) return html`<${DevicePage} deviceId=${a} />`;
  if (head === 'activate') return html`<${ActivatePage} />`;
  return html`<${GroundsPage} />`;
}

function App() {
  const [me, setMe] = useState();
  const [checking, setChecking] = useState(Boolean(session.token()));
  const route = useRoute();
  useEffect(() => {
    if (!session.token()) return;
    api('/me').then(setMe, () => session.clear()).finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p class="boot">Signing in…</p>`;
  if (!me) return html`<${SignIn} onSignedIn=${setMe} />`;
  const signOut = () => { session.clear(); setMe(undefined); location.hash = ''; };
  return html`<${Nav} me=${me} onSignOut=${signOut} /><main id="main"><${Page} me=${me} route=${route} /></main>`;
}

const root = document.getElementById('app');
// Preact keeps nodes it did not render: the "Loading…" placeholder goes first.
root.textContent = '';
render(html`<${App} />`, root);
