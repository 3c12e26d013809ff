/**
 * A live subscription's queue on a transport double: the frames of a turn leave in one write, in
 * order (reset included), the frame of an event is built once for every subscriber of a format,
 * an event past the send-buffer bound writes what was queued, then `overflow`, then ends, and a
 * connection that throws on write ends only its own subscription.
 */
import * as assert from 'uvu/assert';
import type { HubEvent } from '../../../engine/live/LiveHub.ts';
import { LiveOutbox, LiveSubscription, type LiveCloseReason, type LiveFormat, type LiveTransport } from '../../../engine/live/LiveSubscription.ts';
import { suite } from '../../support/suite.ts';

const test = suite('live subscription');

class Wire implements LiveTransport {
  writes: string[][] = [];
  ended: LiveCloseReason | undefined;
  held = 0;
  write(frames: readonly string[]): void { this.writes.push([...frames]); }
  buffered(): number { return this.held; }
  end(reason: LiveCloseReason): void { this.ended = reason; }
}

let built = 0;
const FORMAT: LiveFormat = {
  event: (e) => { built++; return `<${e.json}>`; },
  reset: () => '<reset>',
  overflow: () => '<overflow>',
};

function event(n: number): HubEvent {
  return { partition: 0, position: [n, 0], kind: 'state', deviceId: 'd', groundId: 'g', json: String(n), id: `1.${n}.1`, frames: new Map() };
}

/** An outbox flushed by hand: a turn of the event loop, as the test sees it. */
function manualOutbox(): { outbox: LiveOutbox; turns: () => number } {
  let scheduled = 0;
  const outbox = new LiveOutbox(() => { scheduled++; });
  return { outbox, turns: () => scheduled };
}

test('the frames of a turn leave in one write per subscription, in order, after one scheduled flush for all', () => {
  const { outbox, turns } = manualOutbox();
  const wires = [new Wire(), new Wire()];
  const subs = wires.map((transport) => new LiveSubscription({ transport, format: FORMAT, outbox }));
  built = 0;
  subs[0].reset();
  for (const n of [1, 2, 3]) {
    const e = event(n);
    for (const s of subs) assert.ok(s.send(e));
  }
  assert.equal(built, 3, 'each frame is built once for both subscribers');
  assert.equal(wires[0].writes, []);
  assert.equal(turns(), 1);
  outbox.flush();
  assert.equal(wires[0].writes, [['<reset>', '<1>', '<2>', '<3>']]);
  assert.equal(wires[1].writes, [['<1>', '<2>', '<3>']]);
  subs[1].send(event(4));
  assert.equal(turns(), 2);
  outbox.flush();
  assert.equal(wires[1].writes[1], ['<4>']);
});

test('an event past the bound: the queued frames, then overflow, then the end; nothing after', () => {
  const { outbox } = manualOutbox();
  const wire = new Wire();
  let told = 0;
  const sub = new LiveSubscription({ transport: wire, format: FORMAT, outbox, maxBufferedBytes: 10, onOverflow: () => { told++; } });
  assert.ok(sub.send(event(1)));
  wire.held = 8;
  assert.not.ok(sub.send(event(2)));
  assert.equal(wire.writes, [['<1>', '<overflow>']]);
  assert.equal(wire.ended, 'overflow');
  assert.equal(told, 1);
  assert.not.ok(sub.send(event(3)));
  outbox.flush();
  assert.equal(wire.writes.length, 1);
});

test('close writes what is queued first; detach drops it', () => {
  const { outbox } = manualOutbox();
  const closing = new Wire();
  const closed = new LiveSubscription({ transport: closing, format: FORMAT, outbox });
  closed.send(event(1));
  closed.close('forbidden');
  assert.equal(closing.writes, [['<1>']]);
  assert.equal(closing.ended, 'forbidden');
  const gone = new Wire();
  const detached = new LiveSubscription({ transport: gone, format: FORMAT, outbox });
  detached.send(event(2));
  detached.detach();
  outbox.flush();
  assert.equal(gone.writes, []);
});

test('a connection whose write throws ends its subscription only; the others of the turn are written', () => {
  const { outbox } = manualOutbox();
  const broken = new Wire();
  broken.write = () => { throw new Error('socket gone'); };
  const fine = new Wire();
  const subs = [broken, fine].map((transport) => new LiveSubscription({ transport, format: FORMAT, outbox }));
  const e = event(1);
  for (const s of subs) s.send(e);
  outbox.flush();
  assert.equal(fine.writes, [['<1>']]);
  assert.not.ok(subs[0].open);
  assert.not.ok(subs[0].send(event(2)));
  assert.ok(subs[1].open);
});

test.run();
