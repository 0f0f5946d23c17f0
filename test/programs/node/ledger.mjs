// A ledger of accounts as an ES module: classes, object methods and functions assigned to names.
class Account {
  constructor(owner, cents) {
    this.owner = owner;
    this.cents = cents;
  }

  withdraw(cents) {
    this.cents -= cents;
    return this.cents;
  }
}

const fees = {
  monthly(account) {
    return account.withdraw(250);
  },
};

const report = (accounts) => accounts.map((a) => `${a.owner}: ${a.cents}`).join('\n');

const accounts = [new Account('ana', 1000), new Account('bo', 100)];
for (const account of accounts) fees.monthly(account);
console.log(report(accounts));
