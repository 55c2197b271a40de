import { shortError } from './attempt-failures';

describe('shortError', () => {
  it('names an Error by its name and message, cut to 300 characters', () => {
    expect(shortError(new TypeError('bad'))).toBe('TypeError: bad');
    expect(shortError(new Error('x'.repeat(500)))).toHaveLength(300);
    expect(shortError('plain')).toBe('Error: plain');
  });

  it('never throws, whatever was thrown', () => {
    const throwing = {
      toString() {
        throw new Error('no');
      },
    };
    expect(shortError(Object.create(null))).toBe('Error: a thrown object that has no text');
    expect(shortError(throwing)).toBe('Error: a thrown object that has no text');
    const message = new Error('m');
    Object.defineProperty(message, 'message', {
      get() {
        throw new Error('no');
      },
    });
    expect(shortError(message)).toBe('Error: a thrown object that has no text');
  });

  it('drops NUL characters, which a text column refuses', () => {
    expect(shortError(new Error('bad field a\u0000b'))).toBe('Error: bad field ab');
  });
});
