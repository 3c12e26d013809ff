import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Listeners } from '../../../engine/kernel/Listeners.ts';

test('listeners get every event until removed; one that throws is reported and the others still run', () => {
  const errors: unknown[] = [];
  const events = new Listeners<number>((error) => errors.push(error));
  const a: number[] = [];
  const b: number[] = [];
  const removeA = events.add((n) => a.push(n));
  events.add(() => { throw new Error('boom'); });
  events.add((n) => b.push(n));
  events.emit(1);
  removeA();
  events.emit(2);
  assert.equal([a, b, events.size], [[1], [1, 2], 2]);
  assert.equal(errors.map((e) => (e as Error).message), ['boom', 'boom']);
});

test.run();
