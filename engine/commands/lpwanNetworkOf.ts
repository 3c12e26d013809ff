/**
 * Which commands reach a device how (spec §4.3, §4.4): asset commands go over MQTT to a client
 * subscribed to the asset's command topic, device commands over the LPWAN network the device is
 * bound to. A device bound to a LoRaWAN network cannot hold an MQTT session (LoRaWAN carries no IP),
 * so an asset command to it goes out the one way it can: as a device command holding that one asset.
 *
 * Decision where the spec is silent: only networks of kind `lorawan` count. A device on a cellular
 * network (kind `mobile`: NB-IoT, LTE-M) speaks IP and takes asset commands over MQTT as before.
 */
import { networks, type NetworkInfo } from '../activation/networks.ts';
import type { DeviceInfo } from '../ports/directory.ts';

/** The LoRaWAN network the device is bound to, or undefined when its commands go over MQTT. */
export function lpwanNetworkOf(device: Pick<DeviceInfo, 'network'>): NetworkInfo | undefined {
  const networkId = device.network?.networkId;
  if (networkId === undefined) return undefined;
  const network = networks.get(networkId);
  return network?.kind === 'lorawan' ? network : undefined;
}
