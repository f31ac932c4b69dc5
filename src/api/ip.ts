// IP addresses as Go's net package reads and writes them, for names that must be an address in canonical form
// (networking.k8s.io IPAddress): parsing accepts what `netutils.ParseIPSloppy` accepts (IPv4 parts with leading
// zeros, read as decimal), and the canonical form is what `net.IP.String()` prints: dotted decimal for IPv4 and
// IPv4-mapped IPv6, otherwise lower-case hex groups without leading zeros and the longest run of two or more zero
// groups (the first of equal runs) written as `::`.

const ipv4Part = /^\d{1,3}$/;
const ipv6Group = /^[0-9A-Fa-f]{1,4}$/;

/** The four bytes of a dotted IPv4 address, or undefined. */
function parseIpv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => ipv4Part.test(p))) return undefined;
  const bytes = parts.map(Number);
  return bytes.every((b) => b <= 255) ? bytes : undefined;
}

/** The eight 16-bit groups of an IPv6 address (an IPv4 tail allowed), or undefined. */
function parseIpv6(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string): number[] | undefined => {
    if (half === "") return [];
    const pieces = half.split(":");
    const groups: number[] = [];
    for (const [i, piece] of pieces.entries()) {
      const tail = i === pieces.length - 1 && piece.includes(".") ? parseIpv4(piece) : undefined;
      if (tail !== undefined) groups.push(tail[0]! * 256 + tail[1]!, tail[2]! * 256 + tail[3]!);
      else if (ipv6Group.test(piece)) groups.push(parseInt(piece, 16));
      else return undefined;
    }
    return groups;
  };
  const head = groupsOf(halves[0]!);
  const rest = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (head === undefined || rest === undefined) return undefined;
  // An IPv4 tail may only end the address.
  if (halves.length === 2 && halves[0]!.includes(".")) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - rest.length;
  return missing >= 1 ? [...head, ...new Array<number>(missing).fill(0), ...rest] : undefined;
}

function formatIpv6(groups: number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** The canonical text of an IP address, or undefined when `text` is not one (zones and prefixes are not). */
export function canonicalIp(text: string): string | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return v4.join(".");
  if (!text.includes(":")) return undefined;
  const groups = parseIpv6(text);
  if (groups === undefined) return undefined;
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  return formatIpv6(groups);
}

/** Problems with `name` as an IPAddress name: it must be an IP address, written in canonical form. */
export function isCanonicalIpName(name: string): string[] {
  const canonical = canonicalIp(name);
  if (canonical === undefined) return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"];
  return canonical === name ? [] : [`must be in canonical form (${JSON.stringify(canonical)})`];
}
