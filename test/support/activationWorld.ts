/**
 * Partners, users and device types for the http-activation*.test.ts suites: everything a test needs
 * to create activations and redeem them over HTTP, made fresh for each test so tests never share
 * hardware ids or codes.
 */
import { randomBytes } from 'node:crypto';
import * as assert from 'uvu/assert';
import type { EdgeHarness, Reply } from './edgeHarness.ts';

export const ACTIVATION_KEYS = ['code', 'description', 'status', 'activatedDeviceId', 'activatedOptionId', 'hardware', 'options'];
export const OPTION_KEYS = ['id', 'description', 'device', 'network'];
export const CODE_RE = /^[0-9A-HJKMNP-TV-Z]{16}$/;
export const ID_RE = /^[0-9A-Za-z]{22}$/;
/** Spec §2.8: LoRaWAN data answers these, null when not supplied. */
export const LORA = { activationMethod: 'abp', appEui: null, devAddr: null, gatewayEui: null, appSKey: null, nwkSKey: null };

/** A tracker: what a device activated from it must accept and refuse. */
export const trackerDraft = {
  title: 'GPS tracker',
  description: 'location, temperature and a buzzer',
  assets: [
    { name: 'location', is: 'sensor', profile: { type: 'object', properties: { latitude: { type: 'number' }, longitude: { type: 'number' } }, required: ['latitude', 'longitude'] } },
    { name: 'temperature', title: 'Temperature', is: 'sensor', profile: { type: 'number', minimum: -40, maximum: 85 } },
    { name: 'buzzer', is: 'actuator', profile: { type: 'boolean' } },
  ],
  payload: { format: 'cbor' },
};

export interface Party {
  id: string;
  token: string;
}

export interface ActivationWorld {
  partner: Party;
  rival: Party;
  user: Party;
  stranger: Party;
  groundId: string;
  /** `<partner>/tracker`, published once (version 1). */
  tracker: string;
  /** A fresh hardware id. */
  hw(prefix?: string): string;
  /** A fresh 16-hex-digit devEui. */
  eui(): string;
  create(body: unknown, token?: string): Promise<Reply>;
}

export async function activationWorld(h: EdgeHarness): Promise<ActivationWorld> {
  const tag = randomBytes(3).toString('hex');
  const p = await h.registry.createPartner({ name: `partner-${tag}` });
  const r = await h.registry.createPartner({ name: `rival-${tag}` });
  const u = await h.registry.createUser({ name: `user-${tag}` });
  const s = await h.registry.createUser({ name: `stranger-${tag}` });
  const ground = await h.registry.createGround({ name: `ground-${tag}`, userId: u.entity.id });
  const partner = { id: p.entity.id, token: p.token };
  const saved = await h.request('PUT', `/partner/${partner.id}/device-types/tracker`, { token: partner.token, json: trackerDraft });
  assert.is(saved.status, 201, saved.text);
  const published = await h.request('POST', `/partner/${partner.id}/device-types/tracker/versions`, { token: partner.token });
  assert.is(published.status, 201, published.text);
  let n = 0;
  return {
    partner,
    rival: { id: r.entity.id, token: r.token },
    user: { id: u.entity.id, token: u.token },
    stranger: { id: s.entity.id, token: s.token },
    groundId: ground.id,
    tracker: `${partner.id}/tracker`,
    hw: (prefix = 'hw') => `${prefix}-${tag}-${n++}`,
    eui: () => randomBytes(8).toString('hex').toUpperCase(),
    create: (body, token = partner.token) => h.request('POST', `/partner/${partner.id}/activations`, { token, json: body }),
  };
}

/** An activation request with one option per network given. */
export function activationBody(type: string, hardwareId: string, networks: Array<{ networkId: string; data?: Record<string, unknown> }>, description = 'unit') {
  return {
    description,
    hardware: { id: hardwareId },
    options: networks.map((network, i) => ({ description: `option ${i}`, device: { type }, network })),
  };
}

/** A problem+json answer with this status and code whose `errors` name `path`. */
export function assertProblem(reply: Reply, status: number, code: string, path?: string): void {
  assert.is(reply.status, status, `${status} expected: ${reply.text}`);
  assert.is(reply.headers.get('content-type'), 'application/problem+json');
  assert.is(reply.json.code, code, reply.text);
  if (path !== undefined) {
    const paths = (reply.json.errors ?? []).map((e: { path: string }) => e.path);
    assert.ok(paths.includes(path), `errors name ${path}: ${reply.text}`);
  }
}
