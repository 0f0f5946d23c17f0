// A program that runs until it is stopped: every 50 ms it takes the next reading and logs it.
let tick = 0;

function reading(n) {
  const scaled = n * 3;
  return scaled % 7;
}

setInterval(() => {
  tick++;
  console.log(`tick ${tick}: ${reading(tick)}`);
}, 50);
