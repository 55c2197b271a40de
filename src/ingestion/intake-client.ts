/**
 * Who a webhook request's intake share is charged to, before any signature is
 * checked: the peer's address, or with `trustedProxies` hops in front of the
 * service, the address the nearest untrusted hop was seen from in
 * X-Forwarded-For (Express's numeric `trust proxy`: entries further left are the
 * client's own claims and are never read). IPv6 clients are keyed by their /64,
 * the block one subscriber usually holds, so a single host cannot mint fresh keys.
 */
export function intakeClientOf(
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedProxies: number,
): string {
  let address = remoteAddress ?? 'unknown';
  if (trustedProxies > 0 && forwardedFor !== undefined) {
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((hop) => hop.trim());
    hops.push(address);
    address = hops[Math.max(0, hops.length - 1 - trustedProxies)] || address;
  }
  return clientKey(address);
}

function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!address.includes(':')) return address;
  return `${ipv6Groups(address.split('%')[0]).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, `::` expanded, leading zeros dropped. */
function ipv6Groups(address: string): string[] {
  const [head, tail] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups.map((group) => group.replace(/^0+(?=.)/, ''));
}
