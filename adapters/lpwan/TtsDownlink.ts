/**
 * Device commands to The Things Stack (spec §4.4: the one LPWAN downlink network), implementing
 * engine/ports/downlink.ts. For a device bound to `thethingsnetwork`, the command is encoded in the
 * device type's format (engine/lpwan/encodeDeviceCommand.ts) and pushed to the downlink queue of
 * the application's webhook:
 *
 *   POST {baseUrl}/api/v3/as/applications/{applicationId}/webhooks/{webhookId}/devices/{device}/down/push
 *   Authorization: Bearer {apiKey}
 *   {"downlinks": [{"f_port": …, "frm_payload": "<base64>", "priority": "NORMAL", "correlation_ids": ["fleetstream:command:<id>"]}]}
 *
 * `send` resolves once The Things Stack queued the downlink (2xx). Errors decide what the command
 * actor does (engine/actors/CommandActors.ts retries retriable ones with a Clock-driven backoff):
 *   retriable      429 RATE_LIMITED, 408 / 5xx / connection failure UNAVAILABLE, no answer in
 *                  timeoutMs TIMEOUT (the abort is Clock-driven)
 *   not retriable  any other 4xx DOWNLINK_REFUSED (with The Things Stack's message); a device
 *                  that is unknown (UNKNOWN_DEVICE), on another network or in an application
 *                  without downlink settings (NO_DOWNLINK); a command that does not encode
 *                  (VALIDATION_FAILED)
 */
import type { Clock } from '../../engine/kernel/clock.ts';
import { FleetError, toFleetError } from '../../engine/kernel/errors.ts';
import { encodeDeviceCommand } from '../../engine/lpwan/encodeDeviceCommand.ts';
import type { DeviceCommandDownlink, Downlink } from '../../engine/ports/downlink.ts';
import type { LpwanApplications, TtsDownlinkSettings } from '../../engine/ports/lpwanApplications.ts';
import type { Registry } from '../../engine/ports/registry.ts';

export interface TtsDownlinkOptions {
  /** The device's network binding and payload settings. */
  devices: Pick<Registry, 'getDevice'>;
  applications: Pick<LpwanApplications, 'get'>;
  clock: Clock;
  /** Deadline of one push request, ms. Default 10 000. */
  timeoutMs?: number;
  /** Default `fleetstream`. */
  userAgent?: string;
}

const NETWORK = 'thethingsnetwork';
const DEFAULT_TEMPLATE = 'eui-{devEui}';
/** Of an error answer, enough to quote The Things Stack's message. */
const MAX_ERROR_BODY = 4096;

/** The Things Stack end device id of a devEui under the application's template. */
export function ttsDeviceId(settings: Pick<TtsDownlinkSettings, 'deviceIdTemplate'>, devEui: string): string {
  return (settings.deviceIdTemplate ?? DEFAULT_TEMPLATE).replaceAll('{devEui}', devEui.toLowerCase()).replaceAll('{DEVEUI}', devEui.toUpperCase());
}

export function ttsPushUrl(settings: TtsDownlinkSettings, applicationId: string, deviceId: string): string {
  const base = settings.baseUrl.replace(/\/+$/, '');
  const e = encodeURIComponent;
  return `${base}/api/v3/as/applications/${e(applicationId)}/webhooks/${e(settings.webhookId)}/devices/${e(deviceId)}/down/push`;
}

async function errorText(response: Response): Promise<string> {
  let text = '';
  try {
    const reader = response.body?.getReader();
    if (reader !== undefined) {
      const decoder = new TextDecoder();
      while (text.length < MAX_ERROR_BODY) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      await reader.cancel().catch(() => undefined);
    }
  } catch {
    // An answer cut off still has its status.
  }
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {
    // Not The Things Stack's JSON error: quote the start of the text.
  }
  return text.slice(0, 300).replace(/\s+/g, ' ').trim();
}

function retryAfterSeconds(header: string | null): number | undefined {
  const seconds = header === null ? NaN : Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

export class TtsDownlink implements Downlink {
  readonly #o: TtsDownlinkOptions;
  readonly #timeoutMs: number;

  constructor(options: TtsDownlinkOptions) {
    this.#o = options;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  async send(command: DeviceCommandDownlink): Promise<void> {
    const device = await this.#o.devices.getDevice(command.deviceId);
    if (device === undefined) throw new FleetError('UNKNOWN_DEVICE', `device ${command.deviceId} not found`);
    const binding = device.network;
    if (binding?.networkId !== NETWORK) {
      throw new FleetError('NO_DOWNLINK', `device ${device.id} is ${binding === undefined ? 'not bound to a network' : `on ${binding.networkId}`}; device commands go over ${NETWORK} only`);
    }
    const applicationId = binding.data.applicationId;
    const devEui = binding.data.devEui;
    if (typeof applicationId !== 'string' || typeof devEui !== 'string') {
      throw new FleetError('NO_DOWNLINK', `device ${device.id} has no applicationId and devEui in its ${NETWORK} binding`);
    }
    const settings = (await this.#o.applications.get(NETWORK, applicationId))?.downlink;
    if (settings === undefined) throw new FleetError('NO_DOWNLINK', `no downlink settings for ${NETWORK} application ${applicationId}`);
    const bytes = encodeDeviceCommand(device.payload, command.assets);
    const body = JSON.stringify({
      downlinks: [{
        f_port: settings.fPort ?? 1,
        frm_payload: Buffer.from(bytes).toString('base64'),
        priority: settings.priority ?? 'NORMAL',
        correlation_ids: [`fleetstream:command:${command.commandId}`],
      }],
    });
    await this.#push(ttsPushUrl(settings, applicationId, ttsDeviceId(settings, devEui)), settings.apiKey, body);
  }

  async #push(url: string, apiKey: string, body: string): Promise<void> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = this.#o.clock.setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          accept: 'application/json',
          'user-agent': this.#o.userAgent ?? 'fleetstream',
        },
        body,
        signal: controller.signal,
        redirect: 'error',
      });
    } catch (error) {
      timer.cancel();
      if (timedOut) throw new FleetError('TIMEOUT', `The Things Stack did not answer within ${this.#timeoutMs} ms`, { cause: error });
      throw new FleetError('UNAVAILABLE', `The Things Stack unreachable: ${toFleetError(error).message}`, { cause: error });
    }
    try {
      if (response.ok) {
        await response.body?.cancel().catch(() => undefined);
        return;
      }
      const message = await errorText(response);
      const what = `The Things Stack answered ${response.status}${message === '' ? '' : `: ${message}`}`;
      if (response.status === 429) {
        const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
        throw new FleetError('RATE_LIMITED', what, { detail: retryAfter === undefined ? { status: 429 } : { status: 429, retryAfter } });
      }
      if (response.status === 408 || response.status >= 500) throw new FleetError('UNAVAILABLE', what, { detail: { status: response.status } });
      throw new FleetError('DOWNLINK_REFUSED', what, { detail: { status: response.status } });
    } catch (error) {
      if (error instanceof FleetError) throw error;
      if (timedOut) throw new FleetError('TIMEOUT', `The Things Stack did not finish its answer within ${this.#timeoutMs} ms`, { cause: error });
      throw new FleetError('UNAVAILABLE', `The Things Stack answer failed: ${toFleetError(error).message}`, { cause: error });
    } finally {
      timer.cancel();
    }
  }
}
