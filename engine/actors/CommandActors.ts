/**
 * Command actors (DESIGN.md §4): one per device with commands pending, delivering them strictly in
 * order, one at a time. Asset commands go to the MQTT transport as JSON `{value, at}` (spec §2.3);
 * device commands to the LPWAN downlink port (spec §4.4), and so do asset commands marked `via:
 * 'downlink'` (for a device on a LoRaWAN network), as a device command holding that one asset. A device that is offline keeps its
 * commands in a bounded queue until it becomes reachable again or each command's expiry (Clock-
 * driven) passes; an unacknowledged delivery is resent after a backoff (at-least-once).
 * Every status change is kept in a bounded per-device history (`recent`) and reported to onChange
 * (the service persists them in the command history: CommandHistoryRecorder).
 *
 * A full queue refuses with COMMAND_QUEUE_FULL (429). A place can be reserved before the command is
 * on its way (reserve): an edge whose actors read every command record refuses at once instead of
 * answering 202 for a command that would not fit. A command that arrives for a full queue anyway
 * (from another edge, or appended to topic `commands` by an application) is recorded as `failed`
 * with that code (refuse), so the device's command list shows what became of it.
 */
import { exponentialBackoff, type Backoff } from '../kernel/backoff.ts';
import type { Clock, TimerHandle } from '../kernel/clock.ts';
import { FleetError, toFleetError, type ErrorCode } from '../kernel/errors.ts';
import type { Downlink } from '../ports/downlink.ts';
import type { CommandView } from '../../schemas/commands.ts';
import type { CommandTransport } from '../ports/commandTransport.ts';
import { initialCommandSnapshot, nextCommandSnapshot, type CommandEvent, type CommandSnapshot } from './commandMachine.ts';

export type AcceptedCommand = {
  id: string;
  deviceId: string;
  /** ISO 8601 time of the command. */
  at: string;
  issuer: string;
  /** Epoch ms; default now + expiryMs. */
  expiresAt?: number;
} & (
  | {
    kind: 'asset';
    asset: { id: string; name: string };
    value: unknown;
    /** How it leaves: MQTT (default), or the LPWAN downlink as the device command `{[asset.name]: value}`. */
    via?: 'mqtt' | 'downlink';
  }
  | { kind: 'device'; assets: Record<string, unknown> }
);

export interface CommandActorsOptions {
  clock: Clock;
  transport?: CommandTransport;
  downlink?: Downlink;
  /** Commands waiting or reserved per device before submit and reserve refuse with COMMAND_QUEUE_FULL. Default 100. */
  maxQueuePerDevice?: number;
  /** How long a command waits for its device, ms. Default 3 600 000 (one hour). */
  expiryMs?: number;
  /** First resend delay after an unacknowledged delivery or a retriable downlink error, ms; doubles up to retryMaxMs. Default 1000. */
  retryBaseMs?: number;
  /** Default 60 000. */
  retryMaxMs?: number;
  /** Commands remembered per device for `recent`. Default 100. */
  historyPerDevice?: number;
  /** Every status change (queued, sent, delivered, expired, failed). */
  onChange?(view: Readonly<CommandView>): void;
}

interface Entry {
  command: AcceptedCommand;
  view: CommandView;
  snapshot: CommandSnapshot;
  expiry: TimerHandle;
  settled: (() => void)[];
}

interface DeviceQueue {
  queue: Entry[];
  busy: boolean;
  retry: TimerHandle | undefined;
  resends: number;
  /** The device became reachable while a delivery was on its way: try again once it is answered. */
  reachedMeanwhile: boolean;
}

const FINAL = new Set(['delivered', 'expired', 'failed']);

export class CommandActors {
  readonly #o: Required<Pick<CommandActorsOptions, 'maxQueuePerDevice' | 'expiryMs' | 'retryBaseMs' | 'retryMaxMs' | 'historyPerDevice'>> & CommandActorsOptions;
  readonly #devices = new Map<string, DeviceQueue>();
  readonly #history = new Map<string, CommandView[]>();
  /** Reserved places: command id → device id, and the count per device. */
  readonly #reservations = new Map<string, string>();
  readonly #reserved = new Map<string, number>();
  readonly #unsubscribe: (() => void) | undefined;
  readonly #backoff: Backoff;

  constructor(options: CommandActorsOptions) {
    this.#o = { maxQueuePerDevice: 100, expiryMs: 3_600_000, retryBaseMs: 1000, retryMaxMs: 60_000, historyPerDevice: 100, ...options };
    this.#backoff = exponentialBackoff({ initialMs: this.#o.retryBaseMs, maxMs: this.#o.retryMaxMs });
    this.#unsubscribe = options.transport?.onReachable((deviceId) => this.#reached(deviceId));
  }

  /**
   * Holds a place in the device's queue for a command on its way to submit() (through the log);
   * COMMAND_QUEUE_FULL when there is none. submit() of that command id takes the place; release()
   * gives it back when the command will not come (its append failed, or it was refused).
   */
  reserve(deviceId: string, commandId: string): void {
    if (this.#reservations.has(commandId)) return;
    this.#checkRoom(deviceId);
    this.#reservations.set(commandId, deviceId);
    this.#reserved.set(deviceId, (this.#reserved.get(deviceId) ?? 0) + 1);
  }

  /** Gives a reserved place back; false when the command holds none. */
  release(commandId: string): boolean {
    const deviceId = this.#reservations.get(commandId);
    if (deviceId === undefined) return false;
    this.#reservations.delete(commandId);
    const left = this.#reserved.get(deviceId)! - 1;
    if (left === 0) this.#reserved.delete(deviceId);
    else this.#reserved.set(deviceId, left);
    return true;
  }

  /**
   * Queues a command; `onSettled` runs once it is delivered, expired or failed. COMMAND_QUEUE_FULL
   * when the device's queue is full (a command with a reserved place always fits).
   */
  submit(command: AcceptedCommand, onSettled?: () => void): CommandView {
    if (this.#reservations.get(command.id) === command.deviceId) this.release(command.id);
    else this.#checkRoom(command.deviceId);
    let device = this.#devices.get(command.deviceId);
    if (device === undefined) this.#devices.set(command.deviceId, (device = { queue: [], busy: false, retry: undefined, resends: 0, reachedMeanwhile: false }));
    const now = this.#o.clock.now();
    const view = this.#view(command, now);
    const expiresIn = (command.expiresAt ?? now + this.#o.expiryMs) - now;
    const entry: Entry = { command, view, snapshot: initialCommandSnapshot(), settled: onSettled ? [onSettled] : [], expiry: undefined as never };
    entry.expiry = this.#o.clock.setTimeout(() => this.#settle(entry, { type: 'EXPIRE' }, 'COMMAND_EXPIRED', 'the device did not take the command before it expired'), Math.max(0, expiresIn));
    device.queue.push(entry);
    this.#remember(view);
    this.#o.onChange?.(view);
    this.#pump(command.deviceId);
    return view;
  }

  /**
   * Records a command that is not queued (submit refused it: its device's queue is full) as
   * `failed` with the refusal's code and reason: listed like any other, reported to onChange.
   */
  refuse(command: AcceptedCommand, failure: FleetError): CommandView {
    this.release(command.id);
    const view = this.#view(command, this.#o.clock.now());
    view.status = 'failed';
    view.code = failure.code;
    view.reason = failure.message;
    this.#remember(view);
    this.#o.onChange?.(view);
    return view;
  }

  /** Newest first. */
  recent(deviceId: string, limit = 50): CommandView[] {
    return (this.#history.get(deviceId) ?? []).slice(-limit).reverse().map((v) => ({ ...v }));
  }

  #checkRoom(deviceId: string): void {
    const waiting = this.#devices.get(deviceId)?.queue.length ?? 0;
    const reserved = this.#reserved.get(deviceId) ?? 0;
    if (waiting + reserved >= this.#o.maxQueuePerDevice) {
      const on = reserved > 0 ? ` (${reserved} more on their way)` : '';
      throw new FleetError('COMMAND_QUEUE_FULL', `device ${deviceId} has ${waiting} commands waiting${on}, the most its queue holds (${this.#o.maxQueuePerDevice}); retry once some are delivered or expire`, { detail: { retryAfter: 5 } });
    }
  }

  #view(command: AcceptedCommand, now: number): CommandView {
    const view: CommandView = {
      id: command.id, deviceId: command.deviceId, kind: command.kind, value: command.kind === 'asset' ? command.value : command.assets,
      at: command.at, issuer: command.issuer, status: 'queued', updatedAt: now, attempts: 0,
    };
    if (command.kind === 'asset') view.asset = command.asset.name;
    return view;
  }

  /** Commands waiting (queued or sent) for a device. */
  pending(deviceId: string): number {
    return this.#devices.get(deviceId)?.queue.length ?? 0;
  }

  stop(): void {
    this.#unsubscribe?.();
    for (const device of this.#devices.values()) {
      device.retry?.cancel();
      for (const entry of device.queue) entry.expiry.cancel();
    }
    this.#devices.clear();
    this.#reservations.clear();
    this.#reserved.clear();
  }

  #remember(view: CommandView): void {
    let list = this.#history.get(view.deviceId);
    if (list === undefined) this.#history.set(view.deviceId, (list = []));
    list.push(view);
    if (list.length > this.#o.historyPerDevice) list.shift();
  }

  #apply(entry: Entry, event: CommandEvent, code?: ErrorCode, reason?: string): boolean {
    const next = nextCommandSnapshot(entry.snapshot, event);
    if (next.value === entry.snapshot.value) return false;
    entry.snapshot = next;
    entry.view.status = next.value as CommandView['status'];
    entry.view.updatedAt = this.#o.clock.now();
    // code and reason belong to this change (why it was requeued, expired or failed), not to later ones.
    if (code !== undefined) entry.view.code = code;
    else delete entry.view.code;
    if (reason !== undefined) entry.view.reason = reason;
    else delete entry.view.reason;
    this.#o.onChange?.(entry.view);
    return true;
  }

  #settle(entry: Entry, event: CommandEvent, code?: ErrorCode, reason?: string): void {
    if (FINAL.has(entry.view.status) || !this.#apply(entry, event, code, reason)) return;
    entry.expiry.cancel();
    const device = this.#devices.get(entry.command.deviceId);
    if (device !== undefined) {
      const i = device.queue.indexOf(entry);
      if (i >= 0) device.queue.splice(i, 1);
      if (device.queue.length === 0 && !device.busy) {
        device.retry?.cancel();
        this.#devices.delete(entry.command.deviceId);
      }
    }
    for (const done of entry.settled) done();
    this.#pump(entry.command.deviceId);
  }

  #reached(deviceId: string): void {
    const device = this.#devices.get(deviceId);
    if (device?.busy === true) device.reachedMeanwhile = true;
    else this.#pump(deviceId);
  }

  #pump(deviceId: string): void {
    const device = this.#devices.get(deviceId);
    if (device === undefined || device.busy || device.retry !== undefined || device.queue.length === 0) return;
    const entry = device.queue[0];
    device.busy = true;
    device.reachedMeanwhile = false;
    entry.view.attempts++;
    this.#apply(entry, { type: 'SEND' });
    this.#attempt(entry).then((outcome) => {
      device.busy = false;
      if (FINAL.has(entry.view.status)) {
        // Expired while in flight.
      } else if (outcome.kind === 'delivered') {
        device.resends = 0;
        this.#settle(entry, { type: 'DELIVERED' });
        return;
      } else if (outcome.kind === 'failed') {
        this.#settle(entry, { type: 'FAIL' }, outcome.code, outcome.reason);
        return;
      } else {
        this.#apply(entry, { type: 'REQUEUE' }, undefined, outcome.reason);
        // Offline: wait for onReachable. Unacknowledged or a retriable error: resend after a backoff.
        if (outcome.kind === 'retry') {
          device.retry = this.#o.clock.setTimeout(() => {
            device.retry = undefined;
            this.#pump(deviceId);
          }, this.#backoff(device.resends++));
          return;
        }
      }
      if (this.#devices.get(deviceId) === device && device.queue.length === 0) this.#devices.delete(deviceId);
      else if (device.queue[0] !== entry || device.reachedMeanwhile) this.#pump(deviceId);
    });
  }

  async #attempt(entry: Entry): Promise<{ kind: 'delivered' | 'offline' | 'retry'; reason?: string } | { kind: 'failed'; code: ErrorCode; reason: string }> {
    const c = entry.command;
    try {
      if (c.kind === 'asset' && c.via !== 'downlink') {
        if (this.#o.transport === undefined) return { kind: 'failed', code: 'UNAVAILABLE', reason: 'no MQTT transport is configured' };
        const payload = new TextEncoder().encode(JSON.stringify({ value: c.value, at: c.at }));
        const outcome = await this.#o.transport.deliver({ commandId: c.id, deviceId: c.deviceId, asset: c.asset, payload });
        if (outcome === 'delivered') return { kind: 'delivered' };
        if (outcome === 'offline') return { kind: 'offline', reason: 'device not connected or not subscribed to the command topic' };
        return { kind: 'retry', reason: 'no acknowledgement from the device' };
      }
      if (this.#o.downlink === undefined) return { kind: 'failed', code: 'NO_DOWNLINK', reason: 'no LPWAN downlink is configured; device commands cannot be delivered' };
      const assets = c.kind === 'device' ? c.assets : { [c.asset.name]: c.value };
      await this.#o.downlink.send({ commandId: c.id, deviceId: c.deviceId, assets, at: c.at });
      return { kind: 'delivered' };
    } catch (error) {
      const failure = toFleetError(error, 'UNAVAILABLE');
      if (failure.retriable) return { kind: 'retry', reason: failure.message };
      return { kind: 'failed', code: failure.code, reason: failure.message };
    }
  }
}
