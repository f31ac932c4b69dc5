// One end of an in-process connection: a Duplex that Node's HTTP client and server take for a socket. Bytes
// written to it go to the wire (which decides when the other end sees them, as steps); the wire pushes what this
// end receives. Socket timeouts are the simulation's: `setTimeout` arms a virtual idle timer through the wire.
import { Duplex } from "node:stream";

export interface SocketSink {
  /** Bytes written by the owner of this end. */
  data(chunk: Buffer): void;
  /** The owner ended its side (half close). */
  end(): void;
  /** The owner destroyed this end. */
  destroyed(error: Error | null): void;
  /** Arms (ms > 0) or clears (0) the idle timeout of this end; the wire calls `fireTimeout` when it is due. */
  idleTimeout?(ms: number): void;
}

export class WireSocket extends Duplex {
  readonly remoteAddress = "127.0.0.1";
  readonly remotePort: number;
  readonly remoteFamily = "IPv4";
  readonly localAddress = "127.0.0.1";
  readonly localPort: number;
  readonly connecting = false;
  readonly encrypted = false;
  /** The idle timeout in ms (0: none), as `net.Socket#timeout`. */
  timeout = 0;
  private sinkEnded = false;

  constructor(
    private readonly sink: SocketSink,
    ports: { local: number; remote: number },
  ) {
    super({ allowHalfOpen: true });
    this.localPort = ports.local;
    this.remotePort = ports.remote;
  }

  get readyState(): string {
    return this.destroyed ? "closed" : "open";
  }

  override _read(): void {}

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.sink.data(typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk);
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.sinkEnded) {
      this.sinkEnded = true;
      this.sink.end();
    }
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.sink.idleTimeout?.(0);
    this.sink.destroyed(error);
    callback(error);
  }

  /**
   * `end()` on an end already ended and finished (or destroyed), uncorked, with nothing to write and no callback, does
   * nothing in Node but build an error (`ERR_STREAM_ALREADY_FINISHED`, a stack captured) and drop it. Node's HTTP
   * server calls it that way on every connection a client closes after its response (`socketOnEnd`): it was 2% of
   * a module run. Anything else is Node's `end`.
   */
  override end(...args: unknown[]): this {
    if ((args.length === 0 || args.every((arg) => arg === undefined || arg === null)) && this.writableEnded && this.writableCorked === 0 && (this.writableFinished || this.destroyed)) return this;
    return (super.end as (...rest: unknown[]) => this)(...args);
  }

  /** Virtual: an idle timer of the simulation. */
  setTimeout(ms: number, callback?: () => void): this {
    this.timeout = ms;
    if (callback !== undefined) {
      if (ms === 0) this.removeListener("timeout", callback);
      else this.once("timeout", callback);
    }
    this.sink.idleTimeout?.(ms);
    return this;
  }

  /** The wire's idle timer fired. */
  fireTimeout(): void {
    if (!this.destroyed) this.emit("timeout");
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  address(): { address: string; family: string; port: number } {
    return { address: this.localAddress, family: "IPv4", port: this.localPort };
  }
}
