/**
 * `calculation` expressions of the conversion language: arithmetic over `val`, the value a selector
 * read. They are parsed into a small AST and compiled into closures; user text is never evaluated
 * as JavaScript (DESIGN.md §7).
 *
 * Grammar (the whole language, no functions, no other names):
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | primary
 *   primary := number | 'val' | '(' expr ')'
 *   number  := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]  |  '.' digits [...]
 *
 * Real device-type scripts only scale and offset (`val / 100`, `val * 0.036`, `val * 0.5 - 40`), so
 * no function set is offered; anything else is rejected with the character position.
 */

export type CalcNode =
  | { readonly k: 'num'; readonly v: number }
  | { readonly k: 'val' }
  | { readonly k: 'neg'; readonly a: CalcNode }
  | { readonly k: 'bin'; readonly op: '+' | '-' | '*' | '/' | '%'; readonly a: CalcNode; readonly b: CalcNode };

/** Longest expression accepted; scripts use a handful of characters. */
export const MAX_CALCULATION_LENGTH = 256;
const MAX_DEPTH = 32;

export class CalculationError extends Error {
  /** Zero-based character position of the problem. */
  readonly position: number;
  constructor(message: string, position: number) {
    super(message);
    this.name = 'CalculationError';
    this.position = position;
  }
}

type Token = { t: 'num'; v: number; at: number } | { t: 'val'; at: number } | { t: 'op'; v: string; at: number } | { t: 'end'; at: number };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') { i++; continue; }
    if ('+-*/%()'.includes(c)) { tokens.push({ t: 'op', v: c, at: i }); i++; continue; }
    if ((c >= '0' && c <= '9') || c === '.') {
      const m = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(text.slice(i));
      if (!m) throw new CalculationError(`malformed number at ${i}`, i);
      const v = Number(m[0]);
      if (!Number.isFinite(v)) throw new CalculationError(`number out of range at ${i}`, i);
      tokens.push({ t: 'num', v, at: i });
      i += m[0].length;
      continue;
    }
    if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(text.slice(i))!;
      if (m[0] !== 'val') throw new CalculationError(`unknown name '${m[0]}' at ${i}: only val, numbers, + - * / %, parentheses and unary minus are allowed`, i);
      tokens.push({ t: 'val', at: i });
      i += m[0].length;
      continue;
    }
    throw new CalculationError(`unexpected character '${c}' at ${i}: only val, numbers, + - * / %, parentheses and unary minus are allowed`, i);
  }
  tokens.push({ t: 'end', at: text.length });
  return tokens;
}

function describe(t: Token): string {
  return t.t === 'op' ? t.v : t.t === 'num' ? String(t.v) : t.t;
}

/** Parses a calculation; throws CalculationError naming the position of the first problem. */
export function parseCalculation(text: string): CalcNode {
  if (text.length > MAX_CALCULATION_LENGTH) throw new CalculationError(`longer than ${MAX_CALCULATION_LENGTH} characters`, MAX_CALCULATION_LENGTH);
  const tokens = tokenize(text);
  let p = 0;
  let depth = 0;
  const peek = () => tokens[p];
  const isOp = (v: string) => { const t = tokens[p]; return t.t === 'op' && t.v === v; };

  function expr(): CalcNode {
    if (++depth > MAX_DEPTH) throw new CalculationError(`nested deeper than ${MAX_DEPTH}`, peek().at);
    let a = term();
    while (isOp('+') || isOp('-')) {
      const op = (tokens[p++] as { v: '+' | '-' }).v;
      a = { k: 'bin', op, a, b: term() };
    }
    depth--;
    return a;
  }
  function term(): CalcNode {
    let a = unary();
    while (isOp('*') || isOp('/') || isOp('%')) {
      const op = (tokens[p++] as { v: '*' | '/' | '%' }).v;
      a = { k: 'bin', op, a, b: unary() };
    }
    return a;
  }
  function unary(): CalcNode {
    if (isOp('-')) {
      p++;
      if (++depth > MAX_DEPTH) throw new CalculationError(`nested deeper than ${MAX_DEPTH}`, peek().at);
      const a = unary();
      depth--;
      return { k: 'neg', a };
    }
    return primary();
  }
  function primary(): CalcNode {
    const t = tokens[p];
    if (t.t === 'num') { p++; return { k: 'num', v: t.v }; }
    if (t.t === 'val') { p++; return { k: 'val' }; }
    if (t.t === 'op' && t.v === '(') {
      p++;
      const e = expr();
      if (!isOp(')')) throw new CalculationError(`expected ')' at ${peek().at}`, peek().at);
      p++;
      return e;
    }
    if (t.t === 'end') throw new CalculationError(`unexpected end of expression at ${t.at}`, t.at);
    throw new CalculationError(`unexpected '${describe(t)}' at ${t.at}`, t.at);
  }

  const tree = expr();
  const rest = peek();
  if (rest.t !== 'end') throw new CalculationError(`unexpected '${describe(rest)}' at ${rest.at}`, rest.at);
  return tree;
}

/** Number of times `val` occurs. */
export function countVal(node: CalcNode): number {
  switch (node.k) {
    case 'num': return 0;
    case 'val': return 1;
    case 'neg': return countVal(node.a);
    case 'bin': return countVal(node.a) + countVal(node.b);
  }
}

function apply(op: string, x: number, y: number): number {
  switch (op) {
    case '+': return x + y;
    case '-': return x - y;
    case '*': return x * y;
    case '/': return x / y;
    default: return x % y;
  }
}

/** Folds every sub-tree without `val` into a number. */
export function fold(node: CalcNode): CalcNode {
  if (node.k === 'neg') {
    const a = fold(node.a);
    return a.k === 'num' ? { k: 'num', v: -a.v } : { k: 'neg', a };
  }
  if (node.k === 'bin') {
    const a = fold(node.a);
    const b = fold(node.b);
    if (a.k === 'num' && b.k === 'num') return { k: 'num', v: apply(node.op, a.v, b.v) };
    return { k: 'bin', op: node.op, a, b };
  }
  return node;
}

/**
 * Problems a parsed calculation has as a field conversion: it must use `val`, and dividing by a
 * constant zero is always a mistake. Returns a message, or undefined when fine.
 */
export function calculationProblem(node: CalcNode): string | undefined {
  if (countVal(node) === 0) return 'calculation must use val';
  const check = (n: CalcNode): string | undefined => {
    if (n.k === 'neg') return check(n.a);
    if (n.k !== 'bin') return undefined;
    const b = fold(n.b);
    if ((n.op === '/' || n.op === '%') && b.k === 'num' && b.v === 0) return 'calculation divides by zero';
    const folded = fold(n);
    if (folded.k === 'num' && !Number.isFinite(folded.v)) return 'calculation overflows';
    return check(n.a) ?? check(n.b);
  };
  return check(node);
}

/**
 * `val`, `val * m`, `val / d`, `val + a`, `val * m + a`, `val / d + a` (and their `-` forms): the
 * shapes real scripts use, which readers fuse into the read. Division stays a division, so
 * `val / 10` gives exactly what it says (multiplying by 0.1 would round differently).
 */
export interface Affine {
  readonly op: 'mul' | 'div' | 'none';
  readonly c: number;
  /** Undefined when there is no addition (so -0 stays -0, as in the written expression). */
  readonly add: number | undefined;
}

export function affineForm(tree: CalcNode): Affine | undefined {
  const node = fold(tree);
  const scaled = (n: CalcNode): { op: 'mul' | 'div' | 'none'; c: number } | undefined => {
    if (n.k === 'val') return { op: 'none', c: 1 };
    if (n.k === 'bin' && n.op === '*' && n.a.k === 'val' && n.b.k === 'num') return { op: 'mul', c: n.b.v };
    if (n.k === 'bin' && n.op === '*' && n.b.k === 'val' && n.a.k === 'num') return { op: 'mul', c: n.a.v };
    if (n.k === 'bin' && n.op === '/' && n.a.k === 'val' && n.b.k === 'num') return { op: 'div', c: n.b.v };
    return undefined;
  };
  const whole = scaled(node);
  if (whole) return { ...whole, add: undefined };
  if (node.k === 'bin' && (node.op === '+' || node.op === '-') && node.b.k === 'num') {
    const inner = scaled(node.a);
    // x - c and x + (-c) are the same IEEE operation, so one form covers both.
    if (inner) return { ...inner, add: node.op === '+' ? node.b.v : -node.b.v };
  }
  return undefined;
}

/**
 * One step of an inverse calculation, applied to `y`: `y - c`, `y + c`, `c - y`, `y / c`, `y * c`,
 * `c / y` or `-y`.
 */
export type InverseStep = { readonly op: 'sub' | 'add' | 'rsub' | 'div' | 'mul' | 'rdiv'; readonly c: number } | { readonly op: 'neg' };

/**
 * The steps of the inverse of a calculation, for encoding: applied in order to the calculated value,
 * they give the raw value. Only expressions with a single `val` and no `%` have one; returns
 * undefined otherwise.
 */
export function inverseSteps(tree: CalcNode): InverseStep[] | undefined {
  const node = fold(tree);
  if (countVal(node) !== 1) return undefined;
  // Peel operations off the outside of the expression, building the inverse inside out.
  const steps: InverseStep[] = [];
  let n: CalcNode = node;
  while (n.k !== 'val') {
    if (n.k === 'neg') { steps.push({ op: 'neg' }); n = n.a; continue; }
    if (n.k !== 'bin' || n.op === '%') return undefined;
    const valLeft = countVal(n.a) === 1;
    const other = valLeft ? n.b : n.a;
    if (other.k !== 'num') return undefined;
    const c = other.v;
    switch (n.op) {
      case '+': steps.push({ op: 'sub', c }); break;
      case '-': steps.push({ op: valLeft ? 'add' : 'rsub', c }); break;
      case '*': if (c === 0) return undefined; steps.push({ op: 'div', c }); break;
      case '/':
        if (valLeft) { if (c === 0) return undefined; steps.push({ op: 'mul', c }); }
        else steps.push({ op: 'rdiv', c });
        break;
    }
    n = valLeft ? n.a : n.b;
  }
  return steps;
}

function inverseStep(step: InverseStep): (y: number) => number {
  if (step.op === 'neg') return (y) => -y;
  const c = step.c;
  switch (step.op) {
    case 'sub': return (y) => y - c;
    case 'add': return (y) => y + c;
    case 'rsub': return (y) => c - y;
    case 'div': return (y) => y / c;
    case 'mul': return (y) => y * c;
    case 'rdiv': return (y) => c / y;
  }
}

/** The inverse of a calculation as a function (see inverseSteps). */
export function invertCalculation(tree: CalcNode): ((result: number) => number) | undefined {
  const found = inverseSteps(tree);
  if (!found) return undefined;
  const steps = found.map(inverseStep);
  if (steps.length === 0) return (y) => y;
  if (steps.length === 1) return steps[0];
  return (y) => { for (let i = 0; i < steps.length; i++) y = steps[i](y); return y; };
}
