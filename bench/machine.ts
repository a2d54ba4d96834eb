/**
 * How fast this machine is at the two things the SMTP benches' ratios move with from one VM to the next: an
 * RSA-2048 signature (DKIM, about a fifth of a relayed message's CPU) and a round trip over a loopback socket (the
 * system calls Postline pays for each statement to PostgreSQL and each SMTP reply). Printed before the runs, so
 * that figures of different sittings can be compared by the machine they ran on.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';

const SIGNATURES = 200;
const ROUND_TRIPS = 5000;

/** Microseconds of CPU an RSA-2048 (SHA-256) signature takes this process. */
function signatureMicros(): number {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.alloc(64);
  sign('sha256', data, privateKey); // warm-up
  const before = process.cpuUsage();
  for (let i = 0; i < SIGNATURES; i++) sign('sha256', data, privateKey);
  const { user, system } = process.cpuUsage(before);
  return (user + system) / SIGNATURES;
}

/**
 * Microseconds of CPU a round trip of a short line over a loopback TCP connection takes, both ends in this
 * process (a write and a read on each), and of wall time.
 */
async function roundTripMicros(): Promise<{ cpu: number; wall: number }> {
  const server = createServer((socket) => socket.on('data', (d) => socket.write(d)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const client = connect({ host: '127.0.0.1', port });
  await once(client, 'connect');
  client.setNoDelay(true);
  const line = Buffer.from('250 2.0.0 OK: queued as 01ABCDEFGHJKMNPQRSTVWXYZ\r\n');
  const before = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < ROUND_TRIPS; i++) {
    client.write(line);
    await once(client, 'data');
  }
  const wall = ((performance.now() - t0) * 1000) / ROUND_TRIPS;
  const { user, system } = process.cpuUsage(before);
  client.destroy();
  server.close();
  return { cpu: (user + system) / ROUND_TRIPS, wall };
}

/** One line: this machine's processor, signature and round trip, to print before a bench's runs. */
export async function machineLine(): Promise<string> {
  const rsa = signatureMicros();
  const trip = await roundTripMicros();
  return (
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}; an RSA-2048 signature ${rsa.toFixed(0)} µs ` +
    `of CPU; a loopback round trip ${trip.cpu.toFixed(0)} µs of CPU (both ends), ` +
    `${trip.wall.toFixed(0)} µs of wall time`
  );
}
