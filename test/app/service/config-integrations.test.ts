/** The integrations allow list, from the flag or the environment, as the HTTP edge's policy reads it. */
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

test.run();
