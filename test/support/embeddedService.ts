/**
 * The composed service on embedded adapters in this process, HTTP and MQTT on free loopback ports,
 * and a device created the way a user creates one (POST /ground/{id}/devices), for tests that need
 * the whole service with traffic.
 */
import { createService, type Service } from '../../app/createService.ts';
import { silentLogger } from '../../engine/kernel/logger.ts';
import { defaultConfig } from '../../schemas/config.ts';

export async function startEmbeddedService(dataDir: string): Promise<{ service: Service; base: string }> {
  const service = await createService({
    logger: silentLogger,
    config: {
      ...defaultConfig,
      dataDir,
      http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
      mqtt: { host: '127.0.0.1', port: 0 },
      engine: { ...defaultConfig.engine, partitions: 2, batchDelayMs: 10 },
    },
  });
  return { service, base: `http://127.0.0.1:${service.httpPort}` };
}

export interface CreatedDevice {
  id: string;
  token: string;
  /** The token of the user owning the device's ground. */
  userToken: string;
}

export async function createDeviceOverHttp(service: Service, base: string, assets: unknown[]): Promise<CreatedDevice> {
  const user = await service.registry.createUser({ name: 'u' });
  const ground = await service.registry.createGround({ name: 'g', userId: user.entity.id });
  const created = await fetch(`${base}/ground/${ground.id}/devices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'device', assets }),
  });
  if (created.status !== 201) throw new Error(`device not created: ${created.status} ${await created.text()}`);
  const device = await created.json() as { id: string; token: string };
  return { id: device.id, token: device.token, userToken: user.token };
}
