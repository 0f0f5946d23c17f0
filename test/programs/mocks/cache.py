"""Uses Redis through redis-py (AUTH, a pipeline, a hash) and writes what it got to cache-out.txt."""
import sys

import redis

port, password, key = sys.argv[1], sys.argv[2], sys.argv[3]
r = redis.Redis(host="127.0.0.1", port=int(port), password=password, socket_timeout=10)
pipe = r.pipeline(transaction=False)
pipe.set(f"fruit:{key}", "ripe")
pipe.get(f"fruit:{key}")
pipe.incr("visits")
set_ok, value, visits = pipe.execute()
r.hset("basket", mapping={key: 3})
basket = r.hgetall("basket")
with open("cache-out.txt", "w") as f:
    f.write(f"set={set_ok} value={value!r} visits={visits} basket={sorted(basket.items())}\n")
