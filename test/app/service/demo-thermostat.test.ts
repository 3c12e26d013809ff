/**
 * The quickstart's demo thermostat (app/demoDevice.ts): what its commands change, and that a
 * command it cannot use — malformed, truncated, not UTF-8, the wrong type, out of its profile, for
 * an asset it does not have, on a forged topic — changes nothing.
 */
import * as assert from 'uvu/assert';
import { test } from '../../support/suite.ts';
import { DemoThermostat } from '../../../app/demoDevice.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const topic = (asset: string) => `device/dev-1/asset/${asset}/command`;

test('the light switches; the set point draws the reported temperature to it, half way at each state', () => {
  const t = new DemoThermostat();
  assert.is(t.state(0).light.value, false);
  assert.is(t.command(topic('light'), bytes('{"value": true, "at": "2026-01-01T00:00:00Z"}')), 'applied');
  assert.is(t.state(2000).light.value, true);
  assert.is(t.command(topic('setpoint'), bytes('{"value": 30}')), 'applied');
  const temperatures = Array.from({ length: 6 }, (_, i) => t.state(4000 + i * 2000).temperature.value as number);
  assert.is(t.state(20_000).setpoint.value, 30);
  // The room reaches 30 - 9/2^n; the waves add at most 1.5 + 0.2.
  assert.ok(temperatures[0] >= 25.5 - 1.7 && temperatures[0] <= 25.5 + 1.7, `${temperatures}`);
  assert.ok(temperatures[5] >= 30 - 9 / 64 - 1.7, `${temperatures}`);
  assert.is(t.command(topic('setpoint'), bytes('{"value": 5}')), 'applied');
  assert.ok((t.state(30_000).temperature.value as number) < 20, 'and back down');
});

test('commands it cannot use are ignored, saying why; nothing changes', () => {
  const t = new DemoThermostat();
  const cases: Array<[string, Uint8Array, RegExp]> = [
    [topic('light'), bytes('{"value": "true"}'), /light takes true or false/],
    [topic('light'), bytes('{"value": 1}'), /light takes true or false/],
    [topic('light'), bytes('{"val'), /not a JSON command/],
    [topic('light'), bytes(''), /not a JSON command/],
    [topic('light'), new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), /not a JSON command/],
    [topic('light'), bytes('null'), /light takes true or false/],
    [topic('setpoint'), bytes('{"value": 31}'), /setpoint takes a number from 5 to 30/],
    [topic('setpoint'), bytes('{"value": 4.99}'), /from 5 to 30/],
    [topic('setpoint'), bytes('{"value": "20"}'), /from 5 to 30/],
    [topic('setpoint'), bytes('{"value": 1e400}'), /from 5 to 30/],
    [topic('setpoint'), bytes(`{"value": 20, "pad": "${'x'.repeat(1 << 20)}"}`.slice(0, 5000)), /not a JSON command/],
    [topic('temperature'), bytes('{"value": 20}'), /no actuator "temperature"/],
    [topic('light\u202e'), bytes('{"value": true}'), /no actuator "light\\u202e"/],
    ['device/dev-1/asset/light/command/extra', bytes('{"value": true}'), /no actuator/],
    ['asset/a1/command', bytes('{"value": true}'), /no actuator "asset\/a1\/command"/],
  ];
  for (const [where, payload, why] of cases) {
    const outcome = t.command(where, payload);
    assert.match(outcome, /^ignored: /, where);
    assert.match(outcome, why, `${where}: ${outcome}`);
    assert.ok(outcome.length < 120, 'a bounded line for the terminal');
  }
  const state = t.state(0);
  assert.equal([state.light.value, state.setpoint.value], [false, 21]);
});

test.run();
