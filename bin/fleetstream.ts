#!/usr/bin/env -S node --liftoff-only --expose-gc --no-allocation-site-pretenuring --external-memory-accounted-in-global-limit
/**
 * fleetstream start [--role all|edge|engine] [--data-dir DIR] [--port N] …   run the service
 * fleetstream admin <command> [args] [--json] [--data-dir DIR] [--init]        registry administration
 * fleetstream admin quickstart [name] [--demo]                                   a first run in one step
 * fleetstream sql "SELECT …" [--format F] [--data-dir DIR]                       read-only SQL on the embedded store
 * The entry point: the only place that reads process.env.
 *
 * Run with `--liftoff-only` (package.json's start script, the line above): the embedded registry is
 * PostgreSQL compiled to WebAssembly, and V8's optimising tier compiling it costs the service
 * ~500 MB at its start peak and ~50 MB for good (bench/start.bench.ts); in the baseline tier an
 * uncached registry read takes ~0.5 ms instead of ~0.4 ms, and the edges cache what they read.
 * And with `--expose-gc`, so that the service can collect what starting left behind once it is ready
 * (collectStartupGarbage below). And with two garbage-collector flags (docs/operations.md, "The
 * embedded deployment"): `--no-allocation-site-pretenuring`, and `--external-memory-accounted-in-global-limit`.
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { FleetError, toFleetError } from '../engine/kernel/errors.ts';
import { createJsonLogger, createTextLogger, type Logger } from '../engine/kernel/logger.ts';
import type { Config } from '../schemas/config.ts';
import { httpBaseOf, mqttUrlOf, startupLines } from '../app/startupLines.ts';
import { edgeWorkerCount, embedded, isEdgeWorker, startEdgeWorkers, workerConfig, workerStarted } from '../app/edgeWorkers.ts';
import { EMBEDDED_WORKER_CONFIG } from '../app/embeddedWorkers.ts';
import { runEmbeddedWorker } from '../app/embeddedWorker.ts';
import { runDemoDevice } from '../app/demoDevice.ts';
import { DEMO_ASSETS } from '../engine/admin/adminActions.ts';
import { adminOperations, checkAdminInput, operatorName, runAdminOperation } from '../app/adminOperations.ts';
import { callAdminSocket } from '../app/adminSocket.ts';
import { runSqlCommand } from '../app/sqlCommand.ts';
import { pgliteRegistryExists } from '../adapters/pglite/createPgliteRegistry.ts';
import { createService, dataPaths, openRegistry, type Service } from '../app/createService.ts';
import { checkedConfig, loadConfig, settings, type SettingName } from '../app/loadConfig.ts';

const usage = `usage:
  fleetstream start [options]
  fleetstream admin <command> [arguments] [--json] [--init]
  fleetstream sql "<SELECT …>" [--format <ClickHouse format>]   read-only, on the running service's store
                 (PrettyCompact on a terminal, TabSeparated otherwise; docs/analytics.md)
admin commands:
${Object.values(adminOperations).map((op) => `  ${op.usage}`).join('\n')}
admin talks to the service running on --data-dir (its admin.sock); with none running it opens the
registry there itself, and refuses when that data dir holds no registry yet: --init creates one.
It names the data dir (or PostgreSQL database) it used on stderr; --json output goes to stdout.
options (environment variable in brackets):
${Object.entries(settings).map(([flag, [variable]]) => `  --${flag} <value>  [${variable}]`).join('\n')}`;

const settingOptions = Object.fromEntries(Object.keys(settings).map((flag) => [flag, { type: 'string' as const }]));
/** The admin operations' own options (`--user`, `--role`, `--devices`, …), each taking a value. */
const adminOptions = Object.fromEntries(Object.values(adminOperations).flatMap((op) => op.options ?? []).map((option) => [option, { type: 'string' as const }]));

async function start(flags: Partial<Record<SettingName, string>>): Promise<void> {
  const worker = isEdgeWorker(process.env);
  // An embedded worker runs its primary's configuration, whatever started the primary.
  const fromPrimary = process.env[EMBEDDED_WORKER_CONFIG];
  const loaded = worker && fromPrimary !== undefined ? checkedConfig(JSON.parse(fromPrimary)) : loadConfig(flags, process.env);
  const workers = worker ? 1 : edgeWorkerCount(loaded);
  const config = worker ? workerConfig(loaded) : loaded;
  // JSON for machines (the default off a terminal, and when asked); lines for a person otherwise.
  const format = config.log.format ?? 'auto';
  const text = format === 'text' || (format === 'auto' && process.stderr.isTTY === true);
  const logger = text ? createTextLogger({ level: config.log.level }) : createJsonLogger({ level: config.log.level });
  if (workers > 1 && !embedded(config)) return startPrimary(config, logger, workers);
  if (worker && fromPrimary !== undefined) return startEmbeddedWorker(config, Number(process.env.FLEETSTREAM_EDGE_WORKER), logger);
  let service: Service | undefined;
  let failure: FleetError | undefined;
  let stopping = false;
  /** Drains and exits: 0 on a signal, 1 when the engine stopped for good (a supervisor restarts it). */
  const stop = (reason: string) => {
    if (stopping || service === undefined) return;
    stopping = true;
    logger.info('draining', { reason });
    const code = failure === undefined ? 0 : 1;
    service.stop().then(() => {
      if (failure !== undefined) logger.error('exiting: the engine stopped for good', { error: failure });
      process.exit(code);
    }, (error: unknown) => {
      logger.error('stop failed', { error: toFleetError(error) });
      process.exit(1);
    });
  };
  service = await createService({
    config,
    logger,
    worker,
    edgeWorkers: workers,
    onFailed: (error) => {
      failure ??= error;
      stop(`engine failed: ${error.code}`);
    },
  });
  if (failure !== undefined) stop(`engine failed: ${failure.code}`);
  else if (worker) workerStarted(service.metrics.registry, { httpPort: service.httpPort, mqttPort: service.mqttPort });
  else if (text) {
    const lines = startupLines({ config, httpPort: service.httpPort, mqttPort: service.mqttPort, probesPort: service.probesPort, metricsPort: service.metricsPort, dataDir: dataPaths(config.dataDir).root });
    process.stderr.write(`\n${lines.join('\n')}\n\n`);
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (failure === undefined) setImmediate(collectStartupGarbage);
}

/** An edge worker of an embedded primary: its edge, on the ports the primary serves; drains on SIGTERM. */
async function startEmbeddedWorker(config: Config, index: number, logger: Logger): Promise<void> {
  const running = await runEmbeddedWorker({ config, index, logger, parent: process as never });
  const stop = () => running.stop().then(() => process.exit(0), () => process.exit(1));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The primary is gone: nothing to serve the ports any more.
  process.once('disconnect', stop);
}

/** The primary of edge workers: forks them, serves their metrics, drains them on a signal. */
async function startPrimary(config: Config, logger: Logger, count: number): Promise<void> {
  const workers = await startEdgeWorkers(config, logger, count);
  logger.info('fleetstream started', {
    role: config.role, edgeWorkers: count,
    http: workers.httpPort !== undefined ? `${config.http.host}:${workers.httpPort}` : undefined,
    mqtt: config.mqtt.url ? 'external broker' : workers.mqttPort !== undefined ? `${config.mqtt.host}:${workers.mqttPort}` : undefined,
    metrics: workers.metricsPort !== undefined ? `${config.metrics.host}:${workers.metricsPort}` : undefined,
  });
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('draining', { reason, edgeWorkers: count });
    workers.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/**
 * One full collection once the service is ready. Starting (modules loading, the registry and the
 * store opening) allocates fast, so V8 grows the young generation to its maximum (32–64 MB resident)
 * and keeps it while the service idles. A collection that reduces the footprint ("last-resort":
 * what V8 runs on a low-memory notification) shrinks it back to a few MB; V8 grows it again under load
 * as it sees fit (no cap, unlike a smaller --max-semi-space-size, which cost the pipeline bench 8-10 %).
 * One pause of ~70 ms, once; without `--expose-gc` (package.json's
 * start script and the line at the top pass it) nothing happens. bench/start.bench.ts measures it.
 */
function collectStartupGarbage(): void {
  globalThis.gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

type AdminFlags = Partial<Record<SettingName, string>> & { user?: string; json?: boolean; init?: boolean; demo?: boolean };

async function runAdmin(positionals: string[], flags: AdminFlags): Promise<void> {
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
  // An operation's own option is not a setting of the service: `--role` of add-member is a member's
  // role, not the process role (all, edge, engine) that `start --role` names.
  const settingFlags = Object.fromEntries(Object.entries(flags).filter(([key]) => !(operation.options ?? []).includes(key)));
  const config = loadConfig(settingFlags, process.env);
  const paths = dataPaths(config.dataDir);
  // stderr, so that --json output on stdout stays parseable.
  const say = (line: string) => process.stderr.write(`fleetstream: ${line}\n`);
  let result: Record<string, unknown>;
  // Who ran the command, for the grounds' audit logs: the OS user (docs/grounds.md "Audit log").
  const operator = operatorName(osUserName());
  const viaSocket = config.databaseUrl ? undefined : await callAdminSocket(paths.adminSocket, name, checked.input, operator);
  if (viaSocket !== undefined) {
    say(`running service found on ${paths.adminSocket} (data dir ${paths.root})`);
    if (viaSocket.status >= 400) throw new FleetError((viaSocket.body.code as 'INTERNAL') ?? 'INTERNAL', String(viaSocket.body.detail ?? 'admin command failed'));
    result = viaSocket.body;
  } else {
    if (name === 'quickstart' && flags.demo && !config.databaseUrl) {
      throw new FleetError('NOT_FOUND', `--demo sends states to the running service, and none runs on data dir ${paths.root}: start it first (npm start)`);
    }
    // The service is not running (or uses PostgreSQL): open the registry directly.
    const existed = pgliteRegistryExists(paths.registry);
    if (config.databaseUrl) say(`registry in PostgreSQL ${describeDatabase(config.databaseUrl, config.databaseSchema)}`);
    // Opened with its changes: a revoke-token here reaches running services on the same PostgreSQL.
    const opened = await openRegistry(config, undefined, { create: flags.init === true }).catch((error: unknown) => {
      const fleetError = toFleetError(error);
      if (fleetError.code !== 'NOT_FOUND' || config.databaseUrl) throw error;
      throw new FleetError('NOT_FOUND', `no registry in data dir ${paths.root} and no service running there (nothing on ${paths.adminSocket}). `
        + 'Point --data-dir (or DATA_DIR) at the data dir of your service, or pass --init to create a new, empty registry there.', { cause: error });
    });
    if (!config.databaseUrl) say(`no service running there; registry ${existed ? 'opened' : 'created (--init)'} in data dir ${paths.root}`);
    try {
      const mqttUrl = config.mqtt.url || config.mqtt.port <= 0 ? undefined : mqttUrlOf(config.mqtt.host, config.mqtt.port, config.mqtt.tlsCertFile !== undefined);
      result = await runAdminOperation(opened.registry, name, checked, { httpBase: httpBaseOf(config.http.host, config.http.port), mqttUrl }, operator,
        (error) => say(`the change is made, but its audit entry was not recorded: ${error.message}`));
    } finally {
      await opened.close();
    }
  }
  if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else if (name === 'quickstart') process.stdout.write(quickstartText(result));
  else for (const [key, value] of Object.entries(result)) process.stdout.write(`${key}: ${String(value)}\n`);
  if (name === 'quickstart' && flags.demo) await keepSending(result, say);
}

function quickstartText(r: Record<string, unknown>): string {
  return [
    `Created user ${String(r.userId)}, ground ${String(r.groundId)} and device demo-thermostat (${DEMO_ASSETS.map((a) => a.name).join(', ')}).`,
    '',
    `  Console       ${String(r.console ?? '(the service\'s HTTP address)/console/')}`,
    `  User token    ${String(r.userToken)}`,
    '                sign in to the console with it (shown once; the console keeps it in the tab only)',
    `  Device id     ${String(r.deviceId)}`,
    `  Device token  ${String(r.deviceToken)}`,
    ...(typeof r.mqtt === 'string' ? [`  MQTT          ${r.mqtt}   (username: the device token; commands on device/${String(r.deviceId)}/asset/+/command)`] : []),
    '',
    'Send a state yourself:',
    `  curl -X PUT ${String(r.console ?? 'http://localhost:8080/console/').replace(/\/console\/$/, '')}/device/${String(r.deviceId)}/state \\`,
    `    -H 'authorization: Bearer ${String(r.deviceToken)}' -H 'content-type: application/json' \\`,
    '    -d \'{"temperature": {"value": 22.5}}\'',
    '',
  ].join('\n');
}

/** `quickstart --demo`: the demo device sends states and answers its commands until Ctrl-C. */
async function keepSending(r: Record<string, unknown>, say: (line: string) => void): Promise<void> {
  const base = typeof r.console === 'string' ? r.console.replace(/\/console\/$/, '') : undefined;
  if (base === undefined) throw new FleetError('NOT_FOUND', 'no HTTP address known for --demo: start the service (npm start) first');
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  const mqttUrl = typeof r.mqtt === 'string' ? r.mqtt : undefined;
  say(`demo-thermostat sends its states to ${base} every 2 s${mqttUrl ? ` and answers commands to its light and set point (MQTT ${mqttUrl})` : ' (no MQTT address known: it hears no commands)'}; Ctrl-C stops it`);
  let last: string | undefined;
  await runDemoDevice({
    httpBase: base, mqttUrl, deviceId: String(r.deviceId), deviceToken: String(r.deviceToken), signal: abort.signal,
    onCommand: (asset, outcome) => say(`command to ${asset}: ${outcome}`),
    // One line per change of outcome, not one per state.
    onSent: (status, detail) => {
      const outcome = status === 202 ? 'states accepted' : `refused (${status || 'no answer'}): ${detail ?? ''}`;
      if (outcome !== last) say(outcome);
      last = outcome;
    },
  });
}

/** The PostgreSQL database the URL names, without its password. */
function describeDatabase(url: string, schema: string | undefined): string {
  let shown = '(unparseable DATABASE_URL)';
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    shown = parsed.toString();
  } catch { /* a libpq keyword string: not shown, it may hold a password */ }
  return schema ? `${shown} (schema ${schema})` : shown;
}

async function runSql(positionals: string[], flags: Partial<Record<SettingName, string>> & { format?: string }): Promise<void> {
  if (positionals.length !== 1) throw new FleetError('VALIDATION_FAILED', `sql takes one query, quoted as one argument\n${usage}`);
  const { format, ...settingFlags } = flags;
  const config = loadConfig(settingFlags, process.env);
  const code = await runSqlCommand(config, positionals[0], format ?? (process.stdout.isTTY ? 'PrettyCompact' : 'TabSeparated'), {
    out: (bytes) => process.stdout.write(bytes),
    say: (line) => process.stderr.write(`fleetstream: ${line}\n`),
  });
  process.exitCode = code;
}

async function main(): Promise<void> {
  // Everything the service and the admin CLI create is this user's alone (files 0600, directories
  // 0700, the admin socket), whatever umask they were started under: the data dir holds tokens' hashes,
  // raw uplink bodies and a socket that creates users. The umask, not a mode at each open, because
  // chDB (native ClickHouse) and PGlite create most of the files, with modes this code does not choose.
  process.umask(0o077);
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { ...settingOptions, ...adminOptions, user: { type: 'string' }, json: { type: 'boolean' }, init: { type: 'boolean' }, demo: { type: 'boolean' }, format: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (command === 'start') return start(values as Partial<Record<SettingName, string>>);
  if (command === 'admin') return runAdmin(rest, values as AdminFlags);
  if (command === 'sql') return runSql(rest, values as Partial<Record<SettingName, string>> & { format?: string });
  throw new FleetError('NOT_FOUND', `unknown command '${command}'\n${usage}`);
}

main().catch((error: unknown) => {
  const fleetError = toFleetError(error);
  process.stderr.write(`fleetstream: ${fleetError.code}: ${fleetError.message}\n`);
  process.exit(2);
});

/** The OS user running the CLI; undefined where the system has no name for it. */
function osUserName(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}
