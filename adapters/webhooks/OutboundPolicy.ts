/**
 * Where outbound webhooks may go (issue: "safe outbound requests"). A receiver's URL names a host the
 * integration's creator chose; without a guard it could point the service at its own loopback, the
 * private network it runs in, or the cloud metadata endpoint that hands out credentials (SSRF).
 *
 * Refused, unless the operator allows them (`--integrations-allow-hosts`, comma-separated host names
 * or CIDRs): loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
 * fe80::/10, where 169.254.169.254 and fd00:ec2::254 serve cloud metadata), shared address space
 * 100.64/10 (CGNAT), unspecified and "this network" (0/8, ::), multicast, reserved and broadcast
 * (224/4, 240/4, ff00::/8), and the same addresses inside IPv6: IPv4-mapped (::ffff:0:0/96),
 * IPv4-compatible (::/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16). Plain http:// goes only to
 * allowed hosts. Every address a name resolves to is checked, and one refused address refuses the
 * name: a DNS answer mixing a public and a private address is how rebinding attacks start.
 *
 * A host name allowed by name skips the address check (the operator vouches for what it resolves
 * to); an address inside an allowed CIDR is allowed whatever name led to it.
 */
import { BlockList, isIP, isIPv4 } from 'node:net';
import { FleetError } from '../../engine/kernel/errors.ts';

const FORBIDDEN_V4: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
];
const FORBIDDEN_V6: ReadonlyArray<[string, number]> = [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8]];

const forbidden = new BlockList();
for (const [net, prefix] of FORBIDDEN_V4) forbidden.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of FORBIDDEN_V6) forbidden.addSubnet(net, prefix, 'ipv6');

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted quad included). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad[1].split('.').map(Number);
    text = text.slice(0, quad.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16);
  }
  const [head, tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => parseInt(g, 16));
}

/** The IPv4 address carried inside an IPv6 one (mapped, compatible, NAT64, 6to4), else undefined. */
export function embeddedIpv4(address: string): string | undefined {
  if (isIP(address) !== 6) return undefined;
  const g = ipv6Groups(address);
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6], g[7]);
  if (zeros(0, 6) && (g[6] !== 0 || g[7] > 1)) return v4(g[6], g[7]);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6], g[7]);
  if (g[0] === 0x2002) return v4(g[1], g[2]);
  return undefined;
}

/** Whether `address` (an IP literal, brackets stripped) is one the guard refuses by default. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return forbidden.check(address, 'ipv4');
  if (forbidden.check(address, 'ipv6')) return true;
  const inner = embeddedIpv4(address);
  return inner !== undefined && forbidden.check(inner, 'ipv4');
}

/** A URL host as an address or name: brackets of an IPv6 literal and a trailing root dot removed, lower case. */
export function bareHost(host: string): string {
  const unbracketed = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return unbracketed.toLowerCase().replace(/\.$/, '');
}

export interface OutboundPolicy {
  /** Whether the operator allows `host` by name (its addresses are then not checked). */
  allowsHost(host: string): boolean;
  /** Why a connection to `address` for a URL of `host` is refused, or undefined when it is allowed. */
  refusal(address: string, host: string, protocol: 'http:' | 'https:'): string | undefined;
}

const HOST_RE = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The policy of an allow list: host names and CIDRs (`10.1.2.0/24`, `::1/128`, a bare address for
 * one address), as `--integrations-allow-hosts` gives them. VALIDATION_FAILED names a bad entry.
 */
export function outboundPolicy(allow: readonly string[] = []): OutboundPolicy {
  const hosts = new Set<string>();
  const cidrs = new BlockList();
  for (const raw of allow) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    const slash = entry.indexOf('/');
    const address = bareHost(slash < 0 ? entry : entry.slice(0, slash));
    const family = isIP(address);
    if (family !== 0) {
      const max = family === 4 ? 32 : 128;
      const prefix = slash < 0 ? max : /^\d{1,3}$/.test(entry.slice(slash + 1)) ? Number(entry.slice(slash + 1)) : -1;
      if (prefix < 0 || prefix > max) throw badEntry(raw);
      cidrs.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
      const inner = embeddedIpv4(address);
      if (inner !== undefined && slash < 0) cidrs.addAddress(inner, 'ipv4');
    } else if (slash < 0 && HOST_RE.test(bareHost(entry))) {
      hosts.add(bareHost(entry));
    } else {
      throw badEntry(raw);
    }
  }
  const inAllowedCidr = (address: string): boolean => {
    const family = isIP(address);
    if (family === 0) return false;
    if (cidrs.check(address, family === 4 ? 'ipv4' : 'ipv6')) return true;
    const inner = embeddedIpv4(address);
    return inner !== undefined && cidrs.check(inner, 'ipv4');
  };
  return {
    allowsHost: (host) => hosts.has(bareHost(host)),
    refusal(address, host, protocol) {
      if (hosts.has(bareHost(host)) || inAllowedCidr(address)) return undefined;
      if (protocol !== 'https:') return 'plain http:// goes only to hosts the operator allows (--integrations-allow-hosts)';
      if (isForbiddenAddress(address)) return `${isIPv4(address) ? address : `[${address}]`} is a loopback, private, link-local or otherwise internal address`;
      return undefined;
    },
  };
}

function badEntry(entry: string): FleetError {
  return new FleetError('VALIDATION_FAILED', `integrations allow list: ${JSON.stringify(entry)} is neither a host name nor an address or CIDR`, { detail: { field: 'integrationsAllowHosts' } });
}

/** The allow list of the setting `INTEGRATIONS_ALLOW_HOSTS` / `--integrations-allow-hosts`: comma-separated. */
export function parseAllowHosts(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
}
