'use strict';
const BULK_FROM = 5;
const BULK_OFF = 10; // percent

function lineTotal(line) {
  let cents = line.qty * line.cents;
  if (line.qty > BULK_FROM) {
    cents -= (cents * BULK_OFF) / 100;
  }
  return cents;
}

module.exports = { lineTotal, BULK_FROM };
