/**
 * Structured logs: one JSON object per line. Levels below the configured one cost a comparison.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface JsonLoggerOptions {
  level?: LogLevel;
  /** Where lines go; default process.stderr. */
  write?(line: string): void;
  now?(): number;
  fields?: LogFields;
}

export function createJsonLogger(options: JsonLoggerOptions = {}): Logger {
  const min = rank[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? Date.now;
  const base = options.fields ?? {};
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (rank[level] < min) return;
    const entry: LogFields = { time: new Date(now()).toISOString(), level, msg: message, ...base, ...fields };
    for (const [key, value] of Object.entries(entry)) {
      if (value instanceof Error) entry[key] = { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
    }
    write(`${JSON.stringify(entry)}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createJsonLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
