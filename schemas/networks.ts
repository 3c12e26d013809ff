/**
 * Shape of the activation networks table (schemas/networks.json; spec §2.8, DESIGN.md §6). The
 * table itself is data; engine/activation/networks.ts checks it against this schema when it loads.
 */
import Type, { type Static } from 'typebox';

const KeyName = Type.String({ pattern: '^[a-z][A-Za-z0-9]{0,31}$' });

export const NetworkKind = Type.Object({
  description: Type.String(),
  /** Keys a network of this kind accepts besides its required ones; LoRaWAN answers them as null when not supplied. */
  optional: Type.Array(KeyName),
  /** Values of optional keys when not supplied (spec §2.8: `activationMethod` is `abp`). */
  defaults: Type.Record(Type.String(), Type.String()),
}, { additionalProperties: false });

export const NetworkKey = Type.Object({
  description: Type.String(),
  /** Every value is a string matching this. */
  pattern: Type.String(),
  /** `hex`: separators removed, upper case (a devEui is looked up whatever way it was written). */
  normalise: Type.Optional(Type.Literal('hex')),
}, { additionalProperties: false });
export type NetworkKey = Static<typeof NetworkKey>;

export const Network = Type.Object({
  /** The operator's identifier, shown in every response. */
  id: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$' }),
  /** The spec's placeholder (`net1`…`net8`), accepted in requests. */
  alias: Type.String({ pattern: '^net[0-9]+$' }),
  kind: Type.String(),
  title: Type.String(),
  /** Spec §4.4: the one network device commands go out on. */
  downlink: Type.Boolean(),
  required: Type.Array(KeyName),
}, { additionalProperties: false });
export type Network = Static<typeof Network>;

export const NetworkTable = Type.Object({
  $comment: Type.Optional(Type.String()),
  kinds: Type.Record(Type.String(), NetworkKind),
  keys: Type.Record(Type.String(), NetworkKey),
  networks: Type.Array(Network, { minItems: 1 }),
}, { additionalProperties: false });
export type NetworkTable = Static<typeof NetworkTable>;
