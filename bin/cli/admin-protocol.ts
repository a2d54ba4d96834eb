/**
 * What the running server's admin endpoint (admin.ts) answers the CLI that sends it a command (via-server.ts).
 *
 * Where the command's output (its standard output, streamed) ends and its outcome begins: a NUL, which no output
 * holds (commands print what the stores hold, where PostgreSQL's text cannot hold one and JSON escapes it, and
 * their arguments, refused here with one). The outcome is JSON: `{ exit, stderr? }`, the exit code and what the
 * CLI writes to its standard error.
 */
export const END_OF_OUTPUT = '\u0000';

export interface CommandOutcome {
  exit: number;
  stderr?: string;
}
