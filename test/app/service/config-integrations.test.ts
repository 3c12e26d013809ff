/** The integrations allow list, from the flag or the environment, as the HTTP edge's policy reads it; the retention of topic `events`. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../app/loadConfig.ts';
import { outboundPolicy } from '../../../adapters/webhooks/OutboundPolicy.ts';

test('INTEGRATIONS_ALLOW_HOSTS and --integrations-allow-hosts: comma-separated, the flag wins, unset allows nothing', () => {
  assert.is(loadConfig({}, {}).integrationsAllowHosts, undefined);
  assert.equal(loadConfig({}, { INTEGRATIONS_ALLOW_HOSTS: 'receiver.internal, 10.0.0.0/8,,::1' }).integrationsAllowHosts, ['receiver.internal', '10.0.0.0/8', '::1']);
  assert.equal(loadConfig({ 'integrations-allow-hosts': '127.0.0.1' }, { INTEGRATIONS_ALLOW_HOSTS: '10.0.0.0/8' }).integrationsAllowHosts, ['127.0.0.1']);
  const policy = outboundPolicy(loadConfig({}, { INTEGRATIONS_ALLOW_HOSTS: '10.0.0.0/8' }).integrationsAllowHosts);
  assert.is(policy.refusal('10.1.2.3', '10.1.2.3', 'http:'), undefined);
  assert.type(policy.refusal('192.168.0.1', '192.168.0.1', 'https:'), 'string');
});

test('a bad entry stops the edge from starting, naming it', () => {
  const config = loadConfig({}, { INTEGRATIONS_ALLOW_HOSTS: 'ok.example,10.0.0.0/99' });
  assert.throws(() => outboundPolicy(config.integrationsAllowHosts), /"10\.0\.0\.0\/99"/);
});

test('EVENTS_RETENTION_HOURS and --events-retention-hours: hours from 1 to ten years; unset is the default (7 days, applied by openPorts)', () => {
  assert.is(loadConfig({}, {}).eventsRetentionHours, undefined);
  assert.is(loadConfig({}, { EVENTS_RETENTION_HOURS: '48' }).eventsRetentionHours, 48);
  assert.is(loadConfig({ 'events-retention-hours': '24' }, { EVENTS_RETENTION_HOURS: '48' }).eventsRetentionHours, 24);
  for (const bad of ['0', '-1', '1.5', 'soon', '87601']) assert.throws(() => loadConfig({ 'events-retention-hours': bad }, {}), /events-retention-hours|eventsRetentionHours/, bad);
});

test.run();
