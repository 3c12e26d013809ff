/** The configuration of a composed service under test, listening on loopback only. */
import { defaultConfig, type Config } from '../../schemas/config.ts';

/**
 * The defaults with data in `dataDir`, HTTP, metrics and the embedded MQTT edge on 127.0.0.1 at
 * ephemeral ports, and an engine of 2 partitions batching for 10 ms; then `overrides`.
 */
export function loopbackConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  return {
    ...defaultConfig,
    dataDir,
    http: { ...defaultConfig.http, host: '127.0.0.1', port: 0 },
    metrics: { host: '127.0.0.1', port: 0 },
    mqtt: { host: '127.0.0.1', port: 0 },
    engine: { ...defaultConfig.engine, partitions: 2, batchDelayMs: 10 },
    ...overrides,
  };
}
