import { isDatabaseUnavailable } from './database-errors';

describe('isDatabaseUnavailable', () => {
  it('a server that does not answer, by code or by pg message: unavailable (503)', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const error of [
      coded('ECONNREFUSED'),
      coded('08006'),
      coded('57P01'),
      coded('25006'),
      new Error('Connection terminated unexpectedly'),
      new Error('Query read timeout'),
    ])
      expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('an error of the statement itself: not unavailable', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    expect(isDatabaseUnavailable('Query read timeout')).toBe(false);
  });
});
