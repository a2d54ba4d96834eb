import type { Socket } from 'node:net';

/** Bytes of a message that count as progress: a client must send at least this much per time-out in DATA. */
export const DATA_PROGRESS_BYTES = 1024;

/**
 * Ends an SMTP session that makes no progress for `timeoutMs` (SMTP_IDLE_TIMEOUT_MS, docs/smtp.md). Progress is a
 * complete command line (a line feed outside DATA), DATA_PROGRESS_BYTES of a message, or an answer of ours;
 * single bytes are none, so a client that drips them is cut off like a silent one, not after the session's
 * whole time-out. While a hook of ours works on an answer the client waits for us, and the time does not count.
 */
export class ProgressTimer {
  readonly #timeoutMs: number;
  readonly #onStall: () => void;
  #timer?: NodeJS.Timeout;
  /** Hooks of ours still working on an answer. */
  #answering = 0;
  #inData = false;
  #dataBytes = 0;
  #stopped = false;
  #watched?: Socket;

  constructor(timeoutMs: number, onStall: () => void) {
    this.#timeoutMs = timeoutMs;
    this.#onStall = onStall;
    this.#restart();
  }

  /** Counts what arrives on `socket`: the session's first, then the TLS one after STARTTLS (each once). */
  watch(socket: Socket): void {
    if (socket === this.#watched) return;
    this.#watched = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#dataBytes += chunk.length;
      if (this.#inData ? this.#dataBytes >= DATA_PROGRESS_BYTES : chunk.includes(0x0a)) this.#restart();
    });
  }

  /** A hook of ours starts working on an answer. */
  answering(): void {
    this.#answering++;
    this.#restart();
  }

  /** The hook answered. */
  answered(): void {
    this.#answering--;
    this.#restart();
  }

  /** The client sends a message (it owes us its bytes, even while the DATA hook is running) until `dataEnded`. */
  dataStarted(): void {
    this.#inData = true;
    this.#restart();
  }

  dataEnded(): void {
    this.#inData = false;
    this.#restart();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Progress: the time-out starts again, if the client is the one we wait for. */
  #restart() {
    clearTimeout(this.#timer);
    this.#dataBytes = 0;
    if (this.#stopped || (this.#answering > 0 && !this.#inData)) return;
    this.#timer = setTimeout(this.#onStall, this.#timeoutMs);
    this.#timer.unref();
  }
}
