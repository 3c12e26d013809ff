/**
 * Compiled device types, shared by content: a script is compiled once per content, however many
 * devices, device-type versions and script objects carry it, and dropped with the last holder.
 *
 * Content is the generated program (source and data), not the script text: scripts that differ
 * only in `name`, `comment`, `description`, `version`, key order or equivalent spellings (`int` for
 * a signed `integer`, `small` for `little`) decode alike and share one compiled type.
 *
 * Lifetime is left to the garbage collector (WeakRef + FinalizationRegistry) rather than to a
 * reference count: nothing in the service releases a codec. A device actor takes
 * `codecFor(info.payload)?.decode` when it activates and simply drops it when it passivates or
 * is removed; a count would need every holder to call release, and one forgotten call would keep
 * a type forever. The generated `decode` and `encode` refer to their type (generateCodec.ts), so
 * holding either function, the codec or the script object keeps the type; once none is held, a
 * collection frees its code and data and the registry removes its key.
 */
import { createHash } from 'node:crypto';
import type { Program } from './analyzeScript.ts';
import type { Codec } from './codec.ts';
import { emitProgram, instantiate } from './generateCodec.ts';

export interface CompiledType {
  readonly name: string;
  readonly codec: Codec;
  /** Time to generate, check and instantiate the code (V8 parses it on the first call). */
  readonly compileMs: number;
  /** Length of the generated source. */
  readonly sourceChars: number;
}

const live = new Map<string, WeakRef<CompiledType>>();
const registry = new FinalizationRegistry<string>((key) => {
  // A type compiled again under the same key after the old one died must stay.
  if (live.get(key)?.deref() === undefined) live.delete(key);
});
let compiled = 0;
let shared = 0;

/** A canonical text of the data array: strings quoted, -0 and non-finite numbers spelled out. */
function canonical(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (value === null || value === undefined || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value instanceof Map) return `Map{${[...value].map(([k, v]) => `${canonical(k)}:${canonical(v)}`).join(',')}}`;
  throw new Error(`conversion cache: unexpected ${typeof value} in generated data`);
}

/** The compiled type of a checked program: the live one with the same content, or a new one. */
export function compiledType(program: Program): CompiledType {
  const started = performance.now();
  const emitted = emitProgram(program);
  // A digest, not the text: a type's key is 1-2 KB of source and data, its digest 43 characters.
  const key = createHash('sha256').update(emitted.source).update('\n').update(canonical(emitted.data)).digest('base64url');
  const known = live.get(key)?.deref();
  if (known) { shared++; return known; }
  const type = { name: 'conversion script', codec: undefined as unknown as Codec, compileMs: 0, sourceChars: emitted.source.length };
  type.codec = instantiate(emitted, type);
  type.compileMs = performance.now() - started;
  live.set(key, new WeakRef(type));
  registry.register(type, key);
  compiled++;
  return type;
}

export interface CompiledTypeStats {
  /** Types alive now (held by a device, a codec or a script object). */
  live: number;
  /** Types compiled since the process started. */
  compiled: number;
  /** Lookups answered by a live type of the same content. */
  shared: number;
  /** Compile time and generated source of the live types. */
  compileMs: number;
  sourceChars: number;
}

export function compiledTypeStats(): CompiledTypeStats {
  const stats = { live: 0, compiled, shared, compileMs: 0, sourceChars: 0 };
  for (const ref of live.values()) {
    const type = ref.deref();
    if (!type) continue;
    stats.live++;
    stats.compileMs += type.compileMs;
    stats.sourceChars += type.sourceChars;
  }
  return stats;
}
