// How controller code says "this process must exit now" without calling `process.exit` itself.
//
// A real controller process exits when it loses its leader-election lease (client-go's `OnStoppedLeading` is
// usually fatal) and is restarted by its supervisor: its caches, queues and in-memory state are gone, and the
// new process campaigns again from scratch. Code written against settle's `Client` and `Clock` cannot end the
// process itself, because the same code runs inside the simulator, where an actor is not a process. So it
// rejects with a `ProcessExit` instead: `runControllerProcess` (settle/kube) turns it into a real exit with
// `exitCode`, and the simulator treats an actor whose `start()` rejects with one as a process that exited
// (it is restarted after its `restartDelayMs` with a fresh incarnation), not as an actor error.

export class ProcessExit extends Error {
  constructor(
    message: string,
    /** The exit status a real process ends with. Default 1, as a fatal exit. */
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = "ProcessExit";
  }
}

