import { compareIds } from './inbox.repository';

describe('compareIds', () => {
  it('orders bigint ids numerically, not as text', () => {
    const ids = ['10', '9', '100', '11', '9007199254740993', '9007199254740992', '1'];
    expect([...ids].sort(compareIds)).toEqual(['1', '9', '10', '11', '100', '9007199254740992', '9007199254740993']);
  });
});
