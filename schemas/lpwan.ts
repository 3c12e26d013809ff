/**
 * LPWAN network servers (DESIGN.md §2 "LNS ──webhook──► lpwan adapter", §6): the applications
 * Fleetstream accepts webhooks from and pushes downlinks to, the uplink messages of The Things
 * Stack and LORIOT as they arrive (only the fields read; everything else is ignored), and the
 * webhook answers. Types derive from these schemas.
 */
import Type, { type Static } from 'typebox';

/** Networks with a webhook adapter (ids of schemas/networks.json). */
export const LpwanNetworkId = Type.Union([Type.Literal('thethingsnetwork'), Type.Literal('loriot')]);
export type LpwanNetworkId = Static<typeof LpwanNetworkId>;

/** The Things Stack downlink priorities (ttn.lorawan.v3.TxSchedulePriority). */
export const TtsPriority = Type.Union([
  Type.Literal('LOWEST'), Type.Literal('LOW'), Type.Literal('BELOW_NORMAL'), Type.Literal('NORMAL'),
  Type.Literal('ABOVE_NORMAL'), Type.Literal('HIGH'), Type.Literal('HIGHEST'),
]);
export type TtsPriority = Static<typeof TtsPriority>;

/**
 * Where device commands of an application's devices go: The Things Stack's webhook downlink queue
 * `POST {baseUrl}/api/v3/as/applications/{applicationId}/webhooks/{webhookId}/devices/{device}/down/push`
 * with `Authorization: Bearer {apiKey}`.
 */
export const TtsDownlinkSettings = Type.Object({
  /** The Things Stack cluster, e.g. `https://eu1.cloud.thethings.network` (no trailing path). */
  baseUrl: Type.String({ pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$', maxLength: 512 }),
  webhookId: Type.String({ pattern: '^[a-z0-9](?:[-]?[a-z0-9]){1,35}$' }),
  /** An application API key with the right to write downlink traffic (`NNSXS.…`). */
  apiKey: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[\\x21-\\x7e]+$' }),
  /** LoRaWAN FPort of device commands, 1–223. Default 1. */
  fPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 223 })),
  /** Default NORMAL. */
  priority: Type.Optional(TtsPriority),
  /**
   * The Things Stack end device id of a device, from its devEui: `{devEui}` is replaced by the EUI in
   * lower case, `{DEVEUI}` in upper case. Default `eui-{devEui}` (the id The Things Stack Console
   * proposes when a device is registered by its EUI).
   */
  deviceIdTemplate: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_{}A-Z-]+$' })),
});
export type TtsDownlinkSettings = Static<typeof TtsDownlinkSettings>;

/**
 * One network-server application. Its webhook sends `Authorization: Bearer <secret>` (or the bare
 * secret); the secret is configured in the clear (`secret`) or, better, as its SHA-256 in hex
 * (`secretSha256`: `printf %s "$SECRET" | sha256sum`). Exactly one of the two.
 */
export const LpwanApplicationConfig = Type.Object({
  networkId: LpwanNetworkId,
  /** The Things Stack application id (checked against every uplink's); for LORIOT, the application's id as a label. */
  applicationId: Type.String({ pattern: '^[0-9A-Za-z](?:[_-]?[0-9A-Za-z]){1,35}$' }),
  secret: Type.Optional(Type.String({ minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' })),
  secretSha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
  /** The Things Stack only: where device commands are pushed. Absent: commands to its devices fail. */
  downlink: Type.Optional(TtsDownlinkSettings),
}, { additionalProperties: false });
export type LpwanApplicationConfig = Static<typeof LpwanApplicationConfig>;

/** The file named by `--lpwan-applications` / LPWAN_APPLICATIONS_FILE. */
export const LpwanApplicationsDocument = Type.Object({
  applications: Type.Array(LpwanApplicationConfig, { maxItems: 10_000 }),
}, { additionalProperties: false });
export type LpwanApplicationsDocument = Static<typeof LpwanApplicationsDocument>;

// ---- uplink messages as the network servers send them ----

/** The Things Stack `ApplicationUp` with an `uplink_message` (JSON webhook format). */
export const TtsUplinkMessage = Type.Object({
  end_device_ids: Type.Object({
    device_id: Type.String(),
    application_ids: Type.Object({ application_id: Type.String() }),
    dev_eui: Type.Optional(Type.String({ description: '16 hex digits' })),
  }),
  received_at: Type.Optional(Type.String({ format: 'date-time', description: 'Application Server receive time' })),
  uplink_message: Type.Optional(Type.Object({
    f_port: Type.Optional(Type.Integer({ minimum: 1, maximum: 255 })),
    f_cnt: Type.Optional(Type.Integer()),
    frm_payload: Type.Optional(Type.String({ description: 'base64; absent when empty' })),
    received_at: Type.Optional(Type.String({ format: 'date-time', description: 'Network Server receive time: the states\' time' })),
  })),
  simulated: Type.Optional(Type.Boolean({ description: 'sent from the console, not by the device: acknowledged `ignored`, never stored' })),
  correlation_ids: Type.Optional(Type.Array(Type.String())),
}, { description: 'The Things Stack webhook uplink message (other message types are acknowledged and ignored)' });
export type TtsUplinkMessage = Static<typeof TtsUplinkMessage>;

/** LORIOT application output, uplink data message (`cmd: "rx"`). */
export const LoriotUplinkMessage = Type.Object({
  cmd: Type.String({ description: '`rx`; other commands are acknowledged and ignored' }),
  EUI: Type.String({ description: 'device EUI, 16 hex digits' }),
  ts: Type.Optional(Type.Integer({ description: 'server time, epoch ms: the states\' time' })),
  port: Type.Optional(Type.Integer({ minimum: 0, maximum: 255 })),
  fcnt: Type.Optional(Type.Integer({ description: 'frame counter: with EUI and ts, the identity of a frame (a repeated delivery is stored once)' })),
  data: Type.Optional(Type.String({ description: 'hex; absent when the network server holds no AppSKey (`encdata`)' })),
});
export type LoriotUplinkMessage = Static<typeof LoriotUplinkMessage>;

/**
 * The webhook's answer: `accepted` (durable in the log), `dropped` (can never succeed — recorded as
 * a dead letter with `code`, and, for a known device, in its rejections) or `ignored` (not an
 * uplink). All three are 202 so the network server neither retries nor marks the webhook failing.
 */
export const LpwanUplinkAnswer = Type.Object({
  status: Type.Union([Type.Literal('accepted'), Type.Literal('dropped'), Type.Literal('ignored')]),
  deviceId: Type.Optional(Type.String()),
  uplinkId: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
  /**
   * true: this message was delivered before (the same network message id, docs/lpwan.md) and this
   * is the first delivery's answer; nothing was stored or recorded again.
   */
  repeated: Type.Optional(Type.Boolean()),
});
export type LpwanUplinkAnswer = Static<typeof LpwanUplinkAnswer>;
