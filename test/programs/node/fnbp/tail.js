function tail(n) {
  const doubled = n * 2;
  return doubled;
}

module.exports = { tail };
