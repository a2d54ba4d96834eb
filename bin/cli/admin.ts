import { timingSafeEqual } from 'node:crypto';
import express from 'express';
import { AppError } from '../../platform/errors.ts';
import { refuseUnstorableText } from '../../platform/unstorable-text.ts';
import type { Postline } from '../service.ts';
import { UsageError } from './cli.ts';
import { runCommand } from './commands.ts';

/**
 * POST /admin/cli runs a CLI command inside the running service, streaming its output back. Embedded mode
 * needs it: the data dir, and the PostgreSQL server in it, have one owner, so `postline orgs create` talks to
 * the service that owns it. Guarded by the admin token the server wrote into the data dir (readable only by its user).
 */
export function mountAdmin(app: express.Express, token: string, postline: () => Postline) {
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
    try {
      const code = await runCommand(argv, postline(), res);
      res.end(`\n#exit ${code}\n`);
    } catch (error: any) {
      res.end(
        `${error instanceof UsageError ? error.message : `Error: ${error.message}`}\n#exit ${error instanceof UsageError ? 2 : 1}\n`,
      );
    }
  });
}
