/**
 * Contract of the RejectionStore port (engine/ports/rejections.ts): every adapter passes it.
 */
import { fixtureSuite } from '../support/fixtureSuite.ts';
import * as assert from 'uvu/assert';
import type { RejectionRow, RejectionStore } from '../../engine/ports/rejections.ts';

export interface RejectionStoreFixture {
  rejections: RejectionStore;
  cleanup(): Promise<void>;
}

function rejection(deviceId: string, rejectedAt: number, fields: Partial<RejectionRow> = {}): RejectionRow {
  return { deviceId, rejectedAt, code: 'PROFILE_VIOLATION', reason: 'value 500 is above the maximum 100', asset: 'temperature', uplinkId: `u${rejectedAt}`, channel: 'http', ...fields };
}

export function rejectionsContract(name: string, factory: () => Promise<RejectionStoreFixture>) {
  const s = fixtureSuite(`rejection store contract: ${name}`, factory);

  s('recent lists a device\'s rejections newest first, with every field', async ({ fixture }) => {
    const r = fixture.rejections;
    await r.append([rejection('d1', 1000), rejection('d1', 3000, { code: 'MALFORMED_JSON', asset: '', reason: "Unexpected token '}'" }), rejection('d2', 2000)]);
    const listed = await r.recent('d1');
    assert.equal(listed, [
      rejection('d1', 3000, { code: 'MALFORMED_JSON', asset: '', reason: "Unexpected token '}'" }),
      rejection('d1', 1000),
    ]);
  });

  s('limit and before page through the list', async ({ fixture }) => {
    const r = fixture.rejections;
    await r.append(Array.from({ length: 10 }, (_, i) => rejection('d1', 1000 + i)));
    const first = await r.recent('d1', { limit: 3 });
    assert.equal(first.map((x) => x.rejectedAt), [1009, 1008, 1007]);
    const next = await r.recent('d1', { limit: 3, before: first.at(-1)!.rejectedAt });
    assert.equal(next.map((x) => x.rejectedAt), [1006, 1005, 1004]);
  });

  s('channels: only the rows of those channels, the limit applied after, so a flood of one never pushes another out', async ({ fixture }) => {
    const r = fixture.rejections;
    await r.append([rejection('d1', 1000), rejection('d1', 1001, { channel: 'mqtt' }), rejection('d1', 1002, { channel: 'lpwan', asset: '' })]);
    await r.append(Array.from({ length: 20 }, (_, i) => rejection('d1', 2000 + i, { channel: 'command', code: 'NOT_ACTUATOR', asset: '', uplinkId: `c${i}` })));
    const uplinks = await r.recent('d1', { limit: 5, channels: ['http', 'mqtt', 'lpwan'] });
    assert.equal(uplinks.map((x) => [x.rejectedAt, x.channel]), [[1002, 'lpwan'], [1001, 'mqtt'], [1000, 'http']]);
    const commands = await r.recent('d1', { limit: 5, channels: ['command'] });
    assert.equal(commands.map((x) => x.uplinkId), ['c19', 'c18', 'c17', 'c16', 'c15']);
    const next = await r.recent('d1', { limit: 5, channels: ['command'], before: commands.at(-1)!.rejectedAt });
    assert.equal(next.map((x) => x.uplinkId), ['c14', 'c13', 'c12', 'c11', 'c10']);
    assert.equal((await r.recent('d1', { channels: ["mqtt') OR 1=1 --"] })), [], 'a channel is a value, not SQL');
    assert.is((await r.recent('d1', { limit: 100 })).length, 23, 'no channels: every row');
  });

  s('a replayed rejection is listed once', async ({ fixture }) => {
    const r = fixture.rejections;
    await r.append([rejection('d1', 1000)]);
    await r.append([rejection('d1', 1000)]);
    assert.is((await r.recent('d1')).length, 1);
  });

  s('refusals of one code and asset in different items of one uplink are each listed, in item order; a replay of both folds to two', async ({ fixture }) => {
    const r = fixture.rejections;
    const items = [rejection('d1', 1000, { code: 'DUPLICATE_READING', uplinkId: 'u1', item: 2 }), rejection('d1', 1000, { code: 'DUPLICATE_READING', uplinkId: 'u1', item: 0 })];
    await r.append(items);
    const whole = rejection('d1', 1000, { code: 'DUPLICATE_READING', uplinkId: 'u1' });
    await r.append([whole]);
    const expected = [whole, items[1], items[0]];
    assert.equal(await r.recent('d1'), expected, 'a row of no item first, then by item; item only where there is one');
    await r.append(items);
    await r.append([whole]);
    assert.equal(await r.recent('d1'), expected);
    await r.append([rejection('d1', 1000, { code: 'DUPLICATE_READING', uplinkId: 'u1', item: 999 })]);
    assert.equal((await r.recent('d1')).map((x) => x.item), [undefined, 0, 2, 999]);
  });

  s('text with quotes, tabs, newlines and injection shapes round-trips verbatim', async ({ fixture }) => {
    const r = fixture.rejections;
    const nasty = "x'); DROP TABLE rejections; --\t\\n\nüñï";
    await r.append([rejection(nasty, 5, { reason: nasty, asset: nasty })]);
    const [back] = await r.recent(nasty);
    assert.is(back.deviceId, nasty);
    assert.is(back.reason, nasty);
    assert.is(back.asset, nasty);
    assert.equal(await r.recent('other'), []);
  });

  s('a bad limit is refused with VALIDATION_FAILED', async ({ fixture }) => {
    for (const limit of [0, -1, 1.5, 1e9]) {
      try {
        await fixture.rejections.recent('d1', { limit });
        assert.unreachable(`limit ${limit} accepted`);
      } catch (error) {
        assert.is((error as { code?: string }).code, 'VALIDATION_FAILED');
      }
    }
  });

  return s;
}
