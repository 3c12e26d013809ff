/**
 * GET /ground/{groundId}/usage (owner; docs/grounds.md "Usage"): the ground's devices, the states
 * it stored and the commands it queued today and this month (UTC, counted by the engines:
 * engine/ports/usageRegistry.ts), and what its states take in the store now, each beside its
 * quota. The stored figures walk the ground's devices (a thousand per store query).
 */
import { dayOf, monthStartOf } from '../../../../engine/ports/usageRegistry.ts';
import type { Device } from '../../../../engine/ports/registry.ts';
import { GroundParams } from '../../../../schemas/edge.ts';
import { GroundUsage } from '../../../../schemas/quotas.ts';
import type { EdgeContext } from '../../EdgeContext.ts';

const JSON_TYPE = 'application/json';
const PAGE = 1000;

export function usageRoutes({ router, access, deps }: EdgeContext): void {
  router.route({
    methods: ['get'],
    path: '/ground/{groundId}/usage',
    operationId: 'groundUsage',
    summary: 'What a ground uses — devices, states and commands today and this month, states stored — against its quota (owner)',
    tags: ['grounds'],
    params: GroundParams,
    responses: { 200: { description: 'the ground\'s usage', content: { [JSON_TYPE]: GroundUsage } } },
    errors: [403, 404],
  }, async (c, { principal, params }) => {
    const ground = await access.ground(principal, params.groundId, 'owner');
    const now = deps.clock.now();
    const today = dayOf(now);
    const deviceIds: string[] = [];
    for (let after: Device | undefined; ;) {
      const page = await deps.registry.listDevices(ground.id, { limit: PAGE, ...(after === undefined ? {} : { after: { createdAt: after.createdAt, id: after.id } }) });
      deviceIds.push(...page.map((d) => d.id));
      if (page.length < PAGE) break;
      after = page[page.length - 1];
    }
    const [counts, quota, stored] = await Promise.all([
      deps.registry.usageOf(ground.id, today, monthStartOf(today)),
      deps.registry.getQuota(ground.id),
      deps.store.storedOf === undefined ? { rows: 0, compressedBytes: 0 } : deps.store.storedOf(deviceIds),
    ]);
    const usage: GroundUsage = {
      groundId: ground.id,
      at: new Date(now).toISOString(),
      devices: { count: deviceIds.length, quota: quota?.devices ?? null },
      states: { today: counts.statesToday, thisMonth: counts.statesThisMonth, perSecondQuota: quota?.statesPerSecond ?? null },
      commands: { today: counts.commandsToday, thisMonth: counts.commandsThisMonth },
      stored: { rows: stored.rows, compressedBytes: stored.compressedBytes, retentionDays: quota?.retentionDays ?? null },
    };
    c.header('cache-control', 'no-store');
    return c.json(usage);
  });
}
