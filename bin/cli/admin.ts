import { timingSafeEqual } from 'node:crypto';
import express from 'express';
import { AppError } from '../../platform/errors.ts';
import { refuseUnstorableText } from '../../platform/unstorable-text.ts';
import type { Postline } from '../service.ts';
import { type CommandOutcome, END_OF_OUTPUT } from './admin-protocol.ts';
import { runCommand } from './commands.ts';
import { UsageError } from './usage.ts';

/** Runs the command; its mistakes as the CLI says them when it runs the command itself (bin/main.ts). */
async function outcome(argv: string[], postline: Postline, out: express.Response): Promise<CommandOutcome> {
  try {
    return { exit: await runCommand(argv, postline, out) };
  } catch (error: any) {
    if (error instanceof UsageError) return { exit: 2, stderr: error.message };
    return { exit: 1, stderr: `postline: ${error?.message}` };
  }
}

/**
 * POST /admin/cli runs a CLI command inside the running service, streaming its output back, then
 * `END_OF_OUTPUT` and its outcome. Embedded mode needs it: the data dir, and the PostgreSQL server in it, have one
 * owner, so `postline orgs create` talks to the service that owns it. Guarded by the admin token the server wrote
 * into the data dir (readable only by its user).
 */
export function mountAdmin(
  app: express.Express,
  token: string,
  postline: () => Postline | Promise<Postline>,
) {
  app.post('/admin/cli', express.json({ limit: '64kb' }), async (req, res) => {
    const presented = Buffer.from(req.get('x-postline-admin-token') ?? '');
    const expected = Buffer.from(token);
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected))
      throw new AppError('invalid_admin_token', 'Invalid admin token');
    const argv = req.body?.argv;
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string'))
      throw new AppError('validation_error', '`argv`: must be an array of strings');
    refuseUnstorableText(argv, 'argv');
    res.status(200).type('text/plain');
    // The endpoint is mounted while the service starts: a command that comes before its start ended waits for it.
    const started = await postline();
    res.end(`${END_OF_OUTPUT}${JSON.stringify(await outcome(argv, started, res))}`);
  });
}
