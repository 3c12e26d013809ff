/**
 * Integrations port, a part of the registry (engine/ports/registry.ts): a ground's integrations and
 * their signing secrets. SQL in adapters/sql-registry/integrations.ts; contract in
 * test/contracts/integrations.contract.ts.
 *
 * Secrets are `whsec_` secrets (engine/integrations/webhookSignature.ts), made by the registry. A
 * secret is answered once, by the call that made it (create, rotate); deliveries read the secrets
 * that sign through `integrationSecrets`. They are stored as they are: signing needs them, so a
 * hash cannot stand in for them as it does for bearer tokens.
 *
 * After a rotation the previous secret keeps signing (a second `v1,` signature, as Standard Webhooks
 * allows) for `graceMs`, so receivers can switch without losing a delivery; a grace of 0 ends it at
 * once (a leaked secret). A rotation during a grace period drops the older secret at once: at most
 * two sign.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing integration or ground, or a listed device that is not in the ground (field
 * `devices`), UNAVAILABLE/TIMEOUT (retriable) when the database cannot be reached, CLOSED after
 * close(). Lookups answer undefined/false for a malformed id without querying.
 */
import type { Integration, IntegrationPatch, IntegrationQuery, NewIntegration } from '../../schemas/integrations.ts';

export type { Integration, IntegrationPatch, IntegrationQuery, NewIntegration } from '../../schemas/integrations.ts';

export interface WithSecret {
  integration: Integration;
  /** `whsec_…`, shown once. */
  secret: string;
}

export interface IntegrationRegistry {
  /** Creates the integration (active) with a new secret. NOT_FOUND when the ground, or a listed device in it, does not exist. */
  createIntegration(input: NewIntegration): Promise<WithSecret>;
  getIntegration(integrationId: string): Promise<Integration | undefined>;
  /** Integrations of a ground, oldest first (created time, then id); a page when `query` says so. */
  listIntegrations(groundId: string, query?: IntegrationQuery): Promise<Integration[]>;
  /** Every active integration of every ground, oldest first: what a process delivering integrations starts with. */
  activeIntegrations(): Promise<Integration[]>;
  /** How many integrations there are, of every ground, active or disabled. */
  integrationCount(): Promise<number>;
  /** Changes the given fields. NOT_FOUND when missing. */
  updateIntegration(integrationId: string, patch: IntegrationPatch): Promise<Integration>;
  /** False when it did not exist. */
  deleteIntegration(integrationId: string): Promise<boolean>;
  /** A new current secret; the previous one signs too for `graceMs` (≥ 0). NOT_FOUND when missing. */
  rotateIntegrationSecret(integrationId: string, options: { graceMs: number }): Promise<WithSecret>;
  /** The secrets that sign now, current first (the previous one while its grace lasts); undefined when the integration does not exist. */
  integrationSecrets(integrationId: string): Promise<string[] | undefined>;
}
