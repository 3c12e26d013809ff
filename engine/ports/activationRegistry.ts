/**
 * Activations port, a part of the registry (engine/ports/registry.ts): a partner's activation codes
 * and their redeeming into a ground (spec §2.5–2.8, §4.5–4.7). SQL in adapters/sql-registry/
 * activations.ts; contracts in test/contracts/activation.contract.ts and activationLifecycle.contract.ts.
 *
 * Errors are FleetErrors: VALIDATION_FAILED for malformed input (detail.field names it), NOT_FOUND
 * for a missing referenced entity, CONFLICT for a duplicate, UNAVAILABLE/TIMEOUT (retriable) when
 * the database cannot be reached, CLOSED after close() (engine/ports/registry.ts).
 */
import type { ActivateRequest, Activation, ActivationPatch, ActivationQuery, NewActivation } from '../../schemas/registry.ts';
import type { CreatedDevice } from './fleetRegistry.ts';

/** The result of redeeming an activation code (spec §4.6). */
export interface Activated {
  /** Now `used`, naming the device and the option chosen. */
  activation: Activation;
  device: CreatedDevice;
}

export interface ActivationRegistry {
  /**
   * Creates an `unused` activation with a generated code and option ids (spec §4.5). Each option's
   * network goes through the networks table (engine/activation/networks.ts: aliases become ids, keys are
   * checked, LoRaWAN keys not supplied become null). Device types: another partner's is FORBIDDEN;
   * a type name the partner does not have, or a `:<n>` that is not published, is VALIDATION_FAILED;
   * `:latest` (or no suffix) of a type without a published version publishes its draft as version 1
   * first (spec §2.7). CONFLICT when the partner already has an activation for the hardware id.
   */
  createActivation(partnerId: string, input: NewActivation): Promise<Activation>;
  /** The partner's activation by code (any case, `-`/space grouping accepted); another partner's reads as undefined. */
  getActivation(partnerId: string, code: string): Promise<Activation | undefined>;
  /**
   * An unused activation by code alone, for the user about to redeem it (spec §4.6 asks for an
   * option id: the user must see the options to choose one). Undefined for an unknown or used code.
   */
  findUnusedActivation(code: string): Promise<Activation | undefined>;
  /** The partner's activation of a hardware id (spec §2.6: troubleshooting). */
  findActivationByHardware(partnerId: string, hardwareId: string): Promise<Activation | undefined>;
  /** A page of the partner's activations, oldest first; `after` continues from the last one seen. */
  listActivations(partnerId: string, query: ActivationQuery): Promise<Activation[]>;
  /**
   * Changes the description and/or replaces the options (new option ids; the same checks as
   * createActivation) of an unused activation. NOT_FOUND for an unknown code or another partner's;
   * CONFLICT once used (engine/activation/activationMachine.ts).
   */
  updateActivation(partnerId: string, code: string, patch: ActivationPatch): Promise<Activation>;
  /** Deletes an unused activation; false when there is none. CONFLICT once used. */
  deleteActivation(partnerId: string, code: string): Promise<boolean>;
  /**
   * Redeems a code in one transaction (spec §4.6): the device, named after the hardware id, is
   * created in the ground from the option's device type version (resolved now) and network, and the
   * activation becomes `used`. FORBIDDEN when the user is not a member of the ground; NOT_FOUND for
   * an unknown code; VALIDATION_FAILED (field `option`) for an option of another activation;
   * CONFLICT when the code was already used or the device name / devEui is taken (the code then
   * stays unused).
   */
  activate(request: ActivateRequest): Promise<Activated>;
}
