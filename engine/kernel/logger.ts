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

/** One entry as one line, newline included. */
type FormatLine = (time: number, level: LogLevel, message: string, fields: LogFields) => string;

/** The levels, child loggers and defaults both formats share; only the line differs. */
function createLineLogger(options: JsonLoggerOptions, format: FormatLine): Logger {
  const min = rank[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? Date.now;
  const base = options.fields ?? {};
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (rank[level] < min) return;
    write(format(now(), level, message, { ...base, ...fields }));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLineLogger({ ...options, fields: { ...base, ...fields } }, format),
  };
}

const jsonLine: FormatLine = (time, level, message, fields) => {
  const entry: LogFields = { time: new Date(time).toISOString(), level, msg: message, ...fields };
  for (const [key, value] of Object.entries(entry)) {
    if (value instanceof Error) entry[key] = { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
  }
  return `${JSON.stringify(entry)}\n`;
};

/** `12:04:31 info  message key=value …`; values that are not plain words are JSON-quoted. */
const textLine: FormatLine = (time, level, message, fields) => {
  const parts = [new Date(time).toISOString().slice(11, 19), level.padEnd(5), message];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const shown = value instanceof Error ? `${(value as { code?: unknown }).code ?? value.name}: ${value.message}` : value;
    const text = typeof shown === 'string' ? shown : JSON.stringify(shown);
    parts.push(`${key}=${/^[\w.:/@+-]+$/.test(text) ? text : JSON.stringify(text)}`);
  }
  return `${parts.join(' ')}\n`;
};

export function createJsonLogger(options: JsonLoggerOptions = {}): Logger {
  return createLineLogger(options, jsonLine);
}

export interface TextLoggerOptions extends JsonLoggerOptions {}

/** Lines for a person at a terminal; same levels and fields as the JSON logger. */
export function createTextLogger(options: TextLoggerOptions = {}): Logger {
  return createLineLogger(options, textLine);
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
