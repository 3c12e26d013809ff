/**
 * Reading a device's whole command list over HTTP (`GET /device/{id}/commands`, at most 1000 a
 * page), and issuing many commands at once, for the suites that check every command's fate.
 */
import type { CommandLifecycle } from '../../schemas/commands.ts';

/** Every command of the device the list shows, by id. */
export async function listAllCommands(base: string, deviceId: string, token: string): Promise<Map<string, CommandLifecycle>> {
  const all = new Map<string, CommandLifecycle>();
  const page = async (query: string): Promise<CommandLifecycle[]> => {
    const res = await fetch(`${base}/device/${deviceId}/commands?limit=1000${query}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET commands: ${res.status} ${await res.text()}`);
    const items = ((await res.json()) as { items: CommandLifecycle[] }).items;
    for (const item of items) all.set(item.id, item);
    return items;
  };
  let to = '';
  for (;;) {
    const items = await page(to);
    if (items.length < 1000) return all;
    // Pages end at a time, not a command: read the oldest millisecond of this page whole.
    const oldest = items[items.length - 1].queuedAt;
    await page(`&from=${oldest}&to=${oldest + 1}`);
    to = `&to=${oldest}`;
  }
}

export interface IssuedCommand {
  status: number;
  /** The command id of a 202. */
  id?: string;
  code?: string;
  retryAfter: string | null;
  contentType: string | null;
}

/** PUTs `count` command bodies, `concurrency` at a time, spread over `bases` in turn. */
export async function issueCommands(options: {
  bases: readonly string[]; path: string; token: string; count: number; body: (i: number) => unknown; concurrency?: number;
}): Promise<IssuedCommand[]> {
  const results = new Array<IssuedCommand>(options.count);
  let next = 0;
  const worker = async () => {
    while (next < options.count) {
      const i = next++;
      const res = await fetch(`${options.bases[i % options.bases.length]}${options.path}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(options.body(i)),
      });
      const json = (await res.json()) as { id?: string; code?: string };
      results[i] = { status: res.status, id: json.id, code: json.code, retryAfter: res.headers.get('retry-after'), contentType: res.headers.get('content-type') };
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 50 }, worker));
  return results;
}
