/**
 * adapters/http/live-socket.test.ts again, with the embedded service's edge in two worker processes
 * (`--edge-workers 2`, app/embeddedWorkers.ts; test/support/embeddedService.ts reads
 * EDGE_WORKERS_TEST): the behaviour it checks holds when the edge is not the engine's process.
 */
process.env.EDGE_WORKERS_TEST = '2';
await import('../../adapters/http/live-socket.test.ts');
