/** Reading Prometheus' text exposition in tests. */

/** The value of one sample of the exposition text, or undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const match = /^([^{\s]+)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}
