/**
 * uvu's `suite` and `test`, plus a way to register tests that need something this machine may not
 * have (a server named by an environment variable, a broker, openssl). Without it the tests are
 * not dropped silently: `unless` says what would run them, and every test registered meanwhile
 * counts as one uvu skip (`Skipped:` in the file's summary) while no test body or hook runs.
 * Contract suites take `suite` from here so that the files running them against servers can skip.
 */
import { suite as uvuSuite, type Callback, type Test } from 'uvu';

/** Starts the line that says why tests were skipped; test/run.ts shows these lines. */
export const SKIP_MARK = 'skipped: ';

/** Depth of `unless` calls whose requirement is missing: registrations then count as skips. */
let skipping = 0;

/** uvu's suite; while `unless` skips, tests count as skipped and hooks are not registered. */
export function suite<T = Record<string, unknown>>(title?: string, context?: T): Test<T> {
  const real = uvuSuite<T>(title, context);
  const register = (name: string, fn: Callback<T>) => (skipping > 0 ? real.skip(name) : real(name, fn));
  // uvu loses a hook's error (its runner returns from a finally block): every test of the suite
  // then fails with no word of why. The error is printed here first.
  const hook = (add: (fn: Callback<T>) => void, which: string) => (fn: Callback<T>) => {
    if (skipping > 0) return;
    add(async (context) => {
      try {
        await fn(context);
      } catch (error) {
        console.error(`${which} hook of ${title ?? 'the suite'} failed:`, error);
        throw error;
      }
    });
  };
  return Object.assign(register, {
    only: (name: string, fn: Callback<T>) => (skipping > 0 ? real.skip(name) : real.only(name, fn)),
    skip: (name?: string, fn?: Callback<T>) => real.skip(name, fn),
    before: Object.assign(hook(real.before, 'before'), { each: hook(real.before.each, 'before each') }),
    after: Object.assign(hook(real.after, 'after'), { each: hook(real.after.each, 'after each') }),
    run: () => real.run(),
  });
}

export const test = suite();

/**
 * Registers `register`'s tests normally when `missing` is undefined; otherwise prints
 * `skipped: <label>: <missing>` and registers them all as skips. `register` runs
 * synchronously either way, so a file's test count does not depend on the machine.
 */
export function unless(label: string, missing: string | undefined, register: () => void): void {
  if (missing === undefined) {
    register();
    return;
  }
  console.log(`${SKIP_MARK}${label}: ${missing}`);
  skipping++;
  try {
    register();
  } finally {
    skipping--;
  }
}

/**
 * `unless` for tests that need servers named by environment variables: skips when any of
 * `variables` is unset and names them (and `how` to start the servers).
 */
export function withEnv(label: string, variables: readonly string[], how: string, register: (env: Record<string, string>) => void): void {
  const unset = variables.filter((v) => !process.env[v]);
  const env = Object.fromEntries(variables.map((v) => [v, process.env[v] ?? '']));
  const missing = unset.length === 0 ? undefined : `${unset.join(', ')} not set (set ${variables.join(', ')} to run them: ${how})`;
  unless(label, missing, () => register(env));
}
