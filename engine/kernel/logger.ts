/**
 * Structured logs: one JSON object per line (createJsonLogger), or lines for a person at a terminal
 * (createTextLogger). Levels below the configured one cost a comparison.
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

export interface TextLoggerOptions extends JsonLoggerOptions {}

/**
 * Lines for a person at a terminal: `12:04:31 info  message key=value …`. Same levels and
 * fields as the JSON logger; values that are not plain words are JSON-quoted.
 */
export function createTextLogger(options: TextLoggerOptions = {}): Logger {
  const min = rank[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? Date.now;
  const base = options.fields ?? {};
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (rank[level] < min) return;
    const parts = [new Date(now()).toISOString().slice(11, 19), level.padEnd(5), message];
    for (const [key, value] of Object.entries({ ...base, ...fields })) {
      if (value === undefined) continue;
      const shown = value instanceof Error ? `${(value as { code?: unknown }).code ?? value.name}: ${value.message}` : value;
      const text = typeof shown === 'string' ? shown : JSON.stringify(shown);
      parts.push(`${key}=${/^[\w.:/@+-]+$/.test(text) ? text : JSON.stringify(text)}`);
    }
    write(`${parts.join(' ')}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createTextLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
