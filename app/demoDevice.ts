/**
 * The quickstart's demo device: a thermostat that sends a state every `periodMs` over the HTTP API
 * with its device token, exactly as a real device would (PUT /device/{id}/state, spec §4.2), so the
 * console has values moving on first open; and, given the service's MQTT address, listens for its
 * commands (`device/<id>/asset/+/command`, spec §4.3) and acts on them: `light` switches the light,
 * `setpoint` is the temperature the room moves to. Each command is answered by a state at once.
 */
import mqtt, { type MqttClient } from 'mqtt';

export interface DemoDeviceOptions {
  /** `http://localhost:8080`. */
  httpBase: string;
  /** `mqtt://localhost:1883`: where it listens for commands; none, it only sends states. */
  mqttUrl?: string;
  deviceId: string;
  deviceToken: string;
  /** Between two states, ms. Default 2000. */
  periodMs?: number;
  signal: AbortSignal;
  /** Each answer, for the caller to report (status 202 when accepted). */
  onSent?(status: number, detail: string | undefined): void;
  /** Each command heard: applied, or why not. */
  onCommand?(asset: string, outcome: string): void;
  now?(): number;
}

type Reading = Record<string, { value: number | boolean }>;

/** Temperature waves around `room`, humidity on its own slow wave, with a little noise. */
export function demoState(t: number, room = 21): Record<string, { value: number }> {
  const minutes = t / 60_000;
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    temperature: { value: round(room + 1.5 * Math.sin(minutes / 3) + (Math.random() - 0.5) * 0.4) },
    humidity: { value: round(55 + 8 * Math.sin(minutes / 7 + 1) + (Math.random() - 0.5)) },
  };
}

/** The thermostat's logic: what it reports and what a command changes; no I/O. */
export class DemoThermostat {
  light = false;
  /** °C, within the asset's profile (5..30, engine/admin/adminActions.ts DEMO_ASSETS). */
  setpoint = 21;
  /** The room without its waves: half way to the set point at each state. */
  private room = 21;

  state(t: number): Reading {
    this.room += (this.setpoint - this.room) / 2;
    return { ...demoState(t, this.room), light: { value: this.light }, setpoint: { value: this.setpoint } };
  }

  /** A command's MQTT message (`{value, at?}`); 'applied', or why it was ignored. */
  command(topic: string, payload: Uint8Array): string {
    const asset = /^device\/[^/]+\/asset\/([^/]+)\/command$/.exec(topic)?.[1];
    let value: unknown;
    try {
      value = (JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as { value?: unknown })?.value;
    } catch {
      return 'ignored: not a JSON command';
    }
    if (asset === 'light') {
      if (typeof value !== 'boolean') return 'ignored: light takes true or false';
      this.light = value;
      return 'applied';
    }
    if (asset === 'setpoint') {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 5 || value > 30) return 'ignored: setpoint takes a number from 5 to 30';
      this.setpoint = value;
      return 'applied';
    }
    return `ignored: no actuator ${shown(asset ?? topic)}`;
  }
}

/** A name from the wire, for a terminal: quoted, bounded, every character outside printable ASCII (a bidi override) escaped. */
function shown(text: string): string {
  return JSON.stringify(text.slice(0, 60)).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Listens for the device's commands; mqtt.js reconnects and subscribes again after a drop. */
function listen(options: DemoDeviceOptions, thermostat: DemoThermostat, sendNow: () => void): MqttClient | undefined {
  if (options.mqttUrl === undefined) return undefined;
  const client = mqtt.connect(options.mqttUrl, { username: options.deviceToken, protocolVersion: 5, reconnectPeriod: 2000, clean: true });
  client.on('connect', () => {
    client.subscribe(`device/${options.deviceId}/asset/+/command`, { qos: 1 }, (error) => {
      if (error) options.onCommand?.('*', `not subscribed: ${error.message}`);
    });
  });
  client.on('error', (error) => options.onCommand?.('*', `MQTT: ${error.message}`));
  client.on('message', (topic, payload) => {
    const outcome = thermostat.command(topic, payload);
    options.onCommand?.(topic.split('/')[3] ?? topic, outcome);
    if (outcome === 'applied') sendNow();
  });
  return client;
}

/** Resolves when `signal` aborts. */
export async function runDemoDevice(options: DemoDeviceOptions): Promise<void> {
  const period = options.periodMs ?? 2000;
  const now = options.now ?? Date.now;
  const url = `${options.httpBase}/device/${encodeURIComponent(options.deviceId)}/state`;
  const thermostat = new DemoThermostat();
  let wake = () => {};
  const client = listen(options, thermostat, () => wake());
  try {
    while (!options.signal.aborted) {
      await send(url, options, thermostat.state(now()));
      // Until the next period, an applied command (its state at once) or Ctrl-C.
      await new Promise<void>((resolve) => {
        const done = () => { clearTimeout(timer); options.signal.removeEventListener('abort', done); resolve(); };
        const timer = setTimeout(done, period);
        wake = done;
        options.signal.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    await client?.endAsync(true);
  }
}

async function send(url: string, options: DemoDeviceOptions, reading: Reading): Promise<void> {
  try {
    const response = await fetch(url, {
      method: 'PUT',
      headers: { authorization: `Bearer ${options.deviceToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(reading),
      signal: options.signal,
    });
    const detail = response.ok ? undefined : ((await response.json().catch(() => ({}))) as { detail?: string }).detail;
    options.onSent?.(response.status, detail);
  } catch (error) {
    if (options.signal.aborted) return;
    options.onSent?.(0, error instanceof Error ? error.message : String(error));
  }
}
