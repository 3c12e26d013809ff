/**
 * The console's latest values (console/ui.js newerStates): a page reads an asset's latest value
 * once and follows live events meanwhile; a read answered after a live event must not put back the
 * value that event replaced (the ground and device pages showed a stale value until the next event).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';

type States = Record<string, { value: unknown; at: string }>;
// The console is plain JavaScript for the browser, without type declarations.
const { newerStates } = await import(new URL('../../../console/ui.js', import.meta.url).href) as { newerStates(read: States, live?: States): States };

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

test('of the read and the live value of an asset, the later measurement; the live one on a tie', () => {
  const read = { t: { value: 19.25, at: at(1) }, h: { value: 40, at: at(5) }, p: { value: 1000, at: at(2) } };
  const live = { t: { value: 30.5, at: at(2) }, h: { value: 35, at: at(3) }, p: { value: 1001, at: at(2) }, co2: { value: 400, at: at(4) } };
  assert.equal(newerStates(read, live), {
    t: { value: 30.5, at: at(2) },
    h: { value: 40, at: at(5) },
    p: { value: 1001, at: at(2) },
    co2: { value: 400, at: at(4) },
  });
});

test('nothing live yet: the read as it is; nothing read: the live values', () => {
  const read = { t: { value: 1, at: at(1) } };
  assert.equal(newerStates(read, {}), read);
  assert.equal(newerStates(read, undefined), read);
  assert.equal(newerStates({}, read), read);
  assert.is.not(newerStates(read, {}), read, 'a new object: the page state is replaced, never changed in place');
});

test.run();
