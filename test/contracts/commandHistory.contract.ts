/**
 * Contract of the CommandHistory port (engine/ports/commandHistory.ts): every adapter passes it.
 */
import { fixtureSuite } from '../support/fixtureSuite.ts';
import * as assert from 'uvu/assert';
import type { CommandHistory } from '../../engine/ports/commandHistory.ts';
import type { CommandStatus, CommandView } from '../../schemas/commands.ts';

export interface CommandHistoryFixture {
  history: CommandHistory;
  cleanup(): Promise<void>;
}

function view(id: string, status: CommandStatus, updatedAt: number, attempts: number, fields: Partial<CommandView> = {}): CommandView {
  return {
    id, deviceId: 'd1', kind: 'asset', asset: 'led', value: true, at: '2026-01-01T00:00:00.000Z', issuer: 'user:u1',
    status, updatedAt, attempts, ...fields,
  };
}

/** queued → sent → (not acknowledged) queued → sent → delivered, all in one millisecond but the last. */
function resent(id: string, t: number, fields: Partial<CommandView> = {}): CommandView[] {
  return [
    view(id, 'queued', t, 0, fields),
    view(id, 'sent', t, 1, fields),
    view(id, 'queued', t, 1, { ...fields, reason: 'no acknowledgement from the device' }),
    view(id, 'sent', t, 2, fields),
    view(id, 'delivered', t + 5, 2, fields),
  ];
}

export function commandHistoryContract(name: string, factory: () => Promise<CommandHistoryFixture>) {
  const s = fixtureSuite(`command history contract: ${name}`, factory);

  s('a lifecycle is listed with every transition in order, whatever order they were appended in', async ({ fixture }) => {
    const h = fixture.history;
    const rows = resent('c1', 1000);
    await h.append([rows[3], rows[0], rows[4]]);
    await h.append([rows[2], rows[1]]);
    const [c] = await h.list({ deviceId: 'd1' });
    assert.equal(c, {
      id: 'c1', deviceId: 'd1', kind: 'asset', asset: 'led', value: true, at: '2026-01-01T00:00:00.000Z', issuer: 'user:u1',
      status: 'delivered', updatedAt: 1005, attempts: 2, queuedAt: 1000,
      transitions: [
        { status: 'queued', changedAt: 1000, attempts: 0 },
        { status: 'sent', changedAt: 1000, attempts: 1 },
        { status: 'queued', changedAt: 1000, attempts: 1, reason: 'no acknowledgement from the device' },
        { status: 'sent', changedAt: 1000, attempts: 2 },
        { status: 'delivered', changedAt: 1005, attempts: 2 },
      ],
    });
  });

  s('device commands, failures and expiries keep their value, code and reason', async ({ fixture }) => {
    const h = fixture.history;
    const device = { kind: 'device' as const, asset: undefined, value: { led: true, level: 3, note: { nested: [1, 'two', null] } } };
    await h.append([
      view('c2', 'queued', 2000, 0, device),
      view('c2', 'sent', 2001, 1, device),
      view('c2', 'failed', 2002, 1, { ...device, code: 'DOWNLINK_REFUSED', reason: 'The Things Stack answered 400: bad f_port' }),
      view('c3', 'queued', 3000, 0),
      view('c3', 'expired', 9000, 0, { code: 'COMMAND_EXPIRED', reason: 'the device did not take the command before it expired' }),
    ]);
    const [c3, c2] = await h.list({ deviceId: 'd1' });
    assert.is(c2.kind, 'device');
    assert.is(c2.asset, undefined);
    assert.equal(c2.value, device.value);
    assert.equal([c2.status, c2.code, c2.reason, c2.attempts], ['failed', 'DOWNLINK_REFUSED', 'The Things Stack answered 400: bad f_port', 1]);
    assert.equal(c3.transitions.map((t) => t.status), ['queued', 'expired']);
    assert.equal([c3.status, c3.code, c3.updatedAt, c3.queuedAt], ['expired', 'COMMAND_EXPIRED', 9000, 3000]);
  });

  s('newest first by the time queued; from (inclusive), to (exclusive) and limit select commands', async ({ fixture }) => {
    const h = fixture.history;
    await h.append(Array.from({ length: 10 }, (_, i) => view(`k${i}`, 'queued', 1000 + i * 100, 0)));
    // A late transition does not move a command: the window is about when it was queued.
    await h.append([view('k0', 'sent', 99_999, 1)]);
    assert.equal((await h.list({ deviceId: 'd1' })).map((c) => c.id), ['k9', 'k8', 'k7', 'k6', 'k5', 'k4', 'k3', 'k2', 'k1', 'k0']);
    assert.equal((await h.list({ deviceId: 'd1', limit: 3 })).map((c) => c.id), ['k9', 'k8', 'k7']);
    assert.equal((await h.list({ deviceId: 'd1', from: 1200, to: 1500 })).map((c) => c.id), ['k4', 'k3', 'k2']);
    assert.equal((await h.list({ deviceId: 'd1', to: 1100 })).map((c) => c.id), ['k0']);
    assert.equal((await h.list({ deviceId: 'd1', from: 1900 })).map((c) => c.id), ['k9']);
    assert.equal(await h.list({ deviceId: 'd1', from: 1500, to: 1500 }), []);
    assert.equal(await h.list({ deviceId: 'd2' }), []);
  });

  s('a transition appended again (replay) is listed once', async ({ fixture }) => {
    const h = fixture.history;
    await h.append(resent('c1', 1000));
    await h.append(resent('c1', 1000));
    // After a restart the command is queued and sent again: same statuses, same attempt numbers.
    await h.append([view('c1', 'queued', 7000, 0), view('c1', 'sent', 7000, 1)]);
    const listed = await h.list({ deviceId: 'd1' });
    assert.is(listed.length, 1);
    assert.is(listed[0].queuedAt, 1000, 'the first time it was queued is kept');
    assert.equal(listed[0].transitions.map((t) => `${t.status}${t.attempts}`), ['queued0', 'sent1', 'queued1', 'sent2', 'delivered2']);
  });

  s('text with quotes, tabs, newlines and injection shapes round-trips verbatim', async ({ fixture }) => {
    const h = fixture.history;
    const nasty = "x'); DROP TABLE commands; --\t\\n\nüñï";
    await h.append([view(nasty, 'failed', 5, 0, { deviceId: nasty, asset: nasty, issuer: nasty, reason: nasty, code: 'X', value: nasty, at: nasty })]);
    const [back] = await h.list({ deviceId: nasty });
    assert.equal([back.id, back.deviceId, back.asset, back.issuer, back.reason, back.value, back.at], [nasty, nasty, nasty, nasty, nasty, nasty, nasty]);
    assert.equal(await h.list({ deviceId: 'other' }), []);
  });

  s('bad queries and rows are refused with VALIDATION_FAILED', async ({ fixture }) => {
    const h = fixture.history;
    const bad: Array<() => Promise<unknown>> = [
      ...[0, -1, 1.5, 1e9].map((limit) => () => h.list({ deviceId: 'd1', limit })),
      () => h.list({ deviceId: 'd1', from: 1.5 }),
      () => h.list({ deviceId: 'd1', to: Number.NaN }),
      () => h.list({ deviceId: 5 as unknown as string }),
      () => h.append([view('c', 'lost' as CommandStatus, 1, 0)]),
      () => h.append([view('c', 'queued', 1.5, 0)]),
      () => h.append([view('c', 'queued', -1, 0)]),
      () => h.append([view('c', 'queued', 1, -1)]),
    ];
    for (const call of bad) {
      try {
        await call();
        assert.unreachable('accepted');
      } catch (error) {
        assert.is((error as { code?: string }).code, 'VALIDATION_FAILED', String(error));
      }
    }
  });

  return s;
}
