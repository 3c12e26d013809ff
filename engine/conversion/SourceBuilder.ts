/**
 * What the code generator (emitDecoder.ts, emitEncoder.ts) may write into JavaScript source, and
 * nothing else. Source is assembled only from the generator's own fixed text, names it makes up
 * (`c3`, `f7`, `o2`: a letter and a counter), numbers through `numberToken`, booleans through
 * `booleanToken`, and references to the data array (`const c3 = d[3]`). Every string, asset name
 * and non-finite number of a script goes into `data`, which the generated factory receives as a
 * value: it is never part of the text V8 parses. generateCodec.ts checks the finished source once
 * more against this vocabulary before it reaches `new Function`.
 */

/** A finite number as a JavaScript literal; anything else is a generator bug and throws. */
export function numberToken(n: number): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new Error(`code generator: ${String(n)} is not a finite number`);
  if (Object.is(n, -0)) return '(-0)';
  // Number#toString gives the shortest text that reads back as the same double.
  const text = String(Math.abs(n));
  if (!/^\d+(?:\.\d+)?(?:e[+-]\d+)?$/.test(text)) throw new Error(`code generator: unexpected number text ${text}`);
  return n < 0 ? `(-${text})` : text;
}

export function booleanToken(b: boolean): string {
  return b ? 'true' : 'false';
}

export class SourceBuilder {
  /** Values the generated code refers to as `d[i]`: asset names, statement paths, strings, maps. */
  readonly data: unknown[] = [];
  readonly #declarations: string[] = [];
  readonly #strings = new Map<string, string>();
  #count = 0;

  /** A factory-level constant bound to `value` (`c3`, declared `const c3 = d[3];`). */
  constant(value: unknown): string {
    if (typeof value === 'string') {
      const known = this.#strings.get(value);
      if (known) return known;
    }
    const index = this.data.push(value) - 1;
    const name = `c${index}`;
    this.#declarations.push(`const ${name} = d[${index}];`);
    if (typeof value === 'string') this.#strings.set(value, name);
    return name;
  }

  /** A literal value of a script: primitives the generator can spell, the rest as a constant. */
  value(v: unknown): string {
    if (v === null) return 'null';
    if (typeof v === 'boolean') return booleanToken(v);
    if (typeof v === 'number' && Number.isFinite(v)) return numberToken(v);
    return this.constant(v);
  }

  /** A fresh local name: the prefix and a counter. */
  local(prefix: 'o' | 'n' | 'v'): string {
    return `${prefix}${this.#count++}`;
  }

  /** Declares a factory-level function of the payload `b` and returns the call `f7(b)`. */
  call(body: string): string {
    const name = `f${this.#count++}`;
    this.#declarations.push(`function ${name}(b) { ${body} }`);
    return `${name}(b)`;
  }

  /**
   * A constructor of plain objects for one block, used as `new o3()`. An empty literal `{}` gets
   * in-object room for 4 properties, so a block of 6 assets spills into a separate property array;
   * a constructor of its own gets room for all of its block's fields once V8's slack tracking has
   * seen a few objects (measured 0.80 → 0.87 of a hand-written decoder). Its prototype is
   * Object.prototype, so what it makes is a plain object like `{}`.
   */
  plainObject(): string {
    const name = `o${this.#count++}`;
    this.#declarations.push(`function ${name}() {} ${name}.prototype = Object.prototype;`);
    return name;
  }

  get declarations(): string {
    return this.#declarations.join('\n');
  }
}
