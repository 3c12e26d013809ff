/**
 * The one place registry changes are published (engine/ports/registryChanges.ts): a Registry that
 * publishes what each mutation changed once the mutation has committed (one function per port:
 * fleetMutations, groundMutations, principalMutations, keyMutations, activationMutations, integrationMutations, ruleMutations,
 * quotaMutations),
 * whoever calls it — the HTTP routes, the admin CLI (directly or through the running service's
 * admin socket), activation.
 *
 * Published after the commit rather than inside the transaction so that both registries (PGlite and
 * PostgreSQL) and both feeds behave alike and the process's own listeners hear of the change before
 * the caller gets its answer. The window this leaves — a process dying between commit and publish —
 * is covered by the lookups' cache expiry (RegistryLookups cacheTtlMs), not by the feed.
 *
 * A created device (directly or by activation) is published as device-changed too: no cache holds
 * a negative answer (RegistryLookups keeps positive ones only), but an engine that met the id before
 * reads it afresh. An integration's creation, change, rotation and deletion are published for
 * whatever delivers its events, and so is its disabling by a delivery (410). A rule's creation,
 * change and deletion are published for the engines that judge devices by it. A ground's quota set
 * or removed is published for the edges that admit its states at its rate. A member's role
 * change is a membership change (cached roles are dropped, live streams re-authorised); a deleted
 * ground is published as what went with it: its devices, memberships, integrations, rules and its
 * keys' tokens (revoked). A revoked key is published as its token's revocation. Not published:
 * device-type changes (devices keep the profiles copied when created), new principals, grounds and
 * tokens (nothing cached can be stale about them), alarms (nothing caches them).
 */
import type { ActivationRegistry, FleetRegistry, GroundKeyRegistry, GroundRegistry, IntegrationDeliveries, IntegrationRegistry, PrincipalRegistry, QuotaRegistry, Registry, RuleRegistry } from '../ports/registry.ts';
import type { RegistryChanges } from '../ports/registryChanges.ts';
import { hashToken } from './tokens.ts';

type Publish = Pick<RegistryChanges, 'publish'>['publish'];
type FleetMutations = Pick<FleetRegistry, 'createDevice' | 'deleteDevice' | 'updateDevice' | 'upsertAsset' | 'deleteAsset' | 'addMember' | 'removeMember'>;

export function publishingRegistry<R extends Registry>(registry: R, changes: Pick<RegistryChanges, 'publish'>): R {
  const publish: Publish = (change) => changes.publish(change);
  const mutations: Record<string, unknown> = {
    ...fleetMutations(registry, publish),
    ...groundMutations(registry, publish),
    ...principalMutations(registry, publish),
    ...keyMutations(registry, publish),
    ...activationMutations(registry, publish),
    ...integrationMutations(registry, publish),
    ...ruleMutations(registry, publish),
    ...quotaMutations(registry, publish),
  };
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(registry, {
    get(target, property) {
      if (Object.hasOwn(mutations, property)) return mutations[property as string];
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      let fn = bound.get(property);
      if (fn === undefined) bound.set(property, (fn = value.bind(target)));
      return fn;
    },
  });
}

/** What the fleet port's mutations change: devices (and their assets) and memberships. */
function fleetMutations(registry: FleetRegistry, publish: Publish): FleetMutations {
  return {
    async createDevice(input) {
      const created = await registry.createDevice(input);
      await publish({ kind: 'device-changed', deviceId: created.device.id });
      return created;
    },
    async deleteDevice(deviceId) {
      const deleted = await registry.deleteDevice(deviceId);
      if (deleted) await publish({ kind: 'device-deleted', deviceId });
      return deleted;
    },
    async updateDevice(deviceId, patch) {
      const device = await registry.updateDevice(deviceId, patch);
      await publish({ kind: 'device-changed', deviceId: device.id });
      return device;
    },
    async upsertAsset(deviceId, name, fields) {
      const upserted = await registry.upsertAsset(deviceId, name, fields);
      await publish({ kind: 'device-changed', deviceId: upserted.asset.deviceId });
      return upserted;
    },
    async deleteAsset(deviceId, name) {
      const deleted = await registry.deleteAsset(deviceId, name);
      if (deleted) await publish({ kind: 'device-changed', deviceId });
      return deleted;
    },
    async addMember(groundId, userId) {
      await registry.addMember(groundId, userId);
      await publish({ kind: 'membership-changed', groundId, userId });
    },
    async removeMember(groundId, userId) {
      const removed = await registry.removeMember(groundId, userId);
      if (removed) await publish({ kind: 'membership-changed', groundId, userId });
      return removed;
    },
  };
}

/** What the grounds port's mutations change: a member's role, and everything a deleted ground held. */
function groundMutations(registry: GroundRegistry, publish: Publish): Pick<GroundRegistry, 'setMemberRole' | 'deleteGround'> {
  return {
    async setMemberRole(groundId, userId, role) {
      const set = await registry.setMemberRole(groundId, userId, role);
      if (set.changed) await publish({ kind: 'membership-changed', groundId, userId });
      return set;
    },
    async deleteGround(groundId, options) {
      const deleted = await registry.deleteGround(groundId, options);
      if (deleted === undefined) return deleted;
      for (const deviceId of deleted.deviceIds) await publish({ kind: 'device-deleted', deviceId });
      for (const userId of deleted.memberIds) await publish({ kind: 'membership-changed', groundId, userId });
      for (const integrationId of deleted.integrationIds) await publish({ kind: 'integration-deleted', integrationId, groundId });
      for (const ruleId of deleted.ruleIds) await publish({ kind: 'rule-deleted', ruleId, groundId });
      for (const tokenHash of deleted.keyTokenHashes) await publish({ kind: 'token-revoked', tokenHash });
      return deleted;
    },
  };
}

/** A revoked key is a revoked token: it ends what the key opened (live streams), on every edge. */
function keyMutations(registry: GroundKeyRegistry, publish: Publish): Pick<GroundKeyRegistry, 'revokeKey'> {
  return {
    async revokeKey(groundId, keyId) {
      const revoked = await registry.revokeKey(groundId, keyId);
      if (revoked !== undefined) await publish({ kind: 'token-revoked', tokenHash: revoked.tokenHash });
      return revoked;
    },
  };
}

/** A revoked token ends what it opened (MQTT connections, live streams). */
function principalMutations(registry: PrincipalRegistry, publish: Publish): Pick<PrincipalRegistry, 'revokeToken'> {
  return {
    async revokeToken(token) {
      const revoked = await registry.revokeToken(token);
      if (revoked) await publish({ kind: 'token-revoked', tokenHash: hashToken(token) });
      return revoked;
    },
  };
}

/** A redeemed code creates a device. */
function activationMutations(registry: ActivationRegistry, publish: Publish): Pick<ActivationRegistry, 'activate'> {
  return {
    async activate(request) {
      const activated = await registry.activate(request);
      await publish({ kind: 'device-changed', deviceId: activated.device.device.id });
      return activated;
    },
  };
}

type IntegrationMutations = Pick<IntegrationRegistry, 'createIntegration' | 'updateIntegration' | 'deleteIntegration' | 'rotateIntegrationSecret'> & Pick<IntegrationDeliveries, 'disableIntegration'>;

/** What an integration's deliveries follow: its settings, its secrets, its existence. */
function integrationMutations(registry: IntegrationRegistry & Pick<IntegrationDeliveries, 'disableIntegration'>, publish: Publish): IntegrationMutations {
  const changed = async (integrationId: string, groundId: string) => publish({ kind: 'integration-changed', integrationId, groundId });
  return {
    async createIntegration(input) {
      const created = await registry.createIntegration(input);
      await changed(created.integration.id, created.integration.groundId);
      return created;
    },
    async updateIntegration(integrationId, patch) {
      const integration = await registry.updateIntegration(integrationId, patch);
      await changed(integration.id, integration.groundId);
      return integration;
    },
    async rotateIntegrationSecret(integrationId, options) {
      const rotated = await registry.rotateIntegrationSecret(integrationId, options);
      await changed(rotated.integration.id, rotated.integration.groundId);
      return rotated;
    },
    async disableIntegration(integrationId, reason) {
      await registry.disableIntegration(integrationId, reason);
      const integration = await registry.getIntegration(integrationId);
      if (integration !== undefined) await changed(integration.id, integration.groundId);
    },
    async deleteIntegration(integrationId) {
      // The ground goes in the change, and the row is gone once deleted: read it first.
      const integration = await registry.getIntegration(integrationId);
      const deleted = await registry.deleteIntegration(integrationId);
      if (deleted && integration !== undefined) await publish({ kind: 'integration-deleted', integrationId, groundId: integration.groundId });
      return deleted;
    },
  };
}

/** What engines follow of a ground's rules: their settings, their existence. */
function ruleMutations(registry: RuleRegistry, publish: Publish): Pick<RuleRegistry, 'createRule' | 'updateRule' | 'deleteRule'> {
  const changed = async (ruleId: string, groundId: string) => publish({ kind: 'rule-changed', ruleId, groundId });
  return {
    async createRule(input) {
      const rule = await registry.createRule(input);
      await changed(rule.id, rule.groundId);
      return rule;
    },
    async updateRule(ruleId, patch) {
      const rule = await registry.updateRule(ruleId, patch);
      await changed(rule.id, rule.groundId);
      return rule;
    },
    async deleteRule(ruleId) {
      // The ground goes in the change, and the row is gone once deleted: read it first.
      const rule = await registry.getRule(ruleId);
      const deleted = await registry.deleteRule(ruleId);
      if (deleted && rule !== undefined) await publish({ kind: 'rule-deleted', ruleId, groundId: rule.groundId });
      return deleted;
    },
  };
}

/** A quota set or removed: every edge admits the ground's states at the new rate. */
function quotaMutations(registry: QuotaRegistry, publish: Publish): Pick<QuotaRegistry, 'setQuota' | 'removeQuota'> {
  return {
    async setQuota(groundId, patch) {
      const quota = await registry.setQuota(groundId, patch);
      await publish({ kind: 'quota-changed', groundId });
      return quota;
    },
    async removeQuota(groundId) {
      const removed = await registry.removeQuota(groundId);
      if (removed) await publish({ kind: 'quota-changed', groundId });
      return removed;
    },
  };
}
