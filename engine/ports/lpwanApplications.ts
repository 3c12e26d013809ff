/**
 * LPWAN applications port: which network-server applications may post uplinks (a webhook secret
 * each) and where device commands of their devices are pushed. The embedded implementation holds
 * the applications of a configuration file (engine/lpwan/StaticLpwanApplications.ts); a registry
 * table can implement the same port later without touching the edge or the downlink path.
 */
import type { LpwanNetworkId, TtsDownlinkSettings } from '../../schemas/lpwan.ts';

export type { LpwanNetworkId, TtsDownlinkSettings } from '../../schemas/lpwan.ts';

export interface LpwanApplication {
  networkId: LpwanNetworkId;
  applicationId: string;
  downlink?: TtsDownlinkSettings;
}

export interface LpwanApplications {
  /**
   * The application of `networkId` whose webhook secret `secret` is; undefined for any other
   * string. Constant time in the secret (it is compared as a SHA-256 digest).
   */
  authenticate(networkId: string, secret: string): Promise<LpwanApplication | undefined>;
  /** The application by network and id. */
  get(networkId: string, applicationId: string): Promise<LpwanApplication | undefined>;
}
