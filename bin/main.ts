/**
 * The `postline` command (bin/postline.js starts it): `serve`, and the operators' commands. It loads the service's
 * modules (about a second of CPU) only for what runs a Postline in this process: help, the version, a usage
 * mistake, and a command the running server works for it, load none of them.
 */
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../platform/config.ts';
import { argumentsOf } from './cli/arguments.ts';
import { currentOwner } from './cli/data-dir-owner.ts';
import { wasInterrupted } from './cli/signals.ts';
import { USAGE, UsageError } from './cli/usage.ts';

async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (argv[0] === '--version' || argv[0] === 'version') {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    process.stdout.write(`${version}\n`);
    return 0;
  }
  if (argv.length === 0) throw new UsageError(USAGE); // a usage mistake: on standard error, exit code 2
  if (argv[0] === 'openapi') {
    // The OpenAPI document on stdout, without a database: for linters and client generators.
    // Written out before main() exits the process: a pipe would otherwise lose what was not yet flushed.
    const { standaloneApiDocument } = await import('./openapi-document.ts');
    const text = `${JSON.stringify(standaloneApiDocument(), null, 2)}\n`;
    await new Promise<void>((done) => process.stdout.write(text, () => done()));
    return 0;
  }
  const given = loadConfig();
  if (argv[0] === 'serve') {
    await (await import('./start.ts')).serve(given);
    return -1;
  }
  argumentsOf(argv); // a usage mistake is said before anything starts for the command
  const running = given.embedded ? currentOwner(given.POSTLINE_DATA_DIR) : null;
  if (running?.port && running.adminToken)
    return (await import('./cli/via-server.ts')).viaServer(given.POSTLINE_DATA_DIR, running, argv);
  return (await import('./start.ts')).runHere(argv, given);
}

// A reader that stops early (`postline openapi | head`) closes the pipe: the command ends there, quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});

// After a signal its handler ends the process, once what was open is closed.
main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0 && !wasInterrupted()) process.exit(code);
  },
  (error) => {
    if (wasInterrupted()) return;
    if (error instanceof ConfigError || error instanceof UsageError) {
      process.stderr.write(error.message.endsWith('\n') ? error.message : `${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`postline: ${error.message}\n`);
    process.exit(1);
  },
);
