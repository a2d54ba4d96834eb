import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

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

const hasProc = () => existsSync('/proc/self');

const ps = (pid: number, field: string) =>
  execFileSync('ps', ['-p', String(pid), '-o', `${field}=`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();

/** The command line of a process (`''` when it cannot be read): /proc on Linux, `ps` elsewhere. */
export function commandOf(pid: number): string {
  try {
    return hasProc() ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : ps(pid, 'command');
  } catch {
    return '';
  }
}

/**
 * When a process started, as an opaque text (undefined when it cannot be read): with its pid it names one
 * process, where a pid alone may name another once the first ended and the pid was reused (after kill -9 or a
 * power loss). Linux: field 22 of /proc/<pid>/stat (clock ticks since boot); elsewhere `ps -o lstart`.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    if (!hasProc()) return ps(pid, 'lstart') || undefined;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2, in parentheses) may hold spaces: fields are counted after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
