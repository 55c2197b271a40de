/** The ten-second summary: figures first, then one PASS/FAIL line per invariant. */
export class Report {
  private readonly sections: [string, string[]][] = [];
  private readonly checks: { name: string; ok: boolean; detail: string }[] = [];
  private hostile?: Map<string, { n: number; outcomes: Map<string, number>; unexpected: number }>;

  get failed(): boolean {
    return this.checks.some((c) => !c.ok);
  }

  section(title: string, lines: string[]): void {
    this.sections.push([title, lines]);
  }

  check(name: string, ok: boolean, detail = ''): void {
    this.checks.push({ name, ok, detail });
  }

  hostileTable(table: Map<string, { n: number; outcomes: Map<string, number>; unexpected: number }>): void {
    this.hostile = table;
  }

  print(title: string): void {
    const out: string[] = ['', `==== fault suite: ${title} ====`];
    for (const [name, lines] of this.sections) {
      out.push(`${name.padEnd(19)}${lines[0] ?? ''}`);
      for (const line of lines.slice(1)) out.push(`${''.padEnd(19)}${line}`);
    }
    if (this.hostile) {
      const total = [...this.hostile.values()].reduce((n, r) => n + r.n, 0);
      out.push(`hostile inputs     ${total} requests by category (outcome x count), unexpected answers flagged with !`);
      for (const [category, row] of this.hostile) {
        const outcomes = [...row.outcomes]
          .sort((a, b) => b[1] - a[1])
          .map(([o, n]) => `${o} x${n}`)
          .join(', ');
        out.push(
          `  ${row.unexpected ? '!' : ' '} ${category.padEnd(40)} ${String(row.n).padStart(4)}  ${outcomes}${row.unexpected ? `  (${row.unexpected} unexpected)` : ''}`,
        );
      }
    }
    out.push('invariants');
    for (const c of this.checks) out.push(`  ${c.ok ? 'PASS' : 'FAIL'}  ${c.name}${c.detail ? ` - ${c.detail}` : ''}`);
    out.push(
      `RESULT: ${this.failed ? 'FAIL' : 'PASS'} (${this.checks.filter((c) => c.ok).length}/${this.checks.length} invariants hold)`,
      '',
    );
    process.stdout.write(out.join('\n') + '\n');
  }
}
