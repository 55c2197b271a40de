import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const MEMORY = '/sys/fs/cgroup/memory';
const GROUP = 'wi-bench-squeeze';

/**
 * `--squeeze`: the bench's own PostgreSQL in a memory cgroup (cgroup v1, as root) whose limit
 * holds shared_buffers and little page cache, so an index larger than that is read from disk
 * as it is on a host whose memory is smaller than its hot indexes. Before each stage the data
 * files are evicted from the page cache (`dd iflag=nocache count=0`, posix_fadvise DONTNEED on
 * clean pages after a CHECKPOINT): only this server's files, never the machine's whole cache.
 */
export class Squeeze {
  private constructor(
    private readonly dataDir: string,
    readonly limitBytes: number,
  ) {}

  static enter(dataDir: string, limitBytes: number): Squeeze {
    if (!existsSync(MEMORY)) throw new Error('--squeeze needs the cgroup v1 memory hierarchy (/sys/fs/cgroup/memory), as root');
    mkdirSync(join(MEMORY, GROUP), { recursive: true });
    writeFileSync(join(MEMORY, GROUP, 'memory.limit_in_bytes'), String(limitBytes));
    const squeeze = new Squeeze(dataDir, limitBytes);
    // The postmaster and its children now; backends forked later inherit the group.
    for (const pid of squeeze.serverPids()) squeeze.move(pid, GROUP);
    return squeeze;
  }

  /** The postmaster (first line of postmaster.pid) and every process whose parent it is. */
  private serverPids(): number[] {
    const postmaster = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === postmaster;
        } catch {
          return false;
        }
      })
      .map(Number);
    return [postmaster, ...children];
  }

  private move(pid: number, group: string): void {
    try {
      writeFileSync(join(MEMORY, group, 'cgroup.procs'), String(pid));
    } catch {
      // Exited meanwhile.
    }
  }

  /** Drops this server's data files from the page cache (they must be clean: CHECKPOINT first). */
  evict(): void {
    const base = join(this.dataDir, 'base');
    for (const db of readdirSync(base)) {
      for (const file of readdirSync(join(base, db))) {
        try {
          execFileSync('dd', [`if=${join(base, db, file)}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'ignore' });
        } catch {
          // Removed since the listing (a dropped database, a temporary file): nothing to evict.
        }
      }
    }
  }

  /**
   * 8 KB pages the server's live processes read from storage so far (read_bytes of /proc/<pid>/io: what
   * the page cache did not have). The blkio cgroup's counters stay at 0 on these VMs. PostgreSQL 18's io
   * workers, which do most reads, live as long as the server; a backend that exits takes its count along.
   */
  diskReads(): number {
    let bytes = 0;
    for (const pid of readFileSync(join(MEMORY, GROUP, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)) {
      try {
        bytes += Number(/read_bytes: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
      } catch {
        // Exited meanwhile.
      }
    }
    return bytes / 8192;
  }

  /** Page cache the group holds now, in bytes. */
  cacheBytes(): number {
    return Number(/^cache (\d+)/m.exec(readFileSync(join(MEMORY, GROUP, 'memory.stat'), 'utf8'))?.[1] ?? 0);
  }

  leave(): void {
    for (const pid of readFileSync(join(MEMORY, GROUP, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean))
      this.move(Number(pid), '.');
    try {
      rmdirSync(join(MEMORY, GROUP));
    } catch {
      // A process still moving out; the empty group is harmless and reused next time.
    }
  }
}
