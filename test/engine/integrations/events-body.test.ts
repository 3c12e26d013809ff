/**
 * eventsBody (engine/integrations/eventsBody.ts): the body of a delivery is exactly what
 * JSON.stringify({ events }) writes, for shared events (SharedParses: frozen, written once for
 * every request that carries them) and for others (written each time).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { eventsBody, shareEvents } from '../../../engine/integrations/eventsBody.ts';

const tricky = () => [
  { type: 'state', id: 'u1/t/1/0', groundId: 'g', deviceId: 'd', asset: 't', value: 21.5, at: '2026-01-01T00:00:00.000Z' },
  { type: 'state', id: 'u1/s/1/0', asset: 'naïve "quoted" \\ \u2028 \ud83d\ude00 \u0000', value: { nested: [1, null, 'x'], gone: undefined }, empty: '' },
  { type: 'rejection', id: 'u1/rejection/-/-/X', missing: undefined, value: null, big: -1.5e300 },
];

test('the same text as JSON.stringify({ events }), shared or not, with escapes, unicode, nested values and undefined fields', () => {
  assert.is(eventsBody(tricky()), JSON.stringify({ events: tricky() }));
  const shared = tricky();
  shareEvents(shared);
  assert.is(eventsBody(shared), JSON.stringify({ events: tricky() }));
  assert.is(eventsBody(shared), JSON.stringify({ events: tricky() }), 'again, from the text kept');
  assert.is(eventsBody([]), '{"events":[]}');
  assert.is(eventsBody([shared[1], tricky()[0], shared[0]]), JSON.stringify({ events: [tricky()[1], tricky()[0], tricky()[0]] }));
});

test('a shared event is written once, when shared, and frozen: every request that carries it reuses the text; one not shared is written each time', () => {
  let reads = 0;
  const counted = () => {
    const event = { type: 'state', id: 'x' } as Record<string, unknown>;
    Object.defineProperty(event, 'value', { enumerable: true, get: () => ++reads });
    return event;
  };
  const shared = counted();
  shareEvents([shared]);
  shareEvents([shared]);
  assert.ok(Object.isFrozen(shared));
  assert.equal(Object.keys(shared), ['type', 'id', 'value'], 'its text kept out of sight');
  assert.is(eventsBody([shared]), '{"events":[{"type":"state","id":"x","value":1}]}');
  assert.is(eventsBody([shared, shared]), '{"events":[{"type":"state","id":"x","value":1},{"type":"state","id":"x","value":1}]}');
  assert.is(reads, 1);
  const own = counted();
  eventsBody([own]);
  eventsBody([own]);
  assert.is(reads, 3);
});

test.run();
