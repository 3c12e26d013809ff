/**
 * Registry changes that processes holding cached answers or open connections must act on at once:
 * an MQTT edge closes the connections of a revoked token or a deleted device, HTTP and MQTT edges
 * drop their cached lookups (engine/access/RegistryLookups.ts), engines drop a device's compiled
 * profile. Published by the process that made the change (HTTP edge, admin CLI through the
 * service), delivered to listeners of that process at once and to every other process sharing the
 * registry within seconds.
 *
 * Adapters: an in-process one (embedded registry, tests) and one per shared registry.
 * Contract suite: test/contracts/registryChanges.contract.ts.
 */

export type RegistryChange =
  /** `tokenHash`: engine/access/tokens.ts hashToken(token); connections keep the hash of the token they authenticated with. */
  | { kind: 'token-revoked'; tokenHash: string }
  /** The device and its tokens are gone. */
  | { kind: 'device-deleted'; deviceId: string }
  /** Its assets, profiles or ground changed. */
  | { kind: 'device-changed'; deviceId: string }
  /** A user joined or left a ground (feeds and ground streams follow memberships). */
  | { kind: 'membership-changed'; groundId: string; userId: string };

export interface RegistryChanges {
  /** Delivers to this process's listeners before it resolves, and to other processes within seconds. */
  publish(change: RegistryChange): Promise<void>;
  /** Listeners run for changes made here and elsewhere; returns the unsubscriber. A throwing listener does not stop the others. */
  subscribe(listener: (change: RegistryChange) => void): () => void;
  close(): Promise<void>;
}
