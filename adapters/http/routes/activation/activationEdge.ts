/**
 * The activation service's routes on the edge (spec §2.5–2.8, §4.5–4.7, §9): device types and
 * activations for partners, looking up and redeeming codes for users, the networks table.
 */
import type { EdgeContext } from '../../EdgeContext.ts';
import { activateRoutes } from './activateRoutes.ts';
import { activationRoutes } from './activationRoutes.ts';
import { deviceTypeRoutes } from './deviceTypeRoutes.ts';

export function activationEdge(edge: EdgeContext): void {
  deviceTypeRoutes(edge);
  activationRoutes(edge);
  activateRoutes(edge);
}
