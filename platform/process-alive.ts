/**
 * Whether a process with this id runs: signal 0 checks without sending anything. EPERM means it runs under
 * another user (the embedded PostgreSQL server under root runs as an unprivileged one).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
