#!/usr/bin/env -S node --liftoff-only
/**
 * Hostile input against the embedded edge over raw sockets (node:net): oversized packets declared in
 * the fixed header (up to 256 MB, sent fast and slowly), memory over many of them, garbage, truncated
 * packets, invalid UTF-8 topics, wrong protocol names and levels, a second CONNECT, QoS 2 floods,
 * 10 000 idle unauthenticated sockets. Each ends in a close (with an MQTT 5 reason code where the
 * protocol allows one), nothing appended, and the edge goes on serving.
 *
 * Run with `--liftoff-only` (the line above; test/run.ts honours it), as the service runs: this
 * process holds the gateway and its PGlite registry, and V8's optimising tier compiling PGlite's
 * WebAssembly in the background grows it by 300+ MB over the first seconds after the registry
 * starts (bin/fleetstream.ts), which a memory budget of the gateway must not count.
 */
import { suite } from '../../support/suite.ts';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import mqttPacket from 'mqtt-packet';
import { MqttStack, type SeededDevice } from '../../support/mqttStack.ts';
import { waitFor } from '../../support/tmp.ts';
import { raw, type Raw } from '../../support/rawMqtt.ts';

const MB = 1024 * 1024;
/** The largest Remaining Length MQTT can declare: 268 435 455 bytes (256 MB). */
const MAX_VARINT = [0xff, 0xff, 0xff, 0x7f];

const connectPacket = (token: string, version: 4 | 5, clientId = '') =>
  mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clientId, clean: true, keepalive: 0, username: token } as mqttPacket.IConnectPacket);

async function authenticated(port: number, token: string, version: 4 | 5): Promise<Raw> {
  const r = await raw(port, version);
  r.socket.write(connectPacket(token, version));
  await waitFor(() => r.packets.some((p) => p.cmd === 'connack'), 3000, 'CONNACK');
  return r;
}

const withinMs = (p: Promise<void>, ms: number, what: string) => Promise.race([p, new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);

/** The first line a child process writes to stdout (its report); rejects if it exits first. */
function firstLine(child: ChildProcessByStdio<Writable | null, Readable, null>): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(out); });
    child.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
}

const t = suite('mqtt edge hostile input');
let s: MqttStack;
let dev: SeededDevice;
t.before(async () => {
  s = await MqttStack.start({ edge: { connectTimeoutMs: 500, maxUnauthenticated: 1000, maxRefusals: 1000 } });
  dev = await s.device('target', [{ name: 't', profile: { type: 'number' } }]);
});
t.after(async () => s.stop());

/** The edge still serves a real device. */
async function stillServes(): Promise<void> {
  const c = await s.connect(dev.token);
  const before = s.appended.length;
  await c.publishAsync(`device/${dev.deviceId}/asset/t/state`, JSON.stringify({ value: 1 }), { qos: 1 });
  assert.is(s.appended.length, before + 1);
  await c.endAsync();
}

t('a CONNECT declaring 256 MB is refused from its fixed header; a slow sender is closed after a few bytes', async () => {
  const oversized = s.edge.stats.oversized!;
  const slow = await raw(s.edge.port);
  slow.socket.write(Buffer.from([0x10, ...MAX_VARINT]));
  let sent = 5;
  const drip = setInterval(() => { if (!slow.isClosed()) { slow.socket.write(Buffer.from([0])); sent++; } }, 20);
  await withinMs(slow.closed, 2000, 'slow oversized CONNECT closed');
  clearInterval(drip);
  assert.ok(sent < 5 + 50, `closed after ${sent} bytes`);
  assert.equal(slow.packets, [], 'no CONNACK before a CONNECT was read');
  assert.is(s.edge.stats.oversized, oversized + 1);
  // Above the pre-authentication limit (4096 by default) even when far below 256 MB.
  const small = await raw(s.edge.port);
  small.socket.write(Buffer.from([0x10, 0x80, 0x40]));
  await withinMs(small.closed, 2000, 'CONNECT of 8 KB closed');
  await stillServes();
});

/** Runs the fast oversized flood from a child process; `budgetMb`: assert the gateway's peak RSS growth under it. */
async function fastOversizedFlood(budgetMb?: number): Promise<void> {
  if (budgetMb !== undefined) assert.ok(process.execArgv.includes('--liftoff-only'), 'the memory budget needs --liftoff-only (npx node test/run.ts test/adapters/mqtt/mqtt-hostile.test.ts)');
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 5);
  const oversized = s.edge.stats.oversized!;
  const rounds = 4;
  const perRound = 20;
  // The senders live in a child process, so the budget measures the gateway, not the flood's own buffers.
  const connect = connectPacket(dev.token, 5).toString('hex');
  const script = `
    const net = require('node:net');
    const chunk = Buffer.alloc(${MB}, 0x61);
    const connect = Buffer.from('${connect}', 'hex');
    const MAX_VARINT = [${MAX_VARINT.join(', ')}];
    let closed = 0, disconnect95 = 0;
    const one = (authed) => new Promise((resolve) => {
      const socket = net.connect(${s.edge.port}, '127.0.0.1');
      let received = Buffer.alloc(0);
      let flooding = false;
      const flood = async () => {
        flooding = true;
        socket.write(Buffer.from([authed ? 0x32 : 0x10, ...MAX_VARINT]));
        // Up to 16 MB each, as fast as the socket takes it, until the edge closes the connection.
        for (let k = 0; k < 16 && !socket.destroyed; k++) {
          if (!socket.write(chunk)) await new Promise((res) => { socket.once('drain', res); socket.once('close', res); });
        }
      };
      socket.on('error', () => undefined);
      socket.on('data', (d) => {
        received = Buffer.concat([received, d]);
        if (authed && !flooding && received[0] === 0x20) flood();
      });
      socket.on('close', () => {
        closed++;
        // After the CONNACK: DISCONNECT (0xE0), one length byte, reason code 0x95 Packet too large.
        const at = received.indexOf(0xe0, 2);
        if (authed && at > 0 && received[at + 2] === 0x95) disconnect95++;
        resolve();
      });
      socket.on('connect', () => { if (authed) socket.write(connect); else flood(); });
    });
    (async () => {
      for (let round = 0; round < ${rounds}; round++) await Promise.all(Array.from({ length: ${perRound} }, (_, i) => one(i % 2 === 1)));
      process.stdout.write(JSON.stringify({ closed, disconnect95 }) + '\\n');
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await firstLine(child);
    const report = JSON.parse(line) as { closed: number; disconnect95: number };
    clearInterval(sampler);
    assert.is(report.closed, rounds * perRound, 'every oversized sender was closed');
    assert.is(report.disconnect95, rounds * perRound / 2, 'MQTT 5: DISCONNECT 0x95 packet too large');
    assert.is(s.edge.stats.oversized, oversized + rounds * perRound);
    // 80 connections declared 256 MB each and pushed what the socket took; a gateway buffering bodies
    // would hold hundreds of MB here.
    const growth = (peak - rssBefore) / MB;
    if (budgetMb !== undefined) assert.ok(growth < budgetMb, `peak RSS growth ${growth.toFixed(1)} MB`);
  } finally {
    clearInterval(sampler);
    child.kill();
  }
  await stillServes();
}

t('oversized CONNECTs and PUBLISHes sent fast by many connections: each closed from its fixed header, MQTT 5 DISCONNECT 0x95', () => fastOversizedFlood());

t('oversized CONNECTs and PUBLISHes sent fast by many connections: memory growth stays under a fixed budget', () => fastOversizedFlood(64));

t('garbage bytes, an HTTP request and a first packet other than CONNECT are closed without a CONNACK', async () => {
  const errors = s.edge.stats.protocolErrors!;
  let seed = 7;
  const garbage = Buffer.from(Array.from({ length: 4096 }, () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff));
  for (const bytes of [garbage, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), mqttPacket.generate({ cmd: 'pingreq' }), Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f])]) {
    const r = await raw(s.edge.port);
    r.socket.write(bytes);
    await withinMs(r.closed, 2000, `closed after ${bytes.subarray(0, 8).toString('hex')}`);
    assert.ok(!r.packets.some((p) => p.cmd === 'connack'));
  }
  assert.ok(s.edge.stats.protocolErrors! + s.edge.stats.oversized! > errors);
  await stillServes();
});

t('a truncated CONNECT and a silent socket are closed at the CONNECT deadline', async () => {
  const whole = connectPacket(dev.token, 4);
  const truncated = await raw(s.edge.port);
  truncated.socket.write(whole.subarray(0, whole.length - 10));
  const silent = await raw(s.edge.port);
  const started = Date.now();
  await withinMs(Promise.all([truncated.closed, silent.closed]).then(() => undefined), 3000, 'closed at the deadline');
  assert.ok(Date.now() - started >= 400, 'not before the deadline');
  assert.equal(truncated.packets, []);
});

t('wrong protocol names are closed without CONNACK; an unknown protocol level gets CONNACK 1', async () => {
  const forged = Buffer.from(connectPacket(dev.token, 4));
  forged.write('MQTX', 4, 'latin1');
  const r = await raw(s.edge.port);
  r.socket.write(forged);
  await withinMs(r.closed, 2000, 'wrong name closed');
  assert.equal(r.packets, []);
  const level = Buffer.from(connectPacket(dev.token, 4));
  level[8] = 6;
  const l = await raw(s.edge.port);
  l.socket.write(level);
  await withinMs(l.closed, 2000, 'unknown level closed');
  assert.equal(l.packets.map((p) => [p.cmd, (p as mqttPacket.IConnackPacket).returnCode]), [['connack', 1]]);
});

t('a second CONNECT closes the connection (MQTT 5: DISCONNECT 0x82)', async () => {
  for (const version of [4, 5] as const) {
    const r = await authenticated(s.edge.port, dev.token, version);
    r.socket.write(connectPacket(dev.token, version));
    await withinMs(r.closed, 2000, `second CONNECT v${version}`);
    if (version === 5) assert.is((r.packets.find((p) => p.cmd === 'disconnect') as mqttPacket.IDisconnectPacket).reasonCode, 0x82);
  }
});

t('topics that are not well-formed UTF-8 or hold U+0000 are refused: MQTT 5 DISCONNECT 0x90, 3.1.1 closed, nothing appended', async () => {
  const appended = s.appended.length;
  const rejections = s.rejections.rows.length;
  for (const version of [4, 5] as const) {
    for (const bad of [Buffer.from([0x64, 0xc3, 0x28]), Buffer.from([0x61, 0xed, 0xa0, 0x80]), Buffer.from('dev\u0000ice/x/state')]) {
      const r = await authenticated(s.edge.port, dev.token, version);
      const payload = Buffer.from('{"value":1}');
      const props = version === 5 ? [0] : [];
      const body = Buffer.from([0, bad.length, ...bad, 0, 1, ...props, ...payload]);
      r.socket.write(Buffer.concat([Buffer.from([0x32, body.length]), body]));
      await withinMs(r.closed, 2000, 'closed');
      if (version === 5) assert.is((r.packets.find((p) => p.cmd === 'disconnect') as mqttPacket.IDisconnectPacket).reasonCode, 0x90);
      assert.ok(!r.packets.some((p) => p.cmd === 'puback'));
    }
  }
  assert.is(s.appended.length, appended);
  assert.is(s.rejections.rows.length, rejections, 'a malformed packet is a protocol error, not a refusal of the device');
});

t('an MQTT 5 SUBSCRIBE with a malformed filter gets SUBACK 0x8F', async () => {
  const r = await authenticated(s.edge.port, dev.token, 5);
  r.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 3, subscriptions: [{ topic: 'a/#/b', qos: 0 }, { topic: `device/${dev.deviceId}/asset/t+/feed`, qos: 0 }] } as mqttPacket.ISubscribePacket, { protocolVersion: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'suback'), 2000, 'SUBACK');
  assert.equal((r.packets.find((p) => p.cmd === 'suback') as mqttPacket.ISubackPacket).granted, [0x8f, 0x8f]);
  r.socket.destroy();
});

t('malformed SUBSCRIBEs inside a whole frame close their connection and leave nothing for the next connection\'s packets (one parser per protocol level serves all)', async () => {
  const frame = (body: number[]) => Buffer.from([0x82, body.length, ...body]);
  const topic = [...Buffer.from('device/x')];
  for (const version of [4, 5] as const) {
    const props = version === 5 ? [0] : [];
    const malformed = [
      // The topic filter's length runs past the packet.
      frame([0, 7, ...props, 0, 50, ...topic]),
      // Requested QoS 3.
      frame([0, 8, ...props, 0, topic.length, ...topic, 3]),
      // No subscription options after the filter.
      frame([0, 9, ...props, 0, topic.length, ...topic]),
      ...(version === 5 ? [frame([0, 10, 9, 0, topic.length, ...topic, 1])] : []),
    ];
    for (const packet of malformed) {
      const bad = await authenticated(s.edge.port, dev.token, version);
      const good = await authenticated(s.edge.port, dev.token, version);
      bad.socket.write(packet);
      await withinMs(bad.closed, 2000, `malformed SUBSCRIBE v${version} closed`);
      assert.ok(!bad.packets.some((p) => p.cmd === 'suback'));
      if (version === 5) assert.is((bad.packets.find((p) => p.cmd === 'disconnect') as mqttPacket.IDisconnectPacket).reasonCode, 0x81);
      good.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 42, subscriptions: [{ topic: `device/${dev.deviceId}/asset/+/command`, qos: 1 }] } as mqttPacket.ISubscribePacket, { protocolVersion: version }));
      await waitFor(() => good.packets.some((p) => p.cmd === 'suback'), 2000, 'SUBACK');
      const suback = good.packets.find((p) => p.cmd === 'suback') as mqttPacket.ISubackPacket;
      assert.is(suback.messageId, 42);
      assert.equal(suback.granted, [1]);
      assert.ok(!good.isClosed());
      good.socket.destroy();
    }
  }
  await stillServes();
});

t('a QoS 2 flood from an MQTT 3.1.1 client: every publish made durable and answered with PUBREC in order, PUBREL → PUBCOMP', async () => {
  const r = await authenticated(s.edge.port, dev.token, 4);
  const appended = s.appended.length;
  const n = 3000;
  const flood = Buffer.concat(Array.from({ length: n }, (_, i) => mqttPacket.generate({
    cmd: 'publish', topic: `device/${dev.deviceId}/asset/t/state`, payload: Buffer.from(`{"value":${i}}`), qos: 2, messageId: i + 1, dup: false, retain: false,
  })));
  r.socket.write(flood);
  await waitFor(() => r.packets.filter((p) => p.cmd === 'pubrec').length === n, 20_000, 'every PUBREC');
  assert.equal(r.packets.filter((p) => p.cmd === 'pubrec').map((p) => (p as mqttPacket.IPubrecPacket).messageId), Array.from({ length: n }, (_, i) => i + 1));
  assert.is(s.appended.length, appended + n, 'nothing lost');
  assert.equal(s.appended.slice(appended, appended + 3).map((e) => JSON.parse(new TextDecoder().decode(e.body)).value), [0, 1, 2], 'in order');
  r.socket.write(mqttPacket.generate({ cmd: 'pubrel', messageId: 5 }));
  await waitFor(() => r.packets.some((p) => p.cmd === 'pubcomp'), 2000, 'PUBCOMP');
  r.socket.destroy();
});

t('a QoS 0 flood from many connections beyond the admission bound: nothing lost, nobody disconnected (reading pauses instead)', async () => {
  const small = await MqttStack.start({ edge: { maxAdmissionsInFlight: 8, receiveMaximum: 4 } });
  try {
    const devices = await Promise.all(Array.from({ length: 10 }, (_, i) => small.device(`flood-${i}`, [{ name: 't', profile: { type: 'number' } }])));
    const sockets = await Promise.all(devices.map((d) => authenticated(small.edge.port, d.token, 4)));
    const per = 300;
    for (const [i, r] of sockets.entries()) {
      r.socket.write(Buffer.concat(Array.from({ length: per }, (_, k) => mqttPacket.generate({
        cmd: 'publish', topic: `device/${devices[i].deviceId}/asset/t/state`, payload: Buffer.from(`{"value":${k}}`), qos: 0, dup: false, retain: false,
      }))));
    }
    await waitFor(() => small.appended.length === devices.length * per, 30_000, 'every QoS 0 uplink appended');
    assert.ok(sockets.every((r) => !r.isClosed()), 'no connection was closed');
    assert.is(small.edge.stats.disconnected, 0);
    for (const [i, d] of devices.entries()) {
      // Every value once (the harness sees appends as they complete, several at a time, so not their log order).
      const values = small.appended.filter((e) => e.deviceId === d.deviceId).map((e) => JSON.parse(new TextDecoder().decode(e.body)).value as number);
      assert.equal(values.sort((x, y) => x - y), Array.from({ length: per }, (_, k) => k), `device ${i}: each uplink once`);
    }
    for (const r of sockets) r.socket.destroy();
  } finally {
    await small.stop();
  }
});

t('10 000 idle unauthenticated sockets: at most maxUnauthenticated are held, memory bounded, devices still connect', async () => {
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  let maxHeld = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
    maxHeld = Math.max(maxHeld, s.edge.stats.unauthenticated!);
  }, 5);
  // The sockets live in a child process: 10 000 of them would take 20 000 descriptors here.
  const script = `
    const net = require('node:net');
    let open = 0, closed = 0;
    const sockets = [];
    const one = () => new Promise((resolve) => {
      const s = net.connect(${s.edge.port}, '127.0.0.1');
      s.on('connect', () => { open++; resolve(); });
      s.on('error', () => resolve());
      s.on('close', () => { closed++; });
      sockets.push(s);
    });
    (async () => {
      for (let i = 0; i < 10000; i += 500) await Promise.all(Array.from({ length: 500 }, one));
      process.stdout.write(JSON.stringify({ open, closed }) + '\\n');
      process.stdin.on('data', () => process.exit(0));
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const line = await firstLine(child);
    const report = JSON.parse(line) as { open: number; closed: number };
    assert.is(report.open, 10_000, 'every socket was accepted by the kernel');
    // Meanwhile a device connects and publishes.
    await stillServes();
    clearInterval(sampler);
    assert.ok(maxHeld <= 1000, `held ${maxHeld} unauthenticated`);
    assert.ok((peak - rssBefore) / MB < 100, `peak RSS growth ${((peak - rssBefore) / MB).toFixed(1)} MB`);
  } finally {
    clearInterval(sampler);
    child.stdin.write('x');
    child.kill();
  }
  await waitFor(() => s.edge.stats.unauthenticated === 0, 5000, 'all closed (deadline or child exit)');
});

t.run();
