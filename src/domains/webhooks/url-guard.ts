// Webhook URL rules. https:// anywhere public; http:// only to localhost or 127.0.0.1 (local receivers).
// Every other private, loopback, link-local or special address is refused, in any spelling an
// attacker might try (the URL parser normalizes decimal/octal/hex IPv4, so the raw host is compared
// too). Hostnames are not resolved here (Workers has no DNS API); a deployed Worker's fetch cannot
// reach private networks, which covers names that resolve to private addresses.

const LOCAL_HTTP_HOSTS = new Set(["localhost", "127.0.0.1"]);

/** IPv4 ranges that are never a webhook target over https (CIDR base, prefix length). */
const BLOCKED_V4: [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

const v4ToInt = (ip: string) => ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);

function blockedV4(ip: string): boolean {
  const value = v4ToInt(ip);
  return BLOCKED_V4.some(([base, bits]) => {
    const size = 2 ** (32 - bits);
    const start = v4ToInt(base);
    return value >= start && value < start + size;
  });
}

const isDottedQuad = (host: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(host);

/** Only global unicast IPv6 (2000::/3) outside documentation, 6to4 and Teredo is allowed. */
function blockedV6(bracketed: string): boolean {
  const host = bracketed.slice(1, -1).toLowerCase();
  if (host.includes(".")) return true; // embedded IPv4 (mapped or compatible)
  const first = parseInt(host.split(":")[0] || "0", 16);
  if (host.startsWith("::") || (first & 0xe000) !== 0x2000) return true; // ::1, ::, ::ffff:…, fe80::, fc00::, ff00::
  if (first === 0x2002) return true; // 6to4 embeds an IPv4 address
  const second = parseInt(host.split(":")[1] || "0", 16);
  if (first === 0x2001 && (second === 0x0db8 || second === 0x0000)) return true; // documentation, Teredo
  return false;
}

/** The raw host as written, lower-cased, without port or brackets' contents changed. */
function rawHost(input: string): string {
  const afterScheme = input.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  const authority = afterScheme.split(/[/?#]/)[0];
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  return (
    hostPort.startsWith("[") ? hostPort.slice(0, hostPort.indexOf("]") + 1) : hostPort.replace(/:\d*$/, "")
  ).toLowerCase();
}

/** Returns why the URL is refused, or null when it is acceptable. */
export function webhookUrlProblem(input: string): string | null {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return "is not a valid URL";
  }
  const authority = input.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "").split(/[/?#]/)[0];
  if (url.username || url.password || authority.includes("@")) return "must not contain credentials";
  const host = url.hostname.toLowerCase();
  const written = rawHost(input);
  if (url.protocol === "http:") {
    if (LOCAL_HTTP_HOSTS.has(host) && written === host) return null;
    return "must use https:// (http:// is allowed only for localhost and 127.0.0.1)";
  }
  if (url.protocol !== "https:") return "must use https://";
  if (host === "localhost" || host.endsWith(".localhost"))
    return written === "localhost" ? null : "must not target a local host";
  if (host.startsWith("["))
    return blockedV6(host) ? "must not target a private, loopback or special IPv6 address" : null;
  if (isDottedQuad(host)) {
    if (written !== host) return "must spell an IPv4 address in plain dotted decimal";
    if (host === "127.0.0.1") return null;
    return blockedV4(host) ? "must not target a private, loopback or special IPv4 address" : null;
  }
  if (!host.includes(".")) return "must name a fully qualified host";
  return null;
}
