/**
 * Binary conversion scripts (DESIGN.md §7; spec §1, §2.2, §2.4): the JSON a device type carries to
 * decode custom binary uplinks (`sense`) and encode device commands (`actuate`). Compatible with the
 * core of AllThingsTalk's ABCL, and with the `int`/`uint`/`float`/`hex`, `endbyte` and
 * `default: true` spelling of the same language used by other platforms. Semantics, defaults and
 * extensions: engine/conversion/README.md. engine/conversion/checkScript.ts is the authority on
 * validity (it also checks what a schema cannot: ranges against `bytelength`, calculations, case
 * values); this schema describes the shape and gives the types.
 */
import Type, { type Static } from 'typebox';

export const SelectorType = Type.Union([
  Type.Literal('integer'),
  Type.Literal('number'),
  Type.Literal('boolean'),
  Type.Literal('string'),
  Type.Literal('hexstring'),
  // spellings of the same types found in published scripts of the language
  Type.Literal('int'),
  Type.Literal('uint'),
  Type.Literal('float'),
  Type.Literal('hex'),
]);
export type SelectorType = Static<typeof SelectorType>;

/** `small` occurs in published scripts and means little-endian. */
export const ByteOrder = Type.Union([Type.Literal('big'), Type.Literal('little'), Type.Literal('small')]);
export type ByteOrder = Static<typeof ByteOrder>;

/** Selects bytes (and optionally bits) of the payload and says how to read them. */
export const Selector = Type.Object({
  /** First byte, counted from the start of the payload (0 = first byte). */
  byte: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Counted from the end (≤ 0): alone it is the first byte (`-4` = the last four bytes); with `byte` the exclusive end of a range (`0` = end of payload). */
  endbyte: Type.Optional(Type.Integer({ maximum: 0 })),
  /** Number of bytes, default 1. Not with `byte` + `endbyte`. */
  bytelength: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Default `big`. */
  byteorder: Type.Optional(ByteOrder),
  /** Bit index within the `bytelength`-wide integer, 0 = least significant bit. */
  bit: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Extension: width of a bit field starting at `bit` (default 1). */
  bitlength: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Default `integer`. */
  type: Type.Optional(SelectorType),
  /** Two's complement. Default false (true for `int`). The strings occur in published scripts. */
  signed: Type.Optional(Type.Union([Type.Boolean(), Type.Literal('true'), Type.Literal('false')])),
  /** Arithmetic over `val` (engine/conversion/calculation.ts). */
  calculation: Type.Optional(Type.String()),
  comment: Type.Optional(Type.String()),
}, { additionalProperties: false });
export type Selector = Static<typeof Selector>;

/** A `case` constant. */
export const CaseValue = Type.Union([Type.Number(), Type.String(), Type.Boolean()]);

const defs = {
  Selector,
  /** A selector, an object of values (one per field, e.g. a location's latitude/longitude), an array of values, or a literal. */
  Value: Type.Union([
    Type.Ref('Selector'),
    Type.Record(Type.String(), Type.Ref('Value')),
    Type.Array(Type.Ref('Value')),
    Type.String(),
    Type.Number(),
    Type.Boolean(),
    Type.Null(),
  ]),
  Case: Type.Object({
    /** Constant compared with the switch value; `$default` marks the default case. */
    case: Type.Optional(CaseValue),
    /** `default: true` is the other spelling of `case: "$default"`. */
    default: Type.Optional(Type.Boolean()),
    do: Type.Array(Type.Ref('Statement')),
    comment: Type.Optional(Type.String()),
  }),
  Statement: Type.Union([
    /** Mapping: `asset` is the asset name (dots nest: `location.latitude`). */
    Type.Object({ asset: Type.String(), value: Type.Ref('Value'), comment: Type.Optional(Type.String()) }),
    /** Control: switch on a selector, on `$payloadLength` or (extension) on `$fPort`. */
    Type.Object({
      switch: Type.Union([Type.Ref('Selector'), Type.Literal('$payloadLength'), Type.Literal('$fPort')]),
      on: Type.Array(Type.Ref('Case')),
      comment: Type.Optional(Type.String()),
    }),
    /** Comment statement. */
    Type.Object({ comment: Type.String() }),
    /** A nested statement block. */
    Type.Array(Type.Ref('Statement')),
  ]),
  Actuation: Type.Union([
    /** Writes the command value of `asset` into `field`; `default` (extension) when the command lacks it. */
    Type.Object({ asset: Type.String(), field: Type.Ref('Selector'), default: Type.Optional(Type.Ref('Value')), comment: Type.Optional(Type.String()) }),
    /** Writes fixed bytes. */
    Type.Object({ const: Type.Union([Type.Number(), Type.String(), Type.Boolean()]), field: Type.Ref('Selector'), comment: Type.Optional(Type.String()) }),
  ]),
  Script: Type.Object({
    name: Type.Optional(Type.String()),
    comment: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    version: Type.Optional(Type.String()),
    /** Decodes uplinks. */
    sense: Type.Optional(Type.Array(Type.Ref('Statement'))),
    /** Encodes device commands. */
    actuate: Type.Optional(Type.Array(Type.Ref('Actuation'))),
  }),
};

export const ConversionScript = Type.Cyclic(defs, 'Script');
export type ConversionScript = Static<typeof ConversionScript>;

export const SenseStatement = Type.Cyclic(defs, 'Statement');
export type SenseStatement = Static<typeof SenseStatement>;

export const ActuateStatement = Type.Cyclic(defs, 'Actuation');
export type ActuateStatement = Static<typeof ActuateStatement>;

export const ValueExpression = Type.Cyclic(defs, 'Value');
export type ValueExpression = Static<typeof ValueExpression>;
