/**
 * The quickstart's demo device: sends a state every `periodMs` over the HTTP API with its device
 * token, exactly as a real device would (PUT /device/{id}/state, spec §4.2), so the console has
 * values moving on first open. Temperature and humidity drift on slow waves with a little noise.
 */
export interface DemoDeviceOptions {
  /** `http://localhost:8080`. */
  httpBase: string;
  deviceId: string;
  deviceToken: string;
  /** Between two states, ms. Default 2000. */
  periodMs?: number;
  signal: AbortSignal;
  /** Each answer, for the caller to report (status 202 when accepted). */
  onSent?(status: number, detail: string | undefined): void;
  now?(): number;
}

export function demoState(t: number): Record<string, { value: number }> {
  const minutes = t / 60_000;
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    temperature: { value: round(21 + 2.5 * Math.sin(minutes / 3) + (Math.random() - 0.5) * 0.4) },
    humidity: { value: round(55 + 8 * Math.sin(minutes / 7 + 1) + (Math.random() - 0.5)) },
  };
}

/** Resolves when `signal` aborts. */
export async function runDemoDevice(options: DemoDeviceOptions): Promise<void> {
  const period = options.periodMs ?? 2000;
  const now = options.now ?? Date.now;
  const url = `${options.httpBase}/device/${encodeURIComponent(options.deviceId)}/state`;
  while (!options.signal.aborted) {
    try {
      const response = await fetch(url, {
        method: 'PUT',
        headers: { authorization: `Bearer ${options.deviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(demoState(now())),
        signal: options.signal,
      });
      const detail = response.ok ? undefined : ((await response.json().catch(() => ({}))) as { detail?: string }).detail;
      options.onSent?.(response.status, detail);
    } catch (error) {
      if (options.signal.aborted) return;
      options.onSent?.(0, error instanceof Error ? error.message : String(error));
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, period);
      options.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }
}
