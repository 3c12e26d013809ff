/**
 * adapters/mqtt/gateway/AdmissionGate.ts: the bound on uplinks in admission across connections, how
 * waiting connections get their turn, and that none of them waits for ever.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AdmissionGate } from '../../../adapters/mqtt/gateway/AdmissionGate.ts';

/** A connection with `queued` uplinks: takes room while the gate is open, else waits its turn. */
function connection(gate: AdmissionGate, name: string, queued: number, log: string[]) {
  const c = {
    queued,
    admitted: 0,
    drain(): void {
      while (c.queued > 0) {
        if (!gate.open) {
          gate.wait(() => { log.push(`wake ${name}`); c.drain(); });
          return;
        }
        gate.inflight++;
        c.queued--;
        c.admitted++;
      }
    },
  };
  return c;
}

test('admission gate: waiters are woken together once a quarter of the room is free, first come first served', () => {
  const gate = new AdmissionGate(8);
  const log: string[] = [];
  const a = connection(gate, 'a', 8, log);
  a.drain();
  assert.equal([gate.inflight, gate.open], [8, false]);
  const b = connection(gate, 'b', 3, log);
  const c = connection(gate, 'c', 3, log);
  b.drain();
  c.drain();
  assert.is(gate.waiting, 2);
  gate.done();
  assert.equal([gate.inflight, log], [7, []], 'one free slot wakes nobody');
  const newcomer = connection(gate, 'n', 1, log);
  newcomer.drain();
  assert.equal([newcomer.admitted, gate.waiting], [0, 3], 'with connections waiting, a newcomer does not go ahead of them');
  gate.done();
  assert.equal(log, ['wake b'], 'a quarter free (2 of 8): the first waiter admits what it can');
  assert.equal([b.admitted, gate.inflight], [2, 8]);
  assert.equal(gate.waiting, 3, 'b (1 left) queued again behind c and the newcomer');
  gate.done();
  gate.done();
  assert.equal(log, ['wake b', 'wake c']);
  assert.equal([c.admitted, gate.inflight], [2, 8]);
});

test('admission gate: every queued uplink gets in as the ones in flight are answered, whatever the order', () => {
  for (const max of [1, 2, 3, 8, 100]) {
    const gate = new AdmissionGate(max);
    const log: string[] = [];
    const conns = Array.from({ length: 20 }, (_, i) => connection(gate, `c${i}`, 1 + (i * 7) % 13, log));
    const total = conns.reduce((n, c) => n + c.queued, 0);
    for (const c of conns) c.drain();
    let answered = 0;
    for (let guard = 0; gate.inflight > 0 && guard < 10_000; guard++) {
      assert.ok(gate.inflight <= max, `never above the bound (${max})`);
      gate.done();
      answered++;
    }
    assert.is(answered, total, `max ${max}: all ${total} uplinks admitted and answered`);
    assert.equal([gate.waiting, conns.every((c) => c.queued === 0)], [0, true]);
  }
});

test.run();
