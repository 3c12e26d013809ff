/**
 * A Fleetstream instance in external broker mode whose log never answers, for the crash test in
 * test/adapters/mqtt/mqtt-external-session.test.ts: it takes uplinks from the broker and holds them
 * unacknowledged until it is killed.
 *
 *   node test/support/externalMqttChild.ts '{"url":…,"group":…,"clientIdPrefix":…,"sessionExpirySeconds":…,"device":{"id":…,"assets":[…]}}'
 *
 * stdout, one line each: `ready` once subscribed; `held <topic>` for each uplink handed to the log.
 */
import { writeSync } from 'node:fs';
import { createExternalMqtt } from '../../adapters/mqtt/external/createExternalMqtt.ts';
import { systemClock } from '../../engine/kernel/clock.ts';
import type { DeviceWithAssets } from '../../engine/ports/registry.ts';
import { UplinkAdmission } from '../../engine/uplink/UplinkAdmission.ts';
import { fakeIngest } from './fakeIngest.ts';

const args = JSON.parse(process.argv[2]) as { url: string; group: string; clientIdPrefix: string; sessionExpirySeconds: number; device: DeviceWithAssets };
const say = (line: string) => writeSync(1, `${line}\n`);

await createExternalMqtt({
  url: args.url,
  shareGroup: args.group,
  clientIdPrefix: args.clientIdPrefix,
  sessionExpirySeconds: args.sessionExpirySeconds,
  connections: 1,
  clock: systemClock,
  registry: {
    authenticate: async () => undefined,
    memberRole: async () => undefined,
    getDevice: async (id) => (id === args.device.id ? args.device : undefined),
    getAssetById: async (id) => {
      const asset = args.device.assets.find((a) => a.id === id);
      return asset === undefined ? undefined : { ...asset, deviceId: args.device.id } as never;
    },
  },
  // A log that never answers: each uplink is admitted and then held, unacknowledged.
  admission: new UplinkAdmission({
    clock: systemClock,
    ingest: fakeIngest((submission) => {
      say(`held ${submission.deviceId}/${submission.asset ?? ''}`);
      return new Promise(() => undefined);
    }),
    deadLetters: { add: async () => undefined },
  }),
});
say('ready');
