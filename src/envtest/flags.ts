// The command lines of the `kube-apiserver` and `etcd` that controller-runtime's envtest starts, read as those
// binaries read theirs. envtest passes `--name=value` (its defaults and whatever a suite adds through
// `Configure()`); users write `--name value` too. Every flag envtest's defaults pass is taken; the flags suites
// commonly add are accepted, and honoured where settle can; a flag settle cannot honour ends the start with exit 1
// naming it, since a server quietly ignoring what a suite relies on would fail it later and somewhere else.
// envtest also runs each binary with `--help` and looks for a flag at the start of a line (`--insecure-port`, which
// must be absent from a current kube-apiserver; `--unsafe-no-fsync` for etcd), so the help text lists exactly the
// flags taken, in kube-apiserver's layout.

/** What settle does with a flag: uses it, takes it without effect (said in its help), or refuses it. */
type FlagUse = "honoured" | "accepted";

interface FlagSpec {
  name: string;
  /** The value's type as kube-apiserver's help names it; "" for a boolean. */
  type: string;
  use: FlagUse;
  help: string;
}

/** Flags the assets' kube-apiserver takes: envtest's defaults first, then those suites commonly add. */
export const apiServerFlags: readonly FlagSpec[] = [
  { name: "advertise-address", type: "ip", use: "accepted", help: "The IP address on which to advertise the apiserver to members of the cluster. settle: taken, nothing is advertised." },
  { name: "allow-privileged", type: "", use: "accepted", help: "If true, allow privileged containers. settle: taken; no container runs." },
  { name: "authorization-mode", type: "strings", use: "honoured", help: "Ordered list of plug-ins to do authorization on secure port. settle: RBAC (system:masters may do anything) and Node (taken, no kubelet asks); others are refused." },
  { name: "bind-address", type: "ip", use: "honoured", help: "The IP address on which to listen for the --secure-port port. (default 0.0.0.0; settle's default 127.0.0.1)" },
  { name: "secure-port", type: "int", use: "honoured", help: "The port on which to serve HTTPS with authentication and authorization. (default 6443)" },
  { name: "cert-dir", type: "string", use: "honoured", help: "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored. settle: serves apiserver.crt and apiserver.key from it." },
  { name: "tls-cert-file", type: "string", use: "honoured", help: "File containing the default x509 Certificate for HTTPS." },
  { name: "tls-private-key-file", type: "string", use: "honoured", help: "File containing the default x509 private key matching --tls-cert-file." },
  { name: "client-ca-file", type: "string", use: "honoured", help: "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate, and its Organizations as groups." },
  { name: "disable-admission-plugins", type: "strings", use: "accepted", help: "admission plugins that should be disabled although they are in the default enabled plugins list. settle: taken; settle's admission is its own." },
  { name: "enable-admission-plugins", type: "strings", use: "accepted", help: "admission plugins that should be enabled in addition to default enabled ones. settle: taken; settle's admission is its own." },
  { name: "etcd-servers", type: "strings", use: "accepted", help: "List of etcd servers to connect with (scheme://ip:port), comma separated. settle: taken, unused (the store is in memory)." },
  { name: "etcd-prefix", type: "string", use: "accepted", help: "The prefix to prepend to all resource paths in etcd. settle: taken, unused." },
  { name: "service-account-issuer", type: "stringArray", use: "accepted", help: "Identifier of the service account token issuer. settle: taken; settle signs its own service account tokens." },
  { name: "service-account-key-file", type: "stringArray", use: "accepted", help: "File containing PEM-encoded x509 RSA or ECDSA keys used to verify ServiceAccount tokens. settle: taken." },
  { name: "service-account-signing-key-file", type: "string", use: "accepted", help: "Path to the file that contains the current private key of the service account token issuer. settle: taken." },
  { name: "service-cluster-ip-range", type: "string", use: "accepted", help: "A CIDR notation IP range from which to assign service cluster IPs. settle: taken; settle allocates from its own range." },
  { name: "feature-gates", type: "mapStringBool", use: "accepted", help: "A set of key=value pairs that describe feature gates for alpha/experimental features. settle: taken; settle serves one feature set." },
  { name: "runtime-config", type: "mapStringString", use: "accepted", help: "A set of key=value pairs that enable or disable built-in APIs. settle: taken; settle serves its one set of APIs." },
  { name: "audit-log-path", type: "string", use: "honoured", help: "If set, all requests coming to the apiserver will be logged to this file. '-' means standard out. settle: audit.k8s.io/v1 events at the Metadata level, as --audit-policy-file selects them (none without it)." },
  { name: "audit-policy-file", type: "string", use: "honoured", help: "Path to the file that defines the audit policy configuration. settle: rules by level, users, groups, verbs, resources, namespaces and non-resource URLs, and omitStages." },
  { name: "audit-log-maxage", type: "int", use: "accepted", help: "The maximum number of days to retain old audit log files. settle: taken; the log is not rotated." },
  { name: "audit-log-maxbackup", type: "int", use: "accepted", help: "The maximum number of old audit log files to retain. settle: taken; the log is not rotated." },
  { name: "audit-log-maxsize", type: "int", use: "accepted", help: "The maximum size in megabytes of the audit log file. settle: taken; the log is not rotated." },
  { name: "v", type: "Level", use: "accepted", help: "number for the log level verbosity. settle: taken; settle logs warnings only." },
  { name: "vmodule", type: "pattern=N,...", use: "accepted", help: "comma-separated list of pattern=N settings for file-filtered logging. settle: taken." },
  { name: "logging-format", type: "string", use: "accepted", help: "Sets the log format. settle: taken." },
  { name: "enable-priority-and-fairness", type: "", use: "accepted", help: "If true, replace the max-in-flight handler with an enhanced one. settle: taken." },
  { name: "max-requests-inflight", type: "int", use: "accepted", help: "The maximum number of non-mutating requests in flight at a given time. settle: taken." },
  { name: "max-mutating-requests-inflight", type: "int", use: "accepted", help: "The maximum number of mutating requests in flight at a given time. settle: taken." },
  { name: "anonymous-auth", type: "", use: "accepted", help: "Enables anonymous requests to the secure port. settle: taken; only the health checks are open to anonymous requests." },
  { name: "profiling", type: "", use: "accepted", help: "Enable profiling via web interface host:port/debug/pprof/. settle: taken." },
  { name: "endpoint-reconciler-type", type: "string", use: "accepted", help: "Use an endpoint reconciler. settle: taken." },
  { name: "api-audiences", type: "strings", use: "accepted", help: "Identifiers of the API. settle: taken." },
  { name: "storage-media-type", type: "string", use: "accepted", help: "The media type to use to store objects in storage. settle: taken." },
  { name: "watch-cache", type: "", use: "accepted", help: "Enable watch caching in the apiserver. settle: taken." },
  { name: "request-timeout", type: "duration", use: "accepted", help: "An optional field indicating the duration a handler must keep a request open before timing it out. settle: taken." },
  { name: "shutdown-delay-duration", type: "duration", use: "accepted", help: "Time to delay the termination. settle: taken; settle stops at once." },
];

/** Flags of the assets' etcd: envtest's defaults, and `--unsafe-no-fsync`, which envtest passes when help lists it. */
export const etcdFlags: readonly FlagSpec[] = [
  { name: "data-dir", type: "string", use: "accepted", help: "Path to the data directory. settle: taken; nothing is stored there." },
  { name: "listen-client-urls", type: "string", use: "honoured", help: "List of URLs to listen on for client traffic. settle: the first http URL answers the health probe." },
  { name: "advertise-client-urls", type: "string", use: "accepted", help: "List of this member's client URLs to advertise to the public." },
  { name: "listen-peer-urls", type: "string", use: "accepted", help: "List of URLs to listen on for peer traffic." },
  { name: "unsafe-no-fsync", type: "", use: "accepted", help: "Disables fsync, unsafe, will cause data loss." },
  { name: "name", type: "string", use: "accepted", help: "Human-readable name for this member." },
  { name: "log-level", type: "string", use: "accepted", help: "Configures log level." },
];

/** A command line that cannot be honoured: the message names the flag. The binary exits 1 with it, as kube-apiserver does. */
export class FlagError extends Error {}

/** The flags of `argv` by name (the last value wins, as for pflag), or "help" when `--help`/`-h` is among them. */
export function parseFlags(program: string, specs: readonly FlagSpec[], argv: readonly string[]): Map<string, string> | "help" {
  const byName = new Map(specs.map((spec) => [spec.name, spec]));
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") return "help";
    const match = /^--?([A-Za-z0-9][A-Za-z0-9-]*)(?:=([\s\S]*))?$/.exec(arg);
    if (match === null) throw new FlagError(`${program}: unexpected argument "${arg}" (every argument is a --flag)`);
    const name = match[1]!;
    const spec = byName.get(name);
    if (spec === undefined) throw new FlagError(`${program}: unknown flag: --${name} (settle's ${program} cannot honour it; \`${program} --help\` lists the flags it takes)`);
    let value = match[2];
    if (value === undefined) {
      if (spec.type === "") value = "true";
      else {
        value = argv[i + 1];
        if (value === undefined) throw new FlagError(`${program}: flag needs an argument: --${name}`);
        i++;
      }
    }
    values.set(name, value);
  }
  return values;
}

/** `--help` in kube-apiserver's layout: each flag on a line of its own, starting with `--`, then its type and help. */
export function flagsHelp(program: string, specs: readonly FlagSpec[]): string {
  const heads = specs.map((spec) => `      --${spec.name}${spec.type === "" ? "" : ` ${spec.type}`}`);
  const width = Math.max(...heads.map((head) => head.length)) + 3;
  const lines = specs.map((spec, i) => `${heads[i]!.padEnd(width)}${spec.help}`);
  return `settle's ${program} for controller-runtime's envtest: settle serve, started as envtest starts ${program}.\n\nUsage:\n  ${program} [flags]\n\nFlags:\n\n${lines.join("\n")}\n  -h, --help${" ".repeat(width - 12)}help for ${program}\n`;
}
