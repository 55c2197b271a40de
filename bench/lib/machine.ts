import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { median } from './stats';

// An echo server in its own process, so every write wakes another process as the service's do.
const ECHO_SERVER = `
  const server = require('node:net').createServer((s) => { s.setNoDelay(true); s.on('data', (d) => s.write(d)); });
  server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));`;

/**
 * What one round trip over loopback TCP between two processes costs on this
 * machine: wall time and the sender's CPU. Every hop of the pipeline (HTTP
 * request, database statement, delivery) is such a round trip, so this is what
 * decides the latency of small batches. It is not the same on every VM of one
 * kind (the same code needed 1.7x the CPU per request on one as on another),
 * which is why the bench prints it next to the figures.
 */
export async function loopbackRoundTrip(count = 5000): Promise<{ wallUs: number; cpuUs: number }> {
  const child = spawn(process.execPath, ['-e', ECHO_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (line: Buffer) => resolve(Number(String(line).trim())));
      child.once('exit', (code) => reject(new Error(`echo server exited with ${code}`)));
    });
    const socket = connect({ port, host: '127.0.0.1', noDelay: true });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const walls: number[] = [];
    const cpu = process.cpuUsage();
    await new Promise<void>((resolve) => {
      let sentAt = performance.now();
      socket.on('data', () => {
        walls.push(performance.now() - sentAt);
        if (walls.length === count) return resolve();
        sentAt = performance.now();
        socket.write('x');
      });
      socket.write('x');
    });
    const used = process.cpuUsage(cpu);
    socket.destroy();
    return { wallUs: Math.round(median(walls) * 1000), cpuUs: Math.round((used.user + used.system) / count) };
  } finally {
    child.kill();
  }
}
