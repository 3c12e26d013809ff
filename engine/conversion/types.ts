/**
 * Types shared across the conversion language: what checking a script reports, and what a checked
 * selector resolves to. Kept apart so that the checker, the selector resolver and the readers and
 * writers depend on them without depending on each other.
 */
import type { CalcNode } from './calculation.ts';

export interface ScriptIssue {
  /** Where in the script, e.g. `sense[0].on[1].do[2].value.bytelength`; '' for the script itself. */
  path: string;
  message: string;
}

export type FieldKind = 'uint' | 'int' | 'float' | 'bool' | 'string' | 'hex';

export interface FieldSpec {
  /** `start`: `byte` from the start; `end`: `endbyte` alone, counted from the end; `range`: from `byte` to `endbyte`. */
  readonly anchor: 'start' | 'end' | 'range';
  /** `byte` (start, range) or `endbyte` (end). */
  readonly offset: number;
  /** `endbyte` of a range (≤ 0, exclusive end counted from the end). */
  readonly endOffset: number;
  /** `bytelength`; 0 for a range, whose length depends on the payload. */
  readonly length: number;
  readonly little: boolean;
  readonly kind: FieldKind;
  /** Bit field: first bit (0 = least significant bit of the `bytelength`-wide integer) and width. */
  readonly bit: number | undefined;
  readonly bitlength: number;
  readonly calc: CalcNode | undefined;
  /** Shortest payload the selector can be read from. */
  readonly minLength: number;
}
