/**
 * LORIOT application output messages (JSON). An uplink is `cmd: "rx"`; other commands (`gw` — the
 * same frame again with gateway details, when the output's verbosity asks for it —, `txd`, …) are
 * acknowledged and ignored, so a frame is stored once. Fields read:
 *   EUI    the binding key, 16 hex digits
 *   data   hex FRMPayload; absent with `encdata` when LORIOT holds no AppSKey for the device (the
 *          payload cannot be read: dropped as MALFORMED_PAYLOAD); absent otherwise means empty
 *   port   FPort; port 0 carries MAC commands only and is ignored
 *   ts     server time, epoch ms → the states' time
 *   fcnt   frame counter: with EUI and ts the identity of the frame. The uplink id derives from it
 *          (engine/lpwan/LpwanUplinkIntake.ts), so an rx delivered twice is stored once; without
 *          fcnt or ts the uplink gets a fresh id.
 */
import type { LpwanUplink } from '../../engine/lpwan/LpwanUplinkIntake.ts';
import { badShape, checkDevEui, decodeHex, type ParsedWebhook } from './parseWebhook.ts';
import { isPlainObject } from '../../engine/kernel/isPlainObject.ts';

/** Year 9999: a larger ts is no epoch-ms time. */
const MAX_TS = 253_402_300_799_999;

export function parseLoriotUplink(doc: unknown): ParsedWebhook {
  if (!isPlainObject(doc)) throw badShape('a LORIOT message is a JSON object');
  if (typeof doc.cmd !== 'string') throw badShape('not a LORIOT message: cmd missing');
  if (doc.cmd !== 'rx') return { kind: 'ignored', reason: `cmd ${JSON.stringify(doc.cmd.slice(0, 20))} is not an uplink (rx)` };
  const devEui = checkDevEui(doc.EUI, 'EUI');
  const port = doc.port;
  if (port !== undefined && !(Number.isInteger(port) && (port as number) >= 0 && (port as number) <= 255)) {
    throw badShape('port must be an integer 0–255');
  }
  const fcnt = doc.fcnt;
  if (fcnt !== undefined && !(Number.isSafeInteger(fcnt) && (fcnt as number) >= 0)) throw badShape('fcnt must be a non-negative integer');
  if (port === 0) return { kind: 'ignored', reason: 'port 0 carries MAC commands, not application data' };
  const ts = doc.ts;
  if (ts !== undefined && !(Number.isSafeInteger(ts) && (ts as number) >= 0 && (ts as number) <= MAX_TS)) {
    throw badShape('ts must be epoch milliseconds');
  }
  let payload: LpwanUplink['payload'];
  if (doc.data !== undefined) payload = decodeHex(doc.data, 'data');
  else if (doc.encdata !== undefined) payload = { code: 'MALFORMED_PAYLOAD', reason: 'only encdata (encrypted payload): give LORIOT the AppSKey of the device so it sends data' };
  else payload = new Uint8Array(0);
  const uplink: LpwanUplink = { networkId: 'loriot', devEui, payload };
  if (port !== undefined) uplink.fPort = port as number;
  if (ts !== undefined) uplink.receivedAt = ts as number;
  if (fcnt !== undefined && ts !== undefined) uplink.messageKey = `fcnt ${fcnt as number} ts ${ts as number}`;
  return { kind: 'uplink', uplink };
}
