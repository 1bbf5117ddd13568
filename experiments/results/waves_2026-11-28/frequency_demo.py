"""The wave seeds' demonstration (thirty-eighth session): four laws with a frequency through
LEERegressor(preset="fast"); its output is frequency_demo.txt."""
import sys, time, numpy as np
from lee_jax import LEERegressor
rng = np.random.default_rng(0)
cases = {
 "2.5 sin(2.3x)": (1, lambda X: 2.5*np.sin(2.3*X[:,0])),
 "sin(0.5x)*y": (2, lambda X: np.sin(0.5*X[:,0])*X[:,1]),
 "cos(0.31 x y)": (2, lambda X: np.cos(0.31*X[:,0]*X[:,1])),
 "sin^2(6.283 x y / z)": (3, lambda X: np.sin(6.283*X[:,0]*X[:,1]/X[:,2])**2),
}
for name in sys.argv[1:] or cases:
  k, f = cases[name]
  X = rng.uniform(1, 5, (600, k)) if k == 3 else rng.uniform(-5, 5, (600, k))
  y = f(X)
  t = time.time()
  est = LEERegressor(preset="fast", workers=1).fit(X[:450], y[:450])
  print(name, "->", est.sympy(), "test R2", round(est.score(X[450:], y[450:]), 4), f"{time.time()-t:.0f}s", flush=True)
