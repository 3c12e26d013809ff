import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalLog, type LocalLog } from '../adapters/local-log/LocalLog.ts';
import { logContract } from './contracts/log.contract.ts';

logContract('local-log', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetstream-log-'));
  let log: LocalLog = createLocalLog({ dir, segmentBytes: 4096 });
  return {
    get log() { return log; },
    async cleanup() {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
    async reopen() {
      await log.close();
      log = createLocalLog({ dir, segmentBytes: 4096 });
      return log;
    },
  };
}).run();
