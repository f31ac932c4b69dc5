// TLS beside plain HTTP on one port. kubectl (client-go) sends its bearer token only over TLS, so a kubeconfig that
// points at `https://` keeps the token out of the URL (and out of every URL kubectl prints), and lets `kubectl proxy`
// forward requests with the token. The certificate is a self-signed ECDSA P-256 one made at start-up (the
// kubeconfig says `insecure-skip-tls-verify`, as for any throwaway test server); it is written here in DER by hand
// because Node can make keys but not certificates.
import { generateKeyPairSync, sign } from "node:crypto";
import type { Server as HttpServer } from "node:http";
import type { Server as HttpsServer } from "node:https";
import { createServer as createNetServer } from "node:net";
import type { Server as NetServer, Socket } from "node:net";
import { Duplex } from "node:stream";
import { assert } from "../../api/assert.ts";
import type { Clock } from "../../api/clock.ts";

// ---- DER ----

function lengthBytes(length: number): number[] {
  if (length < 0x80) return [length];
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return [0x80 | bytes.length, ...bytes];
}

function tlv(tag: number, content: readonly number[] | Uint8Array): number[] {
  return [tag, ...lengthBytes(content.length), ...content];
}

const sequence = (...items: number[][]) => tlv(0x30, items.flat());
const set = (...items: number[][]) => tlv(0x31, items.flat());

function oid(text: string): number[] {
  const parts = text.split(".").map(Number);
  const bytes = [parts[0]! * 40 + parts[1]!];
  for (const part of parts.slice(2)) {
    const chunk = [part & 0x7f];
    for (let n = part >>> 7; n > 0; n >>>= 7) chunk.unshift(0x80 | (n & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, bytes);
}

function utcTime(ms: number): number[] {
  const iso = new Date(ms).toISOString();
  const text = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return tlv(0x17, [...Buffer.from(text, "ascii")]);
}

const name = (common: string) => sequence(set(sequence(oid("2.5.4.3"), tlv(0x0c, [...Buffer.from(common, "utf8")]))));
const extension = (id: string, critical: boolean, value: number[]) => sequence(oid(id), ...(critical ? [tlv(0x01, [0xff])] : []), tlv(0x04, value));

function pem(label: string, der: Uint8Array): string {
  const lines = Buffer.from(der).toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

const dayMs = 24 * 60 * 60 * 1000;

/** A self-signed certificate for localhost, 127.0.0.1 and ::1, valid from a day before `nowMs` for a year. */
export function selfSignedCertificate(nowMs: number): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const ecdsaSha256 = sequence(oid("1.2.840.10045.4.3.2"));
  const altNames = sequence(tlv(0x87, [127, 0, 0, 1]), tlv(0x82, [...Buffer.from("localhost", "ascii")]), tlv(0x87, [...new Uint8Array(15), 1]));
  const extensions = sequence(
    extension("2.5.29.19", true, sequence(tlv(0x01, [0xff]))),
    extension("2.5.29.15", true, tlv(0x03, [0x02, 0x84])),
    extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))),
    extension("2.5.29.17", false, altNames),
  );
  const serial = [0x01, ...[...publicKey.export({ type: "spki", format: "der" }).subarray(-8)].map((b) => b & 0x7f)];
  const tbs = sequence(
    tlv(0xa0, tlv(0x02, [0x02])),
    tlv(0x02, serial),
    ecdsaSha256,
    name("settle"),
    sequence(utcTime(nowMs - dayMs), utcTime(nowMs + 365 * dayMs)),
    name("settle"),
    [...publicKey.export({ type: "spki", format: "der" })],
    tlv(0xa3, extensions),
  );
  const signature = sign("sha256", Uint8Array.from(tbs), privateKey);
  const certificate = sequence(tbs, ecdsaSha256, tlv(0x03, [0x00, ...signature]));
  return { key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), cert: pem("CERTIFICATE", Uint8Array.from(certificate)) };
}

// ---- one port, two protocols ----

const tlsHandshake = 0x16;

/**
 * The socket as a stream that first yields the bytes already read from it. A TLS server reads a net socket through
 * its native handle, past anything pushed back into the JavaScript stream; a stream of our own it reads in full.
 */
function replaying(socket: Socket, first: Buffer): Duplex {
  const stream = new Duplex({
    read: () => void socket.resume(),
    write: (chunk, encoding, done) => void socket.write(chunk, encoding, done),
    final: (done) => {
      socket.end();
      done();
    },
    destroy: (error, done) => {
      socket.destroy();
      done(error);
    },
  });
  stream.push(first);
  socket.on("data", (chunk) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on("end", () => stream.push(null));
  socket.on("close", () => stream.destroy());
  socket.on("error", (error) => stream.destroy(error));
  return stream;
}

/**
 * A listener that hands each connection to `https` when its first byte starts a TLS handshake and to `http`
 * otherwise. Neither of those listens itself. A connection that sends nothing within `firstByteTimeoutMs` (on
 * `clock`) is closed: until its first byte no HTTP server knows of it. `closeSilent` closes those at once (a
 * server shutting down).
 */
export function polyglotListener(http: HttpServer, https: HttpsServer, clock: Clock, firstByteTimeoutMs: number): { listener: NetServer; closeSilent(): void } {
  assert(firstByteTimeoutMs > 0, "firstByteTimeoutMs > 0");
  const silentSockets = new Set<Socket>();
  const listener = createNetServer((socket) => {
    // TLS writes records in pieces: without this, Nagle's algorithm and delayed ACKs stall each answer ~40 ms.
    socket.setNoDelay(true);
    socket.on("error", () => socket.destroy());
    silentSockets.add(socket);
    const silent = clock.setTimer(firstByteTimeoutMs, () => socket.destroy());
    socket.once("close", () => {
      silent.cancel();
      silentSockets.delete(socket);
    });
    socket.once("data", (first: Buffer) => {
      silent.cancel();
      silentSockets.delete(socket);
      socket.pause();
      if (first[0] === tlsHandshake) {
        https.emit("connection", replaying(socket, first));
      } else {
        socket.unshift(first);
        http.emit("connection", socket);
        socket.resume();
      }
    });
  });
  return { listener, closeSilent: () => [...silentSockets].forEach((socket) => socket.destroy()) };
}
