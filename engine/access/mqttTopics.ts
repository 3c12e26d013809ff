/**
 * MQTT topic shapes of the spec and the access decisions on them, as pure functions (the embedded
 * edge and the external-broker client both use them).
 *
 * Uplink (spec §4.1, §4.2): `asset/<AssetID>/state`, `device/<DeviceID>/asset/<AssetName>/state`,
 * `device/<DeviceID>/state`. Downlink (spec §4.3): `asset/<AssetID>/command`,
 * `device/<DeviceID>/asset/<AssetName>/command`. Feed (AllThingsTalk habit, stored states pushed
 * back): `device/<DeviceID>/asset/<AssetName>/feed`. Alarm changes of the asset (docs/rules.md):
 * `device/<DeviceID>/asset/<AssetName>/alarm` (and `asset/<AssetID>/alarm`).
 *
 * Who may do what:
 *   - a device token publishes states of its own device only, to assets it has;
 *   - a device token subscribes to its own command, feed and alarm topics only (`+` allowed for the asset
 *     name, as the AllThingsTalk SDKs subscribe `device/<id>/asset/+/command`); `#`, `+` in place of
 *     a device or asset id, and `$share`/`$SYS` filters are refused;
 *   - a user token subscribes to the feed and alarm topics of devices of its grounds; it publishes nothing.
 */
import type { ErrorCode } from '../kernel/errors.ts';
import type { AssetInfo, DeviceInfo } from '../ports/directory.ts';

export type UplinkTopic =
  | { kind: 'assetState'; assetId: string }
  | { kind: 'deviceAssetState'; deviceId: string; asset: string }
  | { kind: 'deviceState'; deviceId: string };

export type Refusal = { ok: false; code: ErrorCode; reason: string };
export type Decision<T> = { ok: true; value: T } | Refusal;

/** Who a connection speaks for (engine/ports/registry Principal; a key token never connects: handleConnect). */
export interface MqttPrincipal {
  scope: 'device' | 'user' | 'partner' | 'key';
  subjectId: string;
}

const refuse = (code: ErrorCode, reason: string): Refusal => ({ ok: false, code, reason });

/** Ids and asset names are non-empty and carry no wildcard (a topic level never holds '/'). */
function plainLevel(level: string | undefined): level is string {
  return level !== undefined && level.length > 0 && !level.includes('+') && !level.includes('#');
}

/** An uplink topic, or undefined for any other topic. */
export function parseUplinkTopic(topic: string): UplinkTopic | undefined {
  const l = topic.split('/');
  if (l.length === 3 && l[0] === 'asset' && l[2] === 'state' && plainLevel(l[1])) return { kind: 'assetState', assetId: l[1] };
  if (l.length === 3 && l[0] === 'device' && l[2] === 'state' && plainLevel(l[1])) return { kind: 'deviceState', deviceId: l[1] };
  if (l.length === 5 && l[0] === 'device' && l[2] === 'asset' && l[4] === 'state' && plainLevel(l[1]) && plainLevel(l[3])) {
    return { kind: 'deviceAssetState', deviceId: l[1], asset: l[3] };
  }
  return undefined;
}

/** Where an accepted uplink goes: the device and, for an asset state, the asset name. */
export interface UplinkTarget {
  deviceId: string;
  asset?: string;
}

/**
 * May `who` publish on `topic`? `device` is the publishing device's own record (device tokens);
 * unknown assets are refused here so nothing is appended for them.
 */
export function authorizeUplink(who: MqttPrincipal, topic: string, device: DeviceInfo | undefined): Decision<UplinkTarget> {
  if (who.scope !== 'device') return refuse('FORBIDDEN', `a ${who.scope} token cannot publish states`);
  const parsed = parseUplinkTopic(topic);
  if (parsed === undefined) return refuse('FORBIDDEN', `topic "${shorten(topic)}" is not an uplink topic`);
  if (device === undefined || device.id !== who.subjectId) return refuse('UNKNOWN_DEVICE', 'the device of this token no longer exists');
  switch (parsed.kind) {
    case 'deviceState':
      if (parsed.deviceId !== device.id) return refuse('FORBIDDEN', 'a device publishes only to its own topics');
      return { ok: true, value: { deviceId: device.id } };
    case 'deviceAssetState': {
      if (parsed.deviceId !== device.id) return refuse('FORBIDDEN', 'a device publishes only to its own topics');
      if (!device.assets.some((a) => a.name === parsed.asset)) return refuse('UNKNOWN_ASSET', `device has no asset "${shorten(parsed.asset)}"`);
      return { ok: true, value: { deviceId: device.id, asset: parsed.asset } };
    }
    case 'assetState': {
      const asset = device.assets.find((a) => a.id === parsed.assetId);
      // Another device's asset and a missing asset look the same to a device token.
      if (asset === undefined) return refuse('FORBIDDEN', 'not an asset of this device');
      return { ok: true, value: { deviceId: device.id, asset: asset.name } };
    }
  }
}

/**
 * Where an uplink from an external broker goes (external broker mode): the broker authenticated
 * the publisher and enforced the ACLs, and Fleetstream cannot see who published, so the topic is
 * trusted. `device` is the device the topic names (for `asset/<AssetID>/state`: the device owning
 * that asset), undefined when unknown.
 */
export function routeTrustedUplink(parsed: UplinkTopic, device: DeviceInfo | undefined): Decision<UplinkTarget> {
  if (device === undefined) {
    return parsed.kind === 'assetState'
      ? refuse('UNKNOWN_ASSET', `no asset with id "${shorten(parsed.assetId)}"`)
      : refuse('UNKNOWN_DEVICE', `no device "${shorten(parsed.deviceId)}"`);
  }
  switch (parsed.kind) {
    case 'deviceState':
      if (parsed.deviceId !== device.id) return refuse('UNKNOWN_DEVICE', `no device "${shorten(parsed.deviceId)}"`);
      return { ok: true, value: { deviceId: device.id } };
    case 'deviceAssetState':
      if (parsed.deviceId !== device.id) return refuse('UNKNOWN_DEVICE', `no device "${shorten(parsed.deviceId)}"`);
      if (!device.assets.some((a) => a.name === parsed.asset)) return refuse('UNKNOWN_ASSET', `device has no asset "${shorten(parsed.asset)}"`);
      return { ok: true, value: { deviceId: device.id, asset: parsed.asset } };
    case 'assetState': {
      const asset = device.assets.find((a) => a.id === parsed.assetId);
      if (asset === undefined) return refuse('UNKNOWN_ASSET', `no asset with id "${shorten(parsed.assetId)}"`);
      return { ok: true, value: { deviceId: device.id, asset: asset.name } };
    }
  }
}

/** The device (or asset id) a subscription filter is about, before any lookup. */
export type FilterSubject =
  | { kind: 'device'; deviceId: string; asset: string | '+'; channel: FilterChannel }
  | { kind: 'asset'; assetId: string; channel: FilterChannel };

/** What a subscription follows: commands (a device), stored states, alarm changes. */
export type FilterChannel = 'command' | 'feed' | 'alarm';

/** Parses the only filter shapes anyone may subscribe to; undefined for anything else. */
export function parseFilter(filter: string): FilterSubject | undefined {
  const l = filter.split('/');
  const channel = l[l.length - 1];
  if (channel !== 'command' && channel !== 'feed' && channel !== 'alarm') return undefined;
  if (l.length === 3 && l[0] === 'asset' && plainLevel(l[1])) return { kind: 'asset', assetId: l[1], channel };
  if (l.length === 5 && l[0] === 'device' && l[2] === 'asset' && plainLevel(l[1]) && (l[3] === '+' || plainLevel(l[3]))) {
    return { kind: 'device', deviceId: l[1], asset: l[3], channel };
  }
  return undefined;
}

/**
 * May `who` subscribe to `filter`? `device` is the device the filter names (for an asset-id filter:
 * the device owning that asset, undefined when unknown); `member` whether a user token belongs to
 * that device's ground, or a key token is one of that ground's.
 */
export function authorizeSubscription(
  who: MqttPrincipal,
  filter: string,
  device: DeviceInfo | undefined,
  member = false,
): Decision<FilterSubject> {
  const subject = parseFilter(filter);
  if (subject === undefined) return refuse('FORBIDDEN', `filter "${shorten(filter)}" is not a command, feed or alarm topic of one device`);
  if (who.scope === 'partner') return refuse('FORBIDDEN', 'a partner token cannot subscribe');
  if (device === undefined) return refuse('FORBIDDEN', 'no such device or asset');
  if (subject.kind === 'device' && subject.deviceId !== device.id) return refuse('FORBIDDEN', 'no such device');
  if (subject.kind === 'asset' && !device.assets.some((a) => a.id === subject.assetId)) return refuse('FORBIDDEN', 'no such asset');
  if (who.scope === 'device') {
    if (who.subjectId !== device.id) return refuse('FORBIDDEN', 'a device subscribes only to its own topics');
    return { ok: true, value: subject };
  }
  if (subject.channel === 'command') return refuse('FORBIDDEN', `a ${who.scope} token subscribes to feeds and alarms only; commands go to the device`);
  if (!member) return refuse('FORBIDDEN', who.scope === 'key' ? 'not a device of the key\'s ground' : 'not a member of the ground of this device');
  return { ok: true, value: subject };
}

/** MQTT topic filter matching (`+` one level, `#` the rest), for delivery bookkeeping. */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

/** The two topics an asset command goes to (spec §4.3). */
export function commandTopics(deviceId: string, asset: Pick<AssetInfo, 'id' | 'name'>): [string, string] {
  return [`asset/${asset.id}/command`, `device/${deviceId}/asset/${asset.name}/command`];
}

export function feedTopic(deviceId: string, asset: string): string {
  return `device/${deviceId}/asset/${asset}/feed`;
}

export function alarmTopic(deviceId: string, asset: string): string {
  return `device/${deviceId}/asset/${asset}/alarm`;
}

/** JSON device state or CBOR: MQTT 5 content type when given, else the first byte (spec §4.2). */
export function detectStateFormat(body: Uint8Array, contentType?: string): 'json' | 'cbor' {
  if (contentType !== undefined) {
    const base = contentType.split(';')[0].trim().toLowerCase();
    if (base === 'application/cbor') return 'cbor';
    if (base === 'application/json') return 'json';
  }
  // A JSON device state is an object ('{' after optional whitespace), a batch an array ('['). A
  // CBOR device state is a map (major type 5), a batch an array (major type 4), or a tagged item:
  // their first byte is never '{' or '[' (0x7b, 0x5b start CBOR text and byte strings).
  for (const b of body) {
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue;
    return b === 0x7b || b === 0x5b ? 'json' : 'cbor';
  }
  return 'json';
}

/**
 * The MQTT channel's own rules for an uplink payload, before admission decides what it yields: its
 * size, and its content type — JSON for an asset state (spec §2.1), JSON or CBOR for a device state
 * (the MQTT 5 content type when the client sent one, else the first byte; detectStateFormat).
 */
export function uplinkContentType(target: UplinkTarget, body: Uint8Array, maxBytes: number, contentType?: string): Decision<'json' | 'cbor'> {
  if (body.byteLength > maxBytes) {
    return { ok: false, code: 'PAYLOAD_TOO_LARGE', reason: `payload of ${body.byteLength} bytes exceeds ${maxBytes}` };
  }
  return { ok: true, value: target.asset !== undefined ? 'json' : detectStateFormat(body, contentType) };
}

export function shorten(text: string, max = 80): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
