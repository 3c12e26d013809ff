/**
 * An activation as the edge answers it (spec §2.5): exactly its fields, in its order; the
 * registry's partnerId and createdAt stay inside.
 */
import { networks } from '../../../../engine/activation/networks.ts';
import type { Activation } from '../../../../engine/ports/registry.ts';
import type { ActivationOut } from '../../../../schemas/activationEdge.ts';

export function activationOut(a: Activation): ActivationOut {
  return {
    code: a.code,
    description: a.description,
    status: a.status,
    activatedDeviceId: a.activatedDeviceId,
    activatedOptionId: a.activatedOptionId,
    hardware: { id: a.hardware.id },
    options: a.options.map((o) => ({
      id: o.id,
      description: o.description,
      device: { type: o.device.type },
      network: { networkId: o.network.networkId, data: orderedData(o.network.networkId, o.network.data) },
    })),
  };
}

/** The network's keys in the table's order (required, then optional), then anything else. */
function orderedData(networkId: string, data: Record<string, unknown>): Record<string, unknown> {
  const network = networks.get(networkId);
  if (network === undefined) return data;
  const out: Record<string, unknown> = {};
  for (const key of [...network.required, ...network.optional]) if (Object.hasOwn(data, key)) out[key] = data[key];
  for (const [key, value] of Object.entries(data)) if (!Object.hasOwn(out, key)) out[key] = value;
  return out;
}
