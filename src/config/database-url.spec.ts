import { parseDatabaseUrl } from './database-url';

describe('parseDatabaseUrl (libpq multi-host syntax)', () => {
  it('a single host without target_session_attrs is used as given', () => {
    const target = parseDatabaseUrl('postgres://u:p@db:6543/x?sslmode=require');
    expect(target.hosts).toEqual([{ host: 'db', port: 6543 }]);
    expect(target.targetSessionAttrs).toBe('any');
    expect(target.multiHost).toBe(false);
    expect(target.urlFor(target.hosts[0])).toBe('postgres://u:p@db:6543/x?sslmode=require');
  });

  it('several hosts: each with its port (5432 when omitted), read-write by default, one URL per host', () => {
    const target = parseDatabaseUrl('postgresql://u:p%40ss@h1:5432,h2,[::1]:5433/inbox?application_name=a');
    expect(target.hosts).toEqual([
      { host: 'h1', port: 5432 },
      { host: 'h2', port: 5432 },
      { host: '::1', port: 5433 },
    ]);
    expect(target.targetSessionAttrs).toBe('read-write');
    expect(target.multiHost).toBe(true);
    expect(target.hosts.map((h) => target.urlFor(h))).toEqual([
      'postgresql://u:p%40ss@h1:5432/inbox?application_name=a',
      'postgresql://u:p%40ss@h2:5432/inbox?application_name=a',
      'postgresql://u:p%40ss@[::1]:5433/inbox?application_name=a',
    ]);
  });

  it('target_session_attrs is read and left out of the URL pg is given', () => {
    const target = parseDatabaseUrl('postgres://u@h1:5432,h2:5433/db?target_session_attrs=primary&sslmode=disable');
    expect(target.targetSessionAttrs).toBe('primary');
    expect(target.urlFor(target.hosts[1])).toBe('postgres://u@h2:5433/db?sslmode=disable');
    const single = parseDatabaseUrl('postgres://u@h1/db?target_session_attrs=read-write');
    expect({ attrs: single.targetSessionAttrs, multiHost: single.multiHost, url: single.urlFor(single.hosts[0]) }).toEqual({
      attrs: 'read-write',
      multiHost: true,
      url: 'postgres://u@h1:5432/db',
    });
  });

  it.each([
    ['http://h1/db', /expected a postgres or postgresql URL/],
    ['postgres://u@h1,h2/db?target_session_attrs=any', /target_session_attrs=any with several hosts/],
    ['postgres://u@h1,h2/db?target_session_attrs=standby', /target_session_attrs "standby" is not supported/],
    ['postgres://u@h1,,h2/db', /empty host/],
    ['postgres://u@h1:port,h2/db', /not a valid URL/],
    ['postgres://u@h1:99999,h2/db', /not a valid URL/],
    ['not a url', /not a valid URL/],
  ])('%s is refused', (raw, message) => {
    expect(() => parseDatabaseUrl(raw)).toThrow(message);
  });

  it('a refusal never echoes the password', () => {
    expect(() => parseDatabaseUrl('postgres://u:s3cret@h1:x,h2/db')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('s3cret') }),
    );
  });
});
