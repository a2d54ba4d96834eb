/** Set once a signal ends the run: its handler exits the process, not main()'s end. */
let interrupted = false;

export const wasInterrupted = () => interrupted;

/**
 * On SIGINT or SIGTERM, runs `stop` once, then exits with `code`. In place before the embedded server starts:
 * that server is no process of the terminal's group (embedded-postgres.ts), so without it a Ctrl-C or a kill
 * would end this process and leave the server running, the data dir claimed.
 */
export function stopOnSignals(stop: () => Promise<void>, code: (signal: NodeJS.Signals) => number): void {
  const handle = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    stop()
      .catch((error) => process.stderr.write(`postline: ${error.message}\n`))
      .finally(() => process.exit(code(signal)));
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}
