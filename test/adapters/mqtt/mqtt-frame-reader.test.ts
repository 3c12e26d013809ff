/**
 * adapters/mqtt/gateway/FrameReader.ts: MQTT framing from arbitrary socket chunks, and the size limit
 * decided from the fixed header before any of the body is kept.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { FrameReader, varintBytes } from '../../../adapters/mqtt/gateway/FrameReader.ts';

const packet = (first: number, body: Buffer) => Buffer.concat([Buffer.from([first, ...varintBytes(body.length)]), body]);

function collect(reader: FrameReader, chunks: Buffer[]): { frames: [number, string][]; refusal: unknown } {
  const frames: [number, string][] = [];
  let refusal: unknown;
  for (const chunk of chunks) {
    refusal = reader.push(chunk, { frame: (first, body) => { frames.push([first, body.toString('hex')]); return true; } });
    if (refusal !== undefined) break;
  }
  return { frames, refusal };
}

test('packets split at any byte boundaries come out whole and in order', () => {
  fc.assert(fc.property(
    fc.array(fc.tuple(fc.integer({ min: 0x10, max: 0xef }), fc.uint8Array({ maxLength: 300 })), { minLength: 1, maxLength: 8 }),
    fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 20 }),
    (packets, cuts) => {
      const stream = Buffer.concat(packets.map(([f, b]) => packet(f, Buffer.from(b))));
      const chunks: Buffer[] = [];
      let pos = 0;
      for (let i = 0; pos < stream.length; i++) {
        const n = cuts[i % cuts.length];
        chunks.push(stream.subarray(pos, pos + n));
        pos += n;
      }
      const { frames, refusal } = collect(new FrameReader(1024), chunks);
      assert.is(refusal, undefined);
      assert.equal(frames, packets.map(([f, b]) => [f, Buffer.from(b).toString('hex')]));
    },
  ));
});

test('a declared size above the limit is refused from the fixed header, before any body byte is kept', () => {
  const reader = new FrameReader(100);
  const { frames, refusal } = collect(reader, [Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f])]);
  assert.equal(frames, []);
  assert.equal(refusal, { kind: 'too-large', declared: 1 + 4 + 268_435_455, limit: 100 });
  assert.is(reader.buffered, 0);
  // The limit counts the whole packet: 98 bytes of body + 2 of header = 100 fits, 99 does not.
  assert.is(collect(new FrameReader(100), [packet(0x30, Buffer.alloc(98))]).frames.length, 1);
  assert.equal((collect(new FrameReader(100), [packet(0x30, Buffer.alloc(99)).subarray(0, 2)]).refusal as { kind: string }).kind, 'too-large');
});

test('a Remaining Length of five bytes is malformed; an incomplete body is held, bounded by the limit', () => {
  assert.equal(collect(new FrameReader(1000), [Buffer.from([0x30, 0x80, 0x80, 0x80, 0x80, 0x01])]).refusal, { kind: 'malformed', reason: 'remaining length longer than four bytes' });
  const reader = new FrameReader(1000);
  assert.equal(collect(reader, [packet(0x30, Buffer.alloc(500)).subarray(0, 300)]).frames, []);
  assert.is(reader.buffered, 297);
});

test('a sink that stops (the connection is closing) gets nothing more of the chunk', () => {
  const reader = new FrameReader(1000);
  const seen: number[] = [];
  reader.push(Buffer.concat([packet(0x30, Buffer.alloc(1)), packet(0x40, Buffer.alloc(2))]), { frame: (first) => { seen.push(first); return false; } });
  assert.equal(seen, [0x30]);
});

test.run();
