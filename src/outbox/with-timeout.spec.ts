import { withTimeout } from './outbox-relay';

describe("withTimeout (the relay's requests)", () => {
  it('answers what the task answers, in time', async () => {
    await expect(withTimeout(1000, async () => 'ok')).resolves.toBe('ok');
  });

  it('aborts the signal and fails at the deadline', async () => {
    let aborted = false;
    const task = (signal: AbortSignal) =>
      new Promise<never>((_, reject) =>
        signal.addEventListener('abort', () => {
          aborted = true;
          reject(signal.reason as Error);
        }),
      );
    await expect(withTimeout(20, task)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(aborted).toBe(true);
  });

  it('fails at the deadline even when the task ignores the signal', async () => {
    const started = Date.now();
    await expect(withTimeout(20, () => new Promise<never>(() => undefined))).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
