/**
 * Compiles a checked conversion program into JavaScript source of its own (DESIGN.md §7), so each
 * device type runs code that is monomorphic for it however many types share the process. The
 * closure compiler (test/support/reference/compileScript.ts) is the reference the generated code is
 * tested against.
 *
 * Security review: why no byte of a user script can reach the emitted source.
 *
 * 1. Source is only made from the checked program (analyzeScript.ts), never from the script
 *    text. The program holds numbers (offsets, lengths, bit positions, calculation constants,
 *    case values), booleans, strings (asset names, statement paths, case and literal values) and
 *    calculation trees that the calculation parser built from a closed grammar.
 * 2. SourceBuilder.ts is the only way into the text: numbers pass `numberToken`, which refuses
 *    anything but a finite number and spells it with Number#toString (digits, `.`, `e`, sign),
 *    checked by a regular expression; booleans pass `booleanToken`. Every string, object, map and
 *    non-finite number goes into the data array `d` and is referred to as `d[i]`: the generator
 *    writes the index, never the value. Names are a letter and a counter. A calculation emits
 *    only `v`, number tokens, parentheses and the operators `+ - * / %` of its tree.
 * 3. `checkSource` below checks the finished text before `new Function` sees it: no quote,
 *    backtick, backslash or character outside printable ASCII (so no string, template, escape or
 *    unicode-escaped identifier can exist), and every identifier is one of the generator's words
 *    or names. A bug in the generator turns into a refusal, not into code.
 * 4. `__proto__` cannot name an asset or a field (checkScript refuses it, and the generator checks
 *    again); generated code sets properties with `o[c3] = …` on fresh plain objects, as the
 *    reference does, so `constructor` or `toString` are ordinary own properties.
 * 5. The generated factory sees only its parameters (`d`, `h`, `type`) and standard globals
 *    (`Uint8Array`, `Object`, `Array`, `Math`, `NaN`); it runs in strict mode.
 *
 * test/engine/conversion/conversion-generated.test.ts feeds scripts full of quotes, backticks, `${}`, unicode
 * escapes, `__proto__`, `constructor`, huge and non-finite numbers through this path.
 */
import type { ConversionScript } from '../../schemas/conversion.ts';
import { checkedProgram, type Program } from './analyzeScript.ts';
import type { Codec } from './codec.ts';
import { emitDecoder } from './emitDecoder.ts';
import { emitEncoder } from './emitEncoder.ts';
import { generatedRuntime, type TypeTag } from './generatedRuntime.ts';
import { SourceBuilder } from './SourceBuilder.ts';

export interface EmittedProgram {
  /** The factory's body; the same program always gives the same text. */
  readonly source: string;
  readonly data: readonly unknown[];
}

const RUNTIME = Object.keys(generatedRuntime);

export function emitProgram(program: Program): EmittedProgram {
  const sb = new SourceBuilder();
  const decode = emitDecoder(program.sense, sb);
  const encode = program.actuate.length > 0 ? emitEncoder(program.actuate, program.downlinkLength, sb) : 'const encode = undefined;';
  const body = [sb.declarations, decode, encode, 'return [decode, encode];'].join('\n');
  // Only the helpers this type calls become locals of its factory.
  const used = RUNTIME.filter((name) => new RegExp(`\\b${name}\\(`).test(body));
  const source = `const { ${used.join(', ')} } = h;\n${body}`;
  return { source, data: sb.data };
}

/** Words the generator writes; anything else in the source is a generator bug. */
const WORDS = new Set([
  ...RUNTIME,
  'const', 'let', 'function', 'return', 'if', 'throw', 'try', 'catch', 'new', 'switch', 'case', 'default', 'break',
  'null', 'undefined', 'true', 'false', 'instanceof', 'NaN', 'Uint8Array', 'Object', 'hasOwn', 'Array', 'isArray',
  'Math', 'floor', 'length', 'get', 'fPort', 'b', 'm', 'c', 'd', 'h', 'v', 'x', 'n', 's', 'r', 'o', 'buf', 'type',
  'error', 'decode', 'encode', 'prototype', 'while', 'out', 'i',
]);
const GENERATED_NAME = /^[cfnov]\d+$/;
const SOURCE_CHARACTERS = /^[\n A-Za-z0-9_$.,;:(){}[\]=<>!&|+\-*/%?]*$/;

/** Throws unless `source` is made only of the generator's vocabulary (review point 3). */
export function checkSource(source: string): void {
  if (!SOURCE_CHARACTERS.test(source)) throw new Error('code generator: a character outside the generated vocabulary');
  for (const [word] of source.matchAll(/\d+(?:\.\d+)?(?:e[+-]\d+)?|[A-Za-z_$][\w$]*/g)) {
    if (/^\d/.test(word) || WORDS.has(word) || GENERATED_NAME.test(word)) continue;
    throw new Error(`code generator: unexpected word '${word}'`);
  }
}

let instances = 0;

/**
 * Turns emitted source into a codec. `type` is what the generated functions refer to in their
 * error paths, so holding `decode` or `encode` alone keeps `type` (and whatever the caller hangs
 * on it) reachable: codecCache.ts relies on that.
 */
export function instantiate(emitted: EmittedProgram, type: TypeTag): Codec {
  checkSource(emitted.source);
  // A distinct source URL per instance: V8 caches `new Function` by source text, and two device
  // types sharing one compiled function would share its inline caches again. It also names the
  // type in profiles and stack traces.
  const source = `'use strict';\n${emitted.source}\n//# sourceURL=fleetstream-conversion-${++instances}.js`;
  // eslint-disable-next-line no-new-func -- the reviewed code generator, see above
  const factory = new Function('d', 'h', 'type', source) as (d: readonly unknown[], h: typeof generatedRuntime, type: TypeTag) => [Codec['decode'], Codec['encode']];
  const [decode, encode] = factory(emitted.data, generatedRuntime, type);
  return encode ? { decode, encode } : { decode };
}

/**
 * A script (checked first; an invalid one throws VALIDATION_FAILED like compileScript) as generated
 * code, without the sharing of codecCache.ts.
 */
export function generateCodec(script: ConversionScript): Codec {
  return instantiate(emitProgram(checkedProgram(script)), { name: 'conversion script' });
}
