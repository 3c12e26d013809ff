/**
 * Registry changes that processes holding cached answers or open connections must act on at once:
 * an MQTT edge closes the connections of a revoked token or a deleted device, HTTP and MQTT edges
 * drop their cached lookups (engine/access/RegistryLookups.ts), engines drop a device's compiled
 * profile. Published by the process that made the change (HTTP edge, admin CLI through the
 * service), delivered to listeners of that process at once and to every other process sharing the
 * registry within seconds.
 *
 * Adapters: adapters/registry-changes — in-process (embedded registry, tests) and PostgreSQL
 * LISTEN/NOTIFY (the shared registry). Published in one place, whoever changes the registry:
 * engine/access/publishingRegistry.ts wraps the Registry port.
 * Contract suite: test/contracts/registryChanges.contract.ts.
 */

import type { RegistryChange } from '../../schemas/registryChanges.ts';

/**
 * token-revoked {tokenHash}, device-deleted {deviceId}, device-changed {deviceId},
 * membership-changed {groundId, userId}, integration-changed and integration-deleted
 * {integrationId, groundId}, rule-changed and rule-deleted {ruleId, groundId}, resync (changes may have been missed: drop everything
 * cached, re-check open connections). Defined in schemas/registryChanges.ts.
 */
export type { RegistryChange } from '../../schemas/registryChanges.ts';

export interface RegistryChanges {
  /** Delivers to this process's listeners before it resolves, and to other processes within seconds. */
  publish(change: RegistryChange): Promise<void>;
  /** Listeners run for changes made here and elsewhere; returns the unsubscriber. A throwing listener does not stop the others. */
  subscribe(listener: (change: RegistryChange) => void): () => void;
  close(): Promise<void>;
}
