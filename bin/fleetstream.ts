#!/usr/bin/env node
/**
 * fleetstream start [--role all|edge|engine] [--data-dir DIR] [--port N] …   run the service
 * fleetstream admin <command> [args] [--json] [--data-dir DIR]                 registry administration
 * The entry point: the only place that reads process.env.
 */
import { parseArgs } from 'node:util';
import { FleetError, toFleetError } from '../engine/kernel/errors.ts';
import { createJsonLogger } from '../engine/kernel/logger.ts';
import { adminOperations, checkAdminInput } from '../app/adminOperations.ts';
import { callAdminSocket } from '../app/adminSocket.ts';
import { createService, dataPaths, openRegistry } from '../app/createService.ts';
import { loadConfig, settings, type SettingName } from '../app/loadConfig.ts';

const usage = `usage:
  fleetstream start [options]
  fleetstream admin <command> [arguments] [--json]
admin commands:
${Object.values(adminOperations).map((op) => `  ${op.usage}`).join('\n')}
options (environment variable in brackets):
${Object.entries(settings).map(([flag, [variable]]) => `  --${flag} <value>  [${variable}]`).join('\n')}`;

const settingOptions = Object.fromEntries(Object.keys(settings).map((flag) => [flag, { type: 'string' as const }]));

async function start(flags: Partial<Record<SettingName, string>>): Promise<void> {
  const config = loadConfig(flags, process.env);
  const logger = createJsonLogger({ level: config.log.level });
  const service = await createService({ config, logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('draining', { signal });
    service.stop().then(() => process.exit(0), (error: unknown) => {
      logger.error('stop failed', { error: toFleetError(error) });
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function runAdmin(positionals: string[], flags: Partial<Record<SettingName, string>> & { user?: string; json?: boolean }): Promise<void> {
  const [name, ...args] = positionals;
  const operation = name === undefined ? undefined : adminOperations[name];
  if (operation === undefined) throw new FleetError('NOT_FOUND', `unknown admin command '${name ?? ''}'\n${usage}`);
  const input: Record<string, string> = {};
  operation.args.forEach((arg, i) => { if (args[i] !== undefined) input[arg] = args[i]; });
  for (const option of operation.options ?? []) {
    const value = (flags as Record<string, unknown>)[option];
    if (typeof value === 'string') input[option] = value;
  }
  const checked = checkAdminInput(name, input);
  const config = loadConfig(flags, process.env);
  let result: Record<string, unknown>;
  const viaSocket = config.databaseUrl ? undefined : await callAdminSocket(dataPaths(config.dataDir).adminSocket, name, checked.input);
  if (viaSocket !== undefined) {
    if (viaSocket.status >= 400) throw new FleetError((viaSocket.body.code as 'INTERNAL') ?? 'INTERNAL', String(viaSocket.body.detail ?? 'admin command failed'));
    result = viaSocket.body;
  } else {
    // The service is not running (or uses PostgreSQL): open the registry directly.
    const registry = await openRegistry(config);
    try {
      result = await checked.operation.run(registry, checked.input);
    } finally {
      await registry.close();
    }
  }
  if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else for (const [key, value] of Object.entries(result)) process.stdout.write(`${key}: ${String(value)}\n`);
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { ...settingOptions, user: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (command === 'start') return start(values as Partial<Record<SettingName, string>>);
  if (command === 'admin') return runAdmin(rest, values as Partial<Record<SettingName, string>> & { user?: string; json?: boolean });
  throw new FleetError('NOT_FOUND', `unknown command '${command}'\n${usage}`);
}

main().catch((error: unknown) => {
  const fleetError = toFleetError(error);
  process.stderr.write(`fleetstream: ${fleetError.code}: ${fleetError.message}\n`);
  process.exit(2);
});
