/**
 * Who may call what: every route of the HTTP edge (read from the service's /openapi.json, so a
 * route added without a line here fails the suite) × every kind of credential — the owner, an
 * editor and a viewer of the ground, a user of another ground, the device's own token, a partner
 * token, no token, and the ground's API keys: a viewer key, an editor key, a key of another ground,
 * an expired key and a revoked one — on the composed embedded service. An allowed call must succeed; a refused one
 * must carry its status and code: 401 UNAUTHORIZED, 403 FORBIDDEN (naming `requiredRole` when the
 * member's role is too low), 404 NOT_FOUND for a ground's resource looked up by id by a stranger.
 * Mutating routes get a fresh target for each call, so one credential's success never changes what
 * the next one meets. Every change a member or a key of the ground made, allowed or refused by role,
 * is then found in the ground's audit log, and nothing else is (docs/grounds.md "Audit log").
 */
import * as assert from 'uvu/assert';
import type { Service } from '../../../app/createService.ts';
import { suite } from '../../support/suite.ts';
import { startEmbeddedService } from '../../support/embeddedService.ts';
import { activationBody, trackerDraft } from '../../support/activationWorld.ts';
import { tempDir, waitFor } from '../../support/tmp.ts';

type KeyCred = 'keyViewer' | 'keyEditor' | 'keyOutsider' | 'keyExpired' | 'keyRevoked';
type Cred = 'owner' | 'editor' | 'viewer' | 'outsider' | 'device' | 'partner' | 'none' | KeyCred;
const CREDS: Cred[] = ['none', 'partner', 'device', 'outsider', 'viewer', 'editor', 'owner', 'keyViewer', 'keyEditor', 'keyOutsider', 'keyExpired', 'keyRevoked'];
const isKey = (cred: Cred): cred is KeyCred => cred.startsWith('key');
/** public: anyone; webhook: an LPWAN application's secret, which none of these is; any: every token. */
type Need = 'public' | 'webhook' | 'any' | 'user' | 'partner' | 'viewer' | 'editor' | 'owner';
const RANK = { viewer: 0, editor: 1, owner: 2 } as const;

interface Req {
  method: string;
  path: string;
  json?: unknown;
  /** The target device, when the call creates one: the `device` credential is its token. */
  deviceToken?: string;
}

interface Case {
  need: Need;
  /** The device's own token may make this call (its rights, unchanged by roles). */
  device?: boolean;
  /** A ground's resource found by id: for a stranger it does not exist (404). */
  byId?: boolean;
  /** A route of users that a ground's API key may call too (`need: 'user'`). */
  key?: boolean;
  /** A route a member of the role may call that a key may not (activation: docs/grounds.md). */
  noKey?: boolean;
  /** Statuses of an allowed call; default any 2xx. */
  ok?: number[];
  call(cred: Cred): Promise<Req>;
}

interface World {
  tokens: Record<Exclude<Cred, 'none' | 'device'>, string>;
  keyIds: Record<KeyCred, string>;
  ids: Record<'owner' | 'editor' | 'viewer' | 'outsider', string>;
  groundId: string;
  device: { id: string; token: string; assetIds: Record<string, string> };
  integrationId: string;
  ruleId: string;
  alarmId: string;
  partnerId: string;
  unusedCode: string;
  hardwareId: string;
}

const test = suite('roles: every route × every credential');
const tmp = tempDir('roles-matrix');
let service: Service;
let base = '';
let w: World;
let n = 0;
const next = (prefix: string) => `${prefix}-${++n}`;

async function http(method: string, path: string, token?: string, json?: unknown): Promise<{ status: number; body: any; type: string }> {
  const abort = new AbortController();
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: json === undefined ? undefined : JSON.stringify(json), signal: abort.signal });
  const type = res.headers.get('content-type') ?? '';
  // A live stream stays open: its status is what is tested.
  if (type.startsWith('text/event-stream')) {
    abort.abort();
    return { status: res.status, body: undefined, type };
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, type };
}

const ASSETS = [
  { name: 'temperature', is: 'sensor' as const, profile: { type: 'number' } },
  { name: 'light', is: 'actuator' as const, profile: { type: 'boolean' } },
];

async function freshDevice(): Promise<{ id: string; token: string }> {
  const created = await service.registry.createDevice({ groundId: w.groundId, name: next('device'), assets: ASSETS });
  return { id: created.device.id, token: created.token };
}

async function freshActivation(): Promise<string> {
  const reply = await http('POST', `/partner/${w.partnerId}/activations`, w.tokens.partner, activationBody(`${w.partnerId}/tracker`, next('hw'), [{ networkId: 'net8', data: {} }]));
  assert.is(reply.status, 201, JSON.stringify(reply.body));
  return reply.body.code as string;
}

async function freshUser(): Promise<string> {
  return (await service.registry.createUser({ name: next('user') })).entity.id;
}

const integrationBody = () => ({ name: next('app'), kind: 'webhook' as const, url: 'http://127.0.0.1:9/hook', events: ['state' as const] });
const ruleBody = () => ({ name: next('rule'), asset: 'temperature', condition: { above: 30 }, severity: 'major' });

const d = () => w.device;
const g = () => w.groundId;
const p = () => w.partnerId;
const fixed = (method: string, path: () => string, json?: () => unknown) => async (): Promise<Req> => ({ method, path: path(), json: json?.() });

/** Every route of the edge, keyed `METHOD path` as /openapi.json lists it. */
const CASES: Record<string, Case> = {
  'GET /health': { need: 'public', call: fixed('GET', () => '/health') },
  'GET /ready': { need: 'public', call: fixed('GET', () => '/ready') },
  'GET /openapi.json': { need: 'public', call: fixed('GET', () => '/openapi.json') },
  'GET /networks': { need: 'public', call: fixed('GET', () => '/networks') },
  'POST /lpwan/thethingsnetwork/uplink': { need: 'webhook', call: fixed('POST', () => '/lpwan/thethingsnetwork/uplink', () => ({})) },
  'POST /lpwan/loriot/uplink': { need: 'webhook', call: fixed('POST', () => '/lpwan/loriot/uplink', () => ({})) },
  'GET /me': { need: 'any', device: true, call: fixed('GET', () => '/me') },

  // grounds and members
  'GET /grounds': { need: 'user', key: true, call: fixed('GET', () => '/grounds') },
  'POST /grounds': { need: 'user', call: fixed('POST', () => '/grounds', () => ({ name: next('ground') })) },
  'GET /ground/{groundId}': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}`) },
  'PATCH /ground/{groundId}': { need: 'owner', call: fixed('PATCH', () => `/ground/${g()}`, () => ({ name: next('renamed') })) },
  'DELETE /ground/{groundId}': {
    need: 'owner',
    async call(cred) {
      // A key reaches its own ground only: it is refused by role there (the ground is never deleted).
      if (isKey(cred)) return { method: 'DELETE', path: `/ground/${g()}` };
      const ground = await service.registry.createGround({ name: next('doomed'), userId: w.ids.owner });
      for (const role of ['editor', 'viewer'] as const) await service.registry.setMemberRole(ground.id, w.ids[role], role);
      return { method: 'DELETE', path: `/ground/${ground.id}` };
    },
  },
  'GET /ground/{groundId}/members': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/members`) },
  'PUT /ground/{groundId}/members/{userId}': {
    need: 'owner',
    async call() {
      return { method: 'PUT', path: `/ground/${g()}/members/${await freshUser()}`, json: { role: 'viewer' } };
    },
  },
  'DELETE /ground/{groundId}/members/{userId}': {
    need: 'owner',
    async call() {
      const userId = await freshUser();
      await service.registry.setMemberRole(g(), userId, 'viewer');
      return { method: 'DELETE', path: `/ground/${g()}/members/${userId}` };
    },
  },

  // API keys
  'POST /ground/{groundId}/keys': { need: 'owner', call: fixed('POST', () => `/ground/${g()}/keys`, () => ({ name: next('key'), role: 'viewer' })) },
  'GET /ground/{groundId}/keys': { need: 'owner', call: fixed('GET', () => `/ground/${g()}/keys`) },
  // Usage
  'GET /ground/{groundId}/usage': { need: 'owner', call: fixed('GET', () => `/ground/${g()}/usage`) },
  'GET /ground/{groundId}/audit': { need: 'owner', call: fixed('GET', () => `/ground/${g()}/audit`) },
  'DELETE /ground/{groundId}/keys/{keyId}': {
    need: 'owner',
    async call() {
      const created = await service.registry.createKey(g(), { name: next('key'), role: 'editor' }, w.ids.owner);
      return { method: 'DELETE', path: `/ground/${g()}/keys/${created.key.id}` };
    },
  },

  // devices and assets
  'POST /ground/{groundId}/devices': { need: 'editor', call: fixed('POST', () => `/ground/${g()}/devices`, () => ({ name: next('device'), assets: ASSETS })) },
  'GET /ground/{groundId}/devices': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/devices`) },
  'GET /device/{id}': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}`) },
  'PATCH /device/{id}': { need: 'editor', call: fixed('PATCH', () => `/device/${d().id}`, () => ({ title: next('title') })) },
  'DELETE /device/{id}': {
    need: 'editor',
    async call() {
      const device = await freshDevice();
      return { method: 'DELETE', path: `/device/${device.id}`, deviceToken: device.token };
    },
  },
  'GET /device/{id}/assets': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/assets`) },
  'POST /device/{id}/assets': { need: 'editor', device: true, call: fixed('POST', () => `/device/${d().id}/assets`, () => ({ name: next('a'), is: 'sensor' })) },
  'GET /device/{id}/asset/{name}': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/asset/temperature`) },
  'PUT /device/{id}/asset/{name}': { need: 'editor', device: true, call: fixed('PUT', () => `/device/${d().id}/asset/${next('a')}`, () => ({ is: 'virtual' })) },
  'DELETE /device/{id}/asset/{name}': {
    need: 'editor',
    async call() {
      const name = next('a');
      await service.registry.upsertAsset(d().id, name, { is: 'sensor' });
      return { method: 'DELETE', path: `/device/${d().id}/asset/${name}` };
    },
  },

  // states
  'PUT /device/{id}/state': { need: 'editor', device: true, call: fixed('PUT', () => `/device/${d().id}/state`, () => ({ temperature: { value: 20 } })) },
  'POST /device/{id}/state': { need: 'editor', device: true, call: fixed('POST', () => `/device/${d().id}/state`, () => ({ temperature: { value: 20 } })) },
  'GET /device/{id}/state': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/state`) },
  'PUT /device/{id}/asset/{name}/state': { need: 'editor', device: true, call: fixed('PUT', () => `/device/${d().id}/asset/temperature/state`, () => ({ value: 20 })) },
  'POST /device/{id}/asset/{name}/state': { need: 'editor', device: true, call: fixed('POST', () => `/device/${d().id}/asset/temperature/state`, () => ({ value: 20 })) },
  'GET /device/{id}/asset/{name}/state': { need: 'viewer', device: true, ok: [200, 404], call: fixed('GET', () => `/device/${d().id}/asset/temperature/state`) },
  'PUT /asset/{assetId}/state': { need: 'editor', device: true, call: fixed('PUT', () => `/asset/${d().assetIds.temperature}/state`, () => ({ value: 20 })) },
  'POST /asset/{assetId}/state': { need: 'editor', device: true, call: fixed('POST', () => `/asset/${d().assetIds.temperature}/state`, () => ({ value: 20 })) },
  'GET /asset/{assetId}/state': { need: 'viewer', device: true, ok: [200, 404], call: fixed('GET', () => `/asset/${d().assetIds.temperature}/state`) },
  'POST /ground/{groundId}/states': { need: 'editor', device: true, call: fixed('POST', () => `/ground/${g()}/states`, () => ({ [d().id]: { temperature: { value: 20 } } })) },
  'GET /device/{id}/asset/{name}/states': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/asset/temperature/states`) },
  'GET /asset/{assetId}/states': { need: 'viewer', device: true, call: fixed('GET', () => `/asset/${d().assetIds.temperature}/states`) },
  'GET /ground/{groundId}/export': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/export?format=ndjson`) },
  'GET /device/{id}/rejections': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/rejections`) },

  // commands
  'PUT /device/{id}/asset/{name}/command': { need: 'editor', call: fixed('PUT', () => `/device/${d().id}/asset/light/command`, () => ({ value: true })) },
  'POST /device/{id}/asset/{name}/command': { need: 'editor', call: fixed('POST', () => `/device/${d().id}/asset/light/command`, () => ({ value: true })) },
  'PUT /asset/{assetId}/command': { need: 'editor', call: fixed('PUT', () => `/asset/${d().assetIds.light}/command`, () => ({ value: false })) },
  'POST /asset/{assetId}/command': { need: 'editor', call: fixed('POST', () => `/asset/${d().assetIds.light}/command`, () => ({ value: false })) },
  'PUT /device/{id}/command': { need: 'editor', call: fixed('PUT', () => `/device/${d().id}/command`, () => ({ light: true })) },
  'POST /device/{id}/command': { need: 'editor', call: fixed('POST', () => `/device/${d().id}/command`, () => ({ light: true })) },
  'GET /device/{id}/commands': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/commands`) },

  // integrations
  'POST /ground/{groundId}/integrations': { need: 'editor', call: fixed('POST', () => `/ground/${g()}/integrations`, integrationBody) },
  'GET /ground/{groundId}/integrations': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/integrations`) },
  'GET /integrations/{id}': { need: 'viewer', byId: true, call: fixed('GET', () => `/integrations/${w.integrationId}`) },
  'PATCH /integrations/{id}': { need: 'editor', byId: true, call: fixed('PATCH', () => `/integrations/${w.integrationId}`, () => ({ name: next('app') })) },
  'DELETE /integrations/{id}': {
    need: 'editor',
    byId: true,
    async call() {
      const created = await service.registry.createIntegration({ groundId: g(), ...integrationBody() });
      return { method: 'DELETE', path: `/integrations/${created.integration.id}` };
    },
  },
  'POST /integrations/{id}/rotate-secret': { need: 'editor', byId: true, call: fixed('POST', () => `/integrations/${w.integrationId}/rotate-secret`) },
  'POST /integrations/{id}/test': { need: 'editor', byId: true, call: fixed('POST', () => `/integrations/${w.integrationId}/test`) },

  // rules and alarms
  'POST /ground/{groundId}/rules': { need: 'editor', call: fixed('POST', () => `/ground/${g()}/rules`, ruleBody) },
  'GET /ground/{groundId}/rules': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/rules`) },
  'GET /rules/{id}': { need: 'viewer', byId: true, call: fixed('GET', () => `/rules/${w.ruleId}`) },
  'PATCH /rules/{id}': { need: 'editor', byId: true, call: fixed('PATCH', () => `/rules/${w.ruleId}`, () => ({ name: next('rule') })) },
  'DELETE /rules/{id}': {
    need: 'editor',
    byId: true,
    async call() {
      const rule = await service.registry.createRule({ groundId: g(), ...ruleBody() } as never);
      return { method: 'DELETE', path: `/rules/${rule.id}` };
    },
  },
  'GET /ground/{groundId}/alarms': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/alarms`) },
  'GET /alarms/{id}': { need: 'viewer', byId: true, call: fixed('GET', () => `/alarms/${w.alarmId}`) },
  'POST /alarms/{id}/acknowledge': { need: 'editor', byId: true, call: fixed('POST', () => `/alarms/${w.alarmId}/acknowledge`) },
  'POST /alarms/{id}/clear': { need: 'editor', byId: true, call: fixed('POST', () => `/alarms/${w.alarmId}/clear`) },

  // live streams (Server-Sent Events)
  'GET /device/{id}/live': { need: 'viewer', device: true, call: fixed('GET', () => `/device/${d().id}/live`) },
  'GET /ground/{groundId}/live': { need: 'viewer', call: fixed('GET', () => `/ground/${g()}/live`) },

  // activation: partners, and users redeeming a code into a ground (an editor's right there)
  'POST /activate': {
    need: 'editor',
    async call() {
      const code = await freshActivation();
      const offer = await http('GET', `/activate/${code}`, w.tokens.owner);
      return { method: 'POST', path: '/activate', json: { code, option: offer.body.options[0].id, groundId: g() } };
    },
  },
  'GET /activate/{code}': { need: 'user', key: true, call: fixed('GET', () => `/activate/${w.unusedCode}`) },
  'PUT /partner/{partner}/device-types/{name}': { need: 'partner', call: fixed('PUT', () => `/partner/${p()}/device-types/tracker`, () => trackerDraft) },
  'GET /partner/{partner}/device-types/{name}': { need: 'partner', call: fixed('GET', () => `/partner/${p()}/device-types/tracker`) },
  'POST /partner/{partner}/device-types/{name}/versions': { need: 'partner', call: fixed('POST', () => `/partner/${p()}/device-types/tracker/versions`) },
  'GET /partner/{partner}/device-types': { need: 'partner', call: fixed('GET', () => `/partner/${p()}/device-types`) },
  'GET /partner/{partner}/device-types/{name}/versions/{version}': { need: 'partner', call: fixed('GET', () => `/partner/${p()}/device-types/tracker/versions/1`) },
  'POST /partner/{partner}/activations': {
    need: 'partner',
    call: fixed('POST', () => `/partner/${p()}/activations`, () => activationBody(`${p()}/tracker`, next('hw'), [{ networkId: 'net8', data: {} }])),
  },
  'GET /partner/{partner}/activations': { need: 'partner', call: fixed('GET', () => `/partner/${p()}/activations`) },
  'GET /partner/{partner}/activations/{code}': { need: 'partner', call: fixed('GET', () => `/partner/${p()}/activations/${w.unusedCode}`) },
  'PATCH /partner/{partner}/activations/{code}': { need: 'partner', call: fixed('PATCH', () => `/partner/${p()}/activations/${w.unusedCode}`, () => ({ description: next('unit') })) },
  'DELETE /partner/{partner}/activations/{code}': {
    need: 'partner',
    async call() {
      return { method: 'DELETE', path: `/partner/${p()}/activations/${await freshActivation()}` };
    },
  },
  'GET /partner/{partner}/hardware/{hardwareId}/activation': { need: 'partner', call: fixed('GET', () => `/partner/${p()}/hardware/${encodeURIComponent(w.hardwareId)}/activation`) },
};

/** What `cred` must get on a route: allowed (undefined), or the refusal's status, code and role named. */
function refusal(c: Case, cred: Cred): { status: number; code: string; requiredRole?: string } | undefined {
  if (c.need === 'public') return undefined;
  if (c.need === 'webhook' || cred === 'none' || cred === 'keyExpired' || cred === 'keyRevoked') return { status: 401, code: 'UNAUTHORIZED' };
  if (c.need === 'any') return undefined;
  if (cred === 'partner') return c.need === 'partner' ? undefined : { status: 403, code: 'FORBIDDEN' };
  if (c.need === 'partner') return { status: 403, code: 'FORBIDDEN' };
  if (cred === 'device') return c.device === true ? undefined : { status: 403, code: 'FORBIDDEN' };
  if (isKey(cred)) return keyRefusal(c, cred);
  if (c.need === 'user') return undefined;
  if (cred === 'outsider') return c.byId === true ? { status: 404, code: 'NOT_FOUND' } : { status: 403, code: 'FORBIDDEN' };
  return RANK[cred] >= RANK[c.need] ? undefined : { status: 403, code: 'FORBIDDEN', requiredRole: c.need };
}

/** A key of the ground holds its role there; one of another ground is a stranger; user-only routes refuse keys. */
function keyRefusal(c: Case, cred: KeyCred): { status: number; code: string; requiredRole?: string } | undefined {
  if (c.need === 'user') return c.key === true ? undefined : { status: 403, code: 'FORBIDDEN' };
  if (c.noKey === true) return { status: 403, code: 'FORBIDDEN' };
  if (cred === 'keyOutsider') return c.byId === true ? { status: 404, code: 'NOT_FOUND' } : { status: 403, code: 'FORBIDDEN' };
  const role = cred === 'keyEditor' ? 'editor' : 'viewer';
  return RANK[role] >= RANK[c.need as keyof typeof RANK] ? undefined : { status: 403, code: 'FORBIDDEN', requiredRole: c.need };
}

test.before(async () => {
  ({ service, base } = await startEmbeddedService({ dir: tmp.dir, integrationsAllowHosts: ['127.0.0.1'] }));
  const r = service.registry;
  const users = Object.fromEntries(await Promise.all((['owner', 'editor', 'viewer', 'outsider'] as const).map(async (role) => [role, await r.createUser({ name: role })])));
  const ground = await r.createGround({ name: 'team', userId: users.owner.entity.id });
  await r.setMemberRole(ground.id, users.editor.entity.id, 'editor');
  await r.setMemberRole(ground.id, users.viewer.entity.id, 'viewer');
  const elsewhere = await r.createGround({ name: 'elsewhere', userId: users.outsider.entity.id });
  const key = (groundId: string, role: 'viewer' | 'editor', by: string, expiresAt?: number) =>
    r.createKey(groundId, { name: next('key'), role, ...(expiresAt !== undefined && { expiresAt }) }, by);
  const keys = {
    keyViewer: await key(ground.id, 'viewer', users.owner.entity.id),
    keyEditor: await key(ground.id, 'editor', users.owner.entity.id),
    keyOutsider: await key(elsewhere.id, 'editor', users.outsider.entity.id),
    keyExpired: await key(ground.id, 'editor', users.owner.entity.id, Date.now() + 200),
    keyRevoked: await key(ground.id, 'editor', users.owner.entity.id),
  };
  assert.ok(await r.revokeKey(ground.id, keys.keyRevoked.key.id));
  const partner = await r.createPartner({ name: 'acme' });
  const created = await r.createDevice({ groundId: ground.id, name: 'thermo', assets: ASSETS });
  const integration = await r.createIntegration({ groundId: ground.id, ...integrationBody() });
  const rule = await r.createRule({ groundId: ground.id, ...ruleBody() } as never);
  w = {
    tokens: {
      owner: users.owner.token, editor: users.editor.token, viewer: users.viewer.token, outsider: users.outsider.token, partner: partner.token,
      ...Object.fromEntries(Object.entries(keys).map(([cred, created]) => [cred, created.token])) as Record<KeyCred, string>,
    },
    keyIds: Object.fromEntries(Object.entries(keys).map(([cred, created]) => [cred, created.key.id])) as Record<KeyCred, string>,
    ids: { owner: users.owner.entity.id, editor: users.editor.entity.id, viewer: users.viewer.entity.id, outsider: users.outsider.entity.id },
    groundId: ground.id,
    device: { id: created.device.id, token: created.token, assetIds: Object.fromEntries(created.device.assets.map((a) => [a.name, a.id])) },
    integrationId: integration.integration.id,
    ruleId: rule.id,
    alarmId: '',
    partnerId: partner.entity.id,
    unusedCode: '',
    hardwareId: '',
  };
  assert.is((await http('PUT', `/partner/${p()}/device-types/tracker`, partner.token, trackerDraft)).status, 201);
  assert.is((await http('POST', `/partner/${p()}/device-types/tracker/versions`, partner.token)).status, 201);
  w.hardwareId = next('hw');
  const kept = await http('POST', `/partner/${p()}/activations`, partner.token, activationBody(`${p()}/tracker`, w.hardwareId, [{ networkId: 'net8', data: {} }]));
  w.unusedCode = kept.body.code;
  // An alarm, raised by the engine from a state above the rule's threshold.
  assert.is((await http('PUT', `/device/${d().id}/asset/temperature/state`, created.token, { value: 40 })).status, 202);
  await waitFor(async () => (await r.listAlarms(ground.id, { limit: 1 })).length === 1, 10_000, 'the rule raises an alarm');
  w.alarmId = (await r.listAlarms(ground.id, { limit: 1 }))[0].id;
  await waitFor(async () => Date.now() > keys.keyExpired.key.expiresAt!, 5_000, 'the expired key expires');
});

test.after(async () => {
  await service.stop();
  tmp.remove();
});

test('the matrix covers every route of /openapi.json, and nothing else', async () => {
  const doc = (await http('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  const served = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  assert.equal(Object.keys(CASES).sort(), served, 'every route has a line in CASES');
});

/** States sent are data, not changes: the audit log leaves them out. */
const UNAUDITED = new Set(['putDeviceState', 'putDeviceAssetState', 'putAssetState', 'postGatewayStates']);
const MEMBERS: Cred[] = ['owner', 'editor', 'viewer', 'keyViewer', 'keyEditor'];

/** The audit entry `cred`'s call is recorded as (`ground operation actor status code`), or undefined when it is none of a ground's. */
function auditLine(c: Case, cred: Cred, req: Req, operation: string, reply: { status: number; body: any }): string | undefined {
  if (req.method === 'GET' || !MEMBERS.includes(cred) || !(c.need in RANK) || UNAUDITED.has(operation.replace(/_(put|post)$/, ''))) return undefined;
  const groundId = /^\/ground\/([0-9A-Za-z]{22})/.exec(req.path)?.[1] ?? w.groundId;
  const actor = isKey(cred) ? `key:${w.keyIds[cred]}` : `user:${w.ids[cred as 'owner' | 'editor' | 'viewer']}`;
  return `${groundId} ${operation} ${actor} ${reply.status} ${reply.status >= 400 ? reply.body?.code : '-'}`;
}

async function auditLines(groundId: string): Promise<string[]> {
  const lines: string[] = [];
  let before: { at: number; seq: number } | undefined;
  for (;;) {
    const page = await service.registry.listAudit(groundId, { limit: 1000, ...(before === undefined ? {} : { before }) });
    lines.push(...page.map((e) => `${e.groundId} ${e.operation} ${e.actor.kind}:${e.actor.id} ${e.result.status} ${e.result.code ?? '-'}`));
    if (page.length < 1000) return lines;
    before = { at: page[999].at, seq: page[999].seq };
  }
}

test('no call is allowed wrongly, every allowed call succeeds, every refusal has its status and code; the changes are in the audit log', async () => {
  const doc = (await http('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { operationId: string }>> };
  const expectedAudit: string[] = [];
  const failures: string[] = [];
  for (const [route, c] of Object.entries(CASES)) {
    const [method, template] = route.split(' ');
    const operation = doc.paths[template][method.toLowerCase()].operationId;
    for (const cred of CREDS) {
      const req = await c.call(cred);
      const token = cred === 'none' ? undefined : cred === 'device' ? req.deviceToken ?? w.device.token : w.tokens[cred];
      const reply = await http(req.method, req.path, token, req.json);
      const line = auditLine(c, cred, req, operation, reply);
      if (line !== undefined) expectedAudit.push(line);
      const expected = refusal(c, cred);
      const where = `${route} as ${cred}: ${reply.status} ${JSON.stringify(reply.body)?.slice(0, 200)}`;
      if (expected === undefined) {
        const ok = c.ok === undefined ? reply.status >= 200 && reply.status < 300 : c.ok.includes(reply.status);
        if (!ok) failures.push(`allowed, but ${where}`);
        continue;
      }
      if (reply.status !== expected.status || reply.body?.code !== expected.code) {
        failures.push(`expected ${expected.status} ${expected.code}, got ${where}`);
        continue;
      }
      if (!reply.type.startsWith('application/problem+json')) failures.push(`not problem+json: ${where}`);
      if (reply.body?.requiredRole !== expected.requiredRole) failures.push(`requiredRole ${String(expected.requiredRole)} expected: ${where}`);
    }
  }
  assert.equal(failures, []);

  // Every member's and key's change, each once; no stranger's, device's, partner's or bad token's.
  assert.ok(expectedAudit.length > 100, `${expectedAudit.length} changes`);
  const grounds = [...new Set(expectedAudit.map((line) => line.split(' ')[0]))];
  let found: string[] = [];
  await waitFor(async () => {
    found = (await Promise.all(grounds.map(auditLines))).flat();
    return found.length >= expectedAudit.length;
  }, 10_000, 'the audit entries').catch(() => undefined); // the comparison below shows what is missing
  assert.equal(found.sort(), expectedAudit.sort());
  assert.ok(expectedAudit.some((line) => line.endsWith(' 403 FORBIDDEN')), 'refusals by role among them');
});

test.run();
